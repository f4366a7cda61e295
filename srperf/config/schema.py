"""JSON Schemas of the experiment and testbed YAML files."""

from __future__ import annotations

import dataclasses
from typing import Any

from srperf.config.model import Addressing, LatencyConfig, SearchConfig, TrafficConfig
from srperf.config.provision import ProvisionSettings
from srperf.forwarders import names as forwarder_names


def testbed_kinds() -> tuple[str, ...]:
    """The testbed kinds of :mod:`srperf.testbeds` (its registry decides)."""
    from srperf.testbeds import KINDS

    return tuple(KINDS)

MAC_PATTERN = r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$"
POSITIVE = {"type": "number", "exclusiveMinimum": 0}
IFNAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,14}$"
IFNAME_DOC = ("an interface name is 1-15 letters, digits, '_' or '-', not starting with '-' "
              "('.', ':' and '/' are separators to sysctl and iproute2)")
IFNAME = {"type": "string", "pattern": IFNAME_PATTERN, "pattern_doc": IFNAME_DOC}
MAC = {"type": "string", "pattern": MAC_PATTERN}


def _port() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["name"],
            "properties": {"name": IFNAME, "mac": MAC}}


def _addressing() -> dict[str, Any]:
    props: dict[str, Any] = {}
    for f in dataclasses.fields(Addressing):
        props[f.name] = {"type": "integer", "minimum": 0} if f.type in ("int", int) \
            else {"type": "string", "minLength": 1, "maxLength": 64}
    return {"type": "object", "additionalProperties": False, "properties": props}


EXPERIMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "behaviors"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "forwarder": {"enum": forwarder_names()},
        "behaviors": {"type": "array", "minItems": 1,
                      "items": {"type": "string", "pattern": r"^[a-z0-9_]+$"}},
        "packet_sizes": {"type": "array", "minItems": 1,
                         "items": {"description": "a frame size in bytes (48..9000) "
                                                  "or 'imix'", "oneOf": [
                             {"type": "integer", "minimum": 48, "maximum": 9000},
                             {"const": "imix"}]}},
        "imix": {"description": "the mix of the 'imix' packet size: a profile name or "
                                "a list of 'SIZE:WEIGHT' (srperf.imix)",
                 "oneOf": [{"type": "string"},
                           {"type": "array", "minItems": 1, "items": {"type": "string"}}]},
        "repetitions": {"type": "integer", "minimum": 1, "maximum": 1000},
        "testbed": {"type": "string", "minLength": 1},
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
        "traffic": TrafficConfig.json_schema(),
    },
}


def _transport() -> dict[str, Any]:
    """How a node is reached: ``sut.transport`` and ``tester.transport``."""
    ssh = {
        "type": "object", "additionalProperties": False, "required": ["host"],
        "properties": {
            "host": {"type": "string", "minLength": 1},
            "user": {"type": "string", "minLength": 1},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "key_file": {"type": "string", "minLength": 1},
            "known_hosts": {"type": "string", "minLength": 1},
            "tmp_base": {"type": "string", "pattern": "^/"},
            "timeout_s": POSITIVE,
            "proxy_command": {"type": "string", "minLength": 1},
            "keepalive_s": {"type": "integer", "minimum": 1, "maximum": 3600},
        },
    }
    return {"type": "object", "additionalProperties": False,
            "properties": {"kind": {"enum": ["netns", "ssh"]}, "ssh": ssh}}


TESTBED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "kind": {"enum": list(testbed_kinds())},
        "prefix": {"type": "string", "pattern": r"^[a-z][a-z0-9]{0,7}$"},
        "tester": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "driver": {"enum": ["linux", "trex", "simulated"]},
                "transport": _transport(),
                "netns": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{1,64}$",
                          "description": "ssh testbeds: local network namespace of the "
                                         "tester's ports (default: this host's)"},
                "tx": _port(), "rx": _port(),
                "line_rate_pps": POSITIVE,
                "cpu": {"type": ["integer", "null"], "minimum": 0},
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
                "cpu": {"type": ["integer", "null"], "minimum": 0},
                "napi_fifo_priority": {"type": "integer", "minimum": 0, "maximum": 99},
                "napi_defer_hard_irqs": {"type": "integer", "minimum": 0, "maximum": 1000},
                "gro_flush_timeout_us": {"type": "number", "minimum": 0, "maximum": 10000},
                "vpp_binary": {"type": "string", "pattern": "^/"},
                "transport": _transport(),
            },
        },
        "addressing": _addressing(),
        "simulated": {"type": "object"},
        "provision": ProvisionSettings.json_schema(),
    },
}
