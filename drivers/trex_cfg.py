"""The TRex server's ``/etc/trex_cfg.yaml``, generated from a testbed description.

TRex reads a YAML list with one platform entry (``version: 2``): the DPDK
ports (``interfaces``: PCI addresses, ``--vdev=net_af_packetN,iface=X`` strings,
or kernel interface names, which TRex opens as AF_PACKET ports itself), their MAC
addresses (``port_info``) and the
threads (``c``: data-plane cores per dual port; ``low_end``: run on a machine
with fewer than four cores, without dedicated threads).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import yaml

if TYPE_CHECKING:
    from srperf.transports.base import Transport

_PCI = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\Z")
_VDEV = re.compile(r"^--vdev=net_[a-z_]+[0-9]*(,[A-Za-z0-9_=.:-]+)*\Z")
_KERNEL_IF = re.compile(r"^[A-Za-z0-9_.-]{1,15}\Z")
"""A kernel interface name: TRex opens it as an ``net_af_packet`` vdev itself, with a
block and frame size that suit the host's page size."""
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}\Z")


def check_interface(name: str) -> str:
    """``name`` if TRex accepts it as an interface (PCI address, ``--vdev=`` or a kernel
    interface name), else ValueError."""
    if _PCI.match(name) or _VDEV.match(name) or _KERNEL_IF.match(name):
        return name
    raise ValueError(f"{name!r} is neither a PCI address (0000:03:00.0), a DPDK "
                     "--vdev=net_...,iface=... string nor a kernel interface name (veth0)")


def render_trex_cfg(interfaces: Sequence[str], *, cores: int = 1, low_end: bool = False,
                    prefix: str | None = None, check: bool = True, **extra: Any) -> str:
    """The text of a ``trex_cfg.yaml`` for ``interfaces`` (an even number of ports).

    ``cores``: data-plane threads per dual port (TRex's ``c``; ignored by TRex when
    ``low_end``); ``prefix``: DPDK file prefix, so that two servers can share a host.
    ``extra`` adds top-level keys of the platform entry verbatim, except
    ``port_info``: a list of ``{"src_mac": ..., "dest_mac": ...}`` (or ``ip``/
    ``default_gw``) mappings, one per interface, checked here.
    """
    if not interfaces or len(interfaces) % 2:
        raise ValueError(f"TRex needs an even number of ports, got {len(interfaces)}")
    for name in interfaces if check else ():   # check=False: placeholders (a dry run)
        check_interface(name)
    if cores < 1:
        raise ValueError(f"cores must be at least 1, got {cores}")
    entry: dict[str, Any] = {"version": 2, "interfaces": list(interfaces),
                             "port_limit": len(interfaces), "c": cores}
    if low_end:
        entry["low_end"] = True
    if prefix:
        entry["prefix"] = prefix
    port_info = extra.pop("port_info", None)
    entry.update(extra)
    if port_info is not None:
        entry["port_info"] = _port_info(port_info, len(interfaces))
    return yaml.safe_dump([entry], sort_keys=False, default_flow_style=False)


def _port_info(ports: Sequence[Mapping[str, str]], count: int) -> list[dict[str, str]]:
    if len(ports) != count:
        raise ValueError(f"port_info has {len(ports)} entries for {count} interfaces")
    out = []
    for i, port in enumerate(ports):
        for key in ("src_mac", "dest_mac"):
            if key in port and not _MAC.match(str(port[key])):
                raise ValueError(f"port_info[{i}].{key} = {port[key]!r}: not a MAC address")
        out.append({str(k): str(v) for k, v in port.items()})
    return out


def read_pci(node: "Transport", port: str) -> str:
    """The PCI address of ``port`` on ``node`` (``ethtool -i``'s bus-info); ValueError
    saying why when there is none."""
    r = node.run(["ethtool", "-i", port], timeout=15.0)
    for line in r.stdout.splitlines():
        if line.startswith("bus-info:") and _PCI.match(line.split(":", 1)[1].strip()):
            return line.split(":", 1)[1].strip()
    why = r.stderr.strip() or "'ethtool -i' gives no PCI bus-info"
    raise ValueError(f"no PCI address for {port} on {node.where} ({why}); "
                     "set tester.options.interfaces")


__all__ = ["check_interface", "read_pci", "render_trex_cfg"]
