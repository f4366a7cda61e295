"""Environment metadata stored with every run (so results stay comparable).

:func:`collect` describes the controlling host (srperf's version and commit,
Python); :func:`node` describes one testbed node (kernel, CPU model and count,
the driver and firmware of each test port, iproute2) through that node's own
transport, so a remote SUT is described as the SUT sees itself.
"""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any, Sequence

import srperf
from srperf.provision.tuning import read_state
from srperf.transports.base import Transport


def _cmd(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def collect() -> dict[str, Any]:
    """The controlling host: srperf version and commit, Python, host name."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(srperf.__file__)))
    return {
        "srperf_version": srperf.__version__,
        "srperf_commit": _cmd(["git", "-C", src, "rev-parse", "--short", "HEAD"]),
        "controller": platform.node(),
        "python": platform.python_version(),
    }


_NODE_SCRIPT = r"""
echo "hostname=$(uname -n)"
echo "kernel=$(uname -r)"
echo "machine=$(uname -m)"
echo "cpu_model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "cpu_count=$(nproc 2>/dev/null || echo '')"
echo "iproute2=$(ip -V 2>&1 | head -n1)"
"""


def node(transport: Transport, ports: Sequence[str] = ()) -> dict[str, Any]:
    """One node's kernel, CPU, tools and test ports (driver, version, firmware), read
    through ``transport``; raises TransportError when the node cannot be reached."""
    res = transport.run(["sh", "-c", _NODE_SCRIPT], timeout=15.0)
    info: dict[str, Any] = {"reached_through": transport.where}
    for line in res.stdout.splitlines():
        key, _, value = line.partition("=")
        if key:
            info[key] = value.strip()
    if info.get("cpu_count", "").isdigit():
        info["cpu_count"] = int(info["cpu_count"])
    nics: dict[str, dict[str, str]] = {}
    for port in ports:
        out = transport.run(["ethtool", "-i", port], timeout=10.0)
        fields = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
        nics[port] = {k: fields.get(k, "") for k in ("driver", "version", "firmware-version",
                                                     "bus-info")} if out.ok \
            else {"error": (out.stderr or out.stdout).strip() or f"exit {out.returncode}"}
    for port, nic in nics.items():
        bus = nic.get("bus-info", "")
        if bus and ":" in bus:  # a PCI device: its model, as lspci names it
            out = transport.run(["lspci", "-vmm", "-s", bus], timeout=10.0)
            fields = dict(line.split(":\t", 1) for line in out.stdout.splitlines()
                          if ":\t" in line)
            if out.ok and fields:
                nic["model"] = f"{fields.get('Vendor', '')} {fields.get('Device', '')}".strip()
    if nics:
        info["ports"] = nics
    info["tuning"] = read_state(transport, ports)
    return info
