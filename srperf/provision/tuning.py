"""SUT tuning as the SRPerf paper and CSIT do it, as idempotent steps, and read back.

Per test port: segmentation and receive offloads off (``ethtool -K``: they batch
packets and hide per-packet cost), one RX queue (``ethtool -L``: one forwarding
core sees every packet), the port's IRQs pinned to the forwarding core.  Per
node: irqbalance stopped (it would move those IRQs), the CPU frequency governor
``performance``.  A step whose hardware is absent (a veth has no IRQ; a VM may
have no cpufreq; no irqbalance installed) is *not applicable*, never "done".
Turbo, hyper-threading and isolated cores cannot be changed without a reboot:
:func:`read_state` reports them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Sequence

from srperf.provision.steps import Role, Step
from srperf.transports.base import Transport
from srperf.wording import count

OFFLOADS = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
            "gro": "generic-receive-offload", "lro": "large-receive-offload"}
"""ethtool short name -> the name ``ethtool -k`` prints, of the offloads turned off."""

_OFFLOAD_ON = ("ethtool -k {dev} | awk -F': ' '$1 ~ /^({names})$/ && $2 ~ /^on/ "
               "&& $2 !~ /fixed/ {{print $1 \": \" $2; bad=1}} END {{exit bad}}'")
_GOVERNORS = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"


@dataclass(frozen=True)
class Tuning:
    """What tuning a node gets (the testbed's ``provision`` block)."""

    offloads_off: bool = True
    rx_queues: int | None = 1
    irq_cpu: int | None = None
    """Core the ports' IRQs go to (None: leave them)."""
    stop_irqbalance: bool = True
    governor: str | None = "performance"


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
        if tuning.irq_cpu is not None:
            irqs = f"grep -E '[[:space:]]{q}(-|$)' /proc/interrupts | cut -d: -f1"
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


__all__ = ["OFFLOADS", "Tuning", "read_state", "tuning_steps"]
