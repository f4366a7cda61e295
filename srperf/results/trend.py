"""Trending as FD.io CSIT does it: each test's history grouped by ``jumpavg``.

A *test* is one figure of one testbed and forwarder: a behavior at a frame size
and loss threshold (``end 64B PDR@0.5%``, ``end 64B NDR``, ``end 64B MRR``), its
forwarding time per packet where profiled (``end 64B ns/pkt``), or a stateful
configuration's metric (``goodput end cubic goodput_mbps``).  Its *history* is one
sample per run in start order: the run's figures (one per repetition; kpps for
rates).  A run that measured the test but got no figure (generator-limited,
undecided, unsupported, every repetition failed) is a *gap*: shown, never a value.

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
behaviors (:mod:`srperf.orchestrator`), so a drift of the host's capacity over
minutes (a shared VM) moves both alike and cancels in the ratio, while a change
of the behavior alone stands out.  A change that slows the reference as much (a
kernel-wide one) cancels too: the raw test still carries it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import jumpavg
import pandas as pd

from srperf.results.compare import metric_direction
from srperf.results.frames import parse_json
from srperf.results.names import FIGURE_STATUSES, case_name, goal_name
from srperf.results.store import ResultStore

log = logging.getLogger(__name__)

REGRESSION, PROGRESSION, NORMAL = "regression", "progression", "normal"
CLASSES = (REGRESSION, PROGRESSION, NORMAL)
"""Anomaly classes of a group (and of a test: the class of its last change)."""


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
    from srperf import behaviors

    return behaviors.names()


@dataclass(frozen=True)
class TestKey:
    """One trended figure: testbed, forwarder, test name, unit, and direction
    (+1: higher is better, -1: lower is better, 0: shown, never judged)."""

    __test__ = False  # not a pytest class

    testbed: str
    forwarder: str
    test: str
    unit: str
    direction: int = 1
    behavior: str = ""
    packet_size: int = 0

    @property
    def label(self) -> str:
        return f"{self.testbed} {self.forwarder} {self.test}"


@dataclass(frozen=True)
class Sample:
    """A test's figures in one run (``values`` in the key's unit; empty for a gap,
    with ``gap`` saying why)."""

    run_id: str
    date: str
    values: tuple[float, ...]
    gap: str = ""
    kernel: str = ""
    forwarder_version: str = ""
    commit: str = ""

    @property
    def is_gap(self) -> bool:
        return not self.values

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values) if self.values else math.nan


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
        """The class of the last change (``normal`` without one)."""
        return self.last_change.cls if self.last_change else NORMAL

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
        return new_regression(self.groups, before, len(pts), self.settings.confirm)


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


# -- reading the store ---------------------------------------------------------------
@dataclass(frozen=True)
class RunFilter:
    """Which runs are trended: testbed, suite, experiment (None: any), started on or
    after ``since`` (ISO date), finished runs only; ``until_run``: only runs started
    before or at that run's start (a replay of the nightly of that night)."""

    testbed: str | None = None
    suite: str | None = None
    experiment: str | None = None
    since: str | None = None
    purpose: str | None = None
    until_run: str | None = None


def _env_info(env: dict[str, Any]) -> tuple[str, str, str]:
    """(kernel, forwarder version, commit) from a run's environment."""
    nodes = env.get("nodes") if isinstance(env.get("nodes"), dict) else {}
    sut = nodes.get("sut", {}) if isinstance(nodes, dict) else {}
    kernel = str(sut.get("kernel") or env.get("kernel") or "")
    fwd = sut.get("forwarder") or env.get("forwarder") or {}
    if isinstance(fwd, dict):
        fwd_text = "; ".join(f"{k} {v}" for k, v in sorted(fwd.items())
                             if k != "name" and v)[:200]
    else:
        fwd_text = str(fwd)
    return kernel, fwd_text, str(env.get("srperf_commit") or "")


def _runs(store: ResultStore, flt: RunFilter) -> pd.DataFrame:
    df = store.frame("runs")
    df = df[df["status"] == "finished"]
    for col, want in (("testbed", flt.testbed), ("suite", flt.suite),
                      ("experiment", flt.experiment), ("purpose", flt.purpose)):
        if want is not None:
            df = df[df[col] == want]
    if flt.since:
        df = df[df["started"].astype(str) >= flt.since]
    if flt.until_run:
        end = df[df["run_id"] == flt.until_run]["started"]
        if not end.empty:
            df = df[df["started"].astype(str) <= str(end.iloc[0])]
    return df.sort_values(["started", "run_id"]).reset_index(drop=True)


def load_samples(store: ResultStore, flt: RunFilter = RunFilter(), reference: str = ""
                 ) -> dict[TestKey, list[Sample]]:
    """Every test's samples from ``store`` (see the module docstring); with a
    ``reference`` behavior also the relative tests."""
    runs = _runs(store, flt)
    out: dict[TestKey, list[Sample]] = {}
    if runs.empty:
        return out
    ids = list(runs["run_id"])
    meta = {}
    for r in runs.itertuples(index=False):
        meta[r.run_id] = (str(r.testbed), str(r.started), *_env_info(parse_json(r.environment)))

    def add(run_id: str, fwd: str, test: str, unit: str, direction: int,
            values: Iterable[float], gap: str = "", behavior: str = "", size: int = 0
            ) -> None:
        testbed, date, kernel, fver, commit = meta[run_id]
        key = TestKey(testbed, str(fwd), test, unit, direction, str(behavior), int(size))
        vals = tuple(float(v) for v in values if v is not None and not math.isnan(v))
        out.setdefault(key, []).append(Sample(run_id, date, vals, "" if vals else
                                              (gap or "no figure"), kernel, fver, commit))

    searches = store.frame("searches", ids)
    _search_samples(searches, store.frame("outcomes", ids), add)
    if reference:
        _relative_samples(searches, reference, add)
    _profile_samples(store.frame("profiles", ids), add)
    _stateful_samples(store.frame("stateful_samples", ids), add)
    return out


def _search_samples(s: pd.DataFrame, o: pd.DataFrame, add: Any) -> None:
    seen: set[tuple[str, str, int]] = set()
    goals: dict[tuple[str, str, str, int, float], list[tuple[str, Any]]] = {}
    if not s.empty:
        for r in s[["run_id", "forwarder", "behavior", "packet_size", "threshold_pct",
                    "status", "lower_pps"]].itertuples(index=False, name=None):
            goals.setdefault(tuple(r[:5]), []).append((r[5], r[6]))  # type: ignore[arg-type]
    for (run, fwd, beh, size, thr), rows in goals.items():
        seen.add((run, beh, int(size)))
        mrr = any(st == "mrr" for st, _ in rows)
        test = f"{case_name(beh, size)} {'MRR' if mrr else goal_name(thr)}"
        good = [v / 1000.0 for st, v in rows
                if st in FIGURE_STATUSES and v is not None and not math.isnan(v)]
        counts: dict[str, int] = {}
        for st, _ in rows:
            counts[st] = counts.get(st, 0) + 1
        bad = ", ".join(f"{k} x{v}" for k, v in counts.items())
        add(run, fwd, test, "kpps", 1, good, bad, beh, size)
    if not o.empty:
        # a behavior with no search at all (unsupported, verification failed) is a gap
        # of every search figure that behavior has elsewhere: remembered as a marker
        for r in o.itertuples(index=False):
            if r.status != "measured" and (r.run_id, r.behavior, int(r.packet_size)) not in seen:
                add(r.run_id, r.forwarder, f"{case_name(r.behavior, r.packet_size)} *",
                    "kpps", 1, [], f"{r.status}: {r.reason or ''}".strip(), r.behavior,
                    r.packet_size)


def _relative_samples(s: pd.DataFrame, reference: str, add: Any) -> None:
    """The relative tests (module docstring): per run, forwarder, packet size and goal,
    each behavior's figure over the reference's of the same repetition, in %."""
    if s.empty:
        return
    figures: dict[tuple[str, str, int, float], dict[str, dict[int, float]]] = {}
    mrr: set[tuple[str, str, int, float]] = set()
    for run, fwd, beh, size, thr, rep, status, value in s[[
            "run_id", "forwarder", "behavior", "packet_size", "threshold_pct", "repetition",
            "status", "lower_pps"]].itertuples(index=False, name=None):
        case = (run, fwd, int(size), thr)
        if status == "mrr":
            mrr.add(case)
        per = figures.setdefault(case, {}).setdefault(beh, {})
        if status in FIGURE_STATUSES and value is not None and not math.isnan(value):
            per[int(rep)] = float(value)
    for case, behaviors in figures.items():
        run, fwd, size, thr = case
        if reference not in behaviors:
            continue  # the run did not measure the reference: no relative sample
        ref = behaviors[reference]
        goal = "MRR" if case in mrr else goal_name(thr)
        for beh, reps in behaviors.items():
            if beh == reference:
                continue
            both = sorted(set(reps) & set(ref))
            why = (f"no figure of {beh}" if not reps else
                   f"no figure of the reference {reference}" if not ref else
                   "no repetition with both figures")
            add(run, fwd, f"{case_name(beh, size)} {goal} / {reference}", "%", 1,
                [100.0 * reps[r] / ref[r] for r in both if ref[r] > 0], why, beh, size)


def _profile_samples(p: pd.DataFrame, add: Any) -> None:
    if p.empty or "ns_per_packet" not in p:
        return
    for (run, fwd, beh, size), grp in p.groupby(["run_id", "forwarder", "behavior",
                                                 "packet_size"], sort=False):
        values = list(grp["ns_per_packet"].dropna())
        if values:  # no profile trial ran (an MRR run has no PDR to profile at): no sample
            add(run, fwd, f"{case_name(beh, size)} ns/pkt", "ns", -1, values, "", beh, size)


def _stateful_samples(ss: pd.DataFrame, add: Any) -> None:
    if ss.empty:
        return
    for (run, fwd, kind, beh, var), grp in ss.groupby(
            ["run_id", "forwarder", "kind", "behavior", "variant"], sort=False):
        values: dict[str, list[float]] = {}
        for m, st in zip(grp["metrics"], grp["status"]):
            if st != "ok":
                continue
            for metric, v in parse_json(m).items():
                values.setdefault(metric, []).append(float(v))
        primary = str(grp["primary_metric"].dropna().iloc[0]) \
            if grp["primary_metric"].notna().any() else ""
        metrics = set(values) | ({primary} if primary else set())
        why = ", ".join(f"{k} x{v}" for k, v in grp["status"].value_counts().items())
        for metric in metrics:
            d = metric_direction(metric)
            if d == 0 and metric != primary:
                continue
            add(run, fwd, f"{kind} {beh} {var} {metric}", metric, d or 1,
                values.get(metric, []), why, beh)


def _expand_markers(tests: dict[TestKey, list[Sample]]) -> dict[TestKey, list[Sample]]:
    """Outcome-only gaps (``<behavior> <size>B *``) become gaps of that behavior's real
    tests on the same testbed and forwarder."""
    markers = {k: v for k, v in tests.items() if k.test.endswith(" *")}
    real = {k: list(v) for k, v in tests.items() if not k.test.endswith(" *")}
    for mk, samples in markers.items():
        prefix = mk.test[:-1]
        for k in real:
            if (k.testbed, k.forwarder, k.packet_size) == (mk.testbed, mk.forwarder,
                                                          mk.packet_size) \
                    and k.test.startswith(prefix) and k.unit == "kpps":
                have = {s.run_id for s in real[k]}
                real[k] += [s for s in samples if s.run_id not in have]
    return real


def trends(store: ResultStore, flt: RunFilter = RunFilter(),
           settings: TrendSettings = TrendSettings()) -> list[TestTrend]:
    """Every test's trend, sorted as :func:`sort_trends`."""
    tests = _expand_markers(load_samples(store, flt, settings.reference))
    return sort_trends([analyse(k, v, settings) for k, v in tests.items()])


def sort_trends(items: Iterable[TestTrend]) -> list[TestTrend]:
    """Regressions first, then progressions, then normal; within, newest change first,
    then by name."""
    order = {REGRESSION: 0, PROGRESSION: 1, NORMAL: 2}

    def key(t: TestTrend) -> tuple[int, str, str]:
        date = t.last_change.date if t.last_change else ""
        inv = "".join(chr(0x10FFFF - ord(c)) for c in date)  # newest first
        return (order[t.cls], inv, t.key.label)

    return sorted(items, key=key)


# -- text -------------------------------------------------------------------------------
def _num(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.4g}" if abs(x) < 100 else f"{x:.1f}"


def format_table(items: list[TestTrend]) -> str:
    """The ``srperf trend`` table: one line per test."""
    if not items:
        return "(no trended tests: no finished run with figures matches)"
    lines = [f"{'class':<11} {'testbed':<10} {'forwarder':<8} {'test':<30} {'n':>3} "
             f"{'gaps':>4} {'avg':>9} {'stdev':>8}  last change"]
    for t in items:
        cur = t.current
        ch = t.last_change
        change = (f"{ch.date[:10]} run {ch.run_id}: {_num(ch.from_avg)} -> "
                  f"{_num(ch.to_avg)} {t.key.unit} ({ch.change_pct:+.1f} %)"
                  if ch else "none")
        lines.append(f"{t.cls:<11} {t.key.testbed:<10} {t.key.forwarder:<8} "
                     f"{t.key.test:<30} {len(t.points):>3} {t.gaps:>4} "
                     f"{_num(cur.avg if cur else math.nan):>9} "
                     f"{_num(cur.stdev if cur else math.nan):>8}  {change}")
    return "\n".join(lines)


__all__ = ["CLASSES", "Change", "Group", "NORMAL", "PROGRESSION", "REGRESSION", "RunFilter",
           "Sample", "TestKey", "TestTrend", "TrendSettings", "analyse", "format_table",
           "group", "load_samples", "new_regression", "sort_trends", "trends"]
