"""Run-to-run comparison: per behavior, the change of the PDR/NDR with its interval.

For each (behavior, packet size, threshold) the reported rates (search lower
bounds, pps) of the repetitions of a baseline run and a current run are
compared: the relative change of the mean (%) with a 95 % interval (Welch, or a
percentile bootstrap over repetitions).  With a regression threshold T (%):

* ``regression``: the whole interval lies below -T;
* ``improvement``: the whole interval lies above +T;
* ``no_change``: the whole interval lies within [-T, +T];
* ``inconclusive``: the interval spans -T or +T (or is unknown: one repetition);
* ``not_enough_evidence``: fewer than 3 repetitions on a side, or a side whose
  repetitions are identical (zero variance): never a regression or an improvement,
  whatever the interval says (:func:`srperf.results.stats.evidence_problem`).

Each PDR is a search's lower bound, known only to within the search's final bracket
[lower, upper]; half its width is carried into the interval as each value's own
uncertainty (:func:`srperf.results.stats.welch_diff`, ``*_halfwidths``).

A behavior without numbers on one side (``unsupported``, ``generator_limited``,
``below_min``...) is ``not_comparable`` and shows its status, never a number;
one that was measured in the baseline and now fails to configure or verify is a
``regression``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from srperf.results import frames
from srperf.results.stats import (NOT_ENOUGH_EVIDENCE, Description, Difference, bootstrap_ratio,
                                  describe, evidence_problem, welch_diff)
from srperf.results.positive import MIN_N, TOO_SMALL, log_ratio
from srperf.results.store import ResultStore

log = logging.getLogger(__name__)

REGRESSION, IMPROVEMENT, NO_CHANGE, INCONCLUSIVE, NOT_COMPARABLE = (
    "regression", "improvement", "no_change", "inconclusive", "not_comparable")
NUMERIC_STATUSES = ("ok", "at_max")
FAILED_STATUSES = ("verify_failed", "error", "nonconformant")
DEFAULT_THRESHOLD_PCT = 5.0
"""Default regression threshold: a drop whose whole 95 % interval is beyond 5 %."""


@dataclass(frozen=True)
class BehaviorChange:
    """One behavior's change from baseline to current (rates in kpps, change in %)."""

    behavior: str
    packet_size: int
    threshold_pct: float
    """The search's loss threshold, % (0 = NDR)."""
    baseline: Description | None
    current: Description | None
    baseline_status: str
    current_status: str
    diff: Difference | None
    verdict: str
    reason: str = ""
    suspects: tuple = ()
    """For a regression of a behavior profiled in both runs: the functions whose cost
    per packet grew most (:class:`srperf.results.suspects.Suspect`), first suspect first."""
    stack_suspects: tuple = ()
    """For such a regression, the stack groups whose inclusive time grew
    (:class:`srperf.results.suspects.StackChange`: the route lookup, netfilter)."""


HIGHER_IS_BETTER = ("goodput_mbps", "requests_per_s", "transfer_mbps")
"""Stateful metrics whose drop is a regression."""
LOWER_IS_BETTER_PREFIXES = ("latency_", "retransmits")
"""Stateful metrics (by name prefix) whose rise is a regression."""


def metric_direction(metric: str) -> int:
    """+1 when higher is better, -1 when lower is better, 0 when a change is neither
    (``sut_cpu_busy_pct``: shown, not judged)."""
    if metric in HIGHER_IS_BETTER or metric.endswith(("_mbps", "_per_s")):
        return 1
    if metric.startswith(LOWER_IS_BETTER_PREFIXES):
        return -1
    return 0


@dataclass(frozen=True)
class StatefulChange:
    """One stateful metric's change from baseline to current (values in the metric's
    unit, change in % of the baseline mean)."""

    kind: str
    behavior: str
    variant: str
    metric: str
    higher_is_better: bool
    baseline: Description | None
    current: Description | None
    baseline_status: str
    current_status: str
    diff: Difference | None
    verdict: str
    reason: str = ""


@dataclass
class Comparison:
    """All behaviors of two runs compared; ``verdict`` is the worst of them."""

    baseline_run: str
    current_run: str
    threshold_pct: float
    """Regression threshold, % of the baseline mean."""
    method: str
    changes: list[BehaviorChange] = field(default_factory=list)
    model: bool = False
    """True when either run came from the simulated SUT (a model, not a measurement)."""
    stateful: list[StatefulChange] = field(default_factory=list)
    """Stateful metrics (goodput, requests/s, latency...) compared like the PDRs."""
    costs: list[Any] = field(default_factory=list)
    """Per-packet costs without a generator both runs have
    (:class:`srperf.results.costs.CostChange`): side by side, not judged."""

    @property
    def verdict(self) -> str:
        verdicts = {c.verdict for c in [*self.changes, *self.stateful]}
        for v in (REGRESSION, INCONCLUSIVE, NOT_ENOUGH_EVIDENCE, IMPROVEMENT, NO_CHANGE):
            if v in verdicts:
                return v
        return NOT_COMPARABLE

    @property
    def regressions(self) -> list[BehaviorChange]:
        return [c for c in self.changes if c.verdict == REGRESSION]

    @property
    def stateful_regressions(self) -> list[StatefulChange]:
        return [c for c in self.stateful if c.verdict == REGRESSION]

    def stateful_frame(self) -> pd.DataFrame:
        """The stateful changes, one row per (kind, behavior, variant, metric)."""
        return pd.DataFrame([{
            "kind": c.kind, "behavior": c.behavior, "variant": c.variant,
            "metric": c.metric, "higher_is_better": c.higher_is_better,
            **_figures(c, "")} for c in self.stateful])

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "behavior": c.behavior, "packet_size": c.packet_size,
            "threshold_pct": c.threshold_pct, **_figures(c, "_kpps")} for c in self.changes])


def _figures(c: "BehaviorChange | StatefulChange", unit: str) -> dict[str, Any]:
    """The columns a compared figure has in a frame: means (``unit`` names their unit in
    the column, e.g. ``_kpps``), counts, change and its 95 % interval in %, statuses."""
    return {
        f"baseline_mean{unit}": c.baseline.mean if c.baseline else math.nan,
        "baseline_n": c.baseline.n if c.baseline else 0,
        f"current_mean{unit}": c.current.mean if c.current else math.nan,
        "current_n": c.current.n if c.current else 0,
        "change_pct": c.diff.delta_pct if c.diff else math.nan,
        "ci_low_pct": c.diff.low_pct if c.diff else math.nan,
        "ci_high_pct": c.diff.high_pct if c.diff else math.nan,
        "baseline_status": c.baseline_status, "current_status": c.current_status,
        "verdict": c.verdict, "reason": c.reason}


def judge(diff: Difference, threshold_pct: float) -> tuple[str, str]:
    """Verdict and reason for a relative change interval against ``threshold_pct``."""
    lo, hi = diff.low_pct, diff.high_pct
    if math.isnan(lo) or math.isnan(hi):
        return INCONCLUSIVE, "no interval (a side has a single repetition)"
    if hi < -threshold_pct:
        return REGRESSION, f"whole interval below -{threshold_pct:g} %"
    if lo > threshold_pct:
        return IMPROVEMENT, f"whole interval above +{threshold_pct:g} %"
    if -threshold_pct <= lo and hi <= threshold_pct:
        return NO_CHANGE, f"whole interval within ±{threshold_pct:g} %"
    return INCONCLUSIVE, f"interval spans ±{threshold_pct:g} %"


def _side(s: pd.DataFrame, o: pd.DataFrame, key: tuple[str, int, float]
          ) -> tuple[list[float], str, str]:
    """Values (kpps), status text and reason of one side for one key."""
    beh, size, thr = key
    grp = s[(s["behavior"] == beh) & (s["packet_size"] == size) & (s["threshold_pct"] == thr)] \
        if not s.empty else s
    if len(grp):
        ok = grp[grp["status"].isin(NUMERIC_STATUSES)]
        values = list((ok["lower_pps"].dropna() / 1000.0))
        status = ", ".join(f"{k} x{v}" for k, v in grp["status"].value_counts().items())
        notes = [x for x in grp["note"].fillna("") if x] if "note" in grp else []
        return values, status, notes[0] if notes else ""
    oo = o[(o["behavior"] == beh) & (o["packet_size"] == size)] if not o.empty else o
    oo = oo[oo["status"] != "measured"] if len(oo) else oo
    if len(oo):
        return [], str(oo["status"].iloc[-1]), str(oo["reason"].iloc[-1] or "")
    return [], "missing", ""


def bracket_halfwidths(s: pd.DataFrame, key: tuple[str, int, float]) -> list[float]:
    """Half-widths (kpps) of the final search brackets [lower, upper] of the numeric
    searches of ``key``, in the order of :func:`_side`'s values; a search without an
    upper bound (at the maximum rate) has 0."""
    beh, size, thr = key
    if s.empty or "upper_pps" not in s:
        return []
    grp = s[(s["behavior"] == beh) & (s["packet_size"] == size) & (s["threshold_pct"] == thr)
            & s["status"].isin(NUMERIC_STATUSES) & s["lower_pps"].notna()]
    out = []
    for lo, up in zip(grp["lower_pps"], grp["upper_pps"]):
        ok = up is not None and not pd.isna(up) and float(up) >= float(lo)
        out.append((float(up) - float(lo)) / 2000.0 if ok else 0.0)
    return out


def _keys(*searches: pd.DataFrame) -> list[tuple[str, int, float]]:
    keys: dict[tuple[str, int, float], None] = {}
    for s in searches:
        if s.empty:
            continue
        for k in s[["behavior", "packet_size", "threshold_pct"]].itertuples(index=False):
            keys[(str(k[0]), int(k[1]), float(k[2]))] = None
    return list(keys)


def compare_frames(base_s: pd.DataFrame, cur_s: pd.DataFrame, base_o: pd.DataFrame,
                   cur_o: pd.DataFrame, threshold_pct: float = DEFAULT_THRESHOLD_PCT,
                   method: str = "welch", baseline_run: str = "baseline",
                   current_run: str = "current") -> Comparison:
    """Compare two runs given their ``searches`` and ``outcomes`` frames."""
    if method not in ("welch", "bootstrap"):
        raise ValueError(f"method must be welch or bootstrap, not {method!r}")
    if threshold_pct < 0:
        raise ValueError("threshold_pct must be >= 0")
    result = Comparison(baseline_run, current_run, threshold_pct, method)
    keys = _keys(base_s, cur_s)
    for o in (base_o, cur_o):  # behaviors never searched on either side
        if not o.empty:
            for r in o[o["status"] != "measured"].itertuples(index=False):
                if not any(k[0] == r.behavior and k[1] == r.packet_size for k in keys):
                    keys.append((str(r.behavior), int(r.packet_size), math.nan))
    for key in keys:
        bv, bstat, breason = _side(base_s, base_o, key)
        cv, cstat, creason = _side(cur_s, cur_o, key)
        bd, cd = (describe(bv) if bv else None), (describe(cv) if cv else None)
        diff = None
        if bv and cv:
            diff = (welch_diff(bv, cv, baseline_halfwidths=bracket_halfwidths(base_s, key),
                               current_halfwidths=bracket_halfwidths(cur_s, key))
                    if method == "welch" else bootstrap_ratio(bv, cv))
            problem = evidence_problem(bv, cv)
            verdict, reason = ((NOT_ENOUGH_EVIDENCE, problem) if problem
                               else judge(diff, threshold_pct))
        elif bv and cstat.split(" x")[0] in FAILED_STATUSES:
            verdict, reason = REGRESSION, f"measured before, now {cstat}: {creason}".strip()
        else:
            verdict = NOT_COMPARABLE
            reason = "; ".join(x for x in (
                f"baseline {bstat}" + (f": {breason}" if breason and not bv else ""),
                f"current {cstat}" + (f": {creason}" if creason and not cv else "")) if x)
        result.changes.append(BehaviorChange(key[0], key[1], key[2], bd, cd, bstat, cstat,
                                             diff, verdict, reason))
    return result


def judge_directed(diff: Difference, threshold_pct: float,
                   higher_is_better: bool) -> tuple[str, str]:
    """:func:`judge` for a metric where lower may be better: then a rise whose whole
    interval lies above +T is the regression and a fall below -T the improvement."""
    if higher_is_better:
        return judge(diff, threshold_pct)
    verdict, reason = judge(Difference(-diff.delta, -diff.high, -diff.low, -diff.delta_pct,
                                       -diff.high_pct, -diff.low_pct, diff.method),
                            threshold_pct)
    if verdict == REGRESSION:
        reason = f"whole interval above +{threshold_pct:g} % (lower is better)"
    elif verdict == IMPROVEMENT:
        reason = f"whole interval below -{threshold_pct:g} % (lower is better)"
    return verdict, reason


def _stateful_side(samples: pd.DataFrame, key: tuple[str, str, str, str]
                   ) -> tuple[list[float], str, str]:
    """Values, status text and first reason of one side for (kind, behavior, variant,
    metric)."""
    kind, beh, variant, metric = key
    if samples.empty:
        return [], "missing", ""
    grp = samples[(samples["kind"] == kind) & (samples["behavior"] == beh)
                  & (samples["variant"] == variant)]
    if grp.empty:
        return [], "missing", ""
    values = [float(m[metric]) for st, m in zip(grp["status"], grp["metrics"])
              if st == "ok" and metric in m]
    status = ", ".join(f"{k} x{v}" for k, v in grp["status"].value_counts().items())
    reasons = [x for x in grp["reason"].fillna("") if x]
    return values, status, reasons[0] if reasons else ""


def _stateful_keys(*sides: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(kind, behavior, variant, metric) of both sides, judged metrics only; a
    configuration without any metric on either side appears once with its primary
    metric (so that its status shows)."""
    keys: dict[tuple[str, str, str, str], None] = {}
    for side in sides:
        for r in side.itertuples(index=False):
            names = [m for m in r.metrics if metric_direction(m)] or \
                ([r.primary_metric] if r.primary_metric else [])
            for m in names:
                keys[(str(r.kind), str(r.behavior), str(r.variant), str(m))] = None
    return list(keys)


def compare_stateful(base: pd.DataFrame, cur: pd.DataFrame,
                     threshold_pct: float = DEFAULT_THRESHOLD_PCT, method: str = "welch"
                     ) -> list[StatefulChange]:
    """Compare two runs' stateful samples (:func:`srperf.results.frames.stateful_samples`)
    per (kind, behavior, variant, metric), like :func:`compare_frames` the PDRs: the
    relative change of the mean with its 95 % interval against ``threshold_pct``, in the
    metric's direction (:func:`metric_direction`).  A configuration measured in the
    baseline whose repetitions now all failed is a regression; one without numbers on
    a side for another reason (unsupported, missing) is not comparable."""
    out = []
    for key in _stateful_keys(base, cur):
        higher = metric_direction(key[3]) >= 0
        bv, bstat, breason = _stateful_side(base, key)
        cv, cstat, creason = _stateful_side(cur, key)
        bd, cd = (describe(bv) if bv else None), (describe(cv) if cv else None)
        diff = None
        if bv and cv and bd and bd.mean == 0:   # no relative change to speak of
            same = cd is not None and cd.mean == 0 and (cd.n < 2 or cd.std == 0)
            verdict, reason = ((NO_CHANGE, "zero on both sides") if same else
                               (INCONCLUSIVE, "baseline mean 0: no relative change"))
        elif bv and cv and min(len(bv), len(cv)) < MIN_N:   # the rule of every interval
            verdict = INCONCLUSIVE           # of a stateful metric (srperf.results.positive)
            reason = f"{TOO_SMALL} (< {MIN_N}): baseline {len(bv)}, current {len(cv)}"
        elif bv and cv:
            diff = (log_ratio(bv, cv) or welch_diff(bv, cv)) if method == "welch" \
                else bootstrap_ratio(bv, cv)
            problem = evidence_problem(bv, cv)
            verdict, reason = ((NOT_ENOUGH_EVIDENCE, problem) if problem
                               else judge_directed(diff, threshold_pct, higher))
        elif bv and cstat.split(" x")[0] == "failed" and "ok" not in cstat:
            verdict, reason = REGRESSION, f"measured before, now {cstat}: {creason}".strip()
        else:
            verdict = NOT_COMPARABLE
            reason = "; ".join((
                f"baseline {bstat}" + (f": {breason}" if breason and not bv else ""),
                f"current {cstat}" + (f": {creason}" if creason and not cv else "")))
        out.append(StatefulChange(*key, higher, bd, cd, bstat, cstat, diff, verdict,
                                  reason))
    return out


def compare_runs(store: ResultStore, baseline: str, current: str,
                 threshold_pct: float = DEFAULT_THRESHOLD_PCT, method: str = "welch",
                 baseline_store: ResultStore | None = None) -> Comparison:
    """Compare two stored runs (the baseline may live in another store); an emulated
    run is never judged against a native one (NotComparable, srperf.results.emulation)."""
    from srperf.results.emulation import check_comparable

    bstore = baseline_store or store
    check_comparable(bstore, baseline, store, current)
    result = compare_frames(frames.searches(bstore, baseline), frames.searches(store, current),
                            frames.outcomes(bstore, baseline), frames.outcomes(store, current),
                            threshold_pct, method, baseline, current)
    result.model = bool(bstore.simulated_runs([baseline]) or store.simulated_runs([current]))
    _use_profiles(result, bstore, baseline, store, current)
    from srperf.results.costs import compare_costs, cost_rows

    result.costs = compare_costs(cost_rows(bstore, baseline), cost_rows(store, current))
    result.stateful = compare_stateful(frames.stateful_samples(bstore, baseline),
                                       frames.stateful_samples(store, current),
                                       threshold_pct, method)
    from srperf.results.latency_compare import latency_samples

    # Latency samples (per behavior, load and percentile) are judged like stateful metrics.
    base_lat, cur_lat = latency_samples(bstore, baseline), latency_samples(store, current)
    if not (base_lat.empty and cur_lat.empty):
        result.stateful += compare_stateful(base_lat, cur_lat, threshold_pct, method)
    return result


def _use_profiles(result: Comparison, bstore: ResultStore, baseline: str,
                  store: ResultStore, current: str) -> None:
    """Where both runs have profile trials of a behavior: judge a behavior whose rates
    cannot be compared (generator-limited) on its time per packet instead, and attach
    the first suspects (functions whose cost grew) to each regression."""
    import dataclasses

    from srperf.results.profiles import profile_rows
    from srperf.results.suspects import stack_suspects, suspects

    base = {(r.behavior, r.packet_size): r for r in profile_rows(bstore, baseline)}
    cur = {(r.behavior, r.packet_size): r for r in profile_rows(store, current)}
    for i, c in enumerate(result.changes):
        key = (c.behavior, c.packet_size)
        if key not in base or key not in cur:
            continue
        if c.verdict == NOT_COMPARABLE:
            c = _judge_time(c, base[key].ns_values, cur[key].ns_values,
                            result.threshold_pct, result.method)
        if c.verdict == REGRESSION:
            c = dataclasses.replace(c, suspects=tuple(suspects(base[key], cur[key])),
                                    stack_suspects=tuple(stack_suspects(base[key], cur[key])))
        result.changes[i] = c


def _judge_time(c: BehaviorChange, base_ns: list[float], cur_ns: list[float],
                threshold_pct: float, method: str) -> BehaviorChange:
    """``c`` judged on the forwarding's time per packet (profile trials): as a capacity
    (packets per second of forwarding time, 1e9 / ns, higher is better) so that the
    verdicts mean what they mean for rates."""
    import dataclasses

    if len(base_ns) < 2 or len(cur_ns) < 2:
        return c
    bcap = [1e9 / v for v in base_ns if v > 0]
    ccap = [1e9 / v for v in cur_ns if v > 0]
    diff = welch_diff(bcap, ccap) if method == "welch" else bootstrap_ratio(bcap, ccap)
    problem = evidence_problem(bcap, ccap)
    verdict, why = (NOT_ENOUGH_EVIDENCE, problem) if problem else judge(diff, threshold_pct)
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    reason = (f"rates not comparable ({c.reason}); judged on the forwarding's time per "
              f"packet (profile trials): {med(base_ns):.0f} -> {med(cur_ns):.0f} ns, capacity "
              f"{diff.delta_pct:+.1f} % (95 % {diff.low_pct:+.1f} to {diff.high_pct:+.1f}): "
              f"{why}")
    return dataclasses.replace(c, verdict=verdict, reason=reason)


def _num(x: float, fmt: str = "{:.1f}") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


NOTE_MAX = 90
"""Characters of a note in a comparison table's row; a longer one is cut there and given
in full below the table (a row's note ran to hundreds of characters)."""


def short_note(text: str, notes: list[str], limit: int = NOTE_MAX) -> str:
    """``text`` for a table cell: itself when short, else its first ``limit`` characters
    (at a word) and a reference ``[n]`` to its full text, appended to ``notes``."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    if text not in notes:
        notes.append(text)
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" ;,:(")
    return f"{cut} ... [{notes.index(text) + 1}]"


def _full_notes(notes: list[str]) -> list[str]:
    return ["", "Notes in full:", *(f"{i}. {n}" for i, n in enumerate(notes, 1))] if notes \
        else []


def format_markdown(c: Comparison) -> str:
    """The comparison as a Markdown table (rates kpps, change % of the baseline mean)."""
    lines = [f"Comparison {c.current_run} against baseline {c.baseline_run} "
             f"({c.method} 95 % interval, regression threshold {c.threshold_pct:g} %): "
             f"**{c.verdict}**", "",
             "| behavior | size | loss % | baseline kpps (n) | current kpps (n) | change % "
             "| 95 % CI % | verdict | note |",
             "|---|---:|---:|---:|---:|---:|---|---|---|"]
    if c.model:
        lines.insert(1, "\n**MODEL: a run compared here comes from the simulated SUT; "
                        "its figures are not measurements.**")
    notes: list[str] = []
    for x in c.changes:
        base = f"{_num(x.baseline.mean)} ({x.baseline.n})" if x.baseline else x.baseline_status
        cur = f"{_num(x.current.mean)} ({x.current.n})" if x.current else x.current_status
        change = _num(x.diff.delta_pct, "{:+.2f}") if x.diff else "-"
        ci = (f"[{_num(x.diff.low_pct, '{:+.2f}')}, {_num(x.diff.high_pct, '{:+.2f}')}]"
              if x.diff else "-")
        thr = "" if math.isnan(x.threshold_pct) else f"{x.threshold_pct:g}"
        lines.append(f"| {x.behavior} | {x.packet_size} | {thr} | {base} | {cur} | {change} "
                     f"| {ci} | {x.verdict} | {short_note(x.reason, notes)} |")
    lines += _full_notes(notes)
    named = [x for x in c.changes if x.suspects]
    if named:
        lines += ["", "First suspects (sampled functions whose cost per packet grew, "
                      "from the profile trials):"]
        lines += [f"- {x.behavior} {x.packet_size} B: "
                  + "; ".join(s.describe() for s in x.suspects)
                  + "".join(f"; {g.describe()}" for g in x.stack_suspects) for x in named]
    if c.stateful:
        if not c.changes:  # a stateful-only run: no empty PDR table
            del lines[-2:]
        lines += ["", *format_stateful_markdown(c.stateful)]
    if c.costs:
        from srperf.results.costs import format_cost_changes

        lines += ["", *format_cost_changes(c.costs)]
    return "\n".join(lines)


def format_stateful_markdown(changes: list[StatefulChange]) -> list[str]:
    """Stateful changes as Markdown table lines (means in the metric's unit)."""
    lines = ["| kind | behavior | variant | metric | baseline (n) | current (n) | change % "
             "| 95 % CI % | verdict | note |",
             "|---|---|---|---|---:|---:|---:|---|---|---|"]
    notes: list[str] = []
    for x in changes:
        base = f"{_num(x.baseline.mean, '{:.4g}')} ({x.baseline.n})" if x.baseline \
            else x.baseline_status
        cur = f"{_num(x.current.mean, '{:.4g}')} ({x.current.n})" if x.current \
            else x.current_status
        change = _num(x.diff.delta_pct, "{:+.2f}") if x.diff else "-"
        ci = (f"[{_num(x.diff.low_pct, '{:+.2f}')}, {_num(x.diff.high_pct, '{:+.2f}')}]"
              if x.diff else "-")
        better = "higher" if x.higher_is_better else "lower"
        lines.append(f"| {x.kind} | {x.behavior} | {x.variant} | {x.metric} ({better} is "
                     f"better) | {base} | {cur} | {change} | {ci} | {x.verdict} "
                     f"| {short_note(x.reason, notes)} |")
    return lines + _full_notes(notes)
