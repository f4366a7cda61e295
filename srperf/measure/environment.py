"""Environment metadata stored with every run (so results stay comparable).

:func:`collect` describes the controlling host (srperf's version and commit,
Python); :func:`node` describes one testbed node (kernel, CPU model and count,
the driver and firmware of each test port, iproute2, and each port's receive
queues with the CPUs that serve them: :func:`rx_queues`) through that node's
own transport, so a remote SUT is described as the SUT sees itself.
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


_QUEUES_SCRIPT = r"""
for dev in "$@"; do
  [ -d "/sys/class/net/$dev" ] || { echo "missing $dev"; continue; }
  for q in /sys/class/net/"$dev"/queues/rx-*; do
    [ -e "$q" ] || continue
    echo "queue $dev ${q##*/} $(cat "$q/rps_cpus" 2>/dev/null || echo -)"
  done
  for irq in /sys/class/net/"$dev"/device/msi_irqs/*; do
    [ -e "$irq" ] || continue
    n=${irq##*/}
    name=$(awk -v n="$n:" '$1 == n {print $NF}' /proc/interrupts)
    count=$(awk -v n="$n:" '$1 == n {s = 0; for (i = 2; i <= NF; i++)
      if ($i ~ /^[0-9]+$/) s += $i; else break; print s}' /proc/interrupts)
    echo "irq $dev $n $(cat "/proc/irq/$n/smp_affinity_list" 2>/dev/null || echo -)" \
      "${name:--} ${count:-0}"
  done
done
"""


def _cpus_of_mask(mask: str) -> list[int]:
    """CPUs of a hex CPU mask such as ``rps_cpus`` (``00000000,0000000f``)."""
    try:
        value = int(mask.replace(",", ""), 16)
    except ValueError:
        return []
    return [cpu for cpu in range(value.bit_length()) if value >> cpu & 1]


def rx_queues(transport: Transport, ports: Sequence[str]) -> dict[str, Any]:
    """Each port's receive queues and the CPUs that serve them, read through
    ``transport`` in one command: per queue the RPS CPUs (``rps_cpus``, [] when RPS
    is off), per interrupt of the port's device (MSI-X: one per queue on a
    multi-queue NIC) its number, name, the CPUs it may run on
    (``smp_affinity_list``) and how often it fired.  A veth has no interrupts."""
    if not ports:
        return {}
    res = transport.run(["sh", "-c", _QUEUES_SCRIPT, "srperf-queues", *ports], timeout=15.0)
    out: dict[str, Any] = {p: {"queues": [], "irqs": []} for p in ports}
    if not res.ok:
        return {p: {"error": (res.stderr or res.stdout).strip() or f"exit {res.returncode}"}
                for p in ports}
    for line in res.stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "missing" and words[1] in out:
            out[words[1]] = {"error": f"no interface {words[1]}"}
        elif len(words) == 4 and words[0] == "queue" and words[1] in out:
            out[words[1]]["queues"].append({"queue": words[2],
                                            "rps_cpus": _cpus_of_mask(words[3])})
        elif len(words) == 6 and words[0] == "irq" and words[1] in out:
            out[words[1]]["irqs"].append({"irq": int(words[2]), "cpus": words[3],
                                          "name": words[4],
                                          "count": int(words[5]) if words[5].isdigit()
                                          else None})
    for port in out.values():
        port.get("irqs", []).sort(key=lambda i: i["irq"])
    return out


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
        info["rx_queues"] = rx_queues(transport, ports)
    info["tuning"] = read_state(transport, ports)
    return info
