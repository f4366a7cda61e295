"""Which provisioning steps a testbed's nodes get, from its testbed file.

SUT: the forwarder's tools (``provision.tools``), then tuning
(``provision.tuning``, :mod:`srperf.provision.tuning`).  Tester: the TRex release
(``provision.trex``, a pinned archive whose SHA-256 is checked before it is
unpacked) and the server's ``trex_cfg.yaml`` with the PCI addresses of the
tester's ports, read from the node.
"""

from __future__ import annotations

import shlex

from srperf.config.model import TestbedConfig
from srperf.config.provision import ProvisionSettings, TrexInstall
from srperf.errors import ConfigError
from srperf.provision.srnk import PinnedSource, srnk_steps, vpp_steps
from srperf.provision.steps import Role, Step
from srperf.provision.tuning import Tuning, tuning_steps
from srperf.transports.base import Transport

_APT = "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "

TOOLS: dict[str, tuple[str, str]] = {
    "linux": ("command -v ip && command -v ethtool && ip -V", "iproute2 ethtool"),
    "ebpf": ("command -v ip && command -v tc && command -v ethtool && command -v bpftool "
             "&& command -v clang && test -e /usr/include/bpf/bpf_helpers.h",
             "iproute2 ethtool bpftool clang llvm libbpf-dev"),
}
"""Forwarder -> (check, Debian/Ubuntu packages) of the tools it needs on the SUT."""


def settings(config: TestbedConfig) -> ProvisionSettings:
    return ProvisionSettings.from_mapping(config.provision)


def sut_steps(config: TestbedConfig) -> list[Step]:
    """The SUT's steps: the forwarder's tools, then tuning."""
    s = settings(config)
    steps: list[Step] = []
    fwd = config.sut.forwarder
    if s.tools:
        steps += _tool_steps(config, s, fwd)
    t = s.tuning
    tuning = Tuning(offloads_off=t.offloads_off, rx_queues=t.rx_queues,
                    irq_cpu=t.irq_cpu if t.irq_cpu is not None else config.sut.cpu,
                    stop_irqbalance=t.stop_irqbalance, governor=t.governor,
                    isolate_cpus=t.isolate_cpus, cstates_off=t.cstates_off,
                    turbo_off=t.turbo_off, flow_control_off=t.flow_control_off,
                    hugepages=t.hugepages if fwd == "vpp" else None)
    steps += tuning_steps(Role.SUT, [config.sut.in_port.name, config.sut.out_port.name],
                          tuning)
    return steps


def _tool_steps(config: TestbedConfig, s: ProvisionSettings, fwd: str) -> list[Step]:
    if fwd in TOOLS:
        check, packages = TOOLS[fwd]
        return [Step(name=f"sut: {fwd} tools", role=Role.SUT, check=check,
                     apply=(_APT + packages,), why=f"what the {fwd} CFG script runs")]
    if fwd == "vpp":
        if "apt_source" not in s.vpp:
            raise ConfigError(config.source, "provision.vpp.apt_source", None,
                              "required to install VPP (an APT 'deb ...' line of a VPP "
                              "package repository)")
        return vpp_steps(s.vpp["apt_source"], keyring_url=s.vpp.get("keyring_url"))
    if fwd == "srnk":
        try:
            return srnk_steps(PinnedSource(**s.srnk["kernel"]),
                              PinnedSource(**s.srnk["iproute2"]))
        except (KeyError, TypeError) as exc:
            raise ConfigError(config.source, "provision.srnk", s.srnk or None,
                              f"needs kernel and iproute2 sources ({exc})") from None
    return []


def tester_steps(config: TestbedConfig, node: Transport | None) -> list[Step]:
    """The tester's steps (``node`` reads the ports' PCI addresses; None: a dry run
    shows where they will be read)."""
    trex = settings(config).trex
    if trex.version is None:
        return []
    for key in ("url", "sha256"):
        if not getattr(trex, key):
            raise ConfigError(config.source, f"provision.trex.{key}", getattr(trex, key),
                              f"required with provision.trex.version {trex.version} "
                              "(the archive is pinned by its SHA-256)")
    steps = [_trex_release(trex), _trex_cfg(config, trex, node)]
    pages = settings(config).tuning.hugepages
    if pages is not None:
        steps += tuning_steps(Role.TESTER, [], Tuning(
            offloads_off=False, rx_queues=None, stop_irqbalance=False, governor=None,
            cstates_off=False, turbo_off=False, flow_control_off=False, hugepages=pages))
    return steps


def _trex_release(trex: TrexInstall) -> Step:
    d = shlex.quote(trex.dir)
    archive = shlex.quote(f"{trex.dir}/trex-{trex.version}.tar.gz")
    return Step(
        name=f"tester: TRex {trex.version}", role=Role.TESTER,
        check=f"test -x {d}/{trex.version}/t-rex-64",
        apply=(f"mkdir -p {d}",
               f"curl -fsSL {shlex.quote(trex.url or '')} -o {archive}",
               f"echo {trex.sha256}'  '{archive} | sha256sum -c - || "
               f"{{ rm -f {archive}; exit 1; }}",
               f"tar --no-same-owner --no-same-permissions -xzf {archive} -C {d} "
               f"&& rm -f {archive}"),
        timeout_s=1800, why="the TRex server release, pinned by checksum")


def _trex_cfg(config: TestbedConfig, trex: TrexInstall, node: Transport | None) -> Step:
    from srperf.drivers.trex_cfg import read_pci, render_trex_cfg

    opts = config.tester.options
    ports = [config.tester.tx.name, config.tester.rx.name]
    interfaces = list(opts.get("interfaces") or [])
    if not interfaces:
        try:
            interfaces = [read_pci(node, p) if node is not None else f"<PCI of {p}>"
                          for p in ports]
        except ValueError as exc:
            raise ConfigError(config.source, "tester.options.interfaces", None,
                              str(exc)) from None
    from srperf.drivers.trex_server import dpdk_prefix

    # a dry run without interfaces shows the whole file, the PCI addresses it will
    # read on the tester as placeholders
    text = render_trex_cfg(interfaces, cores=int(opts.get("cores", 1)),
                           low_end=bool(opts.get("low_end", False)),
                           prefix=dpdk_prefix(config.name),
                           zmq_rpc_port=int(opts.get("sync_port", 4501)),
                           zmq_pub_port=int(opts.get("async_port", 4500)),
                           check=node is not None or bool(opts.get("interfaces")))
    cfg = shlex.quote(trex.trex_cfg)
    return Step(name="tester: trex_cfg.yaml", role=Role.TESTER,
                check=f"printf '%s' {shlex.quote(text)} | cmp -s - {cfg}",
                apply=(f"printf '%s' {shlex.quote(text)} > {cfg}",),
                why="the server's ports, from the testbed description")


def plan(config: TestbedConfig, role: Role, node: Transport | None) -> list[Step]:
    """The steps of ``role`` on the testbed."""
    return sut_steps(config) if role is Role.SUT else tester_steps(config, node)


__all__ = ["TOOLS", "plan", "sut_steps", "tester_steps"]
