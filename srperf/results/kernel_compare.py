"""Kernel against kernel: two runs of one experiment on two kernels, side by side.

What a kernel developer asks of two kernels (a patched seg6local against the vanilla
one, last year's LTS against this one), from two stored runs (``srperf run EXP
--testbed A --testbed B`` makes them, interleaved, :mod:`srperf.kernel.interleave`):

* **the kernels named**: ``uname -r`` of each guest, the package (or image) it booted
  and its SHA-256, the accelerator (an emulated pair is compared as such; an emulated
  run against a native one is refused before this module is reached,
  :mod:`srperf.results.emulation`);
* **per behavior, packet size and loss threshold, the ratio** current / baseline of the
  reported rates (search lower bounds), as the ratio of geometric means with its 95 %
  interval: :func:`srperf.results.positive.log_ratio`, the interval every positive
  quantity of srperf gets (Welch on the logarithms, never below zero).  Below
  :data:`~srperf.results.positive.MIN_N` repetitions a side the ratio is shown without
  an interval ("n too small"); a side without numbers shows its status (unsupported,
  generator-limited...), never a number;
* **conformance differences**: the cases whose verdict is not the same on both kernels
  (a finding or failure present on one kernel only), from each run's own conformance
  matrix (``conformance: required``) or else from the newest ``srperf conform`` run
  of the same kernel (same SHA-256) in the store;
* **where both runs have profile trials of a behavior**, the sampled functions whose
  cost per packet changed most (either way), by
  :func:`srperf.results.suspects.function_changes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from srperf.results import frames
from srperf.results.compare import _keys, _side
from srperf.results.positive import MIN_N, TOO_SMALL, log_ratio
from srperf.results.store import ResultStore


@dataclass(frozen=True)
class KernelName:
    """How a run names its kernel (from its environment's ``kernel_target``)."""

    run_id: str
    uname_r: str | None
    kernel: str | None
    """The package (``PACKAGE=VERSION``) or image path the guest booted."""
    sha256: str | None
    accelerator: str | None

    @classmethod
    def of(cls, run_id: str, environment: Mapping[str, Any] | None) -> "KernelName":
        target = (environment or {}).get("kernel_target")
        if not isinstance(target, Mapping):   # not a kernel target: the host's kernel
            sut = ((environment or {}).get("nodes") or {}).get("sut") or {}
            return cls(run_id, sut.get("kernel") if isinstance(sut, Mapping) else None,
                       None, None, None)
        image = target.get("kernel") if isinstance(target.get("kernel"), Mapping) else {}
        return cls(run_id, target.get("uname_r"), image.get("name"), image.get("sha256"),
                   target.get("accelerator"))

    def text(self) -> str:
        what = [x for x in (self.kernel, f"sha256 {self.sha256[:16]}" if self.sha256 else "",
                            self.accelerator or "") if x]
        emulated = " EMULATED" if self.accelerator == "tcg" else ""
        return f"{self.uname_r or 'unknown kernel'}{emulated} ({', '.join(what) or 'host'})"


@dataclass(frozen=True)
class KernelRatio:
    """One behavior's rate on the current kernel over the baseline kernel."""

    behavior: str
    packet_size: int
    threshold_pct: float
    baseline_kpps: tuple[float, ...]
    current_kpps: tuple[float, ...]
    baseline_status: str
    current_status: str
    ratio: float | None = None
    """Ratio of geometric means, current / baseline (None: a side has no numbers)."""
    low: float | None = None
    high: float | None = None
    """Its 95 % interval (None: fewer than MIN_N repetitions a side)."""
    note: str = ""


@dataclass(frozen=True)
class ConformanceDifference:
    """A conformance case whose verdict differs between the kernels."""

    behavior: str
    case: str
    baseline_status: str
    current_status: str
    detail: str


@dataclass(frozen=True)
class FunctionChanges:
    """A behavior profiled on both kernels: the functions whose cost changed most."""

    behavior: str
    packet_size: int
    baseline_ns: float | None
    current_ns: float | None
    """Median forwarding time per packet, ns."""
    changes: tuple[Any, ...]
    """:class:`srperf.results.suspects.Suspect`, largest change first."""


@dataclass
class KernelComparison:
    baseline: KernelName
    current: KernelName
    ratios: list[KernelRatio] = field(default_factory=list)
    conformance: list[ConformanceDifference] = field(default_factory=list)
    conformance_from: tuple[str, str] = ("", "")
    """Where each side's conformance verdicts came from (a run id and why), or why none."""
    profiles: list[FunctionChanges] = field(default_factory=list)
    experiments: tuple[str, str] = ("", "")


def _geometric_ratio(b: list[float], c: list[float]) -> float | None:
    if not b or not c or min(b + c) <= 0:
        return None
    gm = lambda xs: math.exp(math.fsum(math.log(x) for x in xs) / len(xs))  # noqa: E731
    return gm(c) / gm(b)


def ratios(base_s: Any, cur_s: Any, base_o: Any, cur_o: Any) -> list[KernelRatio]:
    """Per (behavior, size, threshold): current / baseline with its interval."""
    out = []
    for key in _keys(base_s, cur_s):
        bv, bstat, breason = _side(base_s, base_o, key)
        cv, cstat, creason = _side(cur_s, cur_o, key)
        ratio, low, high, note = _geometric_ratio(bv, cv), None, None, ""
        if ratio is None:
            note = "; ".join(f"{side} {stat}" + (f": {why}" if why else "")
                             for side, vals, stat, why in (("baseline", bv, bstat, breason),
                                                           ("current", cv, cstat, creason))
                             if not vals)
        else:
            diff = log_ratio(bv, cv)
            if diff is None:
                note = f"{TOO_SMALL} (< {MIN_N}): baseline {len(bv)}, current {len(cv)}"
            else:
                low, high = 1 + diff.low_pct / 100, 1 + diff.high_pct / 100
        out.append(KernelRatio(key[0], key[1], key[2], tuple(bv), tuple(cv), bstat, cstat,
                               ratio, low, high, note))
    # behaviors never searched on a side (unsupported on both, say)
    seen = {(r.behavior, r.packet_size) for r in out}
    for o in (base_o, cur_o):
        if o.empty:
            continue
        for r in o[o["status"] != "measured"].itertuples(index=False):
            if (r.behavior, r.packet_size) not in seen:
                seen.add((r.behavior, r.packet_size))
                key = (str(r.behavior), int(r.packet_size), math.nan)
                _, bstat, breason = _side(base_s, base_o, key)
                _, cstat, creason = _side(cur_s, cur_o, key)
                out.append(KernelRatio(key[0], key[1], key[2], (), (), bstat, cstat,
                                       note=f"baseline {bstat}: {breason}; current "
                                            f"{cstat}: {creason}"))
    return out


def conformance_differences(base: Any, cur: Any) -> list[ConformanceDifference]:
    """Cases (behavior, case name) whose status differs between two conformance frames;
    a case run on one side only is listed with ``not run`` on the other."""
    def table(df: Any) -> dict[tuple[str, str], tuple[str, str]]:
        if df.empty:
            return {}
        return {(str(r.behavior), str(r.case_name)): (str(r.status), str(r.detail or ""))
                for r in df.itertuples(index=False)}

    b, c = table(base), table(cur)
    behaviors_b = {k[0] for k in b}
    behaviors_c = {k[0] for k in c}
    out = []
    for key in dict.fromkeys([*b, *c]):
        if key[0] not in behaviors_b or key[0] not in behaviors_c:
            continue   # a behavior matrix run on one side only says nothing of a kernel
        bs, bd = b.get(key, ("not run", ""))
        cs, cd = c.get(key, ("not run", ""))
        if bs != cs:
            detail = cd if cs in ("fail", "finding") else bd
            out.append(ConformanceDifference(key[0], key[1], bs, cs, detail))
    return out


def _conformance_of(store: ResultStore, run_id: str, name: KernelName,
                    forwarder: str) -> tuple[Any, str]:
    """A run's conformance verdicts: its own, else the newest finished ``srperf conform``
    run of the same kernel (same SHA-256, same forwarder); (frame, where from)."""
    own = frames.conformance(store, run_id)
    if not own.empty:
        return own, f"run {run_id} (its own matrix)"
    if name.sha256 is None:
        return own, "none (not a kernel target, and the run has no matrix of its own)"
    for row in store.runs_rows():
        if row.get("purpose") != "conform" or row.get("status") != "finished" \
                or row.get("forwarder") != forwarder:
            continue
        found = store.run_row(str(row["run_id"]))
        env = found.get("environment") if found else None
        if KernelName.of(str(row["run_id"]), env).sha256 == name.sha256:
            return (frames.conformance(store, str(row["run_id"])),
                    f"conform run {row['run_id']} (same kernel)")
    return own, (f"none: no conformance matrix in run {run_id} and no srperf conform run "
                 f"of this kernel in the store (srperf conform --testbed ...)")


def _profile_changes(store: ResultStore, baseline: str, current: str,
                     top: int = 3) -> list[FunctionChanges]:
    from srperf.results.profiles import profile_rows
    from srperf.results.suspects import function_changes

    base = {(r.behavior, r.packet_size): r for r in profile_rows(store, baseline)}
    cur = {(r.behavior, r.packet_size): r for r in profile_rows(store, current)}
    out = []
    for key in base:
        if key in cur:
            out.append(FunctionChanges(key[0], key[1], base[key].ns_per_packet,
                                       cur[key].ns_per_packet,
                                       tuple(function_changes(base[key], cur[key])[:top])))
    return out


def compare_kernels(store: ResultStore, baseline: str, current: str) -> KernelComparison:
    """Two runs' kernels compared (see the module)."""
    brow, crow = store.run_row(baseline) or {}, store.run_row(current) or {}
    bname = KernelName.of(baseline, brow.get("environment"))
    cname = KernelName.of(current, crow.get("environment"))
    result = KernelComparison(bname, cname, experiments=(str(brow.get("experiment")),
                                                         str(crow.get("experiment"))))
    result.ratios = ratios(frames.searches(store, baseline), frames.searches(store, current),
                           frames.outcomes(store, baseline), frames.outcomes(store, current))
    bconf, bfrom = _conformance_of(store, baseline, bname, str(brow.get("forwarder")))
    cconf, cfrom = _conformance_of(store, current, cname, str(crow.get("forwarder")))
    result.conformance = conformance_differences(bconf, cconf)
    result.conformance_from = (bfrom, cfrom)
    result.profiles = _profile_changes(store, baseline, current)
    return result


def is_kernel_pair(store: ResultStore, baseline: str, current: str) -> bool:
    """True when both runs booted a kernel target (their kernels are worth naming)."""
    rows = (store.run_row(baseline) or {}, store.run_row(current) or {})
    return all(isinstance((r.get("environment") or {}).get("kernel_target"), Mapping)
               for r in rows)


def _r(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_markdown(k: KernelComparison) -> str:
    """The kernel comparison as Markdown: kernels, ratios, conformance, profiles."""
    lines = ["Kernels compared:",
             f"- baseline: run {k.baseline.run_id}: {k.baseline.text()}",
             f"- current:  run {k.current.run_id}: {k.current.text()}"]
    if k.experiments[0] != k.experiments[1]:
        lines.append(f"- NOTE: different experiments ({k.experiments[0]} against "
                     f"{k.experiments[1]})")
    if "tcg" in (k.baseline.accelerator, k.current.accelerator):
        lines.append("- EMULATED (QEMU tcg): the ratios rank the kernels under emulation; "
                     "they are not the kernels' native cost per packet")
    lines += ["", "| behavior | size | loss % | baseline kpps | current kpps | ratio "
              "current/baseline | 95 % interval | note |",
              "|---|---:|---:|---|---|---:|---|---|"]
    for x in k.ratios:
        def vals(v: tuple[float, ...], status: str) -> str:
            return ", ".join(f"{y:.1f}" for y in v) if v else status

        thr = "" if math.isnan(x.threshold_pct) else f"{x.threshold_pct:g}"
        ci = f"[{_r(x.low)}, {_r(x.high)}]" if x.low is not None else "-"
        lines.append(f"| {x.behavior} | {x.packet_size} | {thr} | "
                     f"{vals(x.baseline_kpps, x.baseline_status)} | "
                     f"{vals(x.current_kpps, x.current_status)} | {_r(x.ratio)} | {ci} | "
                     f"{x.note} |")
    lines += ["", f"Conformance differences (baseline: {k.conformance_from[0]}; current: "
                  f"{k.conformance_from[1]}):"]
    if k.conformance:
        lines += [f"- {d.behavior} {d.case}: baseline {d.baseline_status}, current "
                  f"{d.current_status}" + (f" ({d.detail})" if d.detail else "")
                  for d in k.conformance]
    elif any(where.startswith("none") for where in k.conformance_from):
        lines.append("- not compared (a side has no conformance verdicts)")
    else:
        lines.append("- none: every case has the same verdict on both kernels")
    if k.profiles:
        lines += ["", "Profiled behaviors: the functions whose cost per packet changed most:"]
        for p in k.profiles:
            ns = (f" ({p.baseline_ns:.0f} -> {p.current_ns:.0f} ns/pkt)"
                  if p.baseline_ns is not None and p.current_ns is not None else "")
            lines.append(f"- {p.behavior} {p.packet_size} B{ns}: "
                         + ("; ".join(s.describe() for s in p.changes) or "no change"))
    return "\n".join(lines)


__all__ = ["KernelName", "KernelRatio", "ConformanceDifference", "FunctionChanges",
           "KernelComparison", "compare_kernels", "conformance_differences", "ratios",
           "is_kernel_pair", "format_markdown"]
