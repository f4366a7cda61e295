"""The samples of trending: each test's figures per run, read from a results store.

A *test* (:class:`TestKey`) is one figure of one testbed and forwarder; a *sample*
(:class:`Sample`) is its figures in one run, or a gap saying why there are none.
:func:`load_samples` reads them (searches, relative tests, profiles, stateful
runs); :mod:`srperf.results.trend` groups them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import pandas as pd

from srperf.results.compare import metric_direction
from srperf.results.frames import parse_json
from srperf.results.names import FIGURE_STATUSES, case_name, goal_name
from srperf.results.store import ResultStore


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
    """The relative tests (:mod:`srperf.results.trend`): per run, forwarder, size and goal,
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


def expand_markers(tests: dict[TestKey, list[Sample]]) -> dict[TestKey, list[Sample]]:
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


__all__ = ["RunFilter", "Sample", "TestKey", "expand_markers", "load_samples"]
