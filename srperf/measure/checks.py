"""Compare the frames a SUT emitted with the frame a behavior should produce.

A behavior states its expectation as an :class:`Expectation`: the whole
expected Ethernet frame plus the few header fields the forwarder may choose
freely (for example the hop limit, traffic class and flow label of an outer
IPv6 header it creates).  :func:`compare` checks every other byte exactly and,
on a mismatch, names each differing field with the expected and received value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from srperf.util.wording import count

if TYPE_CHECKING:
    from scapy.layers.l2 import Ether
    from scapy.packet import NoPayload, Packet


@dataclass(frozen=True)
class CheckResult:
    """Outcome of a behavior check: what was expected and what arrived."""

    ok: bool
    expected: str
    got: str

    def __str__(self) -> str:
        verdict = "ok" if self.ok else "FAILED"
        return f"{verdict}: expected {self.expected}; got {self.got}"


@dataclass(frozen=True)
class Expectation:
    """The frame a behavior must emit for one sent frame.

    ``free`` lists ``(layer_index, field_name)`` pairs whose value the
    forwarder chooses (layer 0 is Ethernet, 1 the first IP header, ...);
    they are reported but not compared.
    """

    frame: Packet
    description: str
    free: tuple[tuple[int, str], ...] = ()


def layers(pkt: Packet) -> list[Packet]:
    """The layers of ``pkt``, outermost first."""
    from scapy.packet import NoPayload

    out = []
    layer = pkt
    while layer is not None and not isinstance(layer, NoPayload):
        out.append(layer)
        layer = layer.payload
    return out


def _fields(layer: Packet) -> dict[str, object]:
    return {f.name: layer.getfieldval(f.name) for f in layer.fields_desc}


def describe(frame: Packet | bytes) -> str:
    """One line naming a frame's size and layers."""
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    data = bytes(frame)
    return f"{len(data)}-byte frame {Ether(data).summary()}"


ETH_MIN_FRAME = 60
"""Shortest Ethernet frame without FCS; NICs pad shorter frames with zeros."""


def _unpadded(frame: bytes, expected_len: int) -> bytes:
    """``frame`` without the zero padding a NIC adds to reach 60 bytes."""
    if expected_len < len(frame) <= ETH_MIN_FRAME and not any(frame[expected_len:]):
        return frame[:expected_len]
    return frame


def _normalised(expected: Packet, got: Packet, free: Iterable[tuple[int, str]]) -> bytes:
    """Bytes of ``expected`` with the free fields taken from ``got``."""
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    exp = Ether(bytes(expected))
    exp_layers, got_layers = layers(exp), layers(got)
    for index, name in free:
        if index < len(exp_layers) and index < len(got_layers) \
                and type(exp_layers[index]) is type(got_layers[index]):
            exp_layers[index].setfieldval(name, got_layers[index].getfieldval(name))
    return bytes(exp)


def _bytes_diff(expected: bytes, got: bytes) -> str:
    """Where two byte strings first differ, briefly."""
    for i, (e, g) in enumerate(zip(expected, got)):
        if e != g:
            return f"byte {i}: expected 0x{e:02x}, got 0x{g:02x}"
    return f"expected {len(expected)} bytes, got {len(got)}"


def differences(expected: Packet, got: Packet, limit: int = 6) -> list[str]:
    """Human-readable differing fields between two frames, outermost first."""
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    exp_layers = layers(Ether(bytes(expected)))
    got_layers = layers(Ether(bytes(got)))
    diffs: list[str] = []
    counts: dict[type, int] = {}
    for layer in exp_layers:
        counts[type(layer)] = counts.get(type(layer), 0) + 1
    for i, (e, g) in enumerate(zip(exp_layers, got_layers)):
        if type(e) is not type(g):
            diffs.append(f"layer {i}: expected {type(e).__name__}, got {type(g).__name__}")
            break
        # name the layer by class, with its index when the class occurs twice
        label = type(e).__name__ + (f"[{i}]" if counts[type(e)] > 1 else "")
        ef, gf = _fields(e), _fields(g)
        for name, value in ef.items():
            other = gf.get(name)
            if other == value:
                continue
            if isinstance(value, bytes) and isinstance(other, bytes):
                diffs.append(f"{label}.{name} (payload): {_bytes_diff(value, other)}")
            else:
                diffs.append(f"{label}.{name}: expected {value!r}, got {other!r}")
    if len(exp_layers) != len(got_layers) and not any(d.startswith("layer") for d in diffs):
        diffs.append(f"expected {len(exp_layers)} layers, got {len(got_layers)}")
    elen, glen = len(bytes(expected)), len(bytes(got))
    if elen != glen:
        diffs.append(f"length: expected {elen} bytes, got {glen}")
    if not diffs:
        diffs.append("bytes differ outside the decoded fields")
    if len(diffs) > limit:
        diffs = diffs[:limit] + [f"... {len(diffs) - limit} more"]
    return diffs


def compare(expectation: Expectation,
            received: Sequence[Packet | bytes]) -> CheckResult:
    """Check that every received test frame is exactly the expected one.

    Frames without the test signature (neighbour discovery, ARP, MLD, ...)
    are ignored; at least one test frame must have arrived.
    """
    from srperf.traffic.packets import is_test_frame   # scapy, with srperf's layer bindings

    expected_text = f"{expectation.description} ({describe(expectation.frame)})"
    frames = [bytes(f) for f in received]
    tests = [f for f in frames if is_test_frame(f)]
    if not tests:
        others = "; ".join(describe(f) for f in frames[:3])
        return CheckResult(False, expected_text,
                           f"no test frame among {count(len(frames), 'received frame')}"
                           + (f": {others}" if others else ""))
    for frame in tests:
        diffs = mismatch(expectation, frame)
        if diffs:
            return CheckResult(False, expected_text,
                               f"{describe(frame)}; " + "; ".join(diffs))
    return CheckResult(True, expected_text,
                       f"{len(tests)} matching frame(s): {describe(tests[0])}")


def mismatch(expectation: Expectation, frame: bytes) -> list[str]:
    """The differing fields of one received frame, outermost first ([]: it matches)."""
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    raw = _unpadded(frame, len(bytes(expectation.frame)))
    got = Ether(raw)
    normalised = _normalised(expectation.frame, got, expectation.free)
    if normalised == raw:
        return []
    return differences(Ether(normalised), got)
