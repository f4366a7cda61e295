"""A change applied to the SUT for one side of a paired A/B comparison, and removed after.

``srperf ab`` compares "A" with "B = A plus a SUT change": the change is applied on the
SUT (through its own transport, so it works wherever the SUT is) before each B trial and
removed after it, so that A is measured on the SUT as it was.  Named by a short spec:

- ``nft:N``: an nftables table ``srperf_ab`` with a prerouting chain of ``N`` rules that
  never match (documentation source addresses); every forwarded packet walks it.  The
  same rules as ``bench/profile_nft.py``; undo: ``nft delete table inet srperf_ab``.
- ``sysctl:KEY=VALUE``: ``sysctl -w KEY=VALUE``; undo restores the value read before.
- a mapping ``{apply: SHELL, undo: SHELL}`` (an A/B file or an ``ab:`` block): any
  command, run with ``sh -c`` on the SUT.

A bad spec is a :class:`ConfigError` (exit 2) before anything is configured.  An apply
or undo that fails stops the comparison (:class:`SutChangeFailed`): a trial is never
taken on a SUT whose state is not the one its side names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from srperf.errors import ConfigError, SrperfError

NFT_TABLE = "srperf_ab"
MAX_NFT_RULES = 100_000
_SYSCTL_KEY = re.compile(r"^[a-z0-9_][a-z0-9_.\-/]{0,200}\Z")
_SYSCTL_VALUE = re.compile(r"^[A-Za-z0-9_.:\- ]{1,100}\Z")


class SutChangeFailed(SrperfError):
    """Applying or removing a SUT change failed: the comparison stops."""


def nft_ruleset(rules: int, table: str = NFT_TABLE) -> str:
    """A prerouting chain of ``rules`` rules that never match (documentation sources)."""
    body = "\n".join(f"    ip6 saddr 2001:db8::{i + 1:x} counter" for i in range(rules))
    return (f"table inet {table} {{\n  chain pre {{\n"
            "    type filter hook prerouting priority 0; policy accept;\n"
            f"{body}\n  }}\n}}\n")


@dataclass(frozen=True)
class SutChange:
    """One named change: what applies it and what removes it (shell, on the SUT)."""

    name: str
    apply: str
    undo: str
    input_text: str | None = None
    """stdin of ``apply`` (the nft rule set)."""
    restore_sysctl: str = ""
    """For ``sysctl:``: the key whose value is read before applying and restored."""

    def describe(self) -> str:
        return self.name


def parse(spec: Any, source: str, key: str) -> SutChange | None:
    """The change named by ``spec`` (None, "" or "none": no change)."""
    if spec is None or spec == "" or spec == "none":
        return None
    if isinstance(spec, dict):
        unknown = set(spec) - {"apply", "undo", "name"}
        if unknown:
            k = sorted(unknown)[0]
            raise ConfigError(source, f"{key}.{k}", spec[k], "unknown key; known: apply, undo, "
                              "name")
        for k in ("apply", "undo"):
            if not isinstance(spec.get(k), str) or not spec[k].strip():
                raise ConfigError(source, f"{key}.{k}", spec.get(k),
                                  "a shell command is required (it runs with sh -c on the SUT)")
        return SutChange(str(spec.get("name") or "cmd"), spec["apply"], spec["undo"])
    if not isinstance(spec, str):
        raise ConfigError(source, key, spec, "must be nft:N, sysctl:KEY=VALUE or a mapping "
                          "{apply, undo}")
    kind, sep, arg = spec.partition(":")
    if kind == "nft" and sep:
        try:
            n = int(arg)
        except ValueError:
            n = -1
        if not 1 <= n <= MAX_NFT_RULES:
            raise ConfigError(source, key, spec, f"nft:N needs 1 <= N <= {MAX_NFT_RULES} rules")
        return SutChange(spec, "nft -f -", f"nft delete table inet {NFT_TABLE}",
                         input_text=nft_ruleset(n))
    if kind == "sysctl" and sep:
        name, eq, value = arg.partition("=")
        if not eq or not _SYSCTL_KEY.match(name) or not _SYSCTL_VALUE.match(value):
            raise ConfigError(source, key, spec, "sysctl:KEY=VALUE needs a sysctl key "
                              "(a.b.c) and a plain value")
        return SutChange(spec, f"sysctl -q -w '{name}={value}'", "", restore_sysctl=name)
    raise ConfigError(source, key, spec, "unknown SUT change; use nft:N, sysctl:KEY=VALUE "
                      "or a mapping {apply, undo}")


class Applied:
    """A change applied on ``node`` (a Transport); :meth:`remove` undoes it (once)."""

    def __init__(self, change: SutChange, node: Any) -> None:
        self.change, self.node = change, node
        self._undo = change.undo
        if change.restore_sysctl:
            r = node.run(["sysctl", "-n", change.restore_sysctl])
            if not r.ok:
                raise SutChangeFailed(f"SUT change {change.name}: cannot read "
                                      f"{change.restore_sysctl}: {r.stderr.strip()}")
            self._undo = f"sysctl -q -w '{change.restore_sysctl}={r.stdout.strip()}'"
        r = node.run(["sh", "-c", change.apply], input_text=change.input_text)
        if not r.ok:
            self._try_undo()
            raise SutChangeFailed(f"SUT change {change.name}: applying it failed "
                                  f"(exit {r.returncode}): {r.stderr.strip()[:300]}")

    def _try_undo(self) -> Any:
        return self.node.run(["sh", "-c", self._undo])

    def remove(self) -> None:
        if not self._undo:
            return
        undo, self._undo = self._undo, ""
        r = self.node.run(["sh", "-c", undo])
        if not r.ok:
            raise SutChangeFailed(f"SUT change {self.change.name}: removing it failed "
                                  f"(exit {r.returncode}): {r.stderr.strip()[:300]}")


__all__ = ["Applied", "NFT_TABLE", "SutChange", "SutChangeFailed", "nft_ruleset", "parse"]
