"""JUnit XML for CI servers (Jenkins, GitHub Actions test reporters).

One ``testsuite`` per nightly experiment, one ``testcase`` per behavior,
packet size and loss threshold, named by :func:`srperf.results.names.case_name`
(the same way every night): a regression is a ``failure``, a run that measured
nothing (no figure at all: every search generator-limited, every behavior
unsupported...) a ``failure`` of type ``nothing_measured`` on each of its cases,
naming that case's status, a run that could not be made an ``error``, a behavior
without numbers on one side of a comparison ``skipped``; no change, improvement
and inconclusive pass, with the change and its interval in ``system-out``.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srperf.results.names import case_name
from srperf.results.compare import (IMPROVEMENT, NOT_COMPARABLE, REGRESSION, BehaviorChange,
                                    Comparison, StatefulChange)


@dataclass
class SuiteResult:
    """What one experiment of a nightly suite produced."""

    name: str
    run_id: str | None
    baseline_run_id: str | None = None
    comparison: Comparison | None = None
    error: str = ""
    seconds: float = 0.0
    report: Path | None = None
    cases: list[str] = field(default_factory=list)
    """Behavior/size/threshold names of the run (:func:`names.case_name`)."""
    nothing_measured: str = ""
    """Why the run has no figure ('' when it has one): the job fails on it."""
    case_reasons: dict[str, str] = field(default_factory=dict)
    """Case name -> its status and note, for a run that measured nothing."""
    baseline_note: str = ""
    """Why there is no baseline, when there is none (:func:`srperf.nightly.no_baseline_note`)."""
    trend: Any = None
    """The trend's verdict (:class:`srperf.results.trend_verdict.TrendVerdict`) when the
    suite judges by the trend: it, not the baseline comparison, makes the failures."""


def _case_name(c: BehaviorChange) -> str:
    return case_name(c.behavior, c.packet_size, c.threshold_pct)


def _describe(c: BehaviorChange) -> str:
    if c.diff is None:
        return f"{c.verdict}: {c.reason}"
    return (f"{c.verdict}: {c.diff.delta_pct:+.2f} % (95 % interval {c.diff.low_pct:+.2f} "
            f"to {c.diff.high_pct:+.2f} %, {c.diff.method}); baseline "
            f"{c.baseline.mean if c.baseline else math.nan:.1f} kpps, current "
            f"{c.current.mean if c.current else math.nan:.1f} kpps; {c.reason}")


def _stateful_case_name(c: StatefulChange) -> str:
    return f"{c.kind} {c.behavior} {c.variant} {c.metric}"


def _stateful_describe(c: StatefulChange) -> str:
    if c.diff is None:
        return f"{c.verdict}: {c.reason}"
    return (f"{c.verdict}: {c.diff.delta_pct:+.2f} % (95 % interval {c.diff.low_pct:+.2f} "
            f"to {c.diff.high_pct:+.2f} %, {c.diff.method}, "
            f"{'higher' if c.higher_is_better else 'lower'} is better); baseline "
            f"{c.baseline.mean if c.baseline else math.nan:.4g}, current "
            f"{c.current.mean if c.current else math.nan:.4g} {c.metric}; {c.reason}")


def _by_trend(cases: list[tuple[str, str, str]], trend: Any
              ) -> list[tuple[str, str, str]]:
    """The cases judged by the trend: a failure where the test starts a regression
    group, the baseline comparison kept as text (its regression no longer fails)."""
    red = trend.failures
    out = []
    for name, text, verdict in cases:
        line = trend.texts.get(name, "trend: no history")
        if name in red:
            out.append((name, f"{red.pop(name)}; baseline comparison: {text}", REGRESSION))
        else:
            out.append((name, f"{line}; baseline comparison: {text}",
                        "" if verdict == REGRESSION else verdict))
    out += [(name, text, REGRESSION) for name, text in red.items()]
    return out


def build(suite: str, results: list[SuiteResult]) -> ET.ElementTree:
    root = ET.Element("testsuites", name=f"srperf nightly {suite}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in results:
        ts = ET.SubElement(root, "testsuite", name=f"{suite}.{r.name}")
        props = ET.SubElement(ts, "properties")
        for k, v in (("run_id", r.run_id), ("baseline_run_id", r.baseline_run_id),
                     ("report", str(r.report) if r.report else None)):
            ET.SubElement(props, "property", name=k, value=v or "")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        classname = f"srperf.{suite}.{r.name}"
        if r.error:
            case = ET.SubElement(ts, "testcase", classname=classname, name="run")
            ET.SubElement(case, "error", message=r.error[:500], type="run").text = r.error
            counts["tests"] += 1
            counts["errors"] += 1
        elif r.nothing_measured:
            for name in r.cases or ["run"]:
                case = ET.SubElement(ts, "testcase", classname=classname, name=name)
                text = r.case_reasons.get(name) or r.nothing_measured
                ET.SubElement(case, "failure", message=f"nothing measured: {text}"[:500],
                              type="nothing_measured").text = r.nothing_measured
                counts["tests"] += 1
                counts["failures"] += 1
        elif r.comparison is None and r.trend is None:
            for name in r.cases or ["run"]:
                case = ET.SubElement(ts, "testcase", classname=classname, name=name)
                ET.SubElement(case, "system-out").text = (
                    r.baseline_note or
                    "no baseline: this is the first good nightly run of the suite here")
                counts["tests"] += 1
        else:
            if r.comparison is None:
                cases = [(name, r.baseline_note or "no baseline", "")
                         for name in r.cases or ["run"]]
            else:
                cases = [(_case_name(c), _describe(c), c.verdict)
                         for c in r.comparison.changes]
                cases += [(_stateful_case_name(c), _stateful_describe(c), c.verdict)
                          for c in r.comparison.stateful]
            if r.trend is not None:
                cases = _by_trend(cases, r.trend)
            for name, text, verdict in cases:
                case = ET.SubElement(ts, "testcase", classname=classname, name=name)
                counts["tests"] += 1
                if verdict == REGRESSION:
                    ET.SubElement(case, "failure", message=text[:500],
                                  type="regression").text = text
                    counts["failures"] += 1
                elif verdict == NOT_COMPARABLE:
                    ET.SubElement(case, "skipped", message=text[:500])
                    counts["skipped"] += 1
                else:
                    ET.SubElement(case, "system-out").text = text + (
                        "" if verdict != IMPROVEMENT else " (improvement)")
        for k, v in counts.items():
            ts.set(k, str(v))
            totals[k] += v
        ts.set("time", f"{r.seconds:.1f}")
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("time", f"{sum(r.seconds for r in results):.1f}")
    return ET.ElementTree(root)


def write(path: Path, suite: str, results: list[SuiteResult], what: str | None = None,
          file: str = "<command line>") -> Path:
    tree = build(suite, results)
    ET.indent(tree)
    from srperf.safety import safe_paths

    return safe_paths.write_file(path, ET.tostring(tree.getroot(), encoding="utf-8",
                                                   xml_declaration=True), what=what, file=file)
