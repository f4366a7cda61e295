"""Check that a configured behavior really transforms packets as specified."""

from __future__ import annotations

import logging
from typing import Any, Sequence

from srperf.measure.checks import CheckResult
from srperf.config.model import TestbedConfig
from srperf.drivers.base import TrafficGenerator
from srperf.errors import VerificationError
from srperf.forwarders.deviations import Deviation, undo_all

log = logging.getLogger(__name__)


STATEFUL_GAP_S = 0.02
"""Seconds between two frames to a behavior that keeps per-VNF state (proxies), so that
each frame is out of the VNF before the next arrives: the caching proxy drops a packet
whose twin is still inside the VNF (its design), and verification sends twins."""

FLOW_SAMPLE = 4
"""Flows verified of many (traffic.flows): the first, the last and evenly spaced ones."""


def flow_sample(count: int, size: int = FLOW_SAMPLE) -> list[int]:
    """Indices of the flows verified: 0, ``count`` - 1 and evenly spaced ones between."""
    if count <= size:
        return list(range(count))
    return sorted({round(i * (count - 1) / (size - 1)) for i in range(size)})


def verify_behavior(behavior: Any, tb: TestbedConfig, generator: TrafficGenerator,
                    packet_size: int, count: int = 3, timeout_s: float = 2.0,
                    deviations: Sequence[Deviation] = (), flows: Any = None) -> str:
    """Send ``count`` test frames, capture what the SUT forwards, check it.

    With ``flows`` (:class:`srperf.traffic.flows.Flows` of more than one flow), the frames
    of a sample of them (:func:`flow_sample`) are each sent and checked the same way:
    every flow verified is not needed, a sample that spans the varied range is.

    Returns a one-line description of what was verified; raises
    :class:`VerificationError` saying what was expected and what arrived.
    ``deviations`` are the forwarder's declared differences for this behavior
    (:mod:`srperf.forwarders.deviations`): tried only when the frames as they
    arrived fail the check.
    """
    frame = behavior.build_frame(tb, packet_size)
    gap_s = STATEFUL_GAP_S if getattr(behavior, "needs_vnf", False) else 0.0
    if flows is None or flows.count <= 1:
        captured = generator.capture([bytes(frame)] * count, timeout_s=timeout_s, gap_s=gap_s)
        return check_frames(behavior, tb, frame, captured, deviations)
    from scapy.layers.l2 import Ether

    from srperf.traffic.flows import flow_frames

    variants = flow_frames(bytes(frame), flows)
    sample = flow_sample(flows.count)
    what = ""
    for i in sample:
        captured = generator.capture([variants[i]] * count, timeout_s=timeout_s, gap_s=gap_s)
        try:
            what = check_frames(behavior, tb, Ether(variants[i]), captured, deviations)
        except VerificationError as exc:
            raise VerificationError(f"flow {i} of {flows.count}: {exc}") from None
    return (f"{what}; flows {', '.join(map(str, sample))} of {flows.count} "
            f"(varying {', '.join(flows.vary)})")


def check_frames(behavior: Any, tb: TestbedConfig, frame: Any,
                 captured: Sequence[bytes], deviations: Sequence[Deviation] = ()) -> str:
    """The check of :func:`verify_behavior` on frames already captured."""
    from scapy.layers.l2 import Ether

    name = getattr(behavior, "name", "?")
    sent = Ether(bytes(frame))

    def check(frames: Sequence[bytes]) -> CheckResult:
        result: CheckResult = behavior.check(tb, sent, [Ether(raw) for raw in frames])
        return result

    result = check(captured)
    if result.ok:
        log.info("%s verified: %s", name, result.expected)
        return result.expected
    accepted = [d for d in deviations if d.conformant]
    frames, applied = undo_all(accepted, sent, captured)
    if applied and check(frames).ok:
        words = "; ".join(d.describe() for d in applied)
        log.warning("%s verified with the forwarder's declared deviation: %s", name, words)
        return f"{result.expected}, with the forwarder's declared deviation: {words}"
    message = f"{name}: verification failed: expected {result.expected}; got {result.got}"
    bugs = [d for d in deviations if not d.conformant]
    frames, applied = undo_all(accepted + bugs, sent, captured)
    known = [d for d in applied if not d.conformant]
    if known and check(frames).ok:
        message += "; the difference is the forwarder's known deviation: " + "; ".join(
            d.describe() for d in known)
    raise VerificationError(message)
