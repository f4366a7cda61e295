"""The nightly verdict from the trend: is a run red?

A run is red when, in the history of its suite, experiment and testbed, its sample
of some test *starts a regression group* (:meth:`TestTrend.red_on`).  A single
noisy night that jumpavg keeps inside the current group stays green.  For each
such test the alert names the averages before and after and, when both the run
and the last run of the group before have profile trials of that behavior, the
first suspects (functions whose cost per packet grew most,
:mod:`srperf.results.suspects`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from srperf.results.store import ResultStore
from srperf.results.trend import RunFilter, TestTrend, TrendSettings, trends
from srperf.results.trend_power import visibility

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrendAlert:
    """One test that starts a regression group on the judged run."""

    test: str
    from_avg: float
    to_avg: float
    change_pct: float
    unit: str
    previous_run_id: str
    suspect: str = ""
    first_run_id: str = ""
    first_date: str = ""
    """The group's first run and its date (this run, or a night or two before it
    when jumpavg needed this night to see the change)."""

    def describe(self) -> str:
        start = (f"a new jumpavg group starts with run {self.first_run_id} "
                 f"({self.first_date[:10]})")
        text = (f"trend regression: {self.from_avg:.4g} -> {self.to_avg:.4g} {self.unit} "
                f"({self.change_pct:+.1f} %), {start}; "
                f"previous group last seen in run {self.previous_run_id}")
        return text + (f"; first suspect: {self.suspect}" if self.suspect else "")


@dataclass
class TrendVerdict:
    """The trend's verdict on one run: its red tests and a line for every test."""

    run_id: str
    alerts: list[TrendAlert] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    """Test name -> one line: its class on this run, current group average, the
    smallest step it would see."""
    steps: dict[str, dict[str, object]] = field(default_factory=dict)
    """Test name -> :class:`srperf.results.trend_power.StepVisibility` as a dict."""

    @property
    def red(self) -> bool:
        return bool(self.alerts)

    @property
    def failures(self) -> dict[str, str]:
        return {a.test: a.describe() for a in self.alerts}

    def to_dict(self) -> dict[str, object]:
        return {"verdict": "regression" if self.red else "normal",
                "red": {a.test: a.describe() for a in self.alerts},
                "smallest_step": self.steps}


def _suspect(store: ResultStore, t: TestTrend, previous: str, current: str) -> str:
    """The first suspect from the profile comparison of the two runs ('' without)."""
    from srperf.results.profiles import profile_rows
    from srperf.results.suspects import suspects

    key = (t.key.behavior, t.key.packet_size)
    try:
        base = {(r.behavior, r.packet_size): r for r in profile_rows(store, previous)}
        cur = {(r.behavior, r.packet_size): r for r in profile_rows(store, current)}
    except Exception as exc:  # a store without profiles of older schema: no suspect
        log.debug("no profiles for suspects: %s", exc)
        return ""
    if key not in base or key not in cur:
        return ""
    found = suspects(base[key], cur[key])
    return found[0].describe() if found else ""


def judge(store: ResultStore, run_id: str, flt: RunFilter,
          settings: TrendSettings = TrendSettings()) -> TrendVerdict:
    """The trend verdict on ``run_id``: the history selected by ``flt`` up to that
    run (runs started later are left out, so a replay judges as the night did)."""
    import dataclasses

    flt = dataclasses.replace(flt, until_run=run_id)
    out = TrendVerdict(run_id)
    for t in trends(store, flt, settings):
        if not any(s.run_id == run_id for s in t.samples):
            continue
        cur = t.current
        g = t.starts_group(run_id)
        state = g.cls if g is not None and len(t.groups) > 1 else "normal"
        if any(s.run_id == run_id and s.is_gap for s in t.samples):
            state = "gap"
        elif g is not None and g.cls == "regression" and t.short_of_evidence(g):
            state = "not enough evidence (fewer than 3 runs before the step)"
        out.texts[t.key.test] = (f"trend: {state}; current group {cur.avg:.4g} "
                                 f"+- {cur.stdev:.3g} {t.key.unit} over "
                                 f"{cur.last - cur.first + 1} runs; "
                                 f"{visibility(t).describe()}" if cur else
                                 f"trend: {state}; no figure yet")
        out.steps[t.key.test] = visibility(t).to_dict()
        red = t.red_on(run_id)
        if red is not None:
            prev = t.groups[t.groups.index(red) - 1]
            previous = t.points[prev.last].run_id
            first = t.points[red.first]
            out.alerts.append(TrendAlert(t.key.test, prev.avg, red.avg, red.change_pct or 0.0,
                                         t.key.unit, previous,
                                         _suspect(store, t, previous, run_id),
                                         first.run_id, first.date))
    return out


__all__ = ["TrendAlert", "TrendVerdict", "judge"]
