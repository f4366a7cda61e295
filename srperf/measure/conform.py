"""Run the conformance matrix of behaviors on a SUT, through the verification path.

For each behavior: configure it (and its VNFs) through the session, send every
applicable case through the generator's ``capture`` (the frames of most cases in one
batch, told apart by their tags; a case whose drop must move a forwarder counter, or
whose frames must be inside the SUT together, on its own), compare what arrived with
the case's outcome and give each case a status:

* ``pass``: as the specification says (a drop with the counter the forwarder maps the
  reason to, when it has counters);
* ``fail``: with the first differing field (or what arrived where nothing should);
* ``finding``: a documented difference of the forwarder from the specification
  (:mod:`srperf.behaviors.conformance.findings`), observed exactly as documented;
* ``n/a``: the variant means nothing for the behavior (not sent).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from srperf.behaviors.conformance import matrix as C
from srperf.behaviors.conformance import findings as F
from srperf.behaviors.conformance import wire as W
from srperf.measure.checks import describe, mismatch
from srperf.config.model import TestbedConfig
from srperf.errors import SrperfError, UnsupportedBehavior
from srperf.measure.verify import STATEFUL_GAP_S
from srperf.util.wording import count

log = logging.getLogger(__name__)

STATUSES = ("pass", "fail", "finding", "n/a")
NOT_RUN = "not_run"
"""Status (and case name) of the one stored row of a behavior whose matrix did not run."""
BATCH_TIMEOUT_S = 1.0
"""Longest wait for a batch's frames, seconds (frames that must be dropped never come)."""
SINGLE_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case."""

    behavior: str
    case: str
    dimension: str
    expected: str
    """forward | drop | n/a"""
    status: str
    detail: str
    spec: str
    counters: dict[str, int] = field(default_factory=dict)
    """The forwarder's counter deltas over the case (cases sent on their own)."""


@dataclass
class BehaviorReport:
    """The verdicts on one behavior's matrix (or why it was not run)."""

    behavior: str
    forwarder: str
    results: list[CaseResult] = field(default_factory=list)
    skipped: str = ""
    """Why the matrix did not run (unsupported, no matrix, ...); "" when it did."""

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def ok(self) -> bool:
        """No failing case (a skipped behavior is not ok)."""
        return not self.skipped and self.count("fail") == 0


# --- evaluating one case ------------------------------------------------------------------

def _check_forward(outcome: C.Forward, got: Sequence[bytes]) -> tuple[bool, str]:
    unused = list(outcome.frames)
    for i, frame in enumerate(got):
        for exp in unused:
            if not mismatch(exp, frame):
                unused.remove(exp)
                break
        else:
            if not unused:
                return False, (f"frame {i + 1} of {len(got)} is one more than expected: "
                               f"{describe(frame)}")
            diffs = mismatch(unused[0], frame)
            return False, f"{diffs[0]} ({describe(frame)})"
    matched = len(outcome.frames) - len(unused)
    if matched < outcome.required:
        if not got:
            return False, "dropped; expected forwarded: " + outcome.frames[0].description
        return False, f"{matched} of {outcome.required} expected frames arrived"
    return True, f"{count(matched, 'frame')} as specified"


def _check_drop(case: C.Case, got: Sequence[bytes], counters: Mapping[str, int] | None,
                drop_counters: Mapping[str, tuple[str, ...]]) -> tuple[bool, str]:
    assert isinstance(case.outcome, C.Drop)
    reason = case.outcome.reason
    if got:
        return False, f"forwarded ({describe(got[0])}); expected a drop: {reason}"
    names = drop_counters.get(reason)
    if counters is None or not names:
        return True, f"dropped ({reason})"
    present = [n for n in names if n in counters]
    moved = {k: v for k, v in counters.items() if v}
    if not present:
        return False, (f"dropped, but the forwarder has no counter {'/'.join(names)} for "
                       f"{reason}; counters moved: {moved or 'none'}")
    total = sum(counters[n] for n in present)
    if total != len(case.frames):
        return False, (f"dropped, but {'/'.join(present)} counted {total} of "
                       f"{count(len(case.frames), 'drop')}; counters moved: {moved or 'none'}")
    return True, f"dropped ({reason}), counted by {'/'.join(present)}"


def evaluate(case: C.Case, got: Sequence[bytes], counters: Mapping[str, int] | None = None,
             drop_counters: Mapping[str, tuple[str, ...]] | None = None,
             outcome: C.Outcome | None = None) -> tuple[bool, str]:
    """(as specified?, detail) for the frames ``got`` that carry the case's tag."""
    outcome = outcome or case.outcome
    if isinstance(outcome, C.Forward):
        return _check_forward(outcome, got)
    if isinstance(outcome, C.Drop):
        return _check_drop(dataclasses.replace(case, outcome=outcome), got, counters,
                           drop_counters or {})
    raise ValueError(f"{case.key}: nothing to evaluate for a case that is not applicable")


def verdict(case: C.Case, got: Sequence[bytes], forwarder: str, tb: TestbedConfig,
            counters: Mapping[str, int] | None = None,
            drop_counters: Mapping[str, tuple[str, ...]] | None = None) -> CaseResult:
    """The case's result, a documented finding of ``forwarder`` considered."""
    def result(status: str, detail: str) -> CaseResult:
        return CaseResult(case.behavior, case.name, case.dimension, case.outcome.kind,
                          status, detail, case.spec, dict(counters or {}))

    if isinstance(case.outcome, C.NotApplicable):
        return result("n/a", case.outcome.reason)
    ok, detail = evaluate(case, got, counters, drop_counters)
    if ok:
        return result("pass", detail)
    for finding in F.applicable(forwarder, case):
        alt = finding.alternative(case, tb)
        if alt is not None and evaluate(case, got, counters, drop_counters, alt)[0]:
            return result("finding", f"{finding.section}: {finding.observed}")
    return result("fail", detail)


def is_icmp_error(frame: bytes) -> bool:
    """True for an ICMPv6/ICMPv4 error message (it quotes the packet that caused it)."""
    from scapy.layers.inet import ICMP
    from scapy.layers.inet6 import (ICMPv6DestUnreach, ICMPv6PacketTooBig,
                                    ICMPv6ParamProblem, ICMPv6TimeExceeded)
    from scapy.layers.l2 import Ether

    pkt = Ether(frame)
    if any(pkt.haslayer(c) for c in (ICMPv6DestUnreach, ICMPv6PacketTooBig,
                                     ICMPv6ParamProblem, ICMPv6TimeExceeded)):
        return True
    return pkt.haslayer(ICMP) and pkt[ICMP].type in (3, 4, 5, 11, 12)


def sort_by_tag(received: Iterable[bytes]) -> tuple[dict[int, list[bytes]], dict[int, int]]:
    """Received frames grouped by the case number they carry (others left out), and per
    case the number of ICMP errors quoting one of its packets (e.g. a VNF's time
    exceeded coming back through a proxy): those are not the case's frames."""
    out: dict[int, list[bytes]] = {}
    errors: dict[int, int] = {}
    for frame in received:
        tag = W.tag_of(frame)
        if tag is None:
            continue
        if is_icmp_error(frame):
            errors[tag] = errors.get(tag, 0) + 1
        else:
            out.setdefault(tag, []).append(frame)
    return out, errors


def _noting(result: CaseResult, errors: int) -> CaseResult:
    if not errors:
        return result
    return dataclasses.replace(result, detail=f"{result.detail} (and {count(errors, 'ICMP error')} "
                               "quoting it)")


# --- running a behavior's matrix on a session ------------------------------------------------

def _capture(gen: Any, frames: list[bytes], timeout_s: float, gap_s: float) -> list[bytes]:
    if not frames:
        return []
    return gen.capture(frames, timeout_s=timeout_s, gap_s=gap_s)


def run_behavior(session: Any, behavior: Any, forwarder_name: str,
                 drop_counters: Mapping[str, tuple[str, ...]]) -> BehaviorReport:
    """Configure ``behavior`` on the session's SUT, run its matrix, unconfigure it."""
    tb = session.testbed.config
    report = BehaviorReport(behavior.name, forwarder_name)
    if not C.has_matrix(behavior.name):
        report.skipped = C.NO_MATRIX.get(behavior.name, "no conformance matrix")
        return report
    cases = C.cases(behavior.name, tb)
    try:
        session.configure(behavior)
        gen = session.generator(behavior)
        has_counters = session.sut.counters() is not None
        alone = [c for c in cases if not isinstance(c.outcome, C.NotApplicable)
                 and (c.burst or (has_counters and isinstance(c.outcome, C.Drop)))]
        batch = [c for c in cases if c not in alone
                 and not isinstance(c.outcome, C.NotApplicable)]
        gap = STATEFUL_GAP_S if behavior.needs_vnf else 0.0
        got, errors = sort_by_tag(_capture(gen, [f for c in batch for f in c.frames],
                                           BATCH_TIMEOUT_S, gap))
        results: dict[str, CaseResult] = {}
        for c in batch:
            results[c.name] = _noting(verdict(c, got.get(c.tag, []), forwarder_name, tb),
                                      errors.get(c.tag, 0))
        for c in alone:
            before = session.sut.counters() if has_counters else None
            frames = _capture(gen, list(c.frames), SINGLE_TIMEOUT_S, 0.0)
            delta = None
            if before is not None:
                after = session.sut.counters() or {}
                delta = {k: v - before.get(k, 0) for k, v in after.items()}
            mine, errs = sort_by_tag(frames)
            results[c.name] = _noting(verdict(c, mine.get(c.tag, []), forwarder_name, tb,
                                              delta, drop_counters), errs.get(c.tag, 0))
        for c in cases:
            report.results.append(results.get(c.name) or verdict(c, [], forwarder_name, tb))
    except UnsupportedBehavior as exc:
        report.skipped = f"unsupported: {exc.reason}"
    finally:
        session.unconfigure(behavior)
    return report


def run_matrix(session: Any, behaviors: Sequence[Any], store: Any = None,
               run_id: str | None = None,
               progress: Any = None) -> list[BehaviorReport]:
    """Run the matrix of each behavior on an open session; store each behavior's verdicts
    (when ``store`` and ``run_id``) as soon as it is done."""
    forwarder = session.forwarder
    reports = []
    for beh in behaviors:
        report = run_behavior(session, beh, forwarder.name, forwarder.drop_counters)
        if store is not None and run_id is not None:
            rows = report.results or [CaseResult(beh.name, NOT_RUN, "", "", NOT_RUN,
                                                 report.skipped, "")]
            store.add_conformance(run_id, forwarder.name, rows)
        if progress is not None:
            progress(report)
        reports.append(report)
    return reports


# --- the table ------------------------------------------------------------------------------

def tally(report: BehaviorReport) -> str:
    """``pass 24, fail 0, finding 2, n/a 1``: each status (the table's word) and its count."""
    return ", ".join(f"{s} {report.count(s)}" for s in STATUSES)


def format_table(report: BehaviorReport, width: int = 100) -> str:
    """One behavior's table: case, expected, status, detail (cut to ``width``)."""
    head = f"{report.behavior} on {report.forwarder}"
    if report.skipped:
        return f"{head}: not run ({report.skipped})"
    lines = [f"{head}: " + tally(report)]
    name_w = max(len(r.case) for r in report.results) if report.results else 4
    for r in report.results:
        line = f"  {r.case:<{name_w}}  {r.expected:<7} {r.status:<7} {r.detail}"
        lines.append(line if len(line) <= width else line[:width - 3] + "...")
    return "\n".join(lines)


def summary_rows(reports: Sequence[BehaviorReport]) -> list[dict[str, Any]]:
    """Per behavior: the number of cases of each status."""
    return [{"behavior": r.behavior, "cases": len(r.results),
             **{s: r.count(s) for s in STATUSES}, "skipped": r.skipped} for r in reports]


class ConformanceError(SrperfError):
    """A behavior failed its conformance matrix where conformance was required."""


__all__ = ["CaseResult", "BehaviorReport", "STATUSES", "tally", "evaluate", "verdict", "sort_by_tag",
           "run_behavior", "format_table", "summary_rows", "ConformanceError"]
