"""Sizes (bytes) of the test frames' headers, the smallest ``packet_size`` of each kind
of inner packet and the counter slot: what the behavior catalogue declares, here
without scapy so that listing or validating behaviors does not import it
(:mod:`srperf.traffic.packets` builds the frames and re-exports these names).
"""

from __future__ import annotations

IPV6_HDR = 40
IPV4_HDR = 20
UDP_HDR = 8
ETH_HDR = 14


def min_size(inner: str) -> int:
    """Smallest ``packet_size`` for an inner packet of kind ``inner`` (ipv6|ipv4|l2)."""
    return {"ipv6": IPV6_HDR + UDP_HDR, "ipv4": IPV4_HDR + UDP_HDR,
            "l2": ETH_HDR + IPV6_HDR + UDP_HDR}[inner]


COUNTER_SLOT = bytes.fromhex("0000ffff0000ffff")
"""The counter slot of a frame whose packets must all differ (counter 0).

The generator writes packet i's 32-bit counter there as two 16-bit words each
followed by its complement (hi, ~hi, lo, ~lo).  A word and its complement add
0xffff to the UDP checksum's sum whatever their value, so the checksum the
frame was built with stays valid for every counter."""
COUNTER_LEN = len(COUNTER_SLOT)

__all__ = ["COUNTER_LEN", "COUNTER_SLOT", "ETH_HDR", "IPV4_HDR", "IPV6_HDR", "UDP_HDR",
           "min_size"]
