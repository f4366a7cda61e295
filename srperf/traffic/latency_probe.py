"""Latency probe frames of the local generator (srgen ``-p``, see srgen.c).

A probe is the test frame whose innermost UDP payload ends with a 40-byte
trailer: four checksum-neutral slots (the :data:`srperf.traffic.packets.COUNTER_SLOT`
kind: x, ~x, y, ~y) for the trial number, the probe number and the transmit
time (ns, high and low 32 bits), then :data:`PROBE_MAGIC`.  srgen fills the
slots in the copy it sends; the UDP checksum stays valid whatever it writes,
so no forwarder or proxy on the path sees a damaged packet.

The trailer is the frame's *end*: SRv6 behaviors add or remove headers only at
the front (encapsulations, decapsulations, proxies), so the receiver (srgen's
packet socket, behind the XDP sink that passes frames ending with the magic)
finds it at the same place whatever the behavior did.

A probe keeps the test frame's length when its UDP payload has room (40
bytes, and an even length so that the slots lie on 16-bit words of the UDP
checksum); otherwise the payload grows to make room, and the probe is longer
than the test frames (``probe_frame_len`` in a latency trial's figures).
"""

from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from srperf.traffic.packets import COUNTER_SLOT

PROBE_MAGIC = b"SRPLAT01"
"""The last 8 bytes of every probe frame (srgen.c ``PROBE_MAGIC``)."""
TRAILER = COUNTER_SLOT * 4 + PROBE_MAGIC
"""The probe trailer as the builder leaves it (slots at zero)."""
TRAILER_LEN = len(TRAILER)


def probe_frame(frame: bytes) -> bytes:
    """The latency probe made from the test ``frame`` (an Ethernet frame without FCS):
    its innermost UDP payload ends with :data:`TRAILER`, every length and checksum
    recomputed.  Raises ValueError when the frame carries no UDP packet or its UDP
    payload does not run to the end of the frame."""
    pkt = Ether(frame)
    udps = [layer for layer in pkt.iterpayloads() if isinstance(layer, UDP)]
    if not udps:
        raise ValueError("the test frame carries no UDP packet to carry a latency probe")
    udp = udps[-1]
    payload = bytes(udp.payload)
    if not frame.endswith(payload) or len(frame) - len(payload) < 14 + 8:
        raise ValueError("the test frame's UDP payload does not end the frame: a probe "
                         "trailer there would not be the frame's last bytes")
    body = payload[:max(len(payload) - TRAILER_LEN, 0)]
    if len(body) % 2:
        body += b"\0"   # the slots must start on a 16-bit word of the UDP checksum
    udp.remove_payload()
    udp.add_payload(Raw(body + TRAILER))
    for layer in pkt.iterpayloads():
        if isinstance(layer, IPv6):
            layer.plen = None
        elif isinstance(layer, IP):
            layer.len = None
            layer.chksum = None
        elif isinstance(layer, UDP):
            layer.len = None
            layer.chksum = None
    out = bytes(pkt)
    assert out.endswith(TRAILER)
    return out


def _slot(value: int) -> bytes:
    hi, lo = value >> 16 & 0xFFFF, value & 0xFFFF
    return b"".join(w.to_bytes(2, "big") + (w ^ 0xFFFF).to_bytes(2, "big") for w in (hi, lo))


def stamp(probe: bytes, trial: int, number: int, tx_ns: int) -> bytes:
    """``probe`` with its trailer filled as srgen fills it (checksum-neutrally)."""
    if not probe.endswith(PROBE_MAGIC) or len(probe) < TRAILER_LEN:
        raise ValueError("not a probe frame")
    slots = _slot(trial) + _slot(number) + _slot(tx_ns >> 32) + _slot(tx_ns & 0xFFFFFFFF)
    return probe[:-TRAILER_LEN] + slots + PROBE_MAGIC


def read_trailer(frame: bytes) -> tuple[int, int, int] | None:
    """(trial number, probe number, transmit time ns) of a probe frame as srgen sent
    it, or None when ``frame`` does not end with a probe trailer."""
    if len(frame) < TRAILER_LEN or not frame.endswith(PROBE_MAGIC):
        return None
    t = frame[-TRAILER_LEN:]
    values = []
    for i in range(0, 32, 8):
        s = t[i:i + 8]
        if any(s[j] ^ s[j + 2] != 0xFF for j in (0, 1, 4, 5)):
            return None
        values.append(int.from_bytes(s[0:2] + s[4:6], "big"))
    return values[0], values[1], values[2] << 32 | values[3]


__all__ = ["PROBE_MAGIC", "TRAILER", "TRAILER_LEN", "probe_frame", "read_trailer", "stamp"]
