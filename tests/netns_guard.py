"""The fast tier's promise, enforced: a test that is not marked ``netns`` starts nothing
that makes namespaces or links, attaches BPF, sends traffic or boots a VM.

``make test-fast`` runs ``pytest -m "not netns"`` without the traffic lock, beside
other people's work; a test that did any of that unmarked would break the lock's
rule and the tier's time.  :func:`forbid_unmarked_traffic` (autouse, from
conftest) fails such a test before the command runs, naming the command and
the marker to add.  It sees the commands a test starts through ``subprocess``
in its own process (srperf's testbeds, transports and drivers start theirs so);
what a child process starts in turn is not seen.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any, Sequence

import pytest

MARK = "netns"


def traffic_command(argv: Sequence[str]) -> str | None:
    """Why ``argv`` needs the ``netns`` marker, or None when it does not."""
    words = [os.path.basename(str(a)) if i == 0 else str(a) for i, a in enumerate(argv)]
    if not words:
        return None
    prog = words[0]
    if prog.startswith("qemu-system"):
        return "boots a virtual machine"
    if prog == "ip":
        rest = [w for w in words[1:] if not w.startswith("-")]
        if rest[:2] == ["netns", "add"] or rest[:2] == ["netns", "exec"]:
            return "creates or enters a network namespace"
        if "link" in rest and "add" in rest:
            return "creates a link"
        if any(w.startswith("xdp") for w in rest):
            return "attaches an XDP program"
    if prog == "tc" and "bpf" in words:
        return "attaches a BPF program"
    if prog in ("nsenter", "unshare"):
        return "enters or makes namespaces"
    return None


@pytest.fixture(autouse=True)
def forbid_unmarked_traffic(request: pytest.FixtureRequest,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail an unmarked test that starts a namespace, link, BPF, traffic or VM command."""
    if request.node.get_closest_marker(MARK) is not None:
        return
    real_init = subprocess.Popen.__init__

    def init(self: subprocess.Popen, args: Any, *a: Any, **kw: Any) -> None:
        if isinstance(args, (str, bytes, os.PathLike)):
            argv = os.fsdecode(args).split() if kw.get("shell") else [args]
        else:
            argv = list(args)
        why = traffic_command([os.fsdecode(x) if isinstance(x, bytes) else str(x)
                               for x in argv])
        if why is not None:
            pytest.fail(f"{request.node.nodeid} {why} ({' '.join(map(str, argv))[:120]}) but "
                        f"is not marked '{MARK}': add pytest.mark.{MARK} (the fast tier, "
                        f"make test-fast, runs every unmarked test without the traffic lock)",
                        pytrace=False)
        real_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", init)


__all__ = ["MARK", "forbid_unmarked_traffic", "traffic_command"]
