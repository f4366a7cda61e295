"""Tuning steps srperf provision adds for a lab's SUT: the IRQ names of the common NIC
drivers, core isolation (a reboot), C-states, turbo, flow control and hugepages, each
with a check; the IRQ finder is run for real (bash, awk) on /proc/interrupts-shaped
files of i40e, ice, ixgbe, mlx5 and virtio hosts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from srperf.provision.steps import Role
from srperf.provision.tuning import Tuning, irq_numbers, tuning_steps

INTERRUPTS = """\
            CPU0       CPU1
  24:          0          0   PCI-MSI 524288-edge      i40e-0000:03:00.0:misc
  25:     119283          0   PCI-MSI 524289-edge      i40e-ens1f0-TxRx-0
  26:          0      90211   PCI-MSI 524290-edge      i40e-ens1f0-TxRx-1
  27:         12          0   PCI-MSI 524291-edge      i40e-ens1f0np0-TxRx-0
  31:        120          0   PCI-MSI 1048577-edge     ice-ens2f1-TxRx-0
  40:        100          0   PCI-MSI 2048001-edge     ens3f0-TxRx-0
  41:        100          0   PCI-MSI 2048002-edge     ens3f0-TxRx-1
  50:          7          0   PCI-MSI 3145728-edge     mlx5_async0@pci:0000:41:00.0
  51:       8812          0   PCI-MSI 3145729-edge     mlx5_comp0@pci:0000:41:00.0
  52:       9120          0   PCI-MSI 3145730-edge     mlx5_comp1@pci:0000:41:00.0
  53:          1          0   PCI-MSI 3145731-edge     mlx5_comp0@pci:0000:41:00.1
  60:       1200          0   PCI-MSI 114688-edge      virtio0-input.0
"""


@pytest.fixture()
def host(tmp_path: Path) -> tuple[Path, Path]:
    """A /proc/interrupts and a /sys/class/net where ens4f0np0 is the mlx5 port at
    0000:41:00.0 (its IRQs carry the PCI address, not the port name)."""
    intr = tmp_path / "interrupts"
    intr.write_text(INTERRUPTS)
    net = tmp_path / "net"
    pci = tmp_path / "devices" / "pci0000:40" / "0000:41:00.0"
    pci.mkdir(parents=True)
    (net / "ens4f0np0").mkdir(parents=True)
    (net / "ens4f0np0" / "device").symlink_to(pci)
    (net / "ens1f0").mkdir()
    return intr, net


@pytest.mark.parametrize("dev,irqs", [
    ("ens1f0", ["25", "26"]),         # i40e: driver-port-TxRx-N (not ens1f0np0's, not misc)
    ("ens2f1", ["31"]),               # ice
    ("ens3f0", ["40", "41"]),         # ixgbe: port-TxRx-N
    ("ens4f0np0", ["50", "51", "52"]),  # mlx5: by PCI address, not .1's
    ("eth9", []),                     # nothing: the step is not applicable
])
def test_irq_names_of_common_drivers(host: tuple[Path, Path], dev: str,
                                     irqs: list[str]) -> None:
    intr, net = host
    out = subprocess.run(["bash", "-c", irq_numbers(dev, str(intr), str(net))],
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == irqs


def test_every_tuning_step_has_a_check_and_isolation_needs_a_reboot() -> None:
    steps = tuning_steps(Role.SUT, ["ens1f0"], Tuning(irq_cpu=2, isolate_cpus="2-3",
                                                      hugepages=1024))
    names = [s.name for s in steps]
    for part in ("flow control off", "IRQs on CPU 2", "turbo off", "deep C-states off",
                 "1024 hugepages", "CPUs 2-3 isolated", "irqbalance", "governor"):
        assert any(part in n for n in names), (part, names)
    assert all(s.check for s in steps)
    iso = next(s for s in steps if "isolated" in s.name)
    assert iso.reboot and "reboot" in iso.why
    assert "isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3" in " ".join(iso.apply)
    assert not any(s.reboot for s in steps if s is not iso)


def test_check_commands_run_on_this_host() -> None:
    """The checks are valid shell here (their verdict depends on the host: a VM has no
    turbo or cpuidle files, which 'applies' reports as not applicable)."""
    for step in tuning_steps(Role.SUT, ["lo"], Tuning(hugepages=0)):
        for command in filter(None, (step.applies, step.check)):
            proc = subprocess.run(["bash", "-n", "-c", command], capture_output=True,
                                  text=True)
            assert proc.returncode == 0, (step.name, command, proc.stderr)
