"""Synthetic nightly histories of known shape, and a store filled with them.

Used by the trend benchmarks (detection rate, report size and speed) and the
trend tests: every figure here is a *model*, labelled so in the store (the runs'
experiment is ``synthetic-trend`` and every trial carries ``"simulated": true``),
never a measurement.

A history is ``nights`` nights of ``reps`` repetitions each.  Each night's true
value is the base value times the shape (a step of ``step_pct`` from night
``at``, a linear drift of ``step_pct`` over ``drift_nights`` from ``at``, or a
single outlier night ``at``), times a night-level noise of coefficient of
variation ``cv`` (the host's capacity moving between nights); each repetition adds
a within-night noise of ``cv / 2``.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from srperf.results import schema
from srperf.results.store import ResultStore

SHAPES = ("none", "step", "drift", "outlier")


@dataclass(frozen=True)
class Shape:
    """A history's planted change: ``kind`` in :data:`SHAPES`, size in % of the base
    value (negative: slower), the night it starts (1-based)."""

    kind: str = "none"
    step_pct: float = 0.0
    at: int = 0
    drift_nights: int = 20

    def factor(self, night: int) -> float:
        """The true value of ``night`` as a multiple of the base value."""
        if self.kind == "step" and night >= self.at:
            return 1.0 + self.step_pct / 100.0
        if self.kind == "outlier" and night == self.at:
            return 1.0 + self.step_pct / 100.0
        if self.kind == "drift" and night >= self.at:
            done = min(1.0, (night - self.at + 1) / self.drift_nights)
            return 1.0 + done * self.step_pct / 100.0
        return 1.0


def history(shape: Shape, nights: int, cv: float, reps: int = 3, base: float = 500.0,
            seed: int = 0) -> list[list[float]]:
    """``nights`` lists of ``reps`` values (see the module docstring)."""
    rnd = random.Random(seed)
    out = []
    for night in range(1, nights + 1):
        mean = base * shape.factor(night) * (1.0 + rnd.gauss(0.0, cv))
        out.append([max(0.0, mean * (1.0 + rnd.gauss(0.0, cv / 2.0))) for _ in range(reps)])
    return out


def night_date(first: str, night: int) -> str:
    """The ISO start time of ``night`` (1-based) counted from the date ``first``."""
    day = dt.date.fromisoformat(first) + dt.timedelta(days=night - 1)
    return f"{day.isoformat()}T02:00:00.000+00:00"


def write_run(store: ResultStore, testbed: str, started: str, figures: dict[tuple[str, int],
              list[float] | str], forwarder: str = "linux", threshold_pct: float = 0.5,
              suite: str | None = "synthetic", environment: dict | None = None,
              run_id: str | None = None, experiment: str = "synthetic-trend") -> str:
    """One finished nightly run started at ``started`` with, per (behavior, frame
    size), the repetitions' PDRs in kpps, or a status text (``generator_limited``,
    ``undecided``, ``unsupported``) for a night with no figure.  Returns its id."""
    run_id = run_id or f"syn-{started[:10]}-{random.Random(started + testbed).getrandbits(32):08x}"
    env = environment or {"srperf_commit": "synthetic",
                          "nodes": {"sut": {"kernel": "model", "forwarder": {"name": forwarder}}}}
    with store.engine.begin() as conn:
        conn.execute(schema.runs.insert(), dict(
            run_id=run_id, started=started, finished=started, experiment=experiment,
            testbed=testbed, forwarder=forwarder, status="finished",
            environment=json.dumps(env), purpose="nightly", suite=suite))
        seq = 0
        for (behavior, size), values in figures.items():
            seq += 1
            common = dict(run_id=run_id, time=started, behavior=behavior, forwarder=forwarder,
                          packet_size=size)
            if isinstance(values, str):
                if values == "unsupported":
                    conn.execute(schema.outcomes.insert(), dict(
                        common, status="unsupported", reason="model: unsupported",
                        search_seq=seq))
                    continue
                values = [values]
            for rep, v in enumerate(values):
                seq += 1
                ok = not isinstance(v, str)
                conn.execute(schema.searches.insert(), dict(
                    common, repetition=rep, search_seq=seq, algorithm="model",
                    threshold_pct=threshold_pct, status="ok" if ok else v,
                    lower_pps=1000.0 * v if ok else None,
                    upper_pps=1010.0 * v if ok else None, n_trials=0, note="model"))
                rate = 1000.0 * v if ok else 100000.0
                conn.execute(schema.trials.insert(), dict(
                    common, repetition=rep, search_seq=seq, rate_pps=rate, duration_s=1.0,
                    intended=int(rate), sent=int(rate), refused=0, received=int(rate),
                    elapsed_s=1.0, offered_rate_pps=rate, loss_ratio=0.0,
                    generator_limited=int(not ok), counters_consistent=1, note="model",
                    extra='{"simulated": true}'))
                conn.execute(schema.outcomes.insert(), dict(
                    common, status="measured", reason="", repetition=rep, search_seq=seq))
    return run_id


def fill(store: ResultStore, tests: Iterable[tuple[str, int]], nights: int, cv: float,
         shapes: dict[tuple[str, int], Shape] | None = None, testbed: str = "synth",
         first: str = "2026-01-01", reps: int = 3, seed: int = 0, base: float = 500.0
         ) -> list[str]:
    """``nights`` synthetic nights of every (behavior, size) in ``tests`` around ``base``
    kpps; returns the run ids, oldest first."""
    tests = list(tests)
    hist = {t: history((shapes or {}).get(t, Shape()), nights, cv, reps, base, seed=seed + i)
            for i, t in enumerate(tests)}
    ids = []
    for n in range(1, nights + 1):
        env = {"srperf_commit": f"c{n:04d}",
               "nodes": {"sut": {"kernel": f"6.18.{n}", "forwarder": {"name": "linux"}}}}
        ids.append(write_run(store, testbed, night_date(first, n),
                             {t: hist[t][n - 1] for t in tests}, environment=env,
                             run_id=f"{testbed}-n{n:03d}"))
    return ids


def nightly_runner(values: list[list[float]], first: str, run_prefix: str,
                   test: tuple[str, int] = ("end", 64)) -> Any:
    """A runner for :func:`srperf.nightly.run_nightly` that, on its i-th call, writes
    night i's ``values`` of ``test`` into the nightly's store (no SUT): run
    ``{run_prefix}-NN`` started on night NN from ``first``."""
    from types import SimpleNamespace

    nights = iter(range(len(values)))

    def runner(exp: Any, tb: Any, results_dir: Path) -> Any:
        i = next(nights)
        with ResultStore(results_dir / "srperf.sqlite") as s:
            return SimpleNamespace(run_id=write_run(
                s, tb.name, night_date(first, i + 1), {test: values[i]},
                experiment=exp.name, run_id=f"{run_prefix}-{i + 1:02d}"))
    return runner


__all__ = ["SHAPES", "Shape", "fill", "history", "night_date", "nightly_runner",
           "write_run"]
