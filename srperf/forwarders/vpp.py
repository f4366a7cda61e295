"""VPP (FD.io Vector Packet Processing): SRv6 in userspace, configured with ``vppctl``.

Script: ``cfg_scripts/vpp.sh``.  Offers the RFC 8986 behaviors VPP's SRv6
implements (the reduced encapsulations, End.DT46 and NEXT-C-SID are not among
them here), End.B6.Encaps through a policy whose binding SID is the SUT's SID,
and the SR proxies of its plugins (srv6ad, srv6as, srv6am).

VPP is not a Debian package: on an SSH SUT it is installed already (or by
:func:`srperf.provision.srnk.vpp_steps`) and runs with its CLI socket at
``options.cli_sock``; on the virtual testbed srperf starts its own VPP
(:mod:`srperf.testbeds.vpp_sut`) when the testbed names a VPP binary.

What a real VPP (v26.06, built from its public source, af_packet on the
virtual testbed's veths) emits where the catalogue (Linux-shaped) expects
otherwise is declared in :data:`DEVIATIONS`, each with the text that allows or
forbids it (:mod:`srperf.forwarders.deviations`):

* VPP decrements the hop limit (TTL) of the packet it encapsulates, as RFC 8986
  prescribes for H.Encaps (section 5.1, "Decrement inner IPv6 Hop Limit or IPv4
  TTL", the tunnel entry point of RFC 2473) and End.B6.Encaps (section 4.13, the
  hop limit is decremented before the new header is pushed); Linux leaves the
  inner packet alone and decrements the outer header instead.  Accepted.
* The proxies forward the decapsulated packet to the VNF as End.DX6 does (hop
  limit - 1) and decrement it again before they push the headers back, as the
  SR service programming draft's pseudocode says.  The catalogue expects the
  second decrement (the proxy routes the packet back: inner - 2 with the VNF's
  own); VPP's first one makes End.AD and End.AS inner - 3.  End.AM forwards the same IPv6 packet twice (to the VNF
  and on), so its hop limit drops once per forwarding (RFC 8200 section 3).
  Accepted.
* End.AS with a one-SID list pushes an outer IPv6 header without an SRH, as
  the draft ("IF CACHE.SRH THEN push") and RFC 8986 section 5.1 (one-segment
  policy) allow.  VPP's static list sets Segments Left to the list's length - 1
  and DA to its first SID, so no configuration reproduces the catalogue's SRH
  (VNF SID, next SID; SL 0): a two-SID list would send the packet to another
  segment.  Accepted.
* H.Insert: VPP decrements the hop limit in its insert node and again when it
  forwards (hop limit - 2): one node, one forwarding, two decrements, against
  RFC 8200 section 3 (and the insertion behaviors of the SRv6 network
  programming drafts, which only forward).  A bug: verification fails, naming it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Mapping

from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings, setting
from srperf.forwarders.base import Forwarder, Prepared
from srperf.forwarders.common_env import addressing_env
from srperf.forwarders.deviations import Deviation
from srperf.transports.base import Transport

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

_ENCAP_ENTRY = ("RFC 8986 5.1 H.Encaps: 'Decrement inner IPv6 Hop Limit or IPv4 TTL' "
                "(the tunnel entry point of RFC 2473)")
_PROXY_HOPS = ("draft-ietf-spring-sr-service-programming static/dynamic proxy (pseudocode in "
               "VPP's srv6-as/srv6-ad docs): towards the SF 'Forward the exposed packet on "
               "IFACE-OUT' (a forwarding, RFC 8200 3: hop limit - 1, as End.DX6), back from "
               "it 'Decrement Hop Limit' before the cached headers are pushed")

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("h_encaps", "inner hop limit 1 lower (decremented at encapsulation)",
              _ENCAP_ENTRY, conformant=True, hop_header=1, hop_delta=-1),
    Deviation("h_encaps_v4", "inner TTL 1 lower, checksum updated (decremented at "
              "encapsulation)", _ENCAP_ENTRY, conformant=True, hop_header=1, hop_delta=-1),
    Deviation("end_b6_encaps", "inner hop limit 1 lower (decremented before the push)",
              "RFC 8986 4.13 End.B6.Encaps: 'Decrement IPv6 Hop Limit by 1' before 'Push a "
              "new IPv6 header with its own SRH'", conformant=True, hop_header=1,
              hop_delta=-1),
    Deviation("end_ad", "inner hop limit 1 lower: decremented also on the way to the VNF",
              _PROXY_HOPS, conformant=True, hop_header=1, hop_delta=-1),
    Deviation("end_as", "no SRH on the way back: the static list holds one SID",
              "the proxy draft: 'IF CACHE.SRH THEN Push CACHE.SRH' (the SRH is optional); "
              "RFC 8986 5.1: 'The SRH MAY be omitted when the SRv6 Policy only contains one "
              "segment'", conformant=True, srh_omitted=True),
    Deviation("end_as", "inner hop limit 1 lower: decremented also on the way to the VNF",
              _PROXY_HOPS, conformant=True, hop_header=1, hop_delta=-1),
    Deviation("end_am", "hop limit 1 lower: decremented each time VPP forwards the packet "
              "(to the VNF and on)", "RFC 8200 3: 'Decremented by 1 by each node that "
              "forwards the packet'; the proxy draft's End.AM forwards it on IFACE-OUT, then "
              "looks the restored DA up and forwards it again", conformant=True,
              hop_header=0, hop_delta=-1),
    Deviation("h_insert", "hop limit 2 lower, not 1: decremented by the insert node and "
              "again when forwarded", "RFC 8200 3: 'Decremented by 1 by each node that "
              "forwards the packet'; the network programming drafts' T.Insert only inserts, "
              "sets the DA and forwards", conformant=False,
              hop_header=0, hop_delta=-1),
)
"""Where VPP's frames differ from the catalogue's expectations (see the module text)."""


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
    deviations = DEVIATIONS

    def why_not(self, behavior: str) -> str:
        return WHY_NOT.get(behavior) or super().why_not(behavior)

    def env(self, tb: TestbedConfig, options: Settings, prepared: Prepared) -> dict[str, str]:
        assert isinstance(options, VppOptions)
        return {**addressing_env(tb), **vpp_env(tb, options), **prepared.env}

    def vnfs(self, options: Settings) -> tuple[int, str]:
        assert isinstance(options, VppOptions)
        return options.vnf_count, options.vnf_mode

    def profile_sources(self, sut: Transport, env: Mapping[str, str]) -> list[Any]:
        """``show runtime`` per graph node, cleared before the trial."""
        from srperf.profile.vpp import VppRuntime

        return [VppRuntime(sut, env["SRPERF_VPPCTL"], env["SRPERF_VPP_CLI_SOCK"])]


FORWARDER = VppForwarder()

__all__ = ["VppForwarder", "VppOptions", "vpp_env", "binding_sid", "WHY_NOT", "DEVIATIONS",
           "FORWARDER"]
