"""The traffic generator interface every driver implements.

Rates are packets per second (pps) and durations seconds (s) everywhere inside
the code; percent of line rate appears only at the edges (config, CLI, reports).
"""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrialResult:
    """The outcome of one trial: one frame sent at one rate for one duration.

    Every count is a number of packets.  ``intended`` packets are asked for
    (``rate_pps * duration_s``, rounded); the generator offers each of them
    exactly once: it is either ``sent`` (accepted by the tester's tx port) or
    ``refused`` (the path refused it; never retried, counted as lost).
    ``received`` packets arrived at the tester's rx port.

    A trial *stopped early* (asked for with ``stop_lost``, see
    :meth:`TrafficGenerator.trial`) describes the part that ran: ``intended``
    and ``duration_s`` are the packets offered before the stop and their
    scheduled time; ``extra["stopped"]`` keeps the planned ``duration_s`` and
    ``intended`` and the bound, whose crossing made the whole trial's loss
    certain to exceed it.
    """

    rate_pps: float
    """Intended offered load, packets per second."""
    duration_s: float
    """Intended trial duration, seconds."""
    intended: int
    """Packets the trial asked for: round(rate_pps * duration_s)."""
    sent: int
    """Packets the tester's tx port accepted."""
    refused: int
    """Packets the path refused at the tester's tx port (lost, never retried)."""
    received: int
    """Packets counted at the tester's rx port."""
    elapsed_s: float
    """Seconds the generator took to offer all intended packets."""
    generator_limited: bool = False
    """True when the generator could not pace the intended rate within tolerance:
    the trial says nothing about the SUT and a search must not use it."""
    counters_consistent: bool = True
    """True when the generator's own counts matched the kernel counters."""
    note: str = ""
    """Why a trial is flagged, for humans."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Driver- or forwarder-specific figures (e.g. eBPF proxy counters)."""

    @property
    def offered(self) -> int:
        """Packets offered to the path (sent + refused)."""
        return self.sent + self.refused

    @property
    def lost(self) -> int:
        """Packets intended but not received (refused ones included)."""
        return max(self.intended - self.received, 0)

    @property
    def loss_ratio(self) -> float:
        """Lost / intended, in [0, 1]; 0 for an empty trial."""
        return self.lost / self.intended if self.intended else 0.0

    @property
    def delivery_ratio(self) -> float:
        """Received / intended (the SRPerf paper's delivery ratio)."""
        return self.received / self.intended if self.intended else 1.0

    @property
    def offered_rate_pps(self) -> float:
        """Rate at which the generator really offered the packets, pps."""
        return self.offered / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def received_rate_pps(self) -> float:
        """Packets received per second of intended duration."""
        return self.received / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def stopped_early(self) -> bool:
        """True when the generator ended the trial early, its loss bound certainly crossed."""
        return bool(self.extra.get("stopped"))

    @property
    def planned_duration_s(self) -> float:
        """The duration the trial was asked for, seconds (``duration_s`` unless it
        stopped early)."""
        stopped = self.extra.get("stopped")
        return float(stopped["planned_s"]) if stopped else self.duration_s

    @property
    def usable(self) -> bool:
        """True when a search may base a decision on this trial."""
        return not self.generator_limited and self.counters_consistent

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(offered=self.offered, lost=self.lost, loss_ratio=self.loss_ratio,
                    offered_rate_pps=self.offered_rate_pps)
        return data


GENERATOR_RETRY_FLOOR = 0.9
"""Share of the intended rate below which a generator-limited trial counts as
beyond the generator (see :func:`beyond_generator`)."""


def beyond_generator(trial: TrialResult, best_paced_pps: float) -> bool:
    """True when a generator-limited trial asked for more than the generator can do.

    That is: it offered less than :data:`GENERATOR_RETRY_FLOOR` of the intended
    rate, at a rate above ``best_paced_pps`` (the highest rate paced so far).
    Any other limited trial is a transient stall, worth a retry.
    """
    return (trial.generator_limited
            and trial.offered_rate_pps < GENERATOR_RETRY_FLOOR * trial.rate_pps
            and trial.rate_pps > best_paced_pps)


class MixUnsupported(Exception):
    """This generator cannot send a mix of frame sizes (the reason is the message)."""


class DistinctUnsupported(Exception):
    """This generator cannot make every packet distinct (the reason is the message)."""


class FlowsUnsupported(Exception):
    """This generator cannot send many flows (the reason is the message)."""


class LatencyUnsupported(Exception):
    """This generator cannot measure latency (the reason is the message)."""


class TrafficGenerator(abc.ABC):
    """A traffic generator seen from the orchestrator and the search."""

    name: str = "abstract"

    @abc.abstractmethod
    def prepare(self, frame: bytes) -> None:
        """Load the frame (a whole Ethernet frame without FCS) sent by later trials."""

    bidirectional: bool = False
    """True when trials also send :meth:`prepare_reverse`'s frame from the rx port."""

    def prepare_reverse(self, frame: bytes) -> None:
        """Load the reverse direction's frame (bidirectional drivers only)."""
        raise MixUnsupported(f"the {self.name} driver sends in one direction")

    def prepare_distinct(self, frame: bytes, counter_offset: int) -> None:
        """Like :meth:`prepare`, but packet i carries counter i in the counter slot at byte
        ``counter_offset`` of ``frame`` (:func:`srperf.traffic.packets.with_counter_slot`), so
        that no two packets are identical.  Drivers that cannot raise
        :class:`DistinctUnsupported`: they must never send identical copies instead."""
        raise DistinctUnsupported(f"the {self.name} driver sends copies of one frame; "
                                  "per-packet distinct frames are not implemented for it")

    def prepare_flows(self, frame: bytes, flows: Any,
                      counter_offset: int | None = None) -> None:
        """Like :meth:`prepare` (or :meth:`prepare_distinct` with ``counter_offset``), but
        packet i is ``frame`` varied as flow i % ``flows.count``
        (:class:`srperf.traffic.flows.Flows`).  Drivers that cannot raise
        :class:`FlowsUnsupported`: they must never send one flow instead."""
        raise FlowsUnsupported(f"the {self.name} driver sends one flow; many flows are "
                               "not implemented for it")

    def prepare_mix(self, frames: list[tuple[bytes, int]]) -> None:
        """Load a mix of frames (frame, weight): later trials send each frame at
        weight / sum of weights of the rate.  Drivers of one frame size raise
        :class:`MixUnsupported`."""
        raise MixUnsupported(f"the {self.name} driver sends one frame size; IMIX needs "
                             "the trex driver")

    @abc.abstractmethod
    def trial(self, rate_pps: float, duration_s: float, *,
              stop_lost: int | None = None) -> TrialResult:
        """Offer round(rate_pps * duration_s) copies of the prepared frame, paced.

        ``stop_lost`` (None: never): the generator may end the trial as soon as
        more than ``stop_lost`` of its packets are *certainly* lost (a packet the
        path refused), since the whole trial would then have lost more than that
        too; the result is then marked stopped early (see :class:`TrialResult`).
        A driver that cannot count certain losses during a trial ignores it and
        runs the whole trial.
        """

    @abc.abstractmethod
    def capture(self, frames: list[bytes], timeout_s: float = 2.0,
                gap_s: float = 0.0) -> list[bytes]:
        """Send each frame once (``gap_s`` seconds apart, 0: back-to-back) and return the
        frames that arrived at the rx port."""

    def max_rate_pps(self) -> float | None:
        """Highest rate this generator can pace, pps; None if unknown."""
        return None

    def latency_trial(self, rate_pps: float, duration_s: float,
                      stream_pps: float) -> TrialResult:
        """A trial at ``rate_pps`` of which ``stream_pps`` is a latency stream; the
        figures (:class:`srperf.drivers.latency.LatencyStats`, us) go in
        ``extra["latency"]``.  Drivers without latency streams raise
        :class:`LatencyUnsupported`."""
        raise LatencyUnsupported(f"the {self.name} driver has no latency stream")

    def close(self) -> None:
        """Release every resource the generator holds."""

    def __enter__(self) -> "TrafficGenerator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
