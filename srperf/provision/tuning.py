"""SUT tuning as the SRPerf paper and CSIT do it, as idempotent steps, and read back.

Per test port: segmentation and receive offloads off (``ethtool -K``: they batch
packets and hide per-packet cost), one RX queue (``ethtool -L``: one forwarding
core sees every packet), Ethernet flow control off (``ethtool -A``: pause frames
would push loss back to the generator), the port's IRQs pinned to the forwarding
core.  Per node: irqbalance stopped (it would move those IRQs), the CPU frequency
governor ``performance``, turbo off, deep C-states disabled, hugepages for TRex
or VPP, and isolated cores on the kernel command line (``isolcpus``, ``nohz_full``,
``rcu_nocbs`` in ``/etc/default/grub``: that step says it needs a reboot).  A step
whose hardware is absent (a veth has no IRQ; a VM may have no cpufreq, cpuidle
or turbo; no irqbalance installed) is *not applicable*, never "done".

A port's IRQs are found by the names the common NIC drivers give them in
``/proc/interrupts``: ``ens1f0-TxRx-0`` (ixgbe), ``i40e-ens1f0-TxRx-0`` (i40e),
``ice-ens1f0-TxRx-0`` (ice), ``mlx5_comp0@pci:0000:03:00.0`` (mlx5, named by the
port's PCI address, read from ``/sys/class/net/PORT/device``), ``virtio0-input.0``
is not a port name and is not matched.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Sequence

from srperf.provision.steps import Role, Step
from srperf.transports.base import Transport
from srperf.util.wording import count

OFFLOADS = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
            "gro": "generic-receive-offload", "lro": "large-receive-offload"}
"""ethtool short name -> the name ``ethtool -k`` prints, of the offloads turned off."""

_OFFLOAD_ON = ("ethtool -k {dev} | awk -F': ' '$1 ~ /^({names})$/ && $2 ~ /^on/ "
               "&& $2 !~ /fixed/ {{print $1 \": \" $2; bad=1}} END {{exit bad}}'")
_GOVERNORS = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
_CSTATES = "/sys/devices/system/cpu/cpu*/cpuidle/state[1-9]*/disable"
"""Every idle state deeper than C0/POLL (state0) of every CPU."""
_NO_TURBO = "/sys/devices/system/cpu/intel_pstate/no_turbo"
_BOOST = "/sys/devices/system/cpu/cpufreq/boost"


def irq_numbers(dev: str, interrupts: str = "/proc/interrupts",
                sysfs_net: str = "/sys/class/net") -> str:
    """A shell command printing the IRQ numbers of port ``dev``, one per line, by the
    names the common drivers give them (module docstring).  ``interrupts`` and
    ``sysfs_net`` are the files read (parameters for tests)."""
    q, intr = shlex.quote(dev), shlex.quote(interrupts)
    device = shlex.quote(f"{sysfs_net}/{dev}/device")
    return (f"pci=$(readlink -f {device} 2>/dev/null); pci=${{pci##*/}}; "
            f"awk -v dev={q} -v pci=\"$pci\" "
            "'NR > 1 { name = $NF; n = $1; sub(/:$/, \"\", n);"
            " if (name ~ (\"(^|-)\" dev \"(-|$)\") || (pci != \"\""
            " && name ~ (\"@pci:\" pci \"$\"))) print n }' " + intr)


@dataclass(frozen=True)
class Tuning:
    """What tuning a node gets (the testbed's ``provision`` block)."""

    offloads_off: bool = True
    rx_queues: int | None = 1
    irq_cpu: int | None = None
    """Core the ports' IRQs go to (None: leave them)."""
    stop_irqbalance: bool = True
    governor: str | None = "performance"
    isolate_cpus: str | None = None
    """Kernel CPU list isolated on the command line (None: leave)."""
    cstates_off: bool = True
    turbo_off: bool = True
    flow_control_off: bool = True
    hugepages: int | None = None
    """2 MiB pages to reserve (TRex, VPP); None: leave."""


def tuning_steps(role: Role, ports: Sequence[str], tuning: Tuning) -> list[Step]:
    """The tuning steps of a node with test ports ``ports``."""
    steps: list[Step] = []
    who = role.value
    for dev in ports:
        q = shlex.quote(dev)
        if tuning.offloads_off:
            steps.append(Step(
                name=f"{who}: {dev} offloads off", role=role,
                check=_OFFLOAD_ON.format(dev=q, names="|".join(OFFLOADS.values())),
                apply=(f"for f in {' '.join(OFFLOADS)}; do ethtool -K {q} \"$f\" off "
                       "2>/dev/null || true; done",),
                why="segmentation/receive offloads batch packets and hide per-packet cost"))
        if tuning.rx_queues:
            n = tuning.rx_queues
            steps.append(Step(
                name=f"{who}: {dev} {count(n, 'RX queue')}", role=role,
                applies=f"ethtool -l {q} >/dev/null 2>&1",
                check=(f"ethtool -l {q} | awk '/^Current/ {{cur=1}} cur && /^(RX|Combined):/ "
                       f"&& $2 != \"n/a\" {{n += $2}} END {{print \"queues: \" n; "
                       f"exit n != {n}}}'"),
                apply=(f"ethtool -L {q} combined {n} 2>/dev/null || ethtool -L {q} rx {n}",),
                why="one forwarding core sees every packet"))
        if tuning.flow_control_off:
            steps.append(Step(
                name=f"{who}: {dev} flow control off", role=role,
                applies=f"ethtool -a {q} >/dev/null 2>&1",
                check=(f"ethtool -a {q} | awk '/^(Autonegotiate|RX|TX):/ && $2 == \"on\" "
                       "{print; bad=1} END {exit bad}'"),
                apply=(f"ethtool -A {q} autoneg off rx off tx off",),
                why="pause frames would slow the generator instead of showing loss"))
        if tuning.irq_cpu is not None:
            irqs = irq_numbers(dev)
            steps.append(Step(
                name=f"{who}: {dev} IRQs on CPU {tuning.irq_cpu}", role=role,
                applies=f"test -n \"$({irqs})\"",
                check=(f"for i in $({irqs}); do a=$(cat /proc/irq/$i/smp_affinity_list); "
                       f"[ \"$a\" = {tuning.irq_cpu} ] || {{ echo \"irq $i on $a\"; exit 1; }}; "
                       "done"),
                apply=(f"for i in $({irqs}); do echo {tuning.irq_cpu} > "
                       "/proc/irq/$i/smp_affinity_list; done",),
                why="the port's interrupts on the forwarding core"))
    if tuning.stop_irqbalance:
        steps.append(Step(
            name=f"{who}: irqbalance stopped", role=role,
            applies="command -v irqbalance >/dev/null || systemctl cat irqbalance "
                    ">/dev/null 2>&1",
            check="! pgrep -x irqbalance",
            apply=("systemctl stop irqbalance 2>/dev/null || pkill -x irqbalance",),
            why="irqbalance would move the pinned IRQs"))
    if tuning.turbo_off:
        steps.append(Step(
            name=f"{who}: turbo off", role=role,
            applies=f"test -w {_NO_TURBO} || test -w {_BOOST}",
            check=(f"if [ -e {_NO_TURBO} ]; then grep -qx 1 {_NO_TURBO}; "
                   f"else grep -qx 0 {_BOOST}; fi"),
            apply=(f"if [ -e {_NO_TURBO} ]; then echo 1 > {_NO_TURBO}; "
                   f"else echo 0 > {_BOOST}; fi",),
            why="a steady clock: turbo depends on temperature and the other cores"))
    if tuning.cstates_off:
        steps.append(Step(
            name=f"{who}: deep C-states off", role=role,
            applies=f"ls {_CSTATES} >/dev/null 2>&1",
            check=f"! grep -lx 0 {_CSTATES}",
            apply=(f"for f in {_CSTATES}; do echo 1 > \"$f\"; done",),
            why="waking from a deep idle state adds latency and loss at low rates"))
    if tuning.hugepages is not None:
        n = int(tuning.hugepages)
        steps.append(Step(
            name=f"{who}: {n} hugepages of 2 MiB", role=role,
            check=(f"awk '/^HugePages_Total:/ {{print \"HugePages_Total: \" $2; "
                   f"exit !($2 >= {n})}}' /proc/meminfo"),
            apply=(f"echo {n} > /proc/sys/vm/nr_hugepages",
                   f"echo 'vm.nr_hugepages = {n}' > /etc/sysctl.d/80-srperf-hugepages.conf"),
            why="DPDK (TRex, VPP) keeps its packet buffers in hugepages"))
    if tuning.isolate_cpus:
        cpus = tuning.isolate_cpus
        args = f"isolcpus={cpus} nohz_full={cpus} rcu_nocbs={cpus}"
        steps.append(Step(
            name=f"{who}: CPUs {cpus} isolated (kernel command line)", role=role,
            applies="test -f /etc/default/grub",
            check=f"grep -qw 'isolcpus={cpus}' /proc/cmdline",
            apply=(f"grep -q 'isolcpus={cpus}' /etc/default/grub || sed -i "
                   f"'s/^GRUB_CMDLINE_LINUX=\"\\(.*\\)\"/GRUB_CMDLINE_LINUX=\"\\1 {args}\"/' "
                   "/etc/default/grub",
                   "update-grub 2>/dev/null || grub2-mkconfig -o /boot/grub2/grub.cfg"),
            reboot=True,
            why=f"{args}: no other task, tick or RCU callback on the forwarding cores; "
                "the kernel reads it at boot: reboot the node after this step"))
    if tuning.governor:
        g = shlex.quote(tuning.governor)
        steps.append(Step(
            name=f"{who}: CPU governor {tuning.governor}", role=role,
            applies=f"ls {_GOVERNORS} >/dev/null 2>&1",
            check=f"! grep -vxH {g} {_GOVERNORS}",
            apply=(f"for f in {_GOVERNORS}; do echo {g} > \"$f\"; done",),
            why="no frequency scaling during a trial"))
    return steps


_STATE = r"""
for dev in "$@"; do
  echo "offloads $dev $(ethtool -k "$dev" 2>/dev/null | awk -F': ' '$1 ~ /^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload|large-receive-offload)$/ {printf "%s=%s,", $1, $2}')"
  echo "queues $dev $(ethtool -l "$dev" 2>/dev/null | awk '/^Current/ {c=1} c && /^(RX|Combined):/ && $2 != "n/a" {n += $2} END {print n+0}')"
done
echo "governor $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo none)"
echo "irqbalance $(pgrep -x irqbalance >/dev/null && echo running || echo stopped)"
echo "smt $(cat /sys/devices/system/cpu/smt/active 2>/dev/null || echo unknown)"
if [ -r /sys/devices/system/cpu/intel_pstate/no_turbo ]; then
  echo "turbo $(sed 's/^1$/off/;s/^0$/on/' /sys/devices/system/cpu/intel_pstate/no_turbo)"
elif [ -r /sys/devices/system/cpu/cpufreq/boost ]; then
  echo "turbo $(sed 's/^1$/on/;s/^0$/off/' /sys/devices/system/cpu/cpufreq/boost)"
else
  echo "turbo unknown"
fi
echo "isolated $(cat /sys/devices/system/cpu/isolated 2>/dev/null)"
"""


def read_state(node: Transport, ports: Sequence[str]) -> dict[str, Any]:
    """The node's tuning as it is: per port offloads and RX queues; governor,
    irqbalance, SMT (``smt``: 1 = hyper-threading active), turbo and isolated cores (for the run's environment)."""
    r = node.run(["bash", "-c", _STATE, "state", *ports], timeout=30.0)
    state: dict[str, Any] = {"ports": {}}
    for line in r.stdout.splitlines():
        key, _, rest = line.partition(" ")
        if key in ("offloads", "queues"):
            dev, _, value = rest.partition(" ")
            port = state["ports"].setdefault(dev, {})
            if key == "offloads":
                port["offloads"] = dict(item.split("=", 1) for item in value.split(",")
                                        if "=" in item)
            else:
                port["rx_queues"] = int(value) if value.isdigit() else None
        elif key:
            state[key] = rest.strip()
    return state


__all__ = ["OFFLOADS", "Tuning", "irq_numbers", "read_state", "tuning_steps"]
