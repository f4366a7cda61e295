"""A MODEL of a SUT and its traffic generator, for tests and search benchmarks.

Nothing this module returns is a measurement: every count comes from a
formula and a seeded random generator.  Trials take no real time unless
``wall_time_scale`` asks for it (to exercise interruptions).  Results of
the model are marked ``extra["simulated"] = True`` so that a report can never
present them as the figures of a real forwarder.

The model, per trial (rates in pps, durations in seconds, counts in packets):

* the SUT's capacity for this trial is ``capacity_pps * (1 + capacity_jitter * z)``
  with ``z`` a standard normal draw (clipped at 1 % of the capacity);
* offered at load ``r`` with capacity ``c``, the SUT loses the share
  ``h(r / c - 1) / (r / c)`` of the packets, where ``h`` is ``max(0, u)`` with
  its corner rounded over ``|u| < smoothing`` (``h(u) = (u + s)^2 / 4s``);
  with ``smoothing = 0`` that is the hard ``loss = 1 - c / r`` above capacity,
  and below ``(1 - smoothing) * c`` the loss is exactly zero;
* lost packets are ``ceil(intended * loss)`` so that any positive loss share
  loses at least one packet;
* with probability ``burst_probability`` a stall of ``burst_duration_s``
  seconds loses every packet offered during it (``r * burst_duration_s``);
* the generator cannot pace above ``generator_max_rate_pps``: such a trial
  offers its packets at that rate instead (the trial stretches), and with
  probability ``generator_limited_probability`` any trial stalls and stretches
  by 5-50 %; both are flagged ``generator_limited`` and the SUT only sees the
  slower rate, which is exactly why a search must not use them.

Every trial draws the same four random numbers in the same order, so a given
seed and sequence of (rate, duration) calls always gives the same trials.
"""

from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import dataclass
from typing import Any, Mapping

from srperf.drivers.base import TrafficGenerator, TrialResult
from srperf.errors import GeneratorError

log = logging.getLogger(__name__)

_KEYS = ("capacity_pps", "smoothing", "capacity_jitter", "burst_probability",
         "burst_duration_s", "generator_limited_probability", "generator_max_rate_pps",
         "wall_time_scale")


@dataclass(frozen=True)
class SimulatedModel:
    """Parameters of the model SUT (see the module docstring for the formulas).

    Attributes:
        capacity_pps: forwarding capacity without noise, pps.
        smoothing: relative half-width of the rounded knee around capacity (0 = hard).
        capacity_jitter: relative standard deviation of the capacity, per trial.
        burst_probability: chance that a trial suffers a loss burst, in [0, 1].
        burst_duration_s: length of a loss burst (a stall), seconds.
        generator_limited_probability: chance that the generator stalls in a trial.
        generator_max_rate_pps: highest rate the modelled generator paces, pps
            (None: unlimited).
        wall_time_scale: wall-clock seconds a trial takes per second of its (model)
            duration: 0 = instant (default), 1 = as long as a real trial.  Only
            timing: it changes no count, so tests can interrupt a model run mid-way.
    """

    capacity_pps: float
    smoothing: float = 0.0
    capacity_jitter: float = 0.0
    burst_probability: float = 0.0
    burst_duration_s: float = 0.0
    generator_limited_probability: float = 0.0
    generator_max_rate_pps: float | None = None
    wall_time_scale: float = 0.0

    def __post_init__(self) -> None:
        _check_number("capacity_pps", self.capacity_pps, low=0.0, low_open=True)
        _check_number("smoothing", self.smoothing, low=0.0, high=0.5, high_open=True)
        _check_number("capacity_jitter", self.capacity_jitter, low=0.0, high=0.5)
        _check_number("burst_probability", self.burst_probability, low=0.0, high=1.0)
        _check_number("burst_duration_s", self.burst_duration_s, low=0.0)
        _check_number("generator_limited_probability", self.generator_limited_probability,
                      low=0.0, high=1.0)
        _check_number("wall_time_scale", self.wall_time_scale, low=0.0, high=10.0)
        if self.generator_max_rate_pps is not None:
            _check_number("generator_max_rate_pps", self.generator_max_rate_pps,
                          low=0.0, low_open=True)

    def loss_share(self, rate_pps: float, capacity_pps: float | None = None) -> float:
        """Share of packets the model SUT loses at ``rate_pps`` (no bursts), in [0, 1)."""
        capacity = self.capacity_pps if capacity_pps is None else capacity_pps
        if rate_pps <= 0:
            return 0.0
        x = rate_pps / capacity
        return _knee(x - 1.0, self.smoothing) / x

    def true_pdr(self, threshold_pct: float) -> float:
        """Exact highest rate whose loss share is <= ``threshold_pct`` %, pps, without noise.

        This is the model's answer a search should find; NDR is ``threshold_pct = 0``.
        """
        if not 0.0 <= threshold_pct < 100.0:
            raise ValueError(f"loss threshold {threshold_pct!r} % is outside [0, 100)")
        t = threshold_pct / 100.0
        s = self.smoothing
        if t == 0.0:
            return (1.0 - s) * self.capacity_pps
        # loss(x) = knee(x - 1) / x increases with x: bisect on x = rate / capacity.
        lo, hi = 1.0 - s, 2.0
        while _knee(hi - 1.0, s) / hi <= t:
            hi *= 2.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if _knee(mid - 1.0, s) / mid <= t:
                lo = mid
            else:
                hi = mid
        return lo * self.capacity_pps


def _knee(u: float, s: float) -> float:
    """max(0, u) with the corner rounded over |u| < s (C1-continuous)."""
    if u <= -s:
        return 0.0
    if u >= s:
        return u
    return (u + s) ** 2 / (4.0 * s)


def _check_number(key: str, value: Any, low: float | None = None, high: float | None = None,
                  low_open: bool = False, high_open: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"simulated SUT: {key} = {value!r} must be a number")
    if math.isinf(value):
        raise ValueError(f"simulated SUT: {key} = {value!r} must be finite")
    if low is not None and (value < low or (low_open and value == low)):
        op = ">" if low_open else ">="
        raise ValueError(f"simulated SUT: {key} = {value!r} must be {op} {low:g}")
    if high is not None and (value > high or (high_open and value == high)):
        op = "<" if high_open else "<="
        raise ValueError(f"simulated SUT: {key} = {value!r} must be {op} {high:g}")


class SimulatedGenerator(TrafficGenerator):
    """Traffic generator driving a MODEL SUT (no packets, no real time).

    Use it to test searches and orchestration; never present its figures as
    measurements.  ``prepare`` is optional (the model ignores frame contents).
    """

    name = "simulated"

    def __init__(self, model: SimulatedModel, seed: int = 0, behavior: str | None = None) -> None:
        self.model = model
        self.seed = seed
        self.behavior = behavior
        self._rng = random.Random(seed)
        self._frame: bytes | None = None
        self.trials_run = 0

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], behavior: str | None = None,
                    seed: int = 0) -> "SimulatedGenerator":
        """Build from a testbed's ``simulated`` mapping.

        ``capacity_pps`` is a number or a mapping ``{default: N, <behavior>: M, ...}``;
        the other keys are the :class:`SimulatedModel` noise parameters.
        Raises ValueError naming the key on an unknown key or a bad value.
        """
        if not isinstance(cfg, Mapping):
            raise ValueError(f"simulated SUT: configuration must be a mapping, not {cfg!r}")
        for key in cfg:
            if key not in _KEYS:
                raise ValueError(f"simulated SUT: unknown key {key!r} (known: {', '.join(_KEYS)})")
        if "capacity_pps" not in cfg:
            raise ValueError("simulated SUT: capacity_pps is required")
        capacity = cfg["capacity_pps"]
        if isinstance(capacity, Mapping):
            if behavior is not None and behavior in capacity:
                key, capacity = f"capacity_pps.{behavior}", capacity[behavior]
            elif "default" in capacity:
                key, capacity = "capacity_pps.default", capacity["default"]
            else:
                raise ValueError(
                    f"simulated SUT: capacity_pps.{behavior or 'default'} is missing "
                    f"(have: {', '.join(map(str, capacity)) or 'nothing'})")
        else:
            key = "capacity_pps"
        _check_number(key, capacity, low=0.0, low_open=True)
        params = {k: v for k, v in cfg.items() if k != "capacity_pps"}
        if params.get("generator_max_rate_pps") is None:
            params.pop("generator_max_rate_pps", None)
        try:
            model = SimulatedModel(capacity_pps=float(capacity), **params)
        except TypeError as exc:  # pragma: no cover - keys are checked above
            raise ValueError(f"simulated SUT: {exc}") from exc
        return cls(model, seed=seed, behavior=behavior)

    def true_pdr(self, threshold_pct: float) -> float:
        """The model's exact PDR at ``threshold_pct`` % without noise, pps."""
        return self.model.true_pdr(threshold_pct)

    def prepare(self, frame: bytes) -> None:
        self._frame = bytes(frame)

    def prepare_distinct(self, frame: bytes, counter_offset: int) -> None:
        """The model sends no frames: distinct or not makes no difference to it."""
        self.prepare(frame)

    def max_rate_pps(self) -> float | None:
        return self.model.generator_max_rate_pps

    def trial(self, rate_pps: float, duration_s: float, *,
              stop_lost: int | None = None) -> TrialResult:
        """One model trial at ``rate_pps`` for ``duration_s`` seconds (instant).

        ``stop_lost`` is ignored: the model's losses happen inside the SUT, not as
        refusals it could count during the trial, so every trial runs whole."""
        if not rate_pps > 0 or not duration_s > 0:
            raise GeneratorError(f"simulated trial needs rate > 0 pps and duration > 0 s, "
                                 f"got {rate_pps!r}, {duration_s!r}")
        m = self.model
        z = self._rng.gauss(0.0, 1.0)
        u_burst = self._rng.random()
        u_stall = self._rng.random()
        u_stretch = self._rng.random()
        self.trials_run += 1

        intended = round(rate_pps * duration_s)
        limited = False
        notes = []
        sut_rate = rate_pps
        if m.generator_max_rate_pps is not None and rate_pps > m.generator_max_rate_pps:
            sut_rate = m.generator_max_rate_pps
            limited = True
            notes.append(f"model generator paces at most {m.generator_max_rate_pps:.0f} pps")
        if u_stall < m.generator_limited_probability:
            sut_rate /= 1.05 + 0.45 * u_stretch
            limited = True
            notes.append("model generator stalled")
        capacity = m.capacity_pps * max(0.01, 1.0 + m.capacity_jitter * z)
        share = m.loss_share(sut_rate, capacity)
        lost = min(intended, math.ceil(intended * share - 1e-9)) if share > 0 else 0
        burst = u_burst < m.burst_probability and m.burst_duration_s > 0
        if burst:
            lost = min(intended, lost + round(sut_rate * m.burst_duration_s))
        # A model generator that keeps pace takes exactly the intended duration;
        # a limited one stretches the trial by rate / achieved rate.
        elapsed = duration_s * (rate_pps / sut_rate)
        if m.wall_time_scale > 0:
            time.sleep(elapsed * m.wall_time_scale)
        return TrialResult(
            rate_pps=float(rate_pps), duration_s=float(duration_s), intended=intended,
            sent=intended, refused=0, received=intended - lost, elapsed_s=elapsed,
            generator_limited=limited, note="; ".join(notes),
            extra={"simulated": True, "model_capacity_pps": capacity, "model_burst": burst},
        )

    def capture(self, frames: list[bytes], timeout_s: float = 2.0,
                gap_s: float = 0.0) -> list[bytes]:
        raise GeneratorError(
            "the simulated SUT cannot capture packets: verification needs a real SUT")
