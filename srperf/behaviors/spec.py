"""One SRv6 behavior of the catalogue: :class:`Behavior`, forwarder-independent.

A behavior knows the frame the tester sends for it, the CFG function that
configures it on any forwarder, and how to check that the SUT transformed a
frame as specified.  Which forwarders offer it is the forwarders' business
(:mod:`srperf.forwarders`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from srperf.traffic import frame_sizes
from srperf.util.lazy_import import lazy_module
from srperf.measure.checks import CheckResult, Expectation, compare
from srperf.config.model import TestbedConfig

if TYPE_CHECKING:
    from scapy.layers.l2 import Ether
    from scapy.packet import Packet

P = lazy_module("srperf.traffic.packets")
"""Frame building (scapy), imported when a frame is first built or checked."""

__all__ = ["Behavior", "CheckResult", "Expectation", "KINDS", "FrameBuilder", "Expecter",
           "Checker"]

KINDS = frozenset({"plain", "headend", "endpoint", "decap", "proxy"})

FrameBuilder = Callable[[TestbedConfig, int], "Packet"]
Expecter = Callable[[TestbedConfig, "Packet"], Expectation]
Checker = Callable[[TestbedConfig, "Packet", Sequence["Packet | bytes"]], CheckResult]


@dataclass(frozen=True)
class Behavior:
    """One SRv6 behavior (or plain forwarding baseline) to benchmark.

    Give either ``expect`` (the expected frame for a sent frame; the generic
    comparison then does the rest) or a full ``checker``.
    """

    name: str
    """Catalogue key, e.g. ``end_dx6``."""
    display_name: str
    """Name as the standards write it, e.g. ``End.DX6``."""
    cfg_function: str
    """Function of the forwarder's CFG script that configures the behavior."""
    kind: str
    """plain | headend | endpoint | decap | proxy."""
    frame_builder: FrameBuilder
    """(testbed, packet_size bytes) -> the Ether frame the tester sends."""
    expect: Expecter | None = None
    checker: Checker | None = None
    needs_vnf: bool = False
    """True when the SUT needs a VNF namespace/process behind it (SR proxies)."""
    description: str = ""
    min_packet_size: int = field(default=frame_sizes.min_size("ipv6"))
    """Smallest packet_size (bytes) build_frame accepts."""
    reverse_builder: FrameBuilder | None = None
    """(testbed, packet_size) -> the frame the tester's rx port sends back through the
    SUT for bidirectional traffic; None: the behavior works in one direction only."""
    distinct_frames: bool = False
    """True when no two test packets may be identical (a caching proxy drops a packet
    identical to one it still holds): the frame carries a counter slot
    (:func:`srperf.traffic.packets.with_counter_slot`) into which the generator writes a
    per-packet counter, checksum-neutrally."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"behavior {self.name}: kind {self.kind!r} not in {sorted(KINDS)}")
        if (self.expect is None) == (self.checker is None):
            raise ValueError(f"behavior {self.name}: give exactly one of expect/checker")

    @property
    def display(self) -> str:
        """Alias of :attr:`display_name`."""
        return self.display_name

    def build_frame(self, tb: TestbedConfig, packet_size: int = 64) -> Packet:
        """The Ethernet frame the tester's tx port sends (inner packet ``packet_size`` bytes);
        with :attr:`distinct_frames` its counter slot holds counter 0."""
        frame = self.frame_builder(tb, packet_size)
        return P.with_counter_slot(frame) if self.distinct_frames else frame

    def build_reverse_frame(self, tb: TestbedConfig, packet_size: int = 64) -> Packet | None:
        """The reverse direction's frame, or None when the behavior is one-way."""
        return None if self.reverse_builder is None else self.reverse_builder(tb, packet_size)

    def expected(self, tb: TestbedConfig, sent_frame: Packet | bytes) -> Expectation:
        """The frame the SUT must emit for ``sent_frame`` (only with ``expect``)."""
        from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

        if self.expect is None:
            raise NotImplementedError(f"behavior {self.name} checks frames with its own checker")
        return self.expect(tb, Ether(bytes(sent_frame)))

    def check(self, tb: TestbedConfig, sent_frame: Packet | bytes,
              received_frames: Sequence[Packet | bytes]) -> CheckResult:
        """Did the SUT transform ``sent_frame`` into ``received_frames`` as specified?"""
        from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

        sent = Ether(bytes(sent_frame))
        if self.checker is not None:
            return self.checker(tb, sent, received_frames)
        return compare(self.expected(tb, sent), received_frames)
