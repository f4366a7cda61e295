"""Schema-level rules a JSON Schema cannot say, checked when a file is loaded or
validated (``srperf validate``: exit 2, file, key and value; nothing started).

- **Uniqueness** where a repeat would silently measure something twice: object sizes
  (``[1KB, 1000, "1 KB"]`` is one size three times), VNF modes, a nightly suite's
  experiments (by name or file).
- **Applicability**: a search key that only some algorithms read
  (:data:`SEARCH_KEY_ALGORITHMS`: ``bisect_start`` is bisect's) given with the
  algorithm the file chooses (or the default, mlr) that ignores it; ``goodput.vnf_modes`` for a forwarder without VNFs;
  ``goodput.chains``/``segments`` values no chosen behavior can be steered with.
- **Reserved routing tables** (0 unspec, 253 default, 254 main, 255 local) as a table
  srperf fills and flushes (``options.table``, and for pipes the next one it uses;
  ``addressing.table`` is checked by the loader).
- **Endpoints** that are the SUT itself (its host name in another case or with a
  trailing dot, another spelling of its address, one of its test addresses, or the
  link address srperf itself adds to the endpoint) or whose ``dev`` is ``lo``; a TRex
  ``server`` that is not a host name or an address.

Each check is a function of the loaded mapping or configuration; the loader, the
preflight and the nightly suite reader call them (small hooks).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any, Iterable

from srperf.errors import ConfigError

RESERVED_TABLES = {0: "unspec", 253: "default", 254: "main", 255: "local"}
"""Kernel routing tables srperf must never fill or flush."""
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")


# -- uniqueness ------------------------------------------------------------------

def _first_repeat(values: list[Any]) -> tuple[int, int] | None:
    """(index of the first value seen again, index where it was first) or None."""
    seen: dict[Any, int] = {}
    for i, value in enumerate(values):
        if value in seen:
            return i, seen[value]
        seen[value] = i
    return None


def _unique(file: str, key: str, raw: list[Any], values: list[Any], what: str) -> None:
    found = _first_repeat(values)
    if found is not None:
        i, first = found
        same = f" ({values[i]!r})" if raw[i] != values[i] else ""
        raise ConfigError(file, f"{key}[{i}]", raw[i],
                          f"the same {what} as {key}[{first}] = {raw[first]!r}{same}: "
                          "each entry is measured once, a repeat would double it")


def _sizes(file: str, key: str, raw: Any) -> None:
    from srperf.config.stateful import parse_size

    if not isinstance(raw, list):
        return
    try:
        parsed = [parse_size(v) for v in raw]
    except (ValueError, TypeError):
        return   # the loader names the bad size
    _unique(file, key, raw, parsed, "object size in bytes")


# -- applicability ---------------------------------------------------------------

SEARCH_KEY_ALGORITHMS: dict[str, set[str]] = {
    "bisect_start": {"bisect"},
    "repeat_near_threshold": {"bisect", "multi"},
    "mrr_rate": {"mrr"},
}
"""Search keys that only these algorithms read (checked against srperf.search: the
keys whose descriptions name an algorithm but that other algorithms read too, such as
exceed_ratio or relative_width, which lossfit also reads, are not listed)."""


def search_key_algorithms() -> dict[str, set[str]]:
    """Search keys read by some algorithms only (:data:`SEARCH_KEY_ALGORITHMS`)."""
    return {k: set(v) for k, v in SEARCH_KEY_ALGORITHMS.items()}


def _search_keys(file: str, search: dict[str, Any]) -> None:
    from srperf.config.model import SearchConfig

    algorithm = str(search.get("algorithm", SearchConfig.algorithm))
    for key, algorithms in search_key_algorithms().items():
        if key in search and algorithm not in algorithms:
            said = "" if "algorithm" in search else " (the default)"
            raise ConfigError(file, f"search.{key}", search[key],
                              f"read only by algorithm {' or '.join(sorted(algorithms))}; "
                              f"this search's algorithm is {algorithm}{said}, which ignores "
                              "it: remove the key or set search.algorithm")


def _has_vnfs(forwarder: str) -> bool:
    from srperf.forwarders import registry as forwarders

    return "vnf_mode" in forwarders.get(forwarder).options.json_schema()["properties"]


def _tables(file: str, forwarder: str, options: dict[str, Any]) -> None:
    table = options.get("table")
    if not isinstance(table, int) or isinstance(table, bool):
        return
    used = [table, table + 1] if forwarder == "pipes" else [table]
    for number in used:
        if number in RESERVED_TABLES:
            also = "" if number == table else f" (pipes also uses the next table, {number})"
            raise ConfigError(file, "options.table", table,
                              f"routing table {number} is the kernel's "
                              f"{RESERVED_TABLES[number]} table{also}: srperf fills and "
                              "flushes its table; pick another (1-252 or above 255)")


def check_experiment_mapping(file: str, data: dict[str, Any]) -> None:
    """The rules on an experiment mapping (schema-checked already)."""
    forwarder = str(data.get("forwarder", "linux"))
    http = data.get("http") or {}
    if isinstance(http, dict):
        _sizes(file, "http.object_sizes", http.get("object_sizes"))
    pipes = data.get("pipes") or {}
    if isinstance(pipes, dict):
        for i, entry in enumerate(pipes.get("configurations") or []):
            if isinstance(entry, dict):
                _sizes(file, f"pipes.configurations[{i}].object_sizes",
                       entry.get("object_sizes"))
    goodput = data.get("goodput") or {}
    if isinstance(goodput, dict) and goodput.get("vnf_modes"):
        modes = list(goodput["vnf_modes"])
        if not _has_vnfs(forwarder):
            raise ConfigError(file, "goodput.vnf_modes", modes,
                              f"forwarder {forwarder!r} has no VNFs (no options.vnf_mode): "
                              "VNF modes apply to forwarders with VNFs (ebpf, vpp, srnk)")
        _unique(file, "goodput.vnf_modes", modes, modes, "VNF mode")
    search = data.get("search") or {}
    if isinstance(search, dict):
        _search_keys(file, search)
    options = data.get("options") or {}
    if isinstance(options, dict):
        _tables(file, forwarder, options)


def check_steering(exp: Any, tb: Any) -> None:
    """``goodput.chains`` and ``segments`` values that no behavior of ``exp`` can be
    steered with (each would be stored unsupported after the testbed is up)."""
    if exp.kind == "pdr" or exp.pipes:
        return
    from srperf.errors import UnsupportedBehavior
    from srperf.stateful.steering import route_for

    routes = {}
    for behavior in exp.behaviors:
        try:
            routes[behavior] = route_for(behavior, tb)
        except UnsupportedBehavior:
            continue   # reported for that behavior, as before
    if not routes:
        return
    g = exp.goodput
    for i, chains in enumerate(g.chains):
        if chains > 1 and all(r.one_chain for r in routes.values()):
            why = "; ".join(f"{b}: {r.one_chain}" for b, r in routes.items())
            raise ConfigError(exp.source, f"goodput.chains[{i}]", chains,
                              f"no behavior of the experiment can carry {chains} chains "
                              f"({why})")
    for i, segments in enumerate(g.segments):
        fixed = {b: r.fixed_segments for b, r in routes.items()}
        if all(f is not None and f != segments for f in fixed.values()):
            why = "; ".join(f"{b}: its static header has {f}" for b, f in fixed.items())
            raise ConfigError(exp.source, f"goodput.segments[{i}]", segments,
                              f"no behavior of the experiment can be steered with {segments} "
                              f"segments ({why})")


# -- testbeds --------------------------------------------------------------------

def _host_key(host: str) -> str:
    """A host name or address in one spelling: lower case, no trailing dot, an IPv6
    address compressed (brackets and zone dropped)."""
    text = host.strip().lower().rstrip(".")
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return str(ipaddress.ip_address(bare.split("%")[0]))
    except ValueError:
        return text


def is_host(text: str) -> bool:
    """An IP address or a host name of dot-separated labels."""
    if not isinstance(text, str) or not text or len(text) > 253:
        return False
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    labels = text.rstrip(".").split(".")
    return all(_LABEL.match(label) for label in labels) and not text.startswith("-")


def _sut_addresses(tb: Any) -> dict[str, str]:
    """The SUT's test addresses and the endpoints' link addresses srperf adds, by key."""
    a = tb.addressing
    out = {}
    for name in ("sut_in_ip6", "sut_out_ip6", "sut_in_ip4", "sut_out_ip4", "tunsrc",
                 "sid_sut", "tester_tx_ip6", "tester_rx_ip6", "tester_tx_ip4",
                 "tester_rx_ip4"):
        value = getattr(a, name, None)
        if value:
            out[_host_key(str(value))] = f"addressing.{name}"
    return out


def check_testbed(tb: Any) -> None:
    """The rules on a loaded testbed: endpoints and a TRex server."""
    file = tb.source
    if tb.tester.driver == "trex":
        server = (tb.tester.options or {}).get("server")
        if server is not None and not (isinstance(server, str) and is_host(server)):
            raise ConfigError(file, "tester.options.server", server,
                              "not a host name or an IP address (the TRex STL client "
                              "connects to it)")
    if tb.endpoints is None:
        return
    sut_ssh = tb.sut.transport.ssh if tb.sut.transport is not None else None
    sut = (_host_key(sut_ssh.host), sut_ssh.port) if sut_ssh is not None else None
    addresses = _sut_addresses(tb)
    for side in ("client", "server"):
        host = getattr(tb.endpoints, side)
        key = f"endpoints.{side}"
        if host.dev == "lo":
            raise ConfigError(file, f"{key}.dev", host.dev,
                              "the loopback device carries no traffic to the SUT: name the "
                              f"interface cabled to the SUT's {'in' if side == 'client' else 'out'}"
                              " port")
        ssh = host.transport.ssh
        if ssh is None:
            continue
        name = _host_key(ssh.host)
        if sut is not None and (name, ssh.port) == sut:
            raise ConfigError(file, f"{key}.transport.ssh.host", ssh.host,
                              f"is the SUT itself (sut.transport.ssh.host {sut_ssh.host!r}, "
                              "the same host spelt another way): client, server and SUT "
                              "each need a network stack of their own")
        if name in addresses:
            raise ConfigError(file, f"{key}.transport.ssh.host", ssh.host,
                              f"is {addresses[name]}, an address on the test links (the "
                              "SUT's, or the one srperf adds to the endpoint): an endpoint "
                              "is reached over its management address")


# -- nightly suites --------------------------------------------------------------

def check_suite_experiments(file: str, names: Iterable[str]) -> None:
    """The same experiment twice in a suite (by name, or two names of one file)."""
    from srperf import resources

    names = list(names)
    _unique(file, "experiments", names, names, "experiment")
    paths = []
    for name in names:
        try:
            paths.append(str(Path(resources.find_config(name, "experiment")).resolve()))
        except ConfigError:
            paths.append(name)   # the run names the missing one
    _unique(file, "experiments", names, paths, "experiment file")


__all__ = ["RESERVED_TABLES", "SEARCH_KEY_ALGORITHMS", "check_experiment_mapping", "check_steering",
           "check_suite_experiments", "check_testbed", "is_host", "search_key_algorithms"]
