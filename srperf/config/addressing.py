"""A testbed's ``addressing`` plan: every value in range, and the addresses, SIDs,
tables and VNF names consistent with each other (a contradiction would make a run
measure the wrong thing).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from typing import Any

from srperf.config.model import Addressing, vnf_sid
from srperf.config.schema import (ADDRESSING_RANGES, IFNAME_DOC, IFNAME_PATTERN, MAC_DOC,
                                  MAC_PATTERN)
from srperf.errors import ConfigError


_INT_RANGES = ADDRESSING_RANGES
"""Allowed values of integer addressing keys (inclusive); C-SIDs are checked below."""
_RESERVED_TABLES = {253: "default", 254: "main", 255: "local"}
_MAC_PREFIX4 = r"([0-9a-fA-F]{2}:){3}[0-9a-fA-F]{2}"


def _addressing(file: str, data: dict[str, Any]) -> Addressing:
    addressing = Addressing(**data)
    for f in dataclasses.fields(Addressing):
        value = getattr(addressing, f.name)
        key = f"addressing.{f.name}"
        name = f.name
        if name in _INT_RANGES:
            low, high = _INT_RANGES[name]
            if not low <= value <= high:
                raise ConfigError(file, key, value, f"must be {low}..{high}")
        elif name.endswith("_mac_prefix"):
            if not re.fullmatch(_MAC_PREFIX4, str(value)) or int(str(value)[:2], 16) & 1:
                raise ConfigError(file, key, value,
                                  "not the first 4 bytes of a unicast MAC (like 02:5e:00:10; "
                                  "the first byte even)")
        elif name.endswith("_mac"):
            if not re.fullmatch(MAC_PATTERN, str(value)):
                raise ConfigError(file, key, value, MAC_DOC)
        elif name.endswith("prefix6") or name == "sid_prefix":
            _check_ip(file, key, value, 6, network=True)
        elif name.endswith("prefix4"):
            _check_ip(file, key, value, 4, network=True)
        elif name.endswith("_ip6") or name in ("src6", "dst6", "tunsrc", "csid_block") \
                or (name.startswith("sid_") and isinstance(value, str)):
            _check_ip(file, key, value, 6, network=False)
        elif name.endswith("_ip4") or name in ("src4", "dst4", "vnf_snat4"):
            _check_ip(file, key, value, 4, network=False)
        elif name == "vnf_snat6":
            _check_ip(file, key, value, 6, network=False)
    a = addressing
    if a.table in _RESERVED_TABLES:
        raise ConfigError(file, "addressing.table", a.table,
                          f"the kernel's own {_RESERVED_TABLES[a.table]!r} table; "
                          "use another number")
    for name in ("csid_lblen", "csid_nflen"):
        if getattr(a, name) % 8:
            raise ConfigError(file, f"addressing.{name}", getattr(a, name),
                              "must be a multiple of 8 (the kernel's next-csid flavor)")
    if a.csid_lblen + 2 * a.csid_nflen > 128:
        raise ConfigError(file, "addressing.csid_lblen", a.csid_lblen,
                          f"locator block + two C-SIDs of {a.csid_nflen} bits exceed 128 bits")
    for name in ("csid_sut", "csid_next"):
        value = getattr(a, name)
        if not 1 <= value < 2 ** a.csid_nflen:
            raise ConfigError(file, f"addressing.{name}", value,
                              f"a C-SID of csid_nflen = {a.csid_nflen} bits must be "
                              f"1..{2 ** a.csid_nflen - 1}")
    if a.csid_sut == a.csid_next:
        raise ConfigError(file, "addressing.csid_next", a.csid_next, "equals csid_sut")
    block = int(ipaddress.IPv6Address(a.csid_block))
    if block & ((1 << (128 - a.csid_lblen)) - 1):
        raise ConfigError(file, "addressing.csid_block", a.csid_block,
                          f"has bits set beyond its {a.csid_lblen}-bit locator block "
                          "(csid_lblen)")
    for ip, peer, length, key in ((a.sut_in_ip6, a.tester_tx_ip6, a.link_prefix_len6, "6"),
                                  (a.sut_out_ip6, a.tester_rx_ip6, a.link_prefix_len6, "6"),
                                  (a.sut_in_ip4, a.tester_tx_ip4, a.link_prefix_len4, "4"),
                                  (a.sut_out_ip4, a.tester_rx_ip4, a.link_prefix_len4, "4")):
        net = ipaddress.ip_network(f"{ip}/{length}", strict=False)
        if ipaddress.ip_address(peer) not in net:
            raise ConfigError(file, f"addressing.link_prefix_len{key}", length,
                              f"{peer} is not on the SUT's link {net}")
    _check_vnfs(file, a)
    _check_plan(file, a)
    return addressing


def _check_plan(file: str, a: Addressing) -> None:
    """Addresses that contradict each other: a run would measure the wrong thing."""
    ip, net = ipaddress.ip_address, ipaddress.ip_network
    for v, ports in (("6", ("tester_tx_ip6", "sut_in_ip6", "sut_out_ip6", "tester_rx_ip6")),
                     ("4", ("tester_tx_ip4", "sut_in_ip4", "sut_out_ip4", "tester_rx_ip4"))):
        seen: dict[Any, str] = {}
        for name in ports:
            addr = ip(getattr(a, name))
            if addr in seen:
                raise ConfigError(file, f"addressing.{name}", getattr(a, name),
                                  f"the same address as addressing.{seen[addr]}: each port "
                                  "needs its own")
            seen[addr] = name
        length = getattr(a, f"link_prefix_len{v}")
        link1 = net(f"{getattr(a, ports[1])}/{length}", strict=False)
        link2 = net(f"{getattr(a, ports[2])}/{length}", strict=False)
        if link1.overlaps(link2):
            raise ConfigError(file, f"addressing.{ports[2]}", getattr(a, ports[2]),
                              f"on the same link prefix {link1} as addressing.{ports[1]}: the "
                              "SUT's two links need different prefixes")
        src, dst = f"src{v}", f"dst{v}"
        if ip(getattr(a, src)) == ip(getattr(a, dst)):
            raise ConfigError(file, f"addressing.{dst}", getattr(a, dst),
                              f"the same address as addressing.{src}")
        prefix = net(getattr(a, f"dst_prefix{v}"), strict=False)
        if ip(getattr(a, dst)) not in prefix:
            raise ConfigError(file, f"addressing.{dst}", getattr(a, dst),
                              f"outside its prefix addressing.dst_prefix{v} = {prefix}")
        for link in (link1, link2):
            if prefix.overlaps(link):
                raise ConfigError(file, f"addressing.dst_prefix{v}", getattr(a, f"dst_prefix{v}"),
                                  f"overlaps the link prefix {link}: test traffic would be "
                                  "delivered on the link, not routed")
            for name in (src, dst):
                if ip(getattr(a, name)) in link:
                    raise ConfigError(file, f"addressing.{name}", getattr(a, name),
                                      f"inside the link prefix {link}: test traffic must be "
                                      "routed, not on a link")
    links = [net(f"{a.sut_in_ip6}/{a.link_prefix_len6}", strict=False),
             net(f"{a.sut_out_ip6}/{a.link_prefix_len6}", strict=False)]
    sid_net = net(a.sid_prefix, strict=False)
    for link in links:
        if sid_net.overlaps(link):
            raise ConfigError(file, "addressing.sid_prefix", a.sid_prefix,
                              f"covers the link prefix {link}: SIDs and link addresses must "
                              "not overlap")
    sids = {"sid_sut": a.sid_sut, "sid_next": a.sid_next, "sid_last": a.sid_last}
    seen_sid: dict[Any, str] = {}
    for name, sid in sids.items():
        addr = ip(sid)
        if addr in seen_sid:
            raise ConfigError(file, f"addressing.{name}", sid,
                              f"the same SID as addressing.{seen_sid[addr]}")
        seen_sid[addr] = name
        for link in links:
            if addr in link:
                raise ConfigError(file, f"addressing.{name}", sid,
                                  f"inside the link prefix {link}: a SID is not a link "
                                  "address (a run would measure the SUT's own delivery)")
        for other in ("src6", "dst6"):
            if addr == ip(getattr(a, other)):
                raise ConfigError(file, f"addressing.{name}", sid,
                                  f"the same address as addressing.{other}")


def _check_vnfs(file: str, a: Addressing) -> None:
    """The VNF names and SIDs derived from a prefix must be valid for every VNF index."""
    from srperf.testbeds.vnf import MAX_VNFS

    last = MAX_VNFS - 1
    name = f"{a.vnf_if_prefix}{last}"
    if not re.fullmatch(IFNAME_PATTERN, name):
        raise ConfigError(file, "addressing.vnf_if_prefix", a.vnf_if_prefix,
                          f"VNF interfaces are named <prefix><0..{last}>; {name!r} is not "
                          f"a valid interface name: {IFNAME_DOC}")
    for index in (0, last):
        try:
            vnf_sid(a, index)
        except ValueError:
            raise ConfigError(file, "addressing.vnf_sid_base", a.vnf_sid_base,
                              f"VNF {index}'s SID would be {a.vnf_sid_base}{index + 1:x}, "
                              "not an IPv6 address (end the base with '::' or ':')") from None
    if not 0 <= a.vnf_target <= last:
        raise ConfigError(file, "addressing.vnf_target", a.vnf_target, f"must be 0..{last}")


def _check_ip(file: str, key: str, value: Any, version: int, network: bool) -> None:
    if not isinstance(value, str):
        return
    try:
        obj = ipaddress.ip_network(value, strict=False) if network \
            else ipaddress.ip_address(value)
    except ValueError:
        kind = "prefix" if network else "address"
        raise ConfigError(file, key, value, f"not an IPv{version} {kind}") from None
    if obj.version != version:
        raise ConfigError(file, key, value, f"must be an IPv{version} address")


# -- any file --------------------------------------------------------------------
