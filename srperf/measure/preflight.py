"""Checks that need an experiment and a testbed together, made before anything starts.

``srperf validate`` and the start of ``srperf run``/``pdr`` call :func:`check_run`;
a problem is a :class:`ConfigError` naming the file, the key and the value.  Nothing
here touches a SUT or a namespace: only files on this host are read (known_hosts).

What is checked, every check driven by the registries so that a new forwarder,
testbed kind or driver gets it too:

* the forwarder can run on the testbed (``Testbed.check_forwarder``);
* the search resolves to pps against the tester's line rate: min below max,
  max not above the line rate (every trial would be generator-limited), and
  the algorithm is known;
* every behavior builds its frame for every packet size, and the largest IP packet
  on either link (sent or emitted) fits ``addressing.link_mtu``;
* the tester's driver exists in this srperf (``srperf.traffic.generators.DRIVERS``);
* what runs on this host exists here (:func:`check_local`): a TRex release
  srperf starts on a local tester holds an executable ``t-rex-64``, is trusted as a whole
  (root runs it: :func:`check_local_programs`), and no other
  testbed's server from it listens on this one's ports where it will, a virtual
  SUT's ``sut.vpp_binary`` is a trusted executable file, and the CPUs named for what
  runs here (``tester.cpu``, and ``sut.cpu`` of a virtual testbed) exist;
* an SSH SUT's host key is in known_hosts (never learnt while connecting).

What only a remote host can tell (a CPU of an SSH SUT, a release on a TRex host
reached over SSH) is checked by ``srperf testbed status``/``up``, naming the key.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from srperf.config.model import Experiment, TestbedConfig
from srperf.errors import ConfigError
from srperf.safety import programs
from srperf.util.host import host_cpus

if TYPE_CHECKING:
    from srperf.behaviors.spec import Behavior

ETH_HDR = 14


def check_testbed(tb: TestbedConfig) -> None:
    """What a testbed alone needs before a run: its driver and its host keys."""
    from srperf.config.applicability import check_testbed as check_rules

    check_rules(tb)   # endpoints that are the SUT, reserved tables, a TRex server
    if not _is_model(tb):
        from srperf.traffic.generators import DRIVERS

        if tb.tester.driver not in DRIVERS:
            raise ConfigError(tb.source, "tester.driver", tb.tester.driver,
                              f"not available in this srperf on a {tb.kind} testbed "
                              f"(drivers: {', '.join(DRIVERS)})")
    ssh = tb.sut.transport.ssh
    if tb.sut.transport.kind == "ssh" and ssh is not None:
        check_host_known(tb.source, ssh.host, ssh.port, ssh.known_hosts)
    if tb.endpoints is not None:
        for side in ("client", "server"):
            host = getattr(tb.endpoints, side).transport.ssh
            if host is not None:
                check_host_known(tb.source, host.host, host.port, host.known_hosts,
                                 f"endpoints.{side}.transport.ssh")
    check_local_generator(tb)
    check_local(tb)
    check_local_programs(tb)
    check_ssh_files(tb)


def check_ssh_files(tb: TestbedConfig) -> None:
    """Each SSH block's ``known_hosts`` (whom root trusts; ``~/.ssh/known_hosts`` when
    unset) and ``key_file`` (as whom root logs in) trusted by the read gate along their
    whole path, as OpenSSH's StrictModes wants: another user who could replace one
    between now and the connection would choose the host root talks to.  The
    transport checks them again just before connecting."""
    from srperf.safety import read_gate

    blocks = [("sut.transport.ssh", tb.sut.transport.ssh)]
    if tb.tester.transport is not None:
        blocks.append(("tester.transport.ssh", tb.tester.transport.ssh))
    if tb.endpoints is not None:
        blocks += [(f"endpoints.{side}.transport.ssh", getattr(tb.endpoints, side).transport.ssh)
                   for side in ("client", "server")]
    for block, ssh in blocks:
        if ssh is None:
            continue
        known = ssh.known_hosts or str(Path("~/.ssh/known_hosts").expanduser())
        for name, path in (("known_hosts", known), ("key_file", ssh.key_file)):
            if path and os.path.lexists(path):
                read_gate.trusted_file(path, tb.source, f"{block}.{name}")


def check_local_programs(tb: TestbedConfig) -> None:
    """What else of the testbed root runs on this host (:mod:`srperf.safety.programs`):
    the TRex client's Python (``tester.options.client_path``), and the whole of a local
    TRex release and a virtual SUT's ``vppctl`` beside ``sut.vpp_binary`` (the same
    checks as when they start)."""
    if _is_model(tb):
        return
    client = tb.tester.options.get("client_path") if tb.tester.driver == "trex" else None
    if client:   # this host's Python, imported by root
        programs.check_trex_client(tb.source, str(client))
    release = tb.tester.options.get("release") if tb.tester.driver == "trex" else None
    if release and tester_is_local(tb) and os.path.lexists(str(release)):
        programs.check_trex_release(tb.source, str(release))
    if tb.sut.vpp_binary and tb.kind == "virtual" and os.path.lexists(tb.sut.vpp_binary):
        programs.check_vpp(tb.source, tb.sut.vpp_binary)


def tester_is_local(tb: TestbedConfig) -> bool:
    """True when the tester runs on this host (virtual; ssh without a tester host)."""
    if tb.kind in ("virtual", "kernel"):
        return True
    tr = tb.tester.transport
    return tb.kind == "ssh" and (tr is None or tr.kind != "ssh")


def check_local(tb: TestbedConfig) -> None:
    """What the testbed names on this host exists here (see the module docstring)."""
    if _is_model(tb):
        return
    cpus = host_cpus()
    where = f"this host has CPUs {_cpu_list(cpus)}"
    local_cpus = [("tester.cpu", tb.tester.cpu)] if tester_is_local(tb) else []
    if tb.kind == "virtual":
        local_cpus.append(("sut.cpu", tb.sut.cpu))
    for key, cpu in local_cpus:
        if cpu is not None and cpu not in cpus:
            raise ConfigError(tb.source, key, cpu, f"no such CPU: {where}")
    if tb.kind == "kernel" and tb.kernel is not None:
        from srperf.kernel.target import KernelTarget, check_host, check_present

        target = KernelTarget.from_mapping(tb.source, tb.kernel)
        check_present(target)
        check_host(target, tb.tester.cpu)
    release = tb.tester.options.get("release") if tb.tester.driver == "trex" else None
    if release and tester_is_local(tb):
        binary = Path(str(release)) / "t-rex-64"
        if not Path(str(release)).is_dir():
            raise ConfigError(tb.source, "tester.options.release", release,
                              "no such directory on this host (a TRex release, e.g. "
                              "/opt/trex/v3.08)")
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise ConfigError(tb.source, "tester.options.release", release,
                              f"{binary} is not an executable file: not a TRex release")
        from srperf.safety import read_gate   # root runs what is in it: root's only

        read_gate.trusted_tree(str(release), tb.source, "tester.options.release")
        check_trex_ports(tb, Path(str(release)))
    vpp = tb.sut.vpp_binary
    if vpp and tb.kind == "virtual":
        path = Path(vpp)
        if not path.is_file():
            raise ConfigError(tb.source, "sut.vpp_binary", vpp, "no such file on this host")
        if not os.access(path, os.X_OK):
            raise ConfigError(tb.source, "sut.vpp_binary", vpp, "not executable")
        from srperf.safety import read_gate   # root runs it: another user's is refused

        read_gate.trusted_file(path, tb.source, "sut.vpp_binary")


def check_trex_ports(tb: TestbedConfig, release: Path) -> None:
    """The ports of the TRex server srperf starts for ``tb`` from ``release`` (on this
    host) are not those of another testbed's server from that release listening in the
    same network namespace (the configs srperf wrote there say which)."""
    from srperf.drivers.trex import TrexOptions
    from srperf.drivers.trex_server import (CONFIG_GLOB, PORT_KEYS, file_key, listen_scope,
                                            port_clashes)
    from srperf.transports.netns import NetnsTransport

    opts = TrexOptions(**tb.tester.options)
    scope = listen_scope(NetnsTransport(tb.tester_ns if tb.kind == "virtual" else None))
    own = f"srperf_trex_cfg.{file_key(tb.name)}.yaml"
    configs = {str(path): path.read_text(errors="replace")
               for path in sorted(release.glob(CONFIG_GLOB)) if path.name != own}
    clashes = port_clashes(tb.name, scope, {k: getattr(opts, k) for k, _ in PORT_KEYS},
                           configs)
    if clashes:
        raise clashes[0].error(tb.source, scope)


def _cpu_list(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def check_host_known(file: str, host: str, port: int, known_hosts: str | None,
                     block: str = "sut.transport.ssh") -> None:
    """A host's key (the SUT's; ``block`` names the key of another) must be in
    known_hosts before any connection is tried."""
    import paramiko

    path = Path(known_hosts) if known_hosts else Path("~/.ssh/known_hosts").expanduser()
    key = f"{block}.known_hosts"
    if not path.is_file():
        raise ConfigError(file, key, known_hosts,
                          f"{path} does not exist: host keys are always checked; "
                          f"run 'srperf testbed trust {file}' to add the host's key")
    keys = paramiko.HostKeys()
    try:
        keys.load(str(path))
    except (OSError, paramiko.SSHException, paramiko.hostkeys.InvalidHostKey, ValueError,
            UnicodeDecodeError) as exc:   # ~/.ssh/known_hosts is not checked at load time
        raise ConfigError(file, key, str(path),
                          f"not a known_hosts file ({type(exc).__name__})") from None
    name = host if port == 22 else f"[{host}]:{port}"
    if keys.lookup(name) is None:
        raise ConfigError(file, f"{block}.host", host,
                          f"no host key for {name} in {path}; check its fingerprint "
                          f"and add it with 'srperf testbed trust {file}'")


def _is_model(tb: TestbedConfig) -> bool:
    from srperf.testbeds import registry as testbeds

    return testbeds.KINDS[tb.kind].is_model


def check_run(exp: Experiment, tb: TestbedConfig) -> None:
    """Everything a run of ``exp`` on ``tb`` needs that the files allow to check."""
    from srperf.forwarders import registry as forwarders
    from srperf.testbeds import registry as testbeds

    check_testbed(tb)
    testbeds.create(tb).check_forwarder(forwarders.get(exp.forwarder), exp.source)
    check_stateful(exp, tb)
    from srperf.config.applicability import check_steering

    check_steering(exp, tb)
    check_search(exp, tb)
    check_latency(exp, tb)
    check_frames(exp, tb)
    check_engine(exp, tb)
    check_programs(exp, tb)


def check_programs(exp: Experiment, tb: TestbedConfig) -> None:
    """A program the experiment names by path that root runs on this host: VPP's
    ``options.vppctl`` when the SUT is a namespace here (virtual testbed without
    srperf's own VPP, whose vppctl is the one beside ``sut.vpp_binary``)."""
    if exp.forwarder == "vpp" and tb.kind == "virtual" and tb.sut.vpp_binary is None:
        programs.check_program(exp.source, "options.vppctl",
                               str(exp.options.get("vppctl", "")))


def check_engine(exp: Experiment, tb: TestbedConfig) -> None:
    """``tester.options.engine: xdp`` where xdpgen cannot send the experiment's traffic
    (a frame above its page limit, of an IMIX's sizes too, srgen's ring mode, a kernel
    without live frames, a TX port that is not a veth: a kernel target's tap included)
    is refused before anything starts (drivers/linux_engine.py; ``auto`` falls back to
    srgen there instead).  The TX port's driver is what the testbed makes (veth, a
    kernel target's tap) or, on an ssh testbed, what ``ethtool -i`` says on this host."""
    from srperf.drivers.linux_engine import (Traffic, engine_asked, kernel_release,
                                             port_driver, xdp_refusal)

    engine = engine_asked(tb.tester.options)
    mix = 0 in exp.packet_sizes
    if tb.tester.driver != "linux" or engine != "xdp" or _is_model(tb):
        return

    if tb.kind == "virtual":
        driver = "veth"      # a virtual testbed's tester ports are veths it makes
    elif tb.kind == "kernel":
        driver = "tun"       # a kernel target's tester ports are taps QEMU reads
    else:
        ns = tb.tester.netns
        driver = port_driver(["ip", "netns", "exec", ns] if ns else [], tb.tester.tx.name)
    sizes = [s for s in exp.packet_sizes if s] + ([s for s, _ in exp.imix] if mix else [])
    why = xdp_refusal(Traffic(frame_bytes=max(sizes) - 4,
                              flows=exp.traffic.flows.count, latency=exp.latency.enabled,
                              send_mode=str(tb.tester.options.get("mode", "mmsg")),
                              tx_driver=driver, mix=mix, kernel=kernel_release()))
    if why is not None:
        raise ConfigError(tb.source, "tester.options.engine", engine,
                          f"{why} ({exp.source} asks for it)")


def check_local_generator(tb: TestbedConfig) -> None:
    """The linux generator (srgen, xdpgen) runs on this host, on its ports or those of
    ``tester.netns``: a tester host reached over SSH (``tester.transport``) is TRex's.
    Refused before anything starts: the traffic would have left from this host's ports
    of those names, with the testbed file saying it came from another host."""
    tr = tb.tester.transport
    if tb.tester.driver != "linux" or tr is None or tr.kind != "ssh" or _is_model(tb):
        return
    host = tr.ssh.host if tr.ssh is not None else None
    raise ConfigError(tb.source, "tester.transport", host,
                      "tester.driver linux runs its generator (srgen or xdpgen) on this host, "
                      "on the ports of this host or of tester.netns, never over SSH: remove "
                      "tester.transport (or use tester.driver trex for a tester host)")


def check_latency(exp: Experiment, tb: TestbedConfig) -> None:
    """Latency asked where it cannot be measured is refused before anything starts (it
    was a run that ended "latency not measured" with exit 0): latency trials run at
    fractions of a PDR, so a stateful experiment or an MRR search has none to run at,
    and the simulated testbed's generator has no latency stream."""
    if not exp.latency.enabled:
        return
    why = None
    if exp.kind != "pdr":
        why = f"latency is measured at fractions of a PDR; a {exp.kind} experiment finds none"
    elif exp.search.algorithm == "mrr":
        why = "latency is measured at fractions of a PDR; an mrr search finds none"
    elif tb.kind == "simulated":
        why = (f"the simulated testbed's generator has no latency stream "
               f"(testbed {tb.source})")
    if why is not None:
        raise ConfigError(exp.source, "latency.enabled", True, why)
    line = tb.tester.line_rate_pps
    if exp.latency.stream_pps > line:
        raise ConfigError(exp.source, "latency.stream_pps", exp.latency.stream_pps,
                          f"above the line rate of testbed {tb.name} ({line:.0f} pps, "
                          "tester.line_rate_pps): the probe stream is sent within the load")


def check_stateful(exp: Experiment, tb: TestbedConfig) -> None:
    """A stateful experiment runs where srperf can place its client and server
    (:attr:`Testbed.makes_endpoints`: namespaces of a virtual testbed, the hosts an ssh
    testbed's ``endpoints`` block names), and SRv6Pipes chains where it makes
    namespaces; refused before anything starts elsewhere, naming the key."""
    from srperf.testbeds import registry as testbeds

    if exp.kind == "pdr":
        return
    testbed = testbeds.create(tb)
    where = tb.source if tb.source != "<built-in>" else tb.name
    if exp.pipes and not testbed.makes_namespaces:
        able = [k for k, cls in testbeds.KINDS.items() if cls.makes_namespaces]
        raise ConfigError(exp.source, "pipes", "configurations",
                          f"SRv6Pipes chains are built in namespaces of this host, on a "
                          f"{' or '.join(able)} testbed; testbed {where!r} is {tb.kind}")
    if testbed.makes_endpoints:
        return
    if tb.kind == "ssh":
        raise ConfigError(exp.source, "kind", exp.kind,
                          f"a {exp.kind} experiment needs client and server hosts: testbed "
                          f"{where!r} names none (add its 'endpoints' block: client and "
                          "server, each with transport.ssh and dev)")
    raise ConfigError(exp.source, "kind", exp.kind,
                      f"a {exp.kind} experiment needs client and server endpoints, which a "
                      f"{tb.kind} testbed ({where!r}) cannot have (a virtual testbed makes "
                      "them; an ssh testbed names them in 'endpoints')")


def check_search(exp: Experiment, tb: TestbedConfig) -> None:
    """The search's rates in pps against the line rate, and its algorithm."""
    from srperf.search import registry as search
    from srperf.search.configured import search_settings

    s, lr = exp.search, tb.tester.line_rate_pps
    if s.algorithm not in search.ALGORITHMS:
        raise ConfigError(exp.source, "search.algorithm", s.algorithm,
                          f"unknown (known: {', '.join(sorted(search.ALGORITHMS))})")
    low, high = s.min_rate.resolve(lr), s.max_rate.resolve(lr)
    where = f"with the line rate of {tb.source} ({lr:g} pps, tester.line_rate_pps)"
    if low >= high:
        raise ConfigError(exp.source, "search.min_rate", str(s.min_rate),
                          f"{low:g} pps is not below search.max_rate = {s.max_rate} "
                          f"= {high:g} pps {where}")
    if high > lr * (1 + 1e-9):
        raise ConfigError(exp.source, "search.max_rate", str(s.max_rate),
                          f"{high:g} pps is above the tester's line rate {lr:g} pps "
                          f"({tb.source}: tester.line_rate_pps): every trial above it "
                          "would be generator-limited")
    for name in ("accuracy", "mrr_rate"):
        spec = getattr(s, name)
        if spec is not None and spec.resolve(lr) > high - low + 1e-9 and name == "accuracy":
            raise ConfigError(exp.source, "search.accuracy", str(spec),
                              f"{spec.resolve(lr):g} pps is wider than the whole range "
                              f"[{low:g}, {high:g}] pps {where}")
        if spec is not None and name == "mrr_rate" and spec.resolve(lr) > lr * (1 + 1e-9):
            raise ConfigError(exp.source, "search.mrr_rate", str(spec),
                              f"{spec.resolve(lr):g} pps is above the line rate {lr:g} pps")
    search_settings(exp, tb)  # everything else the algorithms check


def check_frames(exp: Experiment, tb: TestbedConfig) -> None:
    """Every behavior's frame builds, and its IP packet in and out fits the link MTU
    (SRv6Pipes chains send no frames of their own: nothing to check)."""
    from srperf.behaviors import catalogue

    if exp.pipes:
        return
    mtu = tb.addressing.link_mtu
    sizes = []
    for i, size in enumerate(exp.packet_sizes):
        if size == 0:     # IMIX_SIZE: the mix's sizes
            sizes += [(f"imix[{j}]", s) for j, (s, _) in enumerate(exp.imix)]
        else:
            sizes.append((f"packet_sizes[{i}]", size))
    for key, size in sizes:
        if size > mtu:
            raise ConfigError(exp.source, key, size,
                              f"larger than the link MTU {mtu} bytes of {tb.source} "
                              "(addressing.link_mtu)")
        for name in exp.behaviors:
            beh = catalogue.get(name)
            try:
                largest = _largest_ip(beh, tb, size)
            except ValueError as exc:
                raise ConfigError(exp.source, key, size, f"behavior {name}: {exc}") from None
            if largest > mtu:
                raise ConfigError(exp.source, key, size,
                                  f"behavior {name} puts {largest}-byte IP packets on a link "
                                  f"whose MTU is {mtu} bytes ({tb.source}: "
                                  f"addressing.link_mtu); the largest size that fits is "
                                  f"{size - (largest - mtu)}")


def _largest_ip(beh: Behavior, tb: TestbedConfig, size: int) -> int:
    """Bytes of the largest IP packet ``beh`` puts on either link at ``size``: from header
    sizes when :mod:`srperf.behaviors.frame_lengths` knows them (no scapy), else from the
    frames built (ValueError when the builder refuses the size)."""
    from srperf.behaviors.frame_lengths import ip_lengths

    lengths = ip_lengths(beh, tb, size)
    if lengths is not None:
        return lengths[1]
    frame = beh.build_frame(tb, size)
    largest = len(bytes(frame)) - ETH_HDR
    if beh.expect is not None:
        out = beh.expected(tb, frame).frame
        largest = max(largest, len(bytes(out)) - ETH_HDR)
    return largest


def replace_algorithm(exp: Experiment, algorithm: str | None, file: str) -> Experiment:
    """``exp`` with a command line's algorithm, refused when unknown."""
    if not algorithm:
        return exp
    from srperf.search import registry as search

    if algorithm not in search.ALGORITHMS:
        raise ConfigError(file, "--algorithm", algorithm,
                          f"unknown (known: {', '.join(sorted(search.ALGORITHMS))})")
    return dataclasses.replace(exp, search=dataclasses.replace(exp.search, algorithm=algorithm))


__all__ = ["check_host_known", "check_local", "check_local_programs", "check_ssh_files",
           "host_cpus",
           "tester_is_local",
           "check_run", "check_search", "check_frames", "check_engine", "check_testbed",
           "check_local_generator",
           "replace_algorithm"]
