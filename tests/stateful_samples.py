"""Synthetic stateful samples for the results tests (a store filled as the stateful
runners would fill it; figures are made up, with seeded noise, never measured)."""

from __future__ import annotations

import random
from typing import Sequence

from srperf.results.store import ResultStore
from srperf.stateful.base import StatefulSample, Variant


def goodput_run(store: ResultStore, goodput_mbps: float, reps: int = 10,
                noise_pct: float = 2.0, seed: int = 1,
                behaviors: Sequence[str] = ("end", "end_dx6"),
                experiment: str = "stateful-goodput", testbed: str = "virtual") -> str:
    """A finished goodput run: ``reps`` ok samples per behavior, goodput drawn around
    ``goodput_mbps`` with ``noise_pct`` % standard deviation, retransmits around 20."""
    rng = random.Random(seed)
    run = store.begin_run(experiment, testbed, "linux", {})
    for beh in behaviors:
        for rep in range(1, reps + 1):
            g = rng.gauss(goodput_mbps, goodput_mbps * noise_pct / 100)
            sample = StatefulSample({"goodput_mbps": g,
                                     "retransmits": float(max(0, round(rng.gauss(20, 2))))},
                                    detail={"streams_mbps": [g / 2, g / 2]})
            store.add_stateful_sample(run, "goodput", beh, "linux",
                                      Variant("2 streams", {"streams": 2}), rep, sample,
                                      duration_s=5.0, primary_metric="goodput_mbps")
    store.end_run(run, "finished")
    return run
