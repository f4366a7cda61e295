"""Check that a configured behavior really transforms packets as specified."""

from __future__ import annotations

import logging
from typing import Any, Sequence

from srperf.checks import CheckResult
from srperf.config.model import TestbedConfig
from srperf.drivers.base import TrafficGenerator
from srperf.errors import VerificationError
from srperf.forwarders.deviations import Deviation, undo_all

log = logging.getLogger(__name__)


def verify_behavior(behavior: Any, tb: TestbedConfig, generator: TrafficGenerator,
                    packet_size: int, count: int = 3, timeout_s: float = 2.0,
                    deviations: Sequence[Deviation] = ()) -> str:
    """Send ``count`` test frames, capture what the SUT forwards, check it.

    Returns a one-line description of what was verified; raises
    :class:`VerificationError` saying what was expected and what arrived.
    ``deviations`` are the forwarder's declared differences for this behavior
    (:mod:`srperf.forwarders.deviations`): tried only when the frames as they
    arrived fail the check.
    """
    frame = behavior.build_frame(tb, packet_size)
    captured = generator.capture([bytes(frame)] * count, timeout_s=timeout_s)
    return check_frames(behavior, tb, frame, captured, deviations)


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
