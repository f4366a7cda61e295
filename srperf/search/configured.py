"""An experiment's search resolved for one testbed: rates in % of its line rate made pps,
checked by :meth:`SearchSettings.validate` (ConfigError naming the experiment file).

Apart from the orchestrator so that ``srperf validate`` checks a search without
importing what a run needs (pandas, SQLAlchemy, the testbeds).
"""

from __future__ import annotations

import dataclasses

from srperf.config.model import Experiment, TestbedConfig
from srperf.errors import ConfigError
from srperf.search.base import SearchSettings


def search_settings(exp: Experiment, tb: TestbedConfig, seed: int = 0) -> SearchSettings:
    """Resolve the experiment's search (rates in % of line rate) to pps."""
    s, lr = exp.search, tb.tester.line_rate_pps
    settings = SearchSettings(
        thresholds_pct=tuple(s.thresholds_pct), min_rate_pps=s.min_rate.resolve(lr),
        max_rate_pps=s.max_rate.resolve(lr), accuracy_pps=s.accuracy.resolve(lr),
        trial_duration_s=s.trial_duration_s,
        initial_trial_duration_s=min(s.initial_trial_duration_s, s.trial_duration_s),
        repeat_near_threshold=s.repeat_near_threshold, warmup_duration_s=s.warmup_s,
        exceed_ratio=s.exceed_ratio, duration_sum_s=s.duration_sum_s,
        relative_width=s.relative_width, seed=seed,
        mrr_rate_pps=s.mrr_rate.resolve(lr) if s.mrr_rate else None,
        bisect_start=s.bisect_start, early_stop=s.early_stop)
    try:
        settings.validate()
    except ValueError as exc:
        raise ConfigError(exp.source, "search", dataclasses.asdict(s), str(exc)) from None
    return settings


__all__ = ["search_settings"]
