"""Documented differences of a forwarder from a specification (mainline Linux so far).

A :class:`Finding` names the forwarder, the behaviors and cases it concerns, the
section of the specification and what the forwarder does instead, as an
alternative outcome.  A case that fails its specification gets the status
``finding`` only when what arrived matches that alternative exactly: a finding is
observed, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from scapy.layers.l2 import Ether

from srperf.behaviors.conformance import wire as W
from srperf.behaviors.conformance.model import Case, Drop, Forward, Outcome
from srperf.measure.checks import Expectation
from srperf.config.model import TestbedConfig

Alternative = Callable[[Case, TestbedConfig], "Outcome | None"]


@dataclass(frozen=True)
class Finding:
    """``forwarder`` does ``observed`` where ``section`` says otherwise."""

    forwarder: str
    behaviors: tuple[str, ...]
    cases: tuple[str, ...] | None
    """Case names it concerns (None: every case of the behaviors)."""
    section: str
    observed: str
    alternative: Alternative
    """The outcome the forwarder is documented to give instead (None: not for this case)."""


def map_frames(fn: Callable[[bytes], bytes]) -> Alternative:
    """The case's forwarded frames, each changed by ``fn`` (drop cases: no alternative)."""
    def alternative(case: Case, tb: TestbedConfig) -> Outcome | None:
        if not isinstance(case.outcome, Forward):
            return None
        return Forward(tuple(Expectation(Ether(fn(bytes(e.frame))), e.description, e.free)
                             for e in case.outcome.frames), case.outcome.at_least)
    return alternative


def inner_hop_limit_kept(frame: bytes) -> bytes:
    """An encapsulated frame whose inner IPv6/IPv4 packet kept its hop limit/TTL."""
    lay = W.walk(frame)
    inner = W.ip_packet(frame, lay.upper)
    return frame[:lay.upper] + W.decrement_ip(inner, -1) + frame[lay.upper + len(inner):]


def _encap_inner_kept(family: str, reduced: bool) -> Alternative:
    """H.Encaps*: every frame (hop limit 1 too) encapsulated with its inner hop limit/TTL
    as received."""
    def alternative(case: Case, tb: TestbedConfig) -> Outcome | None:
        from srperf.behaviors.conformance.headend import encap_outcome

        return encap_outcome(tb, family, reduced, decrement=False)(case.frames)
    return alternative


def _insert_before_hbh(case: Case, tb: TestbedConfig) -> Outcome | None:
    from srperf.behaviors.conformance.build import forward_each
    from srperf.behaviors.conformance.headend import insert

    return forward_each(tb, lambda f: insert(tb, f, after_hbh=False),
                        "SRH inserted right after the IPv6 header")(case.frames)


def _dropped(reason: str) -> Alternative:
    return lambda case, tb: Drop(reason)


_LINUX = "Linux 6.18"
FINDINGS: tuple[Finding, ...] = (
    Finding("linux", ("h_encaps_v4",), ("hop_limit_1",),
            "RFC 8986 5.1 S05 with RFC 791 (TTL 1 expires at the headend)",
            f"{_LINUX} encapsulates an IPv4 packet with TTL 1 (TTL kept, outer hop limit "
            "from the route)", _encap_inner_kept("ipv4", False)),
    *(Finding("linux", (name,), None, "RFC 8986 5.1 S05 (decrement the inner hop limit "
              "or TTL)", f"{_LINUX} (seg6 encap) leaves the inner hop limit/TTL as received",
              _encap_inner_kept(family, reduced))
      for name, family, reduced in (("h_encaps", "ipv6", False),
                                    ("h_encaps_red", "ipv6", True),
                                    ("h_encaps_v4", "ipv4", False))),
    Finding("linux", ("h_encaps_l2", "h_encaps_l2_red"), ("hop_limit_1",),
            "RFC 8986 5.3/5.4 (the Ethernet frame is encapsulated as received)",
            f"{_LINUX} steers L2 encapsulation by an IPv6 route: a frame whose IPv6 hop "
            "limit is 1 is dropped (time exceeded)", _dropped("hop_limit")),
    Finding("linux", ("h_insert",), ("ext_hop_by_hop",),
            "RFC 8200 4.1 (a hop-by-hop header immediately follows the IPv6 header)",
            f"{_LINUX} (seg6 inline) inserts the SRH before the hop-by-hop header",
            _insert_before_hbh),
    Finding("linux", ("end_b6_encaps",), None,
            "RFC 8986 4.13 S12 (decrement the hop limit of the received packet)",
            f"{_LINUX} leaves the hop limit of the packet it encapsulates as received",
            map_frames(inner_hop_limit_kept)),
)

_XDP = "srperf's fast path (xdp)"
FINDINGS += (
    Finding("xdp", ("xdp_enc_fw",), None, "RFC 8986 5.1 S05 (decrement the inner hop limit "
            "or TTL)", f"{_XDP}: enc, like Linux's seg6 encap, leaves the inner hop limit as "
            "received (the outer hop limit is the inner's, then fw decrements it)",
            _encap_inner_kept("ipv6", False)),
    Finding("xdp", ("xdp_end_fw",), ("ext_hop_by_hop", "ext_dest_opts"),
            "RFC 8200 4.1 / RFC 8986 4.1 (an extension header before the SRH)",
            f"{_XDP}: end parses only an SRH right after the IPv6 header; a packet with a "
            "hop-by-hop or destination options header before it is dropped (end_no_srh)",
            _dropped("no_srh")),
)
"""Every documented finding."""


def applicable(forwarder: str, case: Case) -> list[Finding]:
    """The findings of ``forwarder`` that concern ``case`` (the first that matches what
    arrived names the case's status, so specific findings come first)."""
    return [f for f in FINDINGS if f.forwarder == forwarder and case.behavior in f.behaviors
            and (f.cases is None or case.name in f.cases)]


__all__ = ["Finding", "FINDINGS", "applicable", "map_frames", "inner_hop_limit_kept"]
