"""Run-to-run comparison: per behavior, the change of the PDR/NDR with its interval.

For each (behavior, packet size, threshold) the reported rates (search lower
bounds, pps) of the repetitions of a baseline run and a current run are
compared: the relative change of the mean (%) with a 95 % interval (Welch, or a
percentile bootstrap over repetitions).  With a regression threshold T (%):

* ``regression``: the whole interval lies below -T;
* ``improvement``: the whole interval lies above +T;
* ``no_change``: the whole interval lies within [-T, +T];
* ``inconclusive``: the interval spans -T or +T (or is unknown: one repetition).

A behavior without numbers on one side (``unsupported``, ``generator_limited``,
``below_min``...) is ``not_comparable`` and shows its status, never a number;
one that was measured in the baseline and now fails to configure or verify is a
``regression``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import pandas as pd

from srperf.results import frames
from srperf.results.stats import Description, Difference, bootstrap_ratio, describe, welch_diff
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

    @property
    def verdict(self) -> str:
        verdicts = {c.verdict for c in self.changes}
        for v in (REGRESSION, INCONCLUSIVE, IMPROVEMENT, NO_CHANGE):
            if v in verdicts:
                return v
        return NOT_COMPARABLE

    @property
    def regressions(self) -> list[BehaviorChange]:
        return [c for c in self.changes if c.verdict == REGRESSION]

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for c in self.changes:
            rows.append({
                "behavior": c.behavior, "packet_size": c.packet_size,
                "threshold_pct": c.threshold_pct,
                "baseline_mean_kpps": c.baseline.mean if c.baseline else math.nan,
                "baseline_n": c.baseline.n if c.baseline else 0,
                "current_mean_kpps": c.current.mean if c.current else math.nan,
                "current_n": c.current.n if c.current else 0,
                "change_pct": c.diff.delta_pct if c.diff else math.nan,
                "ci_low_pct": c.diff.low_pct if c.diff else math.nan,
                "ci_high_pct": c.diff.high_pct if c.diff else math.nan,
                "baseline_status": c.baseline_status, "current_status": c.current_status,
                "verdict": c.verdict, "reason": c.reason})
        return pd.DataFrame(rows)


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
            diff = (welch_diff(bv, cv) if method == "welch" else bootstrap_ratio(bv, cv))
            verdict, reason = judge(diff, threshold_pct)
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


def compare_runs(store: ResultStore, baseline: str, current: str,
                 threshold_pct: float = DEFAULT_THRESHOLD_PCT, method: str = "welch",
                 baseline_store: ResultStore | None = None) -> Comparison:
    """Compare two stored runs (the baseline may live in another store)."""
    from srperf.stateful.compare import as_searches

    bstore = baseline_store or store
    base_s = _with(frames.searches(bstore, baseline), as_searches(bstore, baseline))
    cur_s = _with(frames.searches(store, current), as_searches(store, current))
    result = compare_frames(base_s, cur_s,
                            frames.outcomes(bstore, baseline), frames.outcomes(store, current),
                            threshold_pct, method, baseline, current)
    result.model = bool(bstore.simulated_runs([baseline]) or store.simulated_runs([current]))
    return result


def _with(searches: pd.DataFrame, stateful: pd.DataFrame) -> pd.DataFrame:
    """PDR searches and a stateful run's pseudo-searches in one frame."""
    if stateful.empty:
        return searches
    if searches.empty:
        return stateful
    return pd.concat([searches, stateful], ignore_index=True)


def _num(x: float, fmt: str = "{:.1f}") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


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
    for x in c.changes:
        base = f"{_num(x.baseline.mean)} ({x.baseline.n})" if x.baseline else x.baseline_status
        cur = f"{_num(x.current.mean)} ({x.current.n})" if x.current else x.current_status
        change = _num(x.diff.delta_pct, "{:+.2f}") if x.diff else "-"
        ci = (f"[{_num(x.diff.low_pct, '{:+.2f}')}, {_num(x.diff.high_pct, '{:+.2f}')}]"
              if x.diff else "-")
        thr = "" if math.isnan(x.threshold_pct) or x.threshold_pct < 0 \
            else f"{x.threshold_pct:g}"
        lines.append(f"| {x.behavior} | {x.packet_size} | {thr} | {base} | {cur} | {change} "
                     f"| {ci} | {x.verdict} | {x.reason} |")
    return "\n".join(lines)
