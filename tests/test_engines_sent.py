"""Which engines sent a run (issue 43): the trials' ``extra["engine"]`` counted per engine,
as the run's environment records it beside the engine asked (no traffic: fast tier)."""

from __future__ import annotations

import json

from srperf.drivers.linux_engine import engines_sent


def test_counts_each_engine_of_json_extras() -> None:
    extras = [json.dumps({"engine": "xdp", "mode": "xdp"}), json.dumps({"engine": "xdp"}),
              json.dumps({"engine": "packet", "mode": "mmsg"})]
    assert engines_sent(extras) == {"packet": 1, "xdp": 2}


def test_trials_without_an_engine_are_not_counted() -> None:
    """Another driver's trials (no engine key), an empty or broken extra count nothing."""
    extras = [json.dumps({"simulated": True}), None, "", "not json", json.dumps([1]),
              {"engine": "xdp"}]
    assert engines_sent(extras) == {"xdp": 1}
    assert engines_sent([]) == {}
