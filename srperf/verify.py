"""Check that a configured behavior really transforms packets as specified."""

from __future__ import annotations

import logging

from srperf.config.model import TestbedConfig
from srperf.drivers.base import TrafficGenerator
from srperf.errors import VerificationError

log = logging.getLogger(__name__)


def verify_behavior(behavior: object, tb: TestbedConfig, generator: TrafficGenerator,
                    packet_size: int, count: int = 3, timeout_s: float = 2.0) -> str:
    """Send ``count`` test frames, capture what the SUT forwards, check it.

    Returns a one-line description of what was verified; raises
    :class:`VerificationError` saying what was expected and what arrived.
    """
    from scapy.layers.l2 import Ether

    frame = behavior.build_frame(tb, packet_size)  # type: ignore[attr-defined]
    captured = generator.capture([bytes(frame)] * count, timeout_s=timeout_s)
    received = [Ether(raw) for raw in captured]
    result = behavior.check(tb, frame, received)  # type: ignore[attr-defined]
    name = getattr(behavior, "name", "?")
    if not result.ok:
        raise VerificationError(f"{name}: verification failed: expected {result.expected}; "
                                f"got {result.got}")
    log.info("%s verified: %s", name, result.expected)
    return result.expected
