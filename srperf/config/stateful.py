"""The ``goodput:`` and ``http:`` blocks of an experiment file.

Each field is declared once (:func:`srperf.config.settings.setting`): the experiment
schema, the loader and ``--set goodput.KEY=VALUE`` derive from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from srperf.config.settings import SettingError, Settings, setting
from srperf.traffic import tcp_congestion

CALIBRATED = "calibrated"
"""``goodput.streams: calibrated``: use the stream count the last calibration stored."""

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?\s*$")
_SIZE_UNITS = {None: 1, "B": 1, "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3,
               "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
SIZE_SCHEMA: dict[str, Any] = {
    "description": "a size in bytes: a number, or text like '1KB', '100KB', '10MB', "
                   "'64KiB' (KB = 1000 bytes, KiB = 1024)",
    "oneOf": [{"type": "integer", "minimum": 1, "maximum": 1_000_000_000},
              {"type": "string", "pattern": r"^[ ]*[0-9]+(\.[0-9]+)?[ ]*(B|KB|MB|GB|KiB|MiB|GiB)?[ ]*\Z"}],
}
MAX_SIZE_BYTES = 1_000_000_000
"""The largest object a stateful experiment serves (1 GB): larger ones fill the disk."""


def parse_size(value: Any) -> int:
    """Bytes from a number or a text such as ``100KB`` (ValueError otherwise)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_SIZE_BYTES:
            raise ValueError(f"{value!r}: a size must be 1 to {MAX_SIZE_BYTES} bytes")
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size (e.g. 1024, 1KB, 100KB, 10MB)")
    size = round(float(match.group(1)) * _SIZE_UNITS[match.group(2)])
    if size < 1:
        raise ValueError(f"{value!r}: a size must be at least 1 byte")
    if size > MAX_SIZE_BYTES:
        raise ValueError(f"{value!r}: a size must be at most {MAX_SIZE_BYTES} bytes (1GB)")
    return size


def size_label(size: int) -> str:
    """``1KB``, ``100KB``, ``10MB``, or bytes when not a round number."""
    for unit, factor in (("GB", 1000 ** 3), ("MB", 1000 ** 2), ("KB", 1000)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


def _streams(value: Any) -> int | str:
    if value == CALIBRATED:
        return CALIBRATED
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r}: a number of streams (1-64) or 'calibrated'")
    return value


def _distinct_counts(value: Any) -> tuple[int, ...]:
    """A list of counts (segments, chains), each configuration once."""
    out = tuple(int(v) for v in value)
    if len(set(out)) != len(out):
        raise ValueError(f"{list(value)!r}: a count is listed twice")
    return out


@dataclass(frozen=True)
class CalibrationConfig(Settings):
    """How the calibration run (function bypassed: plain IPv6 routing) finds the number of
    parallel streams that saturates the path: streams are added until goodput stops
    growing by more than ``growth_pct``."""

    max_streams: int = setting(16, "most streams tried", unit="streams",
                               schema={"type": "integer", "minimum": 1, "maximum": 64})
    growth_pct: float = setting(5.0, "adding streams must raise goodput by more than this",
                                unit="%", schema={"type": "number", "exclusiveMinimum": 0,
                                                  "maximum": 100}, parse=float)
    duration_s: float = setting(2.0, "duration of each calibration measurement", unit="s",
                                schema={"type": "number", "minimum": 1, "maximum": 600},
                                parse=float)
    repetitions: int = setting(2, "measurements per stream count (their mean is used)",
                               unit="repetitions",
                               schema={"type": "integer", "minimum": 1, "maximum": 20})


@dataclass(frozen=True)
class GoodputConfig(Settings):
    """The ``goodput`` kind: N parallel iperf3 client/server process pairs (one port each;
    not ``-P``: iperf3 is single-threaded) through the behavior, repeated."""

    streams: int | str = setting(
        10, "parallel iperf3 process pairs, or 'calibrated' (the stored calibration's)",
        unit="streams", schema={"oneOf": [{"type": "integer", "minimum": 1, "maximum": 64},
                                          {"const": CALIBRATED}],
                                "description": "a number 1-64 or 'calibrated'"},
        parse=_streams)
    duration_s: float = setting(3.0, "duration of one repetition (iperf3 -t)", unit="s",
                                schema={"type": "number", "minimum": 1, "maximum": 3600},
                                parse=float)
    omit_s: float = setting(0.0, "start of each repetition not counted (iperf3 --omit)",
                            unit="s", schema={"type": "number", "minimum": 0, "maximum": 60},
                            parse=float)
    repetitions: int = setting(10, "repetitions per configuration (mean, CV, 95 % interval)",
                               unit="repetitions",
                               schema={"type": "integer", "minimum": 2, "maximum": 1000})
    segments: tuple[int, ...] = setting(
        (2,), "lengths of the segment list steered through the behavior (one configuration "
        "each; the segments beyond the SUT's and the server's last SID: segment_mode)", unit="segments",
        schema={"type": "array", "minItems": 1,
                "items": {"type": "integer", "minimum": 2, "maximum": 16}},
        parse=_distinct_counts)
    segment_mode: str = setting(
        "carried", "how segments beyond the behavior's SID and the server's last one are "
        "made: carried (in the SRH as segments already visited: the caching-proxy paper's "
        "label stack, carried through the proxy and processed by nobody) or visited (End "
        "SIDs of the server, each a pass through its stack: on the virtual testbed that "
        "work runs on the SUT's vCPU)", schema={"enum": ["carried", "visited"]})
    port_base: int = setting(5201, "TCP port of the first iperf3 server (one port per stream)",
                             unit="port", schema={"type": "integer", "minimum": 1024,
                                                  "maximum": 65000})
    confidence: float = setting(0.95, "confidence of the interval (Student t)",
                                schema={"type": "number", "exclusiveMinimum": 0.5,
                                        "exclusiveMaximum": 1}, parse=float)
    chains: tuple[int, ...] = setting(
        (1,), "segment lists through the same VNF, one configuration each (2: the streams "
        "alternate between two chains ending at two server SIDs)", unit="chains",
        schema={"type": "array", "minItems": 1,
                "items": {"type": "integer", "minimum": 1, "maximum": 2}},
        parse=_distinct_counts)
    vnf_modes: tuple[str, ...] = setting(
        (), "VNF modes measured one after the other, one configuration each (forwarders with "
        "VNFs, e.g. ebpf; empty: the experiment's options.vnf_mode); with snat the caching "
        "proxy leaves the source out of its key (options.proxy.cache_nat_key)",
        schema={"type": "array", "items": {"enum": ["forward", "drop", "sink", "delay",
                                                    "snat"]}},
        parse=lambda v: tuple(str(m) for m in v))
    calibration: CalibrationConfig = setting(CalibrationConfig, "the calibration run")


@dataclass(frozen=True)
class HttpConfig(Settings):
    """The ``http`` kind: wrk against a static HTTP server serving generated objects."""

    object_sizes: tuple[int, ...] = setting(
        (1000, 100_000), "sizes of the objects served, one configuration each", unit="bytes",
        schema={"type": "array", "minItems": 1, "items": SIZE_SCHEMA},
        parse=lambda v: tuple(parse_size(s) for s in v))
    connections: int = setting(10, "open connections (wrk -c)", unit="connections",
                               schema={"type": "integer", "minimum": 1, "maximum": 10000})
    threads: int = setting(1, "wrk threads (wrk -t; at most connections)", unit="threads",
                           schema={"type": "integer", "minimum": 1, "maximum": 64})
    duration_s: float = setting(3.0, "duration of one repetition (wrk -d)", unit="s",
                                schema={"type": "number", "minimum": 1, "maximum": 3600},
                                parse=float)
    repetitions: int = setting(3, "repetitions per configuration", unit="repetitions",
                               schema={"type": "integer", "minimum": 1, "maximum": 1000})
    server: str = setting("lighttpd", "the static HTTP server",
                          schema={"enum": ["lighttpd", "nginx"]})
    port: int = setting(8080, "TCP port the HTTP server listens on", unit="port",
                        schema={"type": "integer", "minimum": 1024, "maximum": 65535})

    def __post_init__(self) -> None:
        if self.threads > self.connections:
            raise SettingError("threads", self.threads,
                               f"exceeds connections = {self.connections} (wrk needs a "
                               "connection per thread)")


PIPES_MAX_NODES = 8
"""Most middle nodes of a SRv6Pipes chain (srperf.stateful.pipes_chain.MAX_MIDDLE)."""
PIPES_ROLE = re.compile(r"^(router|relay|xormask|xor:([1-9][0-9]{0,3}))$")
"""A middle node's role: ``router`` (End) or a bytestream function (xor:N, N 1-1024)."""

PIPES_SCHEMA: dict[str, Any] = {
    "description": "SRv6Pipes chains (kind http): client - nodes - server namespaces built "
                   "for the run, one configuration per entry (srperf.stateful.pipes_plan)",
    "type": "object", "additionalProperties": False, "required": ["configurations"],
    "properties": {"configurations": {"type": "array", "minItems": 1, "items": {
        "type": "object", "additionalProperties": False, "required": ["chain"],
        "properties": {
            "chain": {"type": "array", "minItems": 1, "maxItems": PIPES_MAX_NODES,
                      "description": "one role per middle node: router, relay, xor:N, "
                                     "xormask", "items": {"type": "string"}},
            "object_sizes": {"type": "array", "minItems": 1, "items": SIZE_SCHEMA,
                             "description": "object sizes (default: http.object_sizes)"},
            "loss_pct": {"type": "number", "minimum": 0, "maximum": 100,
                         "description": "loss (%) per direction on the first and last link"},
            "delay_ms": {"type": "number", "minimum": 0, "maximum": 10000,
                         "description": "delay (ms) per direction on the first and last "
                                        "link (netem, else the user-space delay line)"},
            "rate_mbit": {"type": "number", "minimum": 1, "maximum": 400000,
                          "description": "line rate (Mb/s) of every link, each direction "
                                         "(tbf): veth has none, SRv6Pipes' lab had 10 Gb/s "
                                         "(Fig. 6, 9) and 1 Gb/s (Fig. 11) links; absent: "
                                         "no rate cap"},
            "tcp_congestion": {"type": "string", "minLength": 1,
                               "description": "default TCP congestion control of every "
                                              "namespace of the chain (sysctl "
                                              "net.ipv4.tcp_congestion_control): one this "
                                              "host lets a namespace set (its "
                                              "tcp_allowed_congestion_control); absent: "
                                              "the namespaces' default, recorded"}}}}},
}


@dataclass(frozen=True)
class PipesCase:
    """One SRv6Pipes configuration: the middle nodes' roles, the objects fetched through
    them, and the impairment of the client's and the server's links."""

    chain: tuple[str, ...]
    """Role per middle node, client side first: ``router`` or a function."""
    object_sizes: tuple[int, ...]
    """Sizes of the objects fetched (bytes)."""
    loss_pct: float = 0.0
    """Loss per direction on link 0 (client-m1) and the last link (mN-server), %."""
    delay_ms: float = 0.0
    """Delay per direction on the same links, ms."""
    rate_mbit: float = 0.0
    """Line rate of every link per direction (Mb/s, tbf); 0: none (veth's own speed)."""
    tcp_congestion: str | None = None
    """Default TCP congestion control of every namespace of the chain (e.g. ``reno``);
    None: the namespaces' own default."""

    @property
    def label(self) -> str:
        """``relay_router``, ``xor4_router``, ``router_router_loss1%``,
        ``relay_router_10000Mbit``, ``relay_router_loss1%_delay5ms_reno`` (the congestion
        control only when set): stored as the behavior of the rows."""
        name = "_".join(role.replace(":", "") for role in self.chain)
        if self.loss_pct:
            name += f"_loss{self.loss_pct:g}%"
        if self.delay_ms:
            name += f"_delay{self.delay_ms:g}ms"
        if self.rate_mbit:
            name += f"_{self.rate_mbit:g}Mbit"
        if self.tcp_congestion:
            name += f"_{self.tcp_congestion}"
        return name


def parse_pipes(data: Any, default_sizes: tuple[int, ...]) -> tuple[PipesCase, ...]:
    """The ``pipes:`` block's configurations (schema-checked already); SettingError names
    the key (``configurations[2].chain[0]``) and value of the first bad one."""
    cases = []
    for i, entry in enumerate(data["configurations"]):
        key = f"configurations[{i}]"
        roles = tuple(str(r) for r in entry["chain"])
        for j, role in enumerate(roles):
            m = PIPES_ROLE.match(role)
            if not m or (m.group(2) and int(m.group(2)) > 1024):
                raise SettingError(f"{key}.chain[{j}]", role, "a role is router, relay, "
                                   "xor:N (N 1-1024) or xormask")
        if cases and len(roles) != len(cases[0].chain):
            raise SettingError(f"{key}.chain", list(roles),
                               f"has {len(roles)} nodes, configurations[0] "
                               f"{len(cases[0].chain)}: every chain of a run has as many "
                               "nodes (the namespaces are built once)")
        sizes = default_sizes
        if "object_sizes" in entry:
            try:
                sizes = tuple(parse_size(s) for s in entry["object_sizes"])
            except ValueError as exc:
                raise SettingError(f"{key}.object_sizes", entry["object_sizes"],
                                   str(exc)) from None
        congestion = entry.get("tcp_congestion")
        if congestion is not None:
            allowed = tcp_congestion.settable()
            if congestion not in allowed:
                raise SettingError(f"{key}.tcp_congestion", congestion,
                                   "this host lets a namespace set only "
                                   f"{', '.join(allowed) or 'nothing'} "
                                   f"({tcp_congestion.ALLOWED})")
        case = PipesCase(roles, sizes, float(entry.get("loss_pct", 0.0)),
                         float(entry.get("delay_ms", 0.0)), float(entry.get("rate_mbit", 0.0)),
                         congestion)
        if any(c.label == case.label for c in cases):
            raise SettingError(key, list(roles), f"{case.label!r} is listed twice")
        cases.append(case)
    return tuple(cases)


__all__ = ["GoodputConfig", "HttpConfig", "CalibrationConfig", "CALIBRATED", "parse_size",
           "size_label", "PipesCase", "parse_pipes", "PIPES_SCHEMA"]
