"""VPP (FD.io Vector Packet Processing): SRv6 in userspace, configured with ``vppctl``.

Script: ``cfg_scripts/vpp.sh``.  Offers the RFC 8986 behaviors VPP's SRv6
implements (the reduced encapsulations, End.DT46 and NEXT-C-SID are not among
them here), End.B6.Encaps through a policy whose binding SID is the SUT's SID,
and the SR proxies of its plugins (srv6ad, srv6as, srv6am).

VPP is not a Debian package: on an SSH SUT it is installed already (or by
:func:`srperf.provision.srnk.vpp_steps`) and runs with its CLI socket at
``options.cli_sock``; on the virtual testbed srperf starts its own VPP
(:mod:`srperf.testbeds.vpp_sut`) when the testbed names a VPP binary.

What a real VPP (v26.10-rc0, built from its public source, af_packet on the
virtual testbed's veths) did here with the catalogue's checks: ipv6, ipv4,
H.Encaps.L2, End, End.X, End.T, End.DX2/DX4/DX6, End.DT4/DT6 verified.  VPP
decrements the hop limit of the packet it steers before encapsulating it, so
H.Encaps (inner hop limit/TTL - 1), End.B6.Encaps (inner - 1) and H.Insert
(hop limit - 2) differ from the catalogue's expectations, as do End.AD (outer
hop limit - 3) and End.AM (- 3); End.AS with a one-SID static list sends no
SRH at all.  Those fail verification with the field that differs.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings, setting
from srperf.forwarders.base import Forwarder, Prepared
from srperf.forwarders.common_env import addressing_env

WHY_NOT = {
    "h_encaps_red": "VPP's SR policies have no reduced (first SID out of the SRH) mode",
    "h_encaps_l2_red": "VPP's SR policies have no reduced (first SID out of the SRH) mode",
    "end_dt46": "VPP's localsid behaviors have no end.dt46",
    "end_next_csid": "VPP's localsid behaviors have no NEXT-C-SID flavor of End",
    "end_ad_v4": "not configured: vpp.sh's proxies send IPv6 inner packets to the VNF's "
                 "IPv6 address only",
    "end_cache": "the caching proxy is srperf's eBPF dataplane's own",
    "end_cache_v4": "the caching proxy is srperf's eBPF dataplane's own",
    "end_baseline": "SRNK's baseline is plain kernel forwarding (forwarders ebpf, srnk)",
}
"""Catalogue behaviors VPP does not offer, and why (``srperf behaviors``)."""


@dataclass(frozen=True)
class VppOptions(Settings):
    """Experiment ``options`` of the VPP forwarder."""

    cli_sock: str = setting("/run/vpp/cli.sock", "VPP's CLI socket on the SUT (vppctl -s); "
                            "srperf's own VPP on the virtual testbed replaces it",
                            schema={"type": "string", "minLength": 1})
    vppctl: str = setting("vppctl", "the vppctl command on the SUT (a name on PATH or a "
                          "path); srperf's own VPP on the virtual testbed uses the one beside "
                          "its binary", schema={"type": "string", "minLength": 1})
    af_packet: bool = setting(True, "VPP reaches the SUT's ports as af_packet host-interfaces "
                              "(host-<port>); false: VPP owns them under the ports' names",
                              schema={"type": "boolean"})
    rx_mode: str = setting("polling", "rx-mode of VPP's ports (polling, as CSIT runs VPP; "
                           "af_packet's own default is interrupt)",
                           schema={"enum": ["polling", "interrupt", "adaptive"]})
    vnf_count: int = setting(1, "legacy VNF namespaces behind the SUT (proxies)", unit="VNFs",
                             schema={"type": "integer", "minimum": 1, "maximum": 256})
    vnf_mode: str = setting("forward", "what every VNF does with the inner packets",
                            schema={"enum": ["forward", "drop", "sink", "delay", "snat"]})

    def __post_init__(self) -> None:
        if self.rx_mode not in ("polling", "interrupt", "adaptive"):
            raise ValueError(f"rx_mode {self.rx_mode!r}: must be polling, interrupt or adaptive")


def binding_sid(tb: TestbedConfig) -> str:
    """Binding SID of the headend policies: the SUT's SID + 0xb51d (on the SUT, never routed)."""
    return str(ipaddress.IPv6Address(tb.addressing.sid_sut) + 0xB51D)


def vpp_env(tb: TestbedConfig, options: VppOptions) -> dict[str, str]:
    """The ``SRPERF_VPP_*`` variables (and the proxies' ones) vpp.sh reads."""
    a = tb.addressing
    prefix = "host-" if options.af_packet else ""
    return {
        "SRPERF_VPPCTL": options.vppctl,
        "SRPERF_VPP_CLI_SOCK": options.cli_sock,
        "SRPERF_VPP_AF_PACKET": "1" if options.af_packet else "0",
        "SRPERF_VPP_RX_MODE": options.rx_mode,
        "SRPERF_VPP_IN_IF": prefix + tb.sut.in_port.name,
        "SRPERF_VPP_OUT_IF": prefix + tb.sut.out_port.name,
        "SRPERF_VPP_BSID": binding_sid(tb),
        "SRPERF_VNF_IF_PREFIX": a.vnf_if_prefix,
        "SRPERF_VNF_SID_BASE": a.vnf_sid_base,
        "SRPERF_VNF_MAC_PREFIX": a.vnf_mac_prefix,
        "SRPERF_VNF_IP6": a.vnf_ip6,
        "SRPERF_AS_SRC": a.tester_tx_ip6,
        "SRPERF_AS_SEGS": a.sid_next,
    }


class VppForwarder(Forwarder):
    """VPP's SRv6 (vnet/srv6 and the srv6ad/srv6as/srv6am plugins)."""

    name = "vpp"
    script = "vpp.sh"
    description = "FD.io VPP SRv6 (vppctl; af_packet or DPDK ports)"
    behaviors = ("ipv6", "ipv4", "h_insert", "h_encaps", "h_encaps_v4", "h_encaps_l2", "end",
                 "end_x", "end_t", "end_dx2", "end_dx4", "end_dx6", "end_dt4", "end_dt6",
                 "end_b6_encaps", "end_ad", "end_as", "end_am")
    options = VppOptions
    runs_in_netns = True
    version_commands = {"vpp": ("vppctl", "show", "version")}

    def why_not(self, behavior: str) -> str:
        return WHY_NOT.get(behavior) or super().why_not(behavior)

    def env(self, tb: TestbedConfig, options: Settings, prepared: Prepared) -> dict[str, str]:
        assert isinstance(options, VppOptions)
        return {**addressing_env(tb), **vpp_env(tb, options), **prepared.env}

    def vnfs(self, options: Settings) -> tuple[int, str]:
        assert isinstance(options, VppOptions)
        return options.vnf_count, options.vnf_mode


FORWARDER = VppForwarder()

__all__ = ["VppForwarder", "VppOptions", "vpp_env", "binding_sid", "WHY_NOT", "FORWARDER"]
