"""JSON Schemas of the experiment and testbed YAML files.

Every number has a lower and an upper bound a user could mean (the bound is
named in the message that refuses a value beyond it); every pattern is matched
in full (``\\Z``: no trailing newline); integers are integers (a whole float such
as ``64.0`` is converted, :mod:`srperf.config.coerce`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from srperf.config.model import (Addressing, LatencyConfig, ProfileConfig, SearchConfig,
                                 TrafficConfig)
from srperf.config.pm import PmConfig
from srperf.config.provision import ProvisionSettings
from srperf.config.rates import MAX_PPS
from srperf.forwarders.registry import names as forwarder_names
from srperf.stateful import EXPERIMENT_KINDS
from srperf.config.stateful import PIPES_SCHEMA, GoodputConfig, HttpConfig


def testbed_kinds() -> tuple[str, ...]:
    """The testbed kinds of :mod:`srperf.testbeds` (its registry decides)."""
    from srperf.testbeds.registry import KINDS

    return tuple(KINDS)

MAC_PATTERN = r"^(?!(00:){5}00\Z)[0-9a-fA-F][02468aceACE](:[0-9a-fA-F]{2}){5}\Z"
"""A unicast, non-zero MAC: six hex bytes, the first one's lowest bit clear."""
MAC_DOC = ("a unicast MAC address like 02:5e:00:00:01:01: six hex bytes separated by ':', "
           "the first byte even (not multicast or broadcast), not all zero")
MAX_CPU = 8191
"""Highest CPU number (Linux's NR_CPUS is at most 8192)."""
MAX_TIMEOUT_S = 3600
"""Longest SSH connection timeout (s)."""
MIN_LINE_RATE_PPS = 1000
"""Slowest tester line rate (pps); the fastest is :data:`srperf.config.rates.MAX_PPS`."""
NAME_MAX = 64
"""Longest experiment, testbed or suite name (characters)."""
NAME = {"type": "string", "minLength": 1, "maxLength": NAME_MAX,
        "pattern": r"^[^/\x00-\x1f\x7f]+\Z",
        "pattern_doc": f"a name is 1-{NAME_MAX} characters without '/' or control characters"}
HOST_PATTERN = r"^(?!-)[A-Za-z0-9_.:-]{1,253}\Z"
HOST = {"type": "string", "pattern": HOST_PATTERN,
        "pattern_doc": "a host name or an IP address: letters, digits, '.', '-', '_' and ':' "
                       "(IPv6), not starting with '-'"}
USER = {"type": "string", "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\Z",
        "pattern_doc": "a user name: 1-32 letters, digits, '_', '.' or '-', not starting "
                       "with '-' or '.'"}
PATH = {"type": "string", "minLength": 1, "maxLength": 4096}
CPU = {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_CPU}
POSITIVE = {"type": "number", "exclusiveMinimum": 0}
IFNAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,14}\Z"
IFNAME_DOC = ("an interface name is 1-15 letters, digits, '_' or '-', not starting with '-' "
              "('.', ':' and '/' are separators to sysctl and iproute2)")
IFNAME = {"type": "string", "pattern": IFNAME_PATTERN, "pattern_doc": IFNAME_DOC}
MAC = {"type": "string", "pattern": MAC_PATTERN, "pattern_doc": MAC_DOC}
NETNS = {"type": "string", "pattern": r"^(?!\.\.?\Z)[A-Za-z0-9_.-]{1,64}\Z",
         "pattern_doc": "a namespace name is 1-64 letters, digits, '_', '.' or '-', "
                        "not '.' or '..'"}


def _port() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["name"],
            "properties": {"name": IFNAME, "mac": MAC}}


ADDRESSING_RANGES: dict[str, tuple[int, int]] = {
    "link_prefix_len6": (1, 127), "link_prefix_len4": (1, 31), "table": (1, 2**32 - 1),
    "csid_lblen": (8, 112), "csid_nflen": (8, 64), "link_mtu": (1280, 65535),
    "csid_sut": (1, 2**64 - 1), "csid_next": (1, 2**64 - 1),
}
"""Allowed values of integer addressing keys (inclusive); the loader checks more
(a C-SID below 2 ** csid_nflen, vnf_target below the VNF count)."""


def _ab_schema() -> dict[str, Any]:
    from srperf.config.ab import AbBlock

    return AbBlock.json_schema()


def _addressing() -> dict[str, Any]:
    props: dict[str, Any] = {}
    for f in dataclasses.fields(Addressing):
        low, high = ADDRESSING_RANGES.get(f.name, (0, 2**32 - 1))
        props[f.name] = {"type": "integer", "minimum": low, "maximum": high} \
            if f.type in ("int", int) else {"type": "string", "minLength": 1, "maxLength": 64}
    return {"type": "object", "additionalProperties": False, "properties": props}


EXPERIMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "behaviors"],
    "properties": {
        "name": NAME,
        "forwarder": {"enum": forwarder_names()},
        "behaviors": {"type": "array", "minItems": 1, "maxItems": 256,
                      "items": {"type": "string", "pattern": r"^[a-z0-9_]{1,32}\Z"}},
        "packet_sizes": {"type": "array", "minItems": 1, "maxItems": 256,
                         "items": {"description": "a frame size in bytes (48..9000) "
                                                  "or 'imix'", "oneOf": [
                             {"type": "integer", "minimum": 48, "maximum": 9000},
                             {"const": "imix"}]}},
        "imix": {"description": "the mix of the 'imix' packet size: a profile name or "
                                "a list of 'SIZE:WEIGHT' (srperf.traffic.imix)",
                 "oneOf": [{"type": "string"},
                           {"type": "array", "minItems": 1, "items": {"type": "string"}}]},
        "repetitions": {"type": "integer", "minimum": 1, "maximum": 1000},
        "testbed": PATH,
        "verify": {"type": "boolean"},
        "conformance": {"enum": ["off", "required"],
                        "description": "required: run each behavior's conformance matrix "
                                       "before measuring it and measure only those that "
                                       "pass (srperf conform)"},
        "options": {"type": "object",
                    "description": "the forwarder's own knobs (schema: its options dataclass "
                                   "in srperf.forwarders)"},
        "search": SearchConfig.json_schema(),
        "latency": LatencyConfig.json_schema(),
        "profile": ProfileConfig.json_schema(),
        "kind": {"enum": list(EXPERIMENT_KINDS),
                 "description": "what is measured: pdr (packet-rate search, the default), "
                                "goodput (iperf3), http (wrk): srperf.stateful"},
        "goodput": GoodputConfig.json_schema(),
        "http": HttpConfig.json_schema(),
        "pipes": PIPES_SCHEMA,
        "traffic": TrafficConfig.json_schema(),
        "pm": PmConfig.json_schema(),
        "ab": _ab_schema(),
    },
}


def _transport() -> dict[str, Any]:
    """How a node is reached: ``sut.transport`` and ``tester.transport``."""
    ssh = {
        "type": "object", "additionalProperties": False, "required": ["host"],
        "properties": {
            "host": HOST,
            "user": USER,
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "key_file": PATH,
            "known_hosts": PATH,
            "tmp_base": {"type": "string", "pattern": "^/", "maxLength": 1024},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0,
                          "maximum": MAX_TIMEOUT_S},
            "proxy_command": {**PATH, "secret": True},
            "keepalive_s": {"type": "integer", "minimum": 1, "maximum": 3600},
        },
    }
    return {"type": "object", "additionalProperties": False,
            "properties": {"kind": {"enum": ["netns", "ssh", "console"]}, "ssh": ssh}}


def _endpoints() -> dict[str, Any]:
    """``endpoints``: the client and server hosts of stateful experiments (ssh testbeds)."""
    from srperf.config.model import STEERINGS

    def host(side: str, port: str, addr: str) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False,
                "required": ["transport", "dev"],
                "description": f"the {side} host: reached over SSH, its interface dev cabled "
                               f"to the SUT's {port} port (address addressing.{addr})",
                "properties": {"transport": _transport(), "dev": IFNAME, "cpu": CPU}}

    return {"type": "object", "additionalProperties": False,
            "required": ["client", "server"],
            "properties": {
                "client": host("client", "in", "tester_tx_ip6"),
                "server": host("server", "out", "tester_rx_ip6"),
                "steering": {"enum": list(STEERINGS),
                             "description": "host: H.Encaps routes on the client towards "
                                            "the SUT's SIDs and on the server back"}}}


TESTBED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": NAME,
        "kind": {"enum": list(testbed_kinds())},
        "prefix": {"type": "string", "pattern": r"^[a-z][a-z0-9]{0,7}\Z"},
        "tester": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "driver": {"enum": ["linux", "trex", "simulated"]},
                "transport": _transport(),
                "netns": {**NETNS,
                          "description": "ssh testbeds: local network namespace of the "
                                         "tester's ports (default: this host's)"},
                "tx": _port(), "rx": _port(),
                "line_rate_pps": {"type": "number", "minimum": MIN_LINE_RATE_PPS,
                                  "maximum": MAX_PPS},
                "cpu": CPU,
                "options": {"type": "object",
                            "description": "the driver's own knobs (schema: its options "
                                           "dataclass, e.g. srperf.drivers.linux)"},
            },
        },
        "sut": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "forwarder": {"enum": forwarder_names()},
                "in": _port(), "out": _port(),
                "cpu": CPU,
                "napi_fifo_priority": {"type": "integer", "minimum": 0, "maximum": 99},
                "napi_defer_hard_irqs": {"type": "integer", "minimum": 0, "maximum": 1000},
                "gro_flush_timeout_us": {"type": "number", "minimum": 0, "maximum": 10000},
                "vpp_binary": {"type": "string", "pattern": "^/", "maxLength": 4096},
                "transport": _transport(),
            },
        },
        "addressing": _addressing(),
        "simulated": {"type": "object",
                      "description": "kind simulated only: the model's parameters "
                                     "(srperf.drivers.simulated.SimulatedModel)"},
        "provision": ProvisionSettings.json_schema(),
        "endpoints": _endpoints(),
        "kernel": {"type": "object",
                   "description": "kind kernel only: the kernel the guest boots "
                                  "(srperf.kernel.target.KernelTarget)"},
    },
}
