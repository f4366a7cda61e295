"""SID lists of the SR policies, shared by the forwarders' environment and the checks."""

from __future__ import annotations

from srperf.config.model import TestbedConfig

def encap_segs(tb: TestbedConfig) -> list[str]:
    """SID list of the H.Encaps* policies, first SID first."""
    return [tb.addressing.sid_next, tb.addressing.sid_last]


def insert_segs(tb: TestbedConfig) -> list[str]:
    """SID list of the H.Insert policy (with the original DA the SRH holds 2 SIDs)."""
    return [tb.addressing.sid_next]


def b6_segs(tb: TestbedConfig) -> list[str]:
    """SID list of the End.B6.Encaps policy bound to the SUT's SID."""
    return [tb.addressing.sid_last, tb.addressing.sid_next]
