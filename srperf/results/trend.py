"""Trending as FD.io CSIT does it: each test's history grouped by ``jumpavg``.

A *test* is one figure of one testbed and forwarder: a behavior at a frame size
and loss threshold (``end 64B PDR@0.5%``, ``end 64B NDR``, ``end 64B MRR``), its
forwarding time per packet where profiled (``end 64B ns/pkt``), or a stateful
configuration's metric (``goodput end cubic goodput_mbps``).  Its *history* is one
sample per run in start order: the run's figures (one per repetition; kpps for
rates; read by :mod:`srperf.results.trend_samples`).  A run that measured the test
but got no figure (generator-limited, undecided, unsupported, every repetition
failed) is a *gap*: shown, never a value.

``jumpavg.classify`` (minimum description length) splits the values into groups
of statistically equal results; every group after the first is a *regression*
when its average is worse than the previous group's (lower for rates, higher for
times and latencies), a *progression* when better, unless the change is smaller
than ``min_change_pct`` (then ``normal``: a group boundary, no anomaly).  Each
night's repetitions enter ``jumpavg`` as one indivisible run (their average and
spread), as CSIT feeds an MRR run's trials.

The *last change* of a test is the first sample of its newest anomalous group;
a test is *red* on a run when that run's sample starts a regression group.

*Relative tests* (``TrendSettings.reference``, a behavior every run measures too):
each other behavior's search figure also becomes ``<test> / <reference>``, per
repetition the behavior's figure divided by the reference's of the same run,
forwarder, packet size, goal and repetition, in %.  Repetitions interleave
behaviors (:mod:`srperf.measure.orchestrator`), so a drift of the host's capacity over
minutes (a shared VM) moves both alike and cancels in the ratio, while a change
of the behavior alone stands out.  A change that slows the reference as much (a
kernel-wide one) cancels too: the raw test still carries it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import jumpavg

from srperf.results.store import ResultStore
from srperf.util.wording import count
from srperf.results.trend_samples import (RunFilter, Sample, TestKey, expand_markers,
                                          load_samples)

log = logging.getLogger(__name__)

REGRESSION, PROGRESSION, NORMAL = "regression", "progression", "normal"
CLASSES = (REGRESSION, PROGRESSION, NORMAL)
"""Anomaly classes of a group (and of a test: the class of its last change)."""
NOT_MEASURED = "not measured"
"""The class of a test with no figure in any run (only gaps): never ``normal``."""
NOT_ENOUGH_EVIDENCE = "not enough evidence"
"""The class of a test whose last change is a step from a history of fewer than 3
values or of identical ones (:meth:`TestTrend.short_of_evidence`): its noise was never
seen, so the step is neither a regression nor a progression (issue 48)."""


@dataclass(frozen=True)
class TrendSettings:
    """How histories are grouped and judged.

    Attributes:
        min_change_pct: a new group whose average differs from the previous group's
            by less than this (% of the previous average) is ``normal``, not an
            anomaly (CSIT: 0, every jumpavg split counts).
        sbps: significant bits per sample given to ``jumpavg.classify`` (the
            resolution of the values: max value / 2**(sbps+1)); None = jumpavg's 12.
        window: only the newest ``window`` samples of each test are grouped (None:
            the whole history; CSIT trends over a window of days).
        reference: a behavior measured in the same runs; every other search figure
            also gets a relative test (module docstring).  '' = none.
        confirm: a regression group jumpavg forms only once a later night confirms
            it (the first night alone was not split off) is still reported, on the
            first night that shows it, if that is at most ``confirm`` nights after
            the group's first night (0: only a night that starts a group is red).
    """

    min_change_pct: float = 0.0
    sbps: float | None = None
    window: int | None = None
    confirm: int = 2
    reference: str = ""

    def __post_init__(self) -> None:
        if not (0.0 <= self.min_change_pct <= 1000.0):
            raise ValueError(f"min_change_pct must be in 0..1000, not {self.min_change_pct}")
        if self.sbps is not None and not (1.0 <= self.sbps <= 64.0):
            raise ValueError(f"sbps must be in 1..64, not {self.sbps}")
        if not (0 <= self.confirm <= 1000):
            raise ValueError(f"confirm must be in 0..1000 nights, not {self.confirm}")
        if self.window is not None and self.window < 2:
            raise ValueError(f"window must be at least 2 samples, not {self.window}")
        if self.reference and self.reference not in _behavior_names():
            raise ValueError(f"reference must be a behavior (srperf behaviors), "
                             f"not {self.reference!r}")


def _behavior_names() -> list[str]:
    from srperf.behaviors import catalogue as behaviors

    return behaviors.names()


@dataclass(frozen=True)
class Group:
    """A run of samples jumpavg found equal: ``first``/``last`` index the test's
    non-gap samples (:attr:`TestTrend.points`); ``avg``/``stdev`` in the unit."""

    first: int
    last: int
    avg: float
    stdev: float
    cls: str
    change_pct: float | None = None
    """Change of ``avg`` from the previous group's, % (None for the first group)."""


@dataclass(frozen=True)
class Change:
    """A test's last anomaly: the first run of its newest regression or progression
    group, the averages before and after and the relative change (%)."""

    cls: str
    run_id: str
    date: str
    from_avg: float
    to_avg: float
    change_pct: float
    previous_run_id: str = ""
    """The last run of the group before (a baseline for profile suspects)."""


@dataclass
class TestTrend:
    """One test's history, its groups and verdict."""

    __test__ = False  # not a pytest class

    key: TestKey
    samples: list[Sample]
    groups: list[Group] = field(default_factory=list)
    last_change: Change | None = None
    settings: TrendSettings = TrendSettings()

    @property
    def points(self) -> list[Sample]:
        """The samples with figures (what jumpavg grouped), in order."""
        return [s for s in self.samples if not s.is_gap]

    @property
    def gaps(self) -> int:
        return sum(1 for s in self.samples if s.is_gap)

    @property
    def current(self) -> Group | None:
        return self.groups[-1] if self.groups else None

    @property
    def cls(self) -> str:
        """The class of the last change (``normal`` without one; ``not measured`` for a
        test that has no figure at all, only gaps; ``not enough evidence`` for a step
        from a history whose noise was never seen)."""
        if not self.points:
            return NOT_MEASURED
        if not self.last_change:
            return NORMAL
        g = self.starts_group(self.last_change.run_id)
        if g is not None and self.short_of_evidence(g):
            return NOT_ENOUGH_EVIDENCE
        return self.last_change.cls

    def starts_group(self, run_id: str) -> Group | None:
        """The group whose first sample is ``run_id`` (None when it starts none)."""
        pts = self.points
        for g in self.groups:
            if pts[g.first].run_id == run_id:
                return g
        return None

    def red_on(self, run_id: str) -> Group | None:
        """The regression group ``run_id`` reveals when it is the test's newest sample
        (the nightly verdict, :func:`new_regression`), else None."""
        pts = self.points
        if not pts or pts[-1].run_id != run_id:
            return None
        before = group([s.values for s in pts[:-1]], self.key.direction, self.settings)
        red = new_regression(self.groups, before, len(pts), self.settings.confirm)
        if red is not None and self.short_of_evidence(red):
            return None
        return red

    def short_of_evidence(self, g: "Group") -> bool:
        """True when the group before ``g`` (the history ``g`` is a change from) holds
        fewer than :data:`srperf.results.stats.MIN_EVIDENCE_N` values (repetitions over
        its runs) or only identical ones: its noise is unknown, so a step from it is
        "not enough evidence", never red (issue 48)."""
        from srperf.results.stats import MIN_EVIDENCE_N

        i = self.groups.index(g) if g in self.groups else -1
        if i < 1:
            return True
        prev = self.groups[i - 1]
        before = [v for p in self.points[prev.first:prev.last + 1] for v in p.values]
        return len(before) < MIN_EVIDENCE_N or len(set(before)) < 2


# -- grouping -------------------------------------------------------------------------
def group(values: Sequence[Sequence[float]], direction: int = 1,
          settings: TrendSettings = TrendSettings()) -> list[Group]:
    """Group ``values`` (one sequence of figures per sample, none empty) with
    ``jumpavg.classify``; classes per the module docstring."""
    if not values:
        return []
    runs: list[Any] = [v[0] if len(v) == 1 else list(v) for v in values]
    glist = jumpavg.classify(runs, sbps=settings.sbps)
    out: list[Group] = []
    at = 0
    prev: float | None = None
    for g in glist:
        n = len(g.run_list)
        if n == 0:
            continue
        avg, stdev = float(g.stats.avg), float(g.stats.stdev)
        change = None if prev is None or prev == 0 else 100.0 * (avg - prev) / abs(prev)
        cls = NORMAL
        if change is not None and direction != 0 and abs(change) >= settings.min_change_pct \
                and avg != prev:
            better = (avg > prev) if direction > 0 else (avg < prev)  # type: ignore[operator]
            cls = PROGRESSION if better else REGRESSION
        out.append(Group(at, at + n - 1, avg, stdev, cls, change))
        at += n
        prev = avg
    return out


def new_regression(now: list[Group], before: list[Group], n: int, confirm: int
                   ) -> Group | None:
    """The regression group that the newest of ``n`` points reveals, or None.

    ``now`` groups all ``n`` points, ``before`` the first ``n - 1``.  Red when the
    newest point starts a regression group (jumpavg split it off at once), or when
    it joins a regression group that started at most ``confirm`` points earlier and
    was not a regression group the night before (jumpavg needed this night to see
    the change; the night of the change is the group's first).  A single noisy
    night that the next night's grouping absorbs is never red."""
    if len(now) < 2 or n < 2:
        return None
    g = now[-1]
    if g.cls != REGRESSION or g.last != n - 1:
        return None
    if g.first == n - 1:
        return g
    if n - 1 - g.first > confirm:
        return None
    if any(b.first == g.first and b.cls == REGRESSION for b in before):
        return None
    return g


def analyse(key: TestKey, samples: list[Sample],
            settings: TrendSettings = TrendSettings()) -> TestTrend:
    """A test's trend: its samples grouped, the last change found."""
    samples = sorted(samples, key=lambda s: (s.date, s.run_id))
    if settings.window:
        pts = [i for i, s in enumerate(samples) if not s.is_gap]
        if len(pts) > settings.window:
            samples = samples[pts[-settings.window]:]
    t = TestTrend(key, samples, settings=settings)
    pts = t.points
    t.groups = group([s.values for s in pts], key.direction, settings)
    for i in range(len(t.groups) - 1, 0, -1):
        g = t.groups[i]
        if g.cls != NORMAL:
            first = pts[g.first]
            t.last_change = Change(g.cls, first.run_id, first.date, t.groups[i - 1].avg,
                                   g.avg, g.change_pct or 0.0,
                                   pts[t.groups[i - 1].last].run_id)
            break
    return t


def trends(store: ResultStore, flt: RunFilter = RunFilter(),
           settings: TrendSettings = TrendSettings()) -> list[TestTrend]:
    """Every test's trend, sorted as :func:`sort_trends`."""
    tests = expand_markers(load_samples(store, flt, settings.reference))
    return sort_trends([analyse(k, v, settings) for k, v in tests.items()])


def sort_trends(items: Iterable[TestTrend]) -> list[TestTrend]:
    """Regressions first, then progressions, then normal; within, newest change first,
    then by name."""
    order = {REGRESSION: 0, PROGRESSION: 1, NOT_ENOUGH_EVIDENCE: 2, NORMAL: 3, NOT_MEASURED: 4}

    def key(t: TestTrend) -> tuple[int, str, str]:
        date = t.last_change.date if t.last_change else ""
        inv = "".join(chr(0x10FFFF - ord(c)) for c in date)  # newest first
        return (order[t.cls], inv, t.key.label)

    return sorted(items, key=key)


# -- text -------------------------------------------------------------------------------
def _num(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.4g}" if abs(x) < 100 else f"{x:.1f}"


def format_table(items: list[TestTrend],
                 visible: Callable[[TestTrend], Any] | None = None) -> str:
    """The ``srperf trend`` table: one line per test (with ``visible``,
    :func:`srperf.results.trend_power.visibility`, a column of the smallest step each
    test would see)."""
    if not items:
        return "(no trended tests: no finished run with figures matches)"
    # columns as wide as their longest entry: a relative test (``end 64B PDR@0.5% /
    # h_encaps``) or a long testbed name never pushes the numbers out of line
    cw = max(11, *(len(t.cls) for t in items))
    bw = max(10, *(len(t.key.testbed) for t in items))
    fw = max(len("forwarder"), *(len(t.key.forwarder) for t in items))
    tw = max(30, *(len(t.key.test) for t in items))
    k = items[0].settings.confirm + 1
    seen = {t.key: visible(t).short() for t in items} if visible is not None else {}
    vis_head = f" {'step seen 1/' + str(k) + ' nights':>{max(19, *map(len, seen.values()))}}" \
        if seen else ""
    vw = len(vis_head) - 1
    lines = [f"{'class':<{cw}} {'testbed':<{bw}} {'forwarder':<{fw}} {'test':<{tw}} {'n':>3} "
             f"{'gaps':>4} {'avg':>9} {'stdev':>8}{vis_head}  last change"]
    for t in items:
        cur = t.current
        ch = t.last_change
        change = (f"{ch.date[:10]} run {ch.run_id}: {_num(ch.from_avg)} -> "
                  f"{_num(ch.to_avg)} {t.key.unit} ({ch.change_pct:+.1f} %)"
                  if ch else "none" if t.points else
                  f"no figure in {count(t.gaps, 'run')}")
        lines.append(f"{t.cls:<{cw}} {t.key.testbed:<{bw}} {t.key.forwarder:<{fw}} "
                     f"{t.key.test:<{tw}} {len(t.points):>3} {t.gaps:>4} "
                     f"{_num(cur.avg if cur else math.nan):>9} "
                     f"{_num(cur.stdev if cur else math.nan):>8}"
                     + (f" {seen[t.key]:>{vw}}" if seen else "") + f"  {change}")
    return "\n".join(lines)


__all__ = ["CLASSES", "Change", "Group", "NORMAL", "NOT_ENOUGH_EVIDENCE", "NOT_MEASURED",
           "PROGRESSION", "REGRESSION",
           "RunFilter",
           "Sample", "TestKey", "TestTrend", "TrendSettings", "analyse", "format_table",
           "group", "load_samples", "new_regression", "sort_trends", "trends"]
