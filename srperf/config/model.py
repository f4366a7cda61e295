"""Configuration dataclasses (immutable once loaded).

Rates are pps, durations seconds, sizes bytes.  A rate in a YAML file may be a
number (pps), a string with a unit (``"500kpps"``, ``"1.2Mpps"``) or a share of
the tester's line rate (``"50%"``); :class:`RateSpec` keeps it unresolved until
the testbed's line rate is known.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from srperf.config.rates import RATE_SCHEMA, RateSpec, parse_rate
from srperf.config.settings import Settings, setting
from srperf.config.stateful import GoodputConfig, HttpConfig, PipesCase


@dataclass(frozen=True)
class Addressing:
    """Addresses, SIDs and MACs of the two-node testbed (tester <-> SUT).

    Link 1 joins tester tx and SUT in, link 2 SUT out and tester rx.  Test
    traffic goes from ``src6``/``src4`` to ``dst6``/``dst4``; SIDs under
    ``sid_prefix`` other than the SUT's own route to the tester rx port.
    Defaults use documentation and benchmarking ranges only.
    """

    tester_tx_mac: str = "02:5e:00:00:01:01"
    sut_in_mac: str = "02:5e:00:00:01:02"
    sut_out_mac: str = "02:5e:00:00:02:02"
    tester_rx_mac: str = "02:5e:00:00:02:01"
    tester_tx_ip6: str = "fd00:1::1"
    sut_in_ip6: str = "fd00:1::2"
    sut_out_ip6: str = "fd00:2::2"
    tester_rx_ip6: str = "fd00:2::1"
    link_prefix_len6: int = 64
    link_mtu: int = 1500
    """MTU of both test links (bytes of IP packet): the largest frame any behavior
    sends or emits must fit; a virtual testbed makes its veths with it."""
    tester_tx_ip4: str = "198.51.100.1"
    sut_in_ip4: str = "198.51.100.2"
    sut_out_ip4: str = "192.0.2.2"
    tester_rx_ip4: str = "192.0.2.1"
    link_prefix_len4: int = 24
    src6: str = "2001:2:0:a::1"
    dst6: str = "2001:2:0:b::1"
    dst_prefix6: str = "2001:2:0:b::/64"
    src4: str = "198.18.0.1"
    dst4: str = "198.19.0.1"
    dst_prefix4: str = "198.19.0.0/16"
    sid_sut: str = "fc00:1::1"
    sid_next: str = "fc00:2::1"
    sid_last: str = "fc00:3::1"
    sid_prefix: str = "fc00::/16"
    tunsrc: str = "fd00:2::2"
    table: int = 100
    csid_block: str = "fcbb:bbbb::"
    csid_lblen: int = 32
    csid_nflen: int = 16
    csid_sut: int = 0x100
    csid_next: int = 0x200
    # SR proxies (eBPF dataplane) and their legacy VNFs (srperf/testbeds/vnf.py).
    # VNF i hangs off the SUT by a veth: <vnf_if_prefix><i> in the SUT, eth0 in
    # namespace <prefix>-vnf<i>; only link-local next hops are used on it.
    vnf_sid_base: str = "fc00:1:a::"
    """VNF i's SID is this text followed by i + 1 in hex (fc00:1:a::1 for VNF 0)."""
    vnf_if_prefix: str = "vnf"
    """SUT-side interface of VNF i: vnf0, vnf1, ..."""
    vnf_mac_prefix: str = "02:5e:00:10"
    """First 4 bytes of VNF i's MAC; the last 2 are i (02:5e:00:10:00:00 for VNF 0)."""
    sut_vnf_mac_prefix: str = "02:5e:00:20"
    """First 4 bytes of the MAC of the SUT-side interface of VNF i."""
    vnf_ip6: str = "fe80::2"
    """VNF side of every VNF link (the SUT's next hop for the End baseline)."""
    sut_vnf_ip6: str = "fe80::1"
    """SUT side of every VNF link (the VNF's IPv6 default gateway)."""
    vnf_ip4: str = "169.254.0.2"
    sut_vnf_ip4: str = "169.254.0.1"
    """SUT side of every VNF link (the VNF's IPv4 default gateway)."""
    vnf_snat6: str = "2001:2:0:f::1"
    """Source address an SNAT VNF puts on IPv6 packets (benchmarking range)."""
    vnf_snat4: str = "198.18.255.1"
    """Source address an SNAT VNF puts on IPv4 packets (benchmarking range)."""
    vnf_target: int = 0
    """Index of the VNF the proxy test frames are addressed to."""

    def csid_address(self, *functions: int) -> str:
        """An IPv6 address: the C-SID locator block followed by ``functions``."""
        value = int(ipaddress.IPv6Address(self.csid_block))
        shift = 128 - self.csid_lblen
        for fn in functions:
            shift -= self.csid_nflen
            value |= fn << shift
        return str(ipaddress.IPv6Address(value))

    def csid_prefix(self, function: int) -> str:
        """The SUT's C-SID prefix (block + one function) with its length."""
        return f"{self.csid_address(function)}/{self.csid_lblen + self.csid_nflen}"

    @property
    def csid_block_prefix(self) -> str:
        return f"{self.csid_block}/{self.csid_lblen}"


def vnf_sid(a: Addressing, index: int) -> str:
    """SID of VNF ``index``: ``vnf_sid_base`` followed by index + 1 in hex."""
    return str(ipaddress.IPv6Address(f"{a.vnf_sid_base}{index + 1:x}"))


def _mac(prefix: str, index: int) -> str:
    return f"{prefix}:{(index >> 8) & 0xff:02x}:{index & 0xff:02x}"


def vnf_mac(a: Addressing, index: int) -> str:
    """MAC address of VNF ``index``'s interface."""
    return _mac(a.vnf_mac_prefix, index)


def sut_vnf_mac(a: Addressing, index: int) -> str:
    """MAC address of the SUT-side interface towards VNF ``index``."""
    return _mac(a.sut_vnf_mac_prefix, index)


def sut_vnf_if(a: Addressing, index: int) -> str:
    """Name of the SUT-side interface towards VNF ``index``."""
    return f"{a.vnf_if_prefix}{index}"



@dataclass(frozen=True)
class PortConfig:
    """A network port: its interface name on its host and its MAC address."""

    name: str
    mac: str


@dataclass(frozen=True)
class SshConfig:
    """How to reach a node over SSH (paramiko; YAML: ``sut.transport.ssh``).

    Host keys are always checked: the node's key must be in ``known_hosts``
    (when unset, ``~/.ssh/known_hosts``).  With ``key_file`` unset, paramiko
    tries ``~/.ssh/id_*``.  Files are resolved to absolute paths at load time.
    """

    host: str
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    known_hosts: str | None = None
    tmp_base: str = "/tmp"
    """Where the node's private working directory is made (``mktemp -d``)."""
    timeout_s: float = 30.0
    """Connection timeout: TCP connect, SSH banner and authentication."""
    proxy_command: str | None = None
    """OpenSSH ``ProxyCommand``: run by ``/bin/sh`` on this host, its stdin and stdout
    carry the SSH connection; ``%h`` host, ``%p`` port, ``%r`` user, ``%%`` a percent.
    Example: ``ssh -W %h:%p jump.example`` or ``ip netns exec mgmt nc %h %p``."""
    keepalive_s: int = 5
    """Seconds between SSH keepalives when idle.  Keeps sessions through NAT and
    firewalls during long trials, and bounds how long a dropped session goes
    unnoticed behind a proxy that does not pass the end of the connection on
    (netcat keeps running until it next writes)."""

    @property
    def where(self) -> str:
        return f"ssh {self.user}@{self.host}:{self.port}"


def expand_proxy_command(template: str, host: str, port: int, user: str) -> str:
    """``template`` with OpenSSH's ``%h``/``%p``/``%r``/``%%`` substituted (values
    quoted for the shell); ValueError on any other ``%`` sequence."""
    import shlex

    values = {"h": shlex.quote(host), "p": str(port), "r": shlex.quote(user), "%": "%"}
    out = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        token = template[i + 1:i + 2]
        if token not in values:
            raise ValueError(f"unknown token %{token} (known: %h %p %r %%)")
        out.append(values[token])
        i += 2
    return "".join(out)


@dataclass(frozen=True)
class TransportConfig:
    """How CFG scripts reach the SUT: a local network namespace or SSH."""

    kind: str = "netns"
    ssh: SshConfig | None = None


@dataclass(frozen=True)
class TesterConfig:
    """The traffic generator side."""

    driver: str = "linux"
    tx: PortConfig = PortConfig("t0", Addressing.tester_tx_mac)
    rx: PortConfig = PortConfig("t1", Addressing.tester_rx_mac)
    line_rate_pps: float = 1_500_000.0
    cpu: int | None = 0
    options: dict[str, Any] = field(default_factory=dict)
    netns: str | None = None
    """ssh testbeds: the local network namespace holding the tester's ports (None:
    this host's own); a virtual testbed's tester is always ``<prefix>-tester``."""
    transport: "TransportConfig | None" = None
    """ssh testbeds: how the tester host is reached when it is not this host (a TRex
    host over SSH); None: ``netns`` on this host."""


@dataclass(frozen=True)
class SutConfig:
    """The system under test."""

    forwarder: str = "linux"
    transport: TransportConfig = TransportConfig()
    in_port: PortConfig = PortConfig("s0", Addressing.sut_in_mac)
    out_port: PortConfig = PortConfig("s1", Addressing.sut_out_mac)
    cpu: int | None = 1
    napi_fifo_priority: int = 50
    napi_defer_hard_irqs: int = 0
    """Virtual SUT ingress: NAPI polls to defer re-enabling wake-ups (0: off)."""
    gro_flush_timeout_us: float = 0.0
    """Virtual SUT ingress: coalescing timer with the above, microseconds
    (like NIC interrupt moderation; cuts the sender's cost of waking the SUT)."""
    vpp_binary: str | None = None
    """Virtual SUT with forwarder vpp: path of the VPP binary srperf starts in the SUT
    namespace (srperf/testbeds/vpp_sut.py); None: no VPP of srperf's own."""


STEERINGS = ("host",)
"""Where a stateful run's SRv6 steering is set (``endpoints.steering``): ``host``, on
the endpoint hosts themselves (H.Encaps on the client towards the SUT's SIDs, on the
server back; End.DT6 on each)."""


@dataclass(frozen=True)
class EndpointHostConfig:
    """One stateful endpoint host of an ssh testbed (YAML: ``endpoints.client`` or
    ``endpoints.server``): a host reached over SSH whose interface ``dev`` is cabled to
    the SUT's in port (client) or out port (server).

    It takes the tester's place on that link: its link address is
    ``addressing.tester_tx_ip6`` (client) or ``tester_rx_ip6`` (server), the SUT's next
    hops, so ``dev`` must have the MAC the SUT's neighbour entry names
    (``tester.tx.mac`` / ``tester.rx.mac``); the measured traffic's addresses are
    ``addressing.src6`` (client) and ``dst6`` (server, and ``dst6 + 1`` for a second
    chain) on its loopback.
    """

    transport: TransportConfig
    """How the host is reached (``kind: ssh``, like ``sut.transport``)."""
    dev: str
    """The host's interface towards the SUT."""
    cpu: int | None = None
    """CPU the endpoint's load processes (iperf3, wrk, the HTTP server) are pinned to
    (None: not pinned)."""


@dataclass(frozen=True)
class EndpointsConfig:
    """The client and server hosts of stateful experiments on an ssh testbed
    (YAML: ``endpoints``)."""

    client: EndpointHostConfig
    server: EndpointHostConfig
    steering: str = "host"
    """Where the SRv6 steering of the measured TCP is set (:data:`STEERINGS`)."""


@dataclass(frozen=True)
class TestbedConfig:
    """A tester and a SUT with the addresses between them."""

    __test__ = False  # not a pytest test class despite its name

    name: str
    kind: str = "virtual"
    prefix: str = "srp"
    tester: TesterConfig = TesterConfig()
    sut: SutConfig = SutConfig()
    addressing: Addressing = Addressing()
    simulated: dict[str, Any] = field(default_factory=dict)
    provision: dict[str, Any] = field(default_factory=dict)
    """The ``provision`` block as written (srperf.config.provision.ProvisionSettings)."""
    endpoints: EndpointsConfig | None = None
    """ssh testbeds: the hosts a stateful experiment's client and server run on (None:
    none named; a stateful experiment is then refused)."""
    kernel: dict[str, Any] = field(default_factory=dict)
    """kernel testbeds: the ``kernel`` block as written (srperf.kernel.target.KernelTarget)."""
    source: str = "<built-in>"

    @property
    def tester_ns(self) -> str:
        return f"{self.prefix}-tester"

    @property
    def sut_ns(self) -> str:
        return f"{self.prefix}-sut"

    def vnf_ns(self, index: int = 0) -> str:
        return f"{self.prefix}-vnf{index}"


ALGORITHMS = ("bisect", "multi", "mlr", "mlrsearch", "mrr", "lossfit")
"""Search algorithms (srperf.search)."""
MAX_TRIAL_S = 3600.0
"""Longest trial, first-phase trial, warm-up and latency trial (s): an hour."""
_DURATION = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TRIAL_S}
MAX_LATENCY_PPS = 10_000_000.0
"""Fastest latency stream (pps); TRex's are a few thousand pps."""


@dataclass(frozen=True)
class SearchConfig(Settings):
    """The search as written in an experiment (rates not yet resolved).

    Each field is declared once here; the experiment schema, the loader and
    the command line's ``--set search.KEY=VALUE`` derive from it.
    """

    algorithm: str = setting("mlr", "search algorithm", schema={"enum": list(ALGORITHMS)})
    thresholds_pct: tuple[float, ...] = setting(
        (0.5,), "loss thresholds, one search goal each (0 = NDR)", unit="%",
        schema={"type": "array", "minItems": 1,
                "items": {"type": "number", "minimum": 0, "exclusiveMaximum": 100}},
        parse=lambda v: tuple(float(t) for t in v))
    trial_duration_s: float = setting(1.0, "duration of a final trial", unit="s",
                                      schema=_DURATION, parse=float)
    initial_trial_duration_s: float = setting(
        0.5, "duration of the first-phase trials (unless set: at most trial_duration_s)",
        unit="s", schema=_DURATION, parse=float)
    accuracy: RateSpec = setting(RateSpec(0.5, percent=True), "bisection width",
                                 unit="pps or % of line rate", schema=RATE_SCHEMA,
                                 parse=parse_rate)
    min_rate: RateSpec = setting(RateSpec(1.0, percent=True), "lowest rate tried",
                                 unit="pps or % of line rate", schema=RATE_SCHEMA,
                                 parse=parse_rate)
    max_rate: RateSpec = setting(RateSpec(100.0, percent=True), "highest rate tried",
                                 unit="pps or % of line rate", schema=RATE_SCHEMA,
                                 parse=parse_rate)
    repeat_near_threshold: int = setting(
        3, "bisect/multi: trials near the threshold repeated (majority decides)",
        unit="trials", schema={"type": "integer", "minimum": 1, "maximum": 100}, parse=int)
    bisect_start: str = setting(
        "range", "bisect: range = bisect [min_rate, max_rate] from the midpoint (SRPerf's "
        "Algorithm 1); mrr = one short probe at max_rate, then the bracket is found around "
        "the rate it delivered; short = Algorithm 1 with 0.2x-duration trials first, then "
        "full trials from that bracket (both: same bounds and accuracy, fewer trial-seconds)",
        schema={"enum": ["range", "mrr", "short"]})
    early_stop: bool = setting(
        True, "bisect/multi: a trial ends as soon as the frames it certainly lost (refused by "
        "the SUT's port) decide it, failing and not near a threshold; it is stored as the "
        "part that ran, marked stopped (drivers that cannot count such losses run it whole)",
        schema={"type": "boolean"})
    warmup_s: float = setting(0.0, "traffic before each trial, not counted", unit="s",
                              schema={"type": "number", "minimum": 0,
                                      "maximum": MAX_TRIAL_S}, parse=float)
    exceed_ratio: float = setting(
        0.5, "mlr: share of trial time allowed to exceed the loss threshold",
        schema={"type": "number", "minimum": 0, "exclusiveMaximum": 1}, parse=float)
    duration_sum_s: float = setting(10.0, "mlr: trial time that decides a load", unit="s",
                                    schema={"type": "number", "exclusiveMinimum": 0,
                                            "maximum": 86400}, parse=float)
    relative_width: float = setting(
        0.01, "mlr/mlrsearch: goal width relative to the rate",
        schema={"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, parse=float)
    mrr_rate: RateSpec | None = setting(None, "mrr: the rate offered (default: max_rate)",
                                        unit="pps or % of line rate", schema=RATE_SCHEMA,
                                        parse=parse_rate)


MAX_LATENCY_FRACTIONS = 20
"""Most latency loads per search: each is a trial of ``duration_s``."""


def latency_fractions(values: Any) -> tuple[float, ...]:
    """The latency loads as a tuple; two whose labels (``50%``: a whole percent, as the
    results and the report name them) would be the same are refused."""
    fractions = tuple(float(v) for v in values)
    labels: dict[str, float] = {}
    for f in fractions:
        label = f"{f:.0%}"
        if label in labels:
            raise ValueError(f"{labels[label]:g} and {f:g} are both the {label} load "
                             "(latency loads are named by whole percent of the PDR)")
        labels[label] = f
    return fractions


@dataclass(frozen=True)
class LatencyConfig(Settings):
    """Latency measured after each search, as CSIT does: a latency stream beside the
    test traffic at fractions of the PDR found (drivers with latency streams: trex, and
    linux through srgen's probes)."""

    enabled: bool = setting(False, "measure latency after each search",
                            schema={"type": "boolean"})
    fractions: tuple[float, ...] = setting(
        (0.1, 0.5, 0.9), "loads of the latency trials, as fractions of the PDR found",
        schema={"type": "array", "minItems": 1, "maxItems": MAX_LATENCY_FRACTIONS,
                "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}},
        parse=latency_fractions)
    duration_s: float = setting(5.0, "duration of each latency trial", unit="s",
                                schema=_DURATION)
    stream_pps: float = setting(1000.0, "rate of the latency stream, within the load",
                                unit="pps", schema={"type": "number", "minimum": 1,
                                                    "maximum": MAX_LATENCY_PPS})
    calibrate: bool = setting(True, "also measure the generator's own latency: the same "
                              "stream over a plain veth pair, once per run at the first "
                              "behavior's latency loads (drivers that can: linux)",
                              schema={"type": "boolean"})


@dataclass(frozen=True)
class ProfileConfig(Settings):
    """A profile trial after each search (srperf.profile): at ``fraction`` of the PDR
    found, the SUT's forwarding CPU (``sut.cpu``) is measured through the SUT's
    transport: busy ns per packet, cycles and instructions per packet where a PMU
    exists, sampled kernel functions, BPF programs' and VPP graph nodes' cost."""

    enabled: bool = setting(False, "run a profile trial after each search",
                            schema={"type": "boolean"})
    fraction: float = setting(0.9, "load of the profile trial, as a fraction of the PDR "
                              "found (its highest loss threshold)",
                              schema={"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                              parse=float)
    duration_s: float = setting(2.0, "duration of the profile trial", unit="s",
                                schema={"type": "number", "exclusiveMinimum": 0,
                                        "maximum": 600}, parse=float)
    top: int = setting(10, "functions kept (the largest shares of the sampled time)",
                       unit="functions",
                       schema={"type": "integer", "minimum": 1, "maximum": 200}, parse=int)
    frequency_hz: int = setting(999, "perf sampling frequency on the forwarding CPU",
                                unit="Hz", schema={"type": "integer", "minimum": 10,
                                                   "maximum": 20000}, parse=int)


@dataclass(frozen=True)
class FlowsConfig(Settings):
    """``traffic.flows``: many flows instead of one, so that a SUT's NIC spreads them over
    its receive queues (RSS) and cores; packet i belongs to flow i % count
    (:mod:`srperf.traffic.flows` says how each field varies)."""

    count: int = setting(1, "flows (1: every packet the same flow)", unit="flows",
                         schema={"type": "integer", "minimum": 1, "maximum": 65536})
    vary: tuple[str, ...] = setting(
        ("src_port", "src_addr", "dst_addr"), "fields that differ from flow to flow (inner "
        "packet's src_port, src_addr, dst_addr; outermost IPv6 outer_src_addr, flow_label; "
        "segment: the SRH's first, already visited segment)",
        schema={"type": "array", "minItems": 1, "uniqueItems": True, "items": {
            "enum": ["src_port", "src_addr", "dst_addr", "outer_src_addr", "flow_label",
                     "segment"]}},
        parse=tuple)


@dataclass(frozen=True)
class TrafficConfig(Settings):
    """``traffic``: what the generator sends beyond the behavior's frame."""

    flows: FlowsConfig = setting(FlowsConfig, "many flows (count, vary)")


@dataclass(frozen=True)
class Experiment:
    """Behaviors to measure on one forwarder, how, and how often."""

    name: str
    forwarder: str = "linux"
    behaviors: tuple[str, ...] = ("ipv6",)
    packet_sizes: tuple[int, ...] = (64,)
    """Frame sizes, bytes; 0 (:data:`srperf.traffic.imix.IMIX_SIZE`) stands for ``imix``."""
    imix: tuple[tuple[int, int], ...] = ()
    """The mix of the ``imix`` packet size: (size in bytes, weight) pairs."""
    search: SearchConfig = SearchConfig()
    latency: LatencyConfig = LatencyConfig()
    profile: ProfileConfig = ProfileConfig()
    traffic: TrafficConfig = TrafficConfig()
    repetitions: int = 1
    testbed: str | None = None
    verify: bool = True
    conformance: str = "off"
    """``required``: each behavior's conformance matrix runs before it is measured, and a
    behavior with a failing case is not measured (``off``: not run)."""
    options: dict[str, Any] = field(default_factory=dict)
    source: str = "<built-in>"
    kind: str = "pdr"
    """What is measured: ``pdr`` (the packet-rate search), ``goodput`` (parallel iperf3
    process pairs through the behavior) or ``http`` (wrk against a static HTTP server);
    the stateful kinds are :mod:`srperf.stateful`."""
    goodput: GoodputConfig = GoodputConfig()
    """The ``goodput:`` block (read when ``kind`` is ``goodput``)."""
    http: HttpConfig = HttpConfig()
    """The ``http:`` block (read when ``kind`` is ``http``)."""
    pm: Any = None
    """The ``pm:`` block (:class:`srperf.config.pm.PmConfig`): loss monitoring on the SUT,
    searched case by case (:mod:`srperf.pm.cases`); None: no loss monitoring."""
    pipes: tuple[PipesCase, ...] = ()
    """The ``pipes:`` block's SRv6Pipes configurations (kind ``http``): when set, the run
    measures these chains (:mod:`srperf.stateful.pipes_plan`), not the testbed's SUT."""
