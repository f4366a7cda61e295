"""SRNK: the SR proxy in the Linux kernel (SRNKv1, SRNKv2) of the SRNK paper.

Script: ``cfg_scripts/srnk.sh`` (the iproute2 commands of the paper's
appendices).  Needs an SRNK kernel and its patched iproute2 on the SUT
(:func:`srperf.provision.srnk.srnk_steps` builds and installs them); on any
other kernel the script reports the behaviors unsupported with iproute2's own
error.  Offers End.AD (with SRNK's ``age``), End.AS and the paper's End
baseline, each in front of legacy VNFs.
"""

from __future__ import annotations

from dataclasses import dataclass

from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings, setting
from srperf.forwarders.base import Forwarder, Prepared
from srperf.forwarders.common_env import addressing_env

WHY_NOT = {
    "end_am": "SRNK implements End.AD and End.AS only (the thesis leaves End.AM to future work)",
    "end_ad_v4": "SRNK's End.AD is configured here with an IPv6 next hop (nh6) only",
    "end_cache": "the caching proxy is srperf's eBPF dataplane's own",
    "end_cache_v4": "the caching proxy is srperf's eBPF dataplane's own",
}
"""Catalogue behaviors SRNK does not offer, and why, besides plain SRv6 (``srperf behaviors``)."""
NOT_A_PROXY = "SRNK is an SR proxy; the kernel's own SRv6 is the forwarder 'linux'"


@dataclass(frozen=True)
class SrnkOptions(Settings):
    """Experiment ``options`` of the SRNK forwarder."""

    version: int = setting(2, "SRNK design: 1 (a policy rule and table per VNF) or 2 (one "
                           "SRv6 extended rule)", schema={"enum": [1, 2]})
    age_s: int = setting(1, "End.AD: SRNK's age, the time between two rewrites of a VNF's "
                         "stored header", unit="s", schema={"type": "integer", "minimum": 0,
                                                             "maximum": 3600})
    table_base: int = setting(1000, "SRNKv1: VNF i's fromVNF routing table is this + i",
                              schema={"type": "integer", "minimum": 1,
                                      "maximum": 4294967000})
    vnf_count: int = setting(1, "legacy VNF namespaces behind the SUT", unit="VNFs",
                             schema={"type": "integer", "minimum": 1, "maximum": 256})
    vnf_mode: str = setting("forward", "what every VNF does with the inner packets",
                            schema={"enum": ["forward", "drop", "sink", "delay", "snat"]})

    def __post_init__(self) -> None:
        if self.version not in (1, 2):
            raise ValueError(f"version {self.version!r}: must be 1 or 2")
        if self.age_s < 0:
            raise ValueError(f"age_s {self.age_s}: must be >= 0")


def srnk_env(tb: TestbedConfig, options: SrnkOptions) -> dict[str, str]:
    """The variables srnk.sh reads besides the addressing ones."""
    a = tb.addressing
    return {
        "SRPERF_VNF_IF_PREFIX": a.vnf_if_prefix,
        "SRPERF_VNF_SID_BASE": a.vnf_sid_base,
        "SRPERF_VNF_IP6": a.vnf_ip6,
        "SRPERF_SRNK_VERSION": str(options.version),
        "SRPERF_SRNK_AGE": str(options.age_s),
        "SRPERF_SRNK_TABLE_BASE": str(options.table_base),
        "SRPERF_AS_SEGS": a.sid_next,
    }


class SrnkForwarder(Forwarder):
    """SRNKv1/SRNKv2 (patched kernel and iproute2)."""

    name = "srnk"
    script = "srnk.sh"
    description = "SRNK: SR proxy in a patched Linux kernel (SRNKv1/v2, patched iproute2)"
    behaviors = ("end_ad", "end_as", "end_baseline")
    options = SrnkOptions
    runs_in_netns = True
    version_commands = {"iproute2": ("ip", "-V"), "kernel": ("uname", "-r")}

    def why_not(self, behavior: str) -> str:
        if behavior in WHY_NOT:
            return WHY_NOT[behavior]
        from srperf.behaviors import catalogue

        if catalogue.get(behavior).kind != "proxy":
            return NOT_A_PROXY
        return super().why_not(behavior)

    def env(self, tb: TestbedConfig, options: Settings, prepared: Prepared) -> dict[str, str]:
        assert isinstance(options, SrnkOptions)
        return {**addressing_env(tb), **srnk_env(tb, options), **prepared.env}

    def vnfs(self, options: Settings) -> tuple[int, str]:
        assert isinstance(options, SrnkOptions)
        return options.vnf_count, options.vnf_mode


FORWARDER = SrnkForwarder()

__all__ = ["SrnkForwarder", "SrnkOptions", "srnk_env", "FORWARDER"]
