"""The fast path's behaviors: chains of XDP programs named by what they do.

A fast-path behavior is named ``xdp_`` + its steps joined by ``_``, run in that order
by the XDP dispatcher (``testbed/dataplanes/xdp``, forwarder ``xdp``):

* ``nop`` / ``nop<N>``: one / N programs that do nothing (the chain-depth experiment);
* ``end``: SRv6 End (SL - 1, DA = Segment List[SL]);
* ``enc`` / ``enc<N>``: H.Encaps with the first 2 / N SIDs of :func:`fast_path_sids`
  (``enc`` is the catalogue's H.Encaps policy, :func:`srperf.behaviors.policies.encap_segs`);
* ``mon``: per-flow counters keyed by SID list and colour (``pm_count_packet``);
* ``fw``: hop limit - 1, out to the next hop (flavour: the forwarder's ``fw`` option);
* ``pass``: out unchanged (the upper bound).

``fw`` and ``pass`` end a chain; a chain without them ends in the kernel (XDP_PASS),
which then forwards the packet as it is.  At most :data:`MAX_STEPS` programs, ``enc``
of 1 to :data:`MAX_SIDS` SIDs.  E.g. ``xdp_fw``, ``xdp_end_fw``, ``xdp_enc_mon_fw``,
``xdp_nop4_fw``, ``xdp_enc3_mon_fw``.

The frame a chain receives follows its first SRv6 step: ``end`` first, the catalogue's
End frame (SIDs sid_sut, sid_next, SL 1); ``enc`` first, plain IPv6 to dst6 (as
H.Encaps); ``mon`` first, a packet in transit (SIDs sid_sut, sid_next, SL 0, DA
sid_next: the SUT is a waypoint); otherwise plain IPv6 (as plain forwarding).  The
expected frame is the chain's steps applied one after the other (:func:`model`), which
for ``xdp_fw``, ``xdp_end_fw`` and ``xdp_enc_fw`` is the kernel's frame for ``ipv6``,
``end`` and ``h_encaps`` (tests/test_xdp_chains.py checks that).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from srperf.behaviors.policies import encap_segs
from srperf.behaviors.spec import Behavior, Expectation
from srperf.config.model import TestbedConfig
from srperf.traffic import frame_sizes
from srperf.util.lazy_import import lazy_module

if TYPE_CHECKING:
    from scapy.packet import Packet

P = lazy_module("srperf.traffic.packets")

PREFIX = "xdp_"
PROGRAMS = ("nop", "end", "enc", "mon", "fw", "pass")
"""The step programs (their ids are the order of FP_PROGS in xdp_fp.h)."""
MAX_STEPS = 8
"""FP_MAX_STEPS: programs in one chain."""
MAX_SIDS = 8
"""FP_MAX_SIDS: SIDs one ``enc`` pushes."""
ENDS_CHAIN = ("fw", "pass")
SHIPPED = ("xdp_pass", "xdp_fw", "xdp_end_fw", "xdp_enc_fw", "xdp_mon_fw", "xdp_enc_mon_fw",
           "xdp_end", "xdp_enc", "xdp_nop1_fw", "xdp_nop3_fw", "xdp_nop7_fw")
"""Chains listed by ``srperf behaviors``; any other valid chain name works too."""
_TOKEN = re.compile(r"([a-z]+)([0-9]*)")


class ChainError(ValueError):
    """A behavior name that is no valid chain; the message says why."""


@dataclass(frozen=True)
class Step:
    """One program of a chain; ``sids`` is enc's SID count (0 for the others)."""

    program: str
    sids: int = 0


def is_chain_name(name: str) -> bool:
    return name.startswith(PREFIX)


@functools.lru_cache(maxsize=256)
def parse_chain(name: str) -> tuple[Step, ...]:
    """The steps of chain ``name`` (ChainError naming the wrong part)."""
    if not is_chain_name(name) or name == PREFIX:
        raise ChainError(f"a fast-path chain is named {PREFIX}<step>_<step>...")
    steps: list[Step] = []
    for token in name[len(PREFIX):].split("_"):
        match = _TOKEN.fullmatch(token)
        if match is None or match.group(1) not in PROGRAMS:
            raise ChainError(f"unknown program {token!r} (known: {', '.join(PROGRAMS)}; "
                             f"nop<N> and enc<N> take a number)")
        program, digits = match.groups()
        if digits and program not in ("nop", "enc"):
            raise ChainError(f"program {program!r} takes no number ({token!r})")
        number = int(digits) if digits else None
        if program == "nop":
            if number is not None and not 1 <= number <= MAX_STEPS:
                raise ChainError(f"{token}: operand out of range: 1 to {MAX_STEPS} nops")
            steps += [Step("nop")] * (number or 1)
        elif program == "enc":
            sids = 2 if number is None else number
            if sids < 1:
                raise ChainError(f"{token}: operand out of range: enc pushes 1 to {MAX_SIDS} "
                                 f"SIDs")
            if sids > MAX_SIDS:
                raise ChainError(f"{token}: SID list too long: {sids} SIDs, at most "
                                 f"{MAX_SIDS} (FP_MAX_SIDS)")
            steps.append(Step("enc", sids))
        else:
            steps.append(Step(program))
    if len(steps) > MAX_STEPS:
        raise ChainError(f"a chain of {len(steps)} programs: at most {MAX_STEPS}")
    for step in steps[:-1]:
        if step.program in ENDS_CHAIN:
            raise ChainError(f"{step.program} ends the chain: no program may follow it")
    return tuple(steps)


def fast_path_sids(tb: TestbedConfig) -> list[str]:
    """The SID table of ``enc`` (first SID first): the H.Encaps policy, then more SIDs
    routed to the tester, :data:`MAX_SIDS` in all."""
    from srperf.behaviors.conformance.build import extra_sids

    first = encap_segs(tb)
    more = [s for s in extra_sids(tb, MAX_SIDS + len(first)) if s not in first]
    return (first + more)[:MAX_SIDS]


def input_kind(steps: tuple[Step, ...]) -> str:
    """``endpoint``, ``headend``, ``transit`` or ``plain``: the frame the chain gets."""
    for step in steps:
        if step.program == "end":
            return "endpoint"
        if step.program == "enc":
            return "headend"
        if step.program == "mon":
            return "transit"
    return "plain"


def route_prefix(tb: TestbedConfig, steps: tuple[Step, ...]) -> str:
    """The destination prefix whose fp_routes entry holds the chain."""
    a = tb.addressing
    kind = input_kind(steps)
    if kind == "endpoint":
        return f"{a.sid_sut}/128"
    if kind == "transit":
        return f"{a.sid_next}/128"
    return a.dst_prefix6


def build_frame(tb: TestbedConfig, steps: tuple[Step, ...], size: int) -> "Packet":
    a = tb.addressing
    kind = input_kind(steps)
    if kind == "endpoint":
        outer = P.srv6(a.tester_tx_ip6, [a.sid_sut, a.sid_next], 1, P.NH_IPV6)
        return P.to_sut(tb, outer / P.udp6(tb, size))
    if kind == "transit":
        outer = P.srv6(a.tester_tx_ip6, [a.sid_sut, a.sid_next], 0, P.NH_IPV6)
        return P.to_sut(tb, outer / P.udp6(tb, size))
    return P.to_sut(tb, P.udp6(tb, size))


def _encap(tb: TestbedConfig, ip: "Packet", sids: int) -> "Packet":
    from scapy.layers.inet6 import IPv6

    segs = fast_path_sids(tb)[:sids]
    outer = IPv6(src=tb.addressing.tunsrc, dst=segs[0], hlim=ip.hlim, tc=0, fl=0,
                 nh=P.NH_ROUTING)
    return outer / P.srh(segs, len(segs) - 1, P.NH_IPV6) / ip


def model(tb: TestbedConfig, steps: tuple[Step, ...], sent: "Packet",
          upto: int | None = None) -> "Packet":
    """The frame after steps ``[:upto]`` (all, then the kernel's forwarding when the
    chain does not end in fw/pass) of a chain that received ``sent``."""
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
    from srperf.traffic.packets import Ether

    frame = Ether(bytes(sent))
    ip = frame[IPv6].copy()
    ran = steps if upto is None else steps[:upto]
    for step in ran:
        if step.program == "end":
            srh = ip[IPv6ExtHdrSegmentRouting]
            srh.segleft -= 1
            ip.dst = srh.addresses[srh.segleft]
        elif step.program == "enc":
            ip = _encap(tb, ip, step.sids)
        elif step.program == "pass":
            return frame
        elif step.program == "fw":
            break
    if upto is not None:
        return Ether(src=frame.src, dst=frame.dst) / ip
    ip.hlim -= 1   # fw, or the kernel forwarding at the chain's end
    return P.from_sut(tb, ip)


def flow_sids(tb: TestbedConfig, steps: tuple[Step, ...], size: int = 64) -> list[str] | None:
    """The SRH Segment List (SRH order) the first ``mon`` step sees: the flow key of the
    test traffic; None when the chain has no mon or the packet no SRH there."""
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    for i, step in enumerate(steps):
        if step.program == "mon":
            pkt = model(tb, steps, build_frame(tb, steps, size), upto=i)
            if IPv6ExtHdrSegmentRouting not in pkt:
                return None
            return [str(s) for s in pkt[IPv6ExtHdrSegmentRouting].addresses]
    return None


def _describe(steps: tuple[Step, ...]) -> str:
    words: list[str] = []
    nops = 0
    for s in (*steps, None):
        if s is not None and s.program == "nop":
            nops += 1
            continue
        if nops:
            words.append("nop" if nops == 1 else f"{nops} nop")
            nops = 0
        if s is not None:
            words.append(f"enc({s.sids} SIDs)" if s.program == "enc" else s.program)
    tail = "" if steps[-1].program in ENDS_CHAIN else " -> kernel"
    return "XDP " + " -> ".join(words) + tail


@functools.lru_cache(maxsize=256)
def behavior(name: str) -> Behavior:
    """The catalogue entry of chain ``name`` (ChainError when it is no valid chain)."""
    steps = parse_chain(name)
    kind = {"endpoint": "endpoint", "headend": "headend"}.get(input_kind(steps), "plain")

    def frame(tb: TestbedConfig, size: int) -> "Packet":
        return build_frame(tb, steps, size)

    def expect(tb: TestbedConfig, sent: "Packet") -> Expectation:
        out = model(tb, steps, sent)
        return Expectation(out, f"{_describe(steps)}: the steps applied in order")

    return Behavior(name=name, display_name=_describe(steps), cfg_function="xdp_chain",
                    kind=kind, frame_builder=frame, expect=expect,
                    description=f"fast path: {_describe(steps)}",
                    min_packet_size=frame_sizes.min_size("ipv6"))


BEHAVIORS: tuple[Behavior, ...] = tuple(behavior(n) for n in SHIPPED)

__all__ = ["PREFIX", "PROGRAMS", "MAX_STEPS", "MAX_SIDS", "SHIPPED", "ChainError", "Step",
           "parse_chain", "behavior", "model", "build_frame", "flow_sids", "fast_path_sids",
           "route_prefix", "input_kind", "is_chain_name", "BEHAVIORS"]
