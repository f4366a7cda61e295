"""The conformance matrix: per behavior, packet variants and what the specifications say
must come out of each (forwarder-independent, beside the behavior specs).

``cases(name, tb)`` builds the cases of one behavior for a testbed's addressing:
variants of Segments Left (0, 1, Last Entry, Last Entry + 1), of the SID list (1, 2,
8, 16 SIDs), SRH TLVs and padding, an extension header before the SRH, hop limits 1
and 2 (outer and inner), inner IPv6/IPv4/Ethernet, TCP/UDP/ICMP, fragments and frame
sizes up to the link MTU.  Each case's outcome is a :class:`Forward` (the exact
frames), a :class:`Drop` (with its reason) or :class:`NotApplicable`, each with the
section it comes from.  :mod:`srperf.measure.conform` runs them on a SUT; documented
differences of a forwarder from a specification are in :mod:`.findings`.
"""

from __future__ import annotations

from typing import Callable

from srperf.behaviors import fastpath
from srperf.behaviors.conformance import endpoint, headend, proxy
from srperf.behaviors.conformance.build import CaseList
from srperf.behaviors.conformance.model import (DROP_REASONS, Case, Drop, Forward,
                                                NotApplicable, Outcome)
from srperf.config.model import TestbedConfig

def _xdp_fw(tb: TestbedConfig) -> CaseList:
    cl = CaseList(tb, "xdp_fw")
    headend._plain_cases(tb, cl, "ipv6", headend._routed(tb), "RFC 8200 3 (forwarding)", 0)
    return cl


FAST_PATH_TWINS: dict[str, Callable[[TestbedConfig], CaseList]] = {
    "xdp_fw": _xdp_fw,
    "xdp_end_fw": lambda tb: endpoint.end(tb, "xdp_end_fw"),
    "xdp_enc_fw": lambda tb: headend._encaps(tb, "xdp_enc_fw", "ipv6", False,
                                             "RFC 8986 5.1 S01-S06"),
}
"""The fast path's chains that twin a kernel behavior (plain forwarding, End, H.Encaps):
the kernel behavior's cases, so ``srperf conform --forwarder xdp`` checks the chain
against what the specification (and the kernel) makes."""

MATRICES: dict[str, Callable[[TestbedConfig], CaseList]] = {
    **headend.MATRICES, **endpoint.MATRICES, **proxy.MATRICES, **FAST_PATH_TWINS}
"""Behavior name -> the function building its cases."""




NO_MATRIX = {"end_baseline": "a measurement baseline (End run inside an SR-aware VNF), not "
             "a behavior of a specification",
             **{name: "a fast-path chain with no kernel twin (mon, nop, pass or an end in "
                "the kernel): its frames are checked against the chain's model "
                "(srperf.behaviors.fastpath) by srperf run and tests/test_xdp_fastpath.py"
                for name in fastpath.SHIPPED if name not in FAST_PATH_TWINS}}
"""Catalogue entries without a matrix, and why."""


def has_matrix(name: str) -> bool:
    return name in MATRICES


def cases(name: str, tb: TestbedConfig) -> list[Case]:
    """Every case of behavior ``name`` (KeyError: no matrix for it)."""
    if name not in MATRICES:
        why = NO_MATRIX.get(name, "no conformance matrix is written for it")
        raise KeyError(f"behavior {name!r}: {why}")
    return MATRICES[name](tb).cases


__all__ = ["Case", "Forward", "Drop", "NotApplicable", "Outcome", "DROP_REASONS", "MATRICES",
           "NO_MATRIX", "cases", "has_matrix"]
