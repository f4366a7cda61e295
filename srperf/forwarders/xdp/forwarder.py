"""srperf's SRv6 fast path: chains of XDP programs (HIKe-v0 class, thesis chapter 6).

Sources: ``testbed/dataplanes/xdp`` (one object built with clang,
:mod:`srperf.forwarders.xdp.build`); script: ``cfg_scripts/xdp.sh``; counters:
:mod:`srperf.forwarders.xdp.counters`.  A behavior is a chain named by its steps
(:mod:`srperf.behaviors.fastpath`: ``xdp_fw``, ``xdp_end_fw``, ``xdp_enc_mon_fw``,
``xdp_nop4_fw`` ...); its programs, operands, route and monitored flows reach the
script as ``SRPERF_XDP_*`` variables (:meth:`XdpForwarder.behavior_env`).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Mapping

from srperf.behaviors import fastpath
from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings, setting
from srperf.forwarders.base import Forwarder, Prepared
from srperf.forwarders.common_env import addressing_env
from srperf.forwarders.xdp.programs import program_ids
from srperf.resources import xdp_dir
from srperf.transports.base import Transport

SOURCES = ("xdp_fp.c", "xdp_fp.h", "Makefile")
FW_FLAVOURS = {"static": 0, "fib": 1, "kernel": 2}
"""fw operands (FP_FW_* in xdp_fp.h)."""
MAX_FLOWS = 1024
"""PM_MAX_FLOWS of testbed/dataplanes/pm/pm_common.h."""
STEP_MODES = {"off": 0, "count": 1, "time": 3}
"""options.step_stats -> SRPERF_XDP_STEP_STATS (fp_chain.flags: FP_F_COUNT 1, FP_F_TIME 2)."""


@dataclass(frozen=True)
class XdpOptions(Settings):
    """Experiment ``options`` of the fast path."""

    fw: str = setting("fib", "how every fw step forwards: static (next hop MAC, DEVMAP "
                      "redirect), fib (bpf_fib_lookup on the kernel's tables, redirect), "
                      "kernel (XDP_PASS: the kernel forwards)",
                      schema={"enum": sorted(FW_FLAVOURS)})
    mode: str = setting("auto", "XDP attach mode on the in-port: native (the driver's "
                        "hook), generic (after the skb is built) or auto (generic on a veth "
                        "in-port: a native redirect into a veth is dropped unless the "
                        "tester's side of it runs XDP or GRO; native otherwise)",
                        schema={"enum": ["auto", "native", "generic"]})
    flows: int = setting(1, "mon: flows in the per-flow table (the test traffic's SID "
                         "list and flows - 1 others)", unit="flows",
                         schema={"type": "integer", "minimum": 1, "maximum": MAX_FLOWS})
    mark: bool = setting(False, "mon: colour the packets (alternate marking, colour 0) "
                         "before counting them", schema={"type": "boolean"})
    cost: bool = setting(True, "measure each chain's per-packet cost without a generator "
                         "after its verification (BPF_PROG_RUN of the whole chain over "
                         "the behavior's test frame, cost_runs times) and store it with "
                         "the run (table costs)", schema={"type": "boolean"})
    cost_runs: int = setting(1000, "cost: single BPF_PROG_RUNs per chain (the median is "
                             "the figure)", unit="runs",
                             schema={"type": "integer", "minimum": 10, "maximum": 20000})
    step_stats: str = setting("off", "per-step statistics the programs keep in fp_steps "
                              "(the kernel's BPF statistics count only the dispatcher): "
                              "off, count (each step's runs) or time (runs and ns, "
                              "bpf_ktime_get_ns at every step's end: slower chains)",
                              schema={"enum": ["off", "count", "time"]})

    def __post_init__(self) -> None:
        if self.fw not in FW_FLAVOURS:
            raise ValueError(f"fw {self.fw!r}: must be one of {', '.join(FW_FLAVOURS)}")
        if not 1 <= self.flows <= MAX_FLOWS:
            raise ValueError(f"flows {self.flows}: operand out of range, 1 to {MAX_FLOWS}")
        if not 10 <= self.cost_runs <= 20_000:
            raise ValueError(f"cost_runs {self.cost_runs}: 10 to 20000")
        if self.step_stats not in STEP_MODES:
            raise ValueError(f"step_stats {self.step_stats!r}: must be one of "
                             f"{', '.join(STEP_MODES)}")


def _other_flow(tb: TestbedConfig, i: int) -> list[str]:
    """The SID list (SRH order) of monitored flow ``i`` >= 1 that no test packet has."""
    import ipaddress

    first = ipaddress.IPv6Address(int(ipaddress.IPv6Address(tb.addressing.sid_next)) + (i << 32))
    return [str(first), tb.addressing.sid_next]


def chain_env(tb: TestbedConfig, options: XdpOptions, behavior: str) -> dict[str, str]:
    """The SRPERF_XDP_* variables of chain ``behavior`` (ChainError if it is none)."""
    steps = fastpath.parse_chain(behavior)
    ids = program_ids()
    operands = []
    for step in steps:
        if step.program == "enc":
            operand = step.sids
        elif step.program == "fw":
            operand = FW_FLAVOURS[options.fw]
        elif step.program == "mon":
            operand = 1 if options.mark else 0
        else:
            operand = 0
        operands.append(f"{ids[step.program]}:{operand}")
    flows: list[list[str]] = []
    own = fastpath.flow_sids(tb, steps)
    if own is not None:
        flows = [own] + [_other_flow(tb, i) for i in range(1, options.flows)]
    return {
        "SRPERF_XDP_CHAIN": ",".join(operands),
        "SRPERF_XDP_ROUTE": fastpath.route_prefix(tb, steps),
        "SRPERF_XDP_FLOWS": ";".join(",".join(f) for f in flows) or "none",
        "SRPERF_XDP_MARK": "1" if options.mark else "0",
    }


class XdpForwarder(Forwarder):
    """srperf's SRv6 fast path: an XDP dispatcher tail-calling chains of programs."""

    name = "xdp"
    script = "xdp.sh"
    description = ("srperf's SRv6 fast path: XDP program chains (HIKe-v0 class: nop, end, "
                   "enc, mon, fw, pass), the kernel as the slow path")
    behaviors = fastpath.SHIPPED
    options = XdpOptions
    runs_in_netns = True
    version_commands = {"iproute2": ("ip", "-V"), "bpftool": ("bpftool", "version"),
                        "clang": ("clang", "--version")}
    drop_counters = {
        "hop_limit": ("fw_hop_limit",),
        "segments_left": ("end_sl0",),
        "bad_srh": ("bad_srh", "end_no_srh"),
        "no_srh": ("end_no_srh",),
    }

    def offers(self, behavior: str) -> bool:
        """Every valid chain name, listed or not."""
        if not fastpath.is_chain_name(behavior):
            return False
        try:
            fastpath.parse_chain(behavior)
        except fastpath.ChainError:
            return False
        return True

    def why_not(self, behavior: str) -> str:
        if self.offers(behavior):
            return ""
        if fastpath.is_chain_name(behavior):
            try:
                fastpath.parse_chain(behavior)
            except fastpath.ChainError as exc:
                return str(exc)
        return ("the fast path runs chains of XDP programs named xdp_<step>_..., e.g. "
                "xdp_end_fw (the kernel's own behaviors: forwarder linux)")

    def env(self, tb: TestbedConfig, options: Settings, prepared: Prepared) -> dict[str, str]:
        assert isinstance(options, XdpOptions)
        return {**addressing_env(tb), "SRPERF_XDP_MODE": options.mode,
                "SRPERF_XDP_STEP_STATS": str(STEP_MODES[options.step_stats]),
                "SRPERF_XDP_SIDS": ",".join(fastpath.fast_path_sids(tb)), **prepared.env}

    def behavior_env(self, tb: TestbedConfig, options: Settings,
                     behavior: str) -> dict[str, str]:
        assert isinstance(options, XdpOptions)
        if not fastpath.is_chain_name(behavior):
            return {}
        return chain_env(tb, options, behavior)

    def prepare(self, sut: Transport, options: Settings) -> Prepared:
        """Build the object here, push it and the sources to the SUT."""
        from srperf.forwarders.xdp.build import build_xdp

        obj = sut.push(build_xdp())
        for name in SOURCES:
            sut.push(xdp_dir() / name)
        return Prepared(env={"SRPERF_XDP_OBJ": obj,
                             "SRPERF_XDP_DIR": posixpath.dirname(obj)})

    def counters(self, sut: Transport, script: str,
                 env: Mapping[str, str]) -> dict[str, int] | None:
        from srperf.forwarders.xdp.counters import CountersError, parse_dump

        res = sut.run(["bash", script, "counters"], env=env, timeout=30.0)
        if not res.ok:
            raise CountersError(f"xdp.sh counters on {sut.where} failed: "
                                f"{(res.stderr or res.stdout).strip()}")
        return parse_dump(res.stdout)

    def packet_cost(self, sut: Transport, script: str, env: Mapping[str, str],
                    options: Settings, behavior: str, frame: bytes) -> Any:
        """BPF_PROG_RUN of the attached chain over ``frame``, ``options.cost_runs``
        single runs (:mod:`srperf.forwarders.xdp.cost`); None when ``options.cost`` is
        off.  A failure is a PacketCost with status failed and why (the search goes on)."""
        assert isinstance(options, XdpOptions)
        if not options.cost:
            return None
        from srperf.forwarders.xdp.cost import chain_cost

        return chain_cost(sut, script, env, behavior, frame, options.cost_runs,
                          options.step_stats)

    def profile_sources(self, sut: Transport, env: Mapping[str, str]) -> list[Any]:
        """Each attached program's run time (the kernel's BPF statistics: the
        dispatcher, whose time covers the chain) and the steps' own statistics
        (``options.step_stats``, :mod:`srperf.forwarders.xdp.steps`)."""
        from srperf.forwarders.xdp.steps import FastPathSteps
        from srperf.profile.bpf import BpfPrograms

        mode = {str(v): k for k, v in STEP_MODES.items()}.get(
            env.get("SRPERF_XDP_STEP_STATS", "0"), "off")
        return [BpfPrograms(sut), FastPathSteps(sut, self._script_path(env), env, mode)]

    @staticmethod
    def _script_path(env: Mapping[str, str]) -> str:
        """xdp.sh on the SUT: beside the pushed object (the transport's work dir)."""
        return posixpath.join(env.get("SRPERF_XDP_DIR", "."), "xdp.sh")


FORWARDER = XdpForwarder()

__all__ = ["XdpForwarder", "XdpOptions", "FORWARDER", "chain_env", "program_ids",
           "FW_FLAVOURS"]
