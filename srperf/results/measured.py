"""Did a run measure anything?  A run with no figure is never green and never a baseline.

A *figure* is a search goal that ended with a rate the SUT was measured at
(status ``ok``, ``at_max`` or ``mrr``, see :data:`srperf.results.names.FIGURE_STATUSES`),
or a stateful sample (goodput, http) with status ``ok``.
A run whose every search ended ``generator_limited``, ``undecided``, ``below_min``,
or whose every behavior was unsupported or failed, measured nothing: ``srperf
run`` exits 3 and ``srperf nightly`` reports a JUnit failure naming why.
"""

from __future__ import annotations

import pandas as pd

from srperf.results.names import FIGURE_STATUSES, case_name
from srperf.results.store import ResultStore

MAX_REASONS = 6
"""Behaviors named in a 'nothing measured' reason before it says '... and N more'."""


def has_figure(searches: pd.DataFrame) -> bool:
    """True when one of these ``searches`` rows carries a figure."""
    if searches.empty:
        return False
    ok = searches["status"].isin(FIGURE_STATUSES) & searches["lower_pps"].notna()
    return bool(ok.any())


def why_nothing(searches: pd.DataFrame, outcomes: pd.DataFrame) -> list[str]:
    """One phrase per behavior, size (and goal) that gave no figure: its status and note."""
    out: list[str] = []
    seen: set[str] = set()
    for _, s in searches.iterrows():
        name = case_name(s["behavior"], s["packet_size"], float(s["threshold_pct"]))
        note = str(s["note"] or "").split(";")[0].strip()
        text = f"{name}: {s['status']}" + (f" ({note})" if note else "")
        if name not in seen:
            seen.add(name)
            out.append(text)
    searched = {(s["behavior"], int(s["packet_size"])) for _, s in searches.iterrows()}
    for _, o in outcomes.iterrows():
        if o["status"] == "measured" or (o["behavior"], int(o["packet_size"])) in searched:
            continue
        name = case_name(o["behavior"], o["packet_size"])
        if name not in seen:
            seen.add(name)
            reason = str(o["reason"] or "").strip()
            out.append(f"{name}: {o['status']}" + (f" ({reason[:160]})" if reason else ""))
    return out


def case_names(searches: pd.DataFrame, outcomes: pd.DataFrame) -> list[str]:
    """The JUnit case names of a run, in store order: one per behavior, size and goal
    searched, one per behavior and size that ended without a search."""
    names = [case_name(s["behavior"], s["packet_size"], float(s["threshold_pct"]))
             for _, s in searches.iterrows()]
    searched = {(s["behavior"], int(s["packet_size"])) for _, s in searches.iterrows()}
    names += [case_name(o["behavior"], o["packet_size"]) for _, o in outcomes.iterrows()
              if (o["behavior"], int(o["packet_size"])) not in searched]
    return list(dict.fromkeys(names))


def _stateful(store: ResultStore, run_id: str) -> pd.DataFrame:
    """The run's stateful samples (goodput, http): status ``ok`` is a figure."""
    return store.frame("stateful_samples", run_id)


TRY_GENERATOR = (
    "the generator could not offer the rates tried: run when the host is quieter "
    "(nothing else busy on the tester's CPU), or give the generator a real-time "
    "priority: a copy of the testbed file with tester.options.fifo_priority: 50, "
    "then srperf run -t THAT_FILE (docs/newcomer-notes.md)")
TRY_UNDECIDED = (
    "the trials' loss varied too much to decide: a quieter host, or longer trials "
    "(--set search.trial_duration_s=2)")
TRY_BELOW_MIN = (
    "the SUT lost more than allowed even at the lowest rate searched: check the SUT, "
    "or lower search.min_rate")
TRY_OTHER = "read each behavior's status above; 'srperf report RUN_ID' shows its trials"


def what_to_try(reason: str) -> str:
    """One line on what to try after a run that measured nothing for ``reason``
    (:func:`nothing_measured`): the advice for the first cause it names."""
    causes = [(reason.find(word), advice) for word, advice in (
        ("generator_limited", TRY_GENERATOR), ("undecided", TRY_UNDECIDED),
        ("below_min", TRY_BELOW_MIN)) if word in reason]
    return min(causes)[1] if causes else TRY_OTHER


def run_has_figure(store: ResultStore, run_id: str) -> bool:
    """True when ``run_id`` has a search goal with a rate or a stateful sample ``ok``."""
    if has_figure(store.frame("searches", run_id)):
        return True
    samples = _stateful(store, run_id)
    return bool((samples["status"] == "ok").any()) if not samples.empty else False


def nothing_measured(store: ResultStore, run_id: str) -> str | None:
    """None when ``run_id`` has a figure; else the reason, naming each behavior's status."""
    if run_has_figure(store, run_id):
        return None
    searches = store.frame("searches", run_id)
    phrases = why_nothing(searches, store.frame("outcomes", run_id))
    for _, r in _stateful(store, run_id).iterrows():
        reason = str(r["reason"] or "").strip()
        phrases.append(f"{r['kind']} {r['behavior']} {r['variant']}: {r['status']}"
                       + (f" ({reason[:160]})" if reason else ""))
    if not phrases:
        return "nothing measured: the run ended no search"
    more = len(phrases) - MAX_REASONS
    return ("nothing measured: " + "; ".join(phrases[:MAX_REASONS])
            + (f"; ... and {more} more" if more > 0 else ""))


__all__ = ["MAX_REASONS", "case_names", "has_figure", "run_has_figure", "nothing_measured",
           "what_to_try", "why_nothing"]
