"""The Linux kernel's own SRv6 (seg6 / seg6local routes, configured with iproute2).

Script: ``cfg_scripts/linux.sh``.  Offers every RFC 8986 behavior of the
catalogue that mainline Linux implements; End.DT4, End.DT6 in VRF mode
(``end_dt6_vrf``) and End.DT46 (``end_dt46``, ``end_dt46_v4``: the same SID measured
with inner IPv6 and IPv4) need a VRF device with ``net.vrf.strict_mode=1``, which a
kernel without ``CONFIG_NET_VRF`` refuses (reported unsupported by the script, with
the kernel's own words).
"""

from __future__ import annotations

from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.forwarders.base import Forwarder


class LinuxForwarder(Forwarder):
    """Mainline Linux seg6/seg6local."""

    name = "linux"
    script = "linux.sh"
    description = "Linux kernel seg6/seg6local (iproute2)"
    behaviors = ("ipv6", "ipv4", "h_insert", "h_encaps", "h_encaps_v4", "h_encaps_l2",
                 "h_encaps_red", "h_encaps_l2_red", "end", "end_x", "end_t", "end_dx2",
                 "end_dx4", "end_dx6", "end_dt4", "end_dt6", "end_dt46", "end_b6_encaps",
                 "end_next_csid", "end_dt6_vrf", "end_dt46_v4")
    runs_in_netns = True
    version_commands = {"iproute2": ("ip", "-V")}

    def why_not(self, behavior: str) -> str:
        from srperf.behaviors import catalogue

        if not self.offers(behavior) and catalogue.get(behavior).kind == "proxy":
            return "mainline Linux has no SR proxy behaviors (forwarders ebpf, srnk, vpp)"
        return super().why_not(behavior)

    def behavior_env(self, tb: TestbedConfig, options: Settings,
                     behavior: str) -> dict[str, str]:
        """A loss-monitoring ingress case with flows (srperf.pm.cases): its per-flow
        H.Encaps routes in ``SRPERF_PM_ROUTES``."""
        from srperf.pm.cases import parse_name

        case = parse_name(behavior)
        if case is None or case.role != "ingress" or case.flows < 1:
            return {}
        return {"SRPERF_PM_ROUTES": case.routes(tb)}


FORWARDER = LinuxForwarder()
