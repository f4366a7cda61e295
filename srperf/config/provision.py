"""The ``provision`` block of a testbed file: what ``srperf provision`` installs and tunes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from srperf.config.settings import Settings, setting

_SHA256 = {"type": ["string", "null"], "pattern": r"^[0-9a-f]{64}\Z"}
_SOURCE = {"type": ["object", "null"], "additionalProperties": False,
           "required": ["repo_url", "commit", "sha256"],
           "properties": {"repo_url": {"type": "string", "pattern": "^https://"},
                          "commit": {"type": "string", "pattern": r"^[0-9a-f]{40}\Z"},
                          "sha256": {"type": "string", "pattern": r"^[0-9a-f]{64}\Z"}}}


@dataclass(frozen=True)
class TuningSettings(Settings):
    """SUT tuning (srperf.provision.tuning)."""

    offloads_off: bool = setting(True, "tso, gso, gro and lro off on the SUT's test ports",
                                 schema={"type": "boolean"})
    rx_queues: int | None = setting(1, "RX queues of each SUT test port (null: leave)",
                                    schema={"type": ["integer", "null"], "minimum": 1,
                                            "maximum": 256})
    irq_cpu: int | None = setting(None, "core for the test ports' IRQs (null: sut.cpu)",
                                  schema={"type": ["integer", "null"], "minimum": 0,
                                          "maximum": 8191})
    stop_irqbalance: bool = setting(True, "stop irqbalance on the SUT",
                                    schema={"type": "boolean"})
    governor: str | None = setting("performance", "CPU frequency governor (null: leave)",
                                   schema={"type": ["string", "null"],
                                           "pattern": r"^[a-z]{1,32}\Z"})
    isolate_cpus: str | None = setting(
        None, "CPUs isolated from the scheduler, timer ticks and RCU callbacks on the "
        "kernel command line (isolcpus, nohz_full, rcu_nocbs), e.g. '2-3'; written to "
        "/etc/default/grub, takes effect after a reboot (null: leave)",
        schema={"type": ["string", "null"],
                "pattern": r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\Z"})
    cstates_off: bool = setting(True, "deep CPU idle states (C1 and deeper) disabled: no "
                                "wake-up latency in a trial", schema={"type": "boolean"})
    turbo_off: bool = setting(True, "turbo boost off (intel_pstate no_turbo or cpufreq "
                              "boost): a steady clock", schema={"type": "boolean"})
    flow_control_off: bool = setting(True, "Ethernet flow control (pause frames) off on "
                                     "the test ports: loss is seen, not pushed back",
                                     schema={"type": "boolean"})
    hugepages: int | None = setting(1024, "2 MiB hugepages reserved where TRex (tester) or "
                                    "VPP (SUT) runs (null: leave)",
                                    unit="pages", schema={"type": ["integer", "null"],
                                                          "minimum": 0, "maximum": 1_000_000})


@dataclass(frozen=True)
class TrexInstall(Settings):
    """The TRex release srperf installs on the tester (a pinned archive)."""

    version: str | None = setting(None, "TRex release, e.g. v3.04 (null: no TRex step)",
                                  schema={"type": ["string", "null"],
                                          "pattern": r"^v[0-9]{1,4}\.[0-9]{1,4}\Z"})
    url: str | None = setting(None, "where the tester downloads the release archive",
                              schema={"type": ["string", "null"], "pattern": "^https://"})
    sha256: str | None = setting(None, "the archive's SHA-256 (checked before unpacking)",
                                 schema=_SHA256)
    dir: str = setting("/opt/trex", "parent directory of the unpacked release",
                       schema={"type": "string", "pattern": "^/"})
    trex_cfg: str = setting("/etc/trex_cfg.yaml", "where the server's config is written",
                            schema={"type": "string", "pattern": "^/"})


@dataclass(frozen=True)
class KernelInstallSettings(Settings):
    """The kernel ``srperf provision`` installs on the SUT (srperf.kernel.provision)."""

    target: str | None = setting(
        None, "a kernel testbed file or name (kind kernel) whose kernel block names the "
        "kernel to install, e.g. testbed/kernel-6.12.yaml (null: no kernel step; "
        "--kernel FILE names one on the command line)",
        schema={"type": ["string", "null"], "minLength": 1})
    boot: str = setting("auto", "how the SUT boots the installed kernel: grub (made the "
                        "boot default with grub-reboot, then grub-set-default once it "
                        "answers), kexec (loaded and booted now; a cold boot returns to "
                        "the boot loader's default), auto (grub when the SUT has "
                        "grub-reboot and /boot/grub/grub.cfg, else kexec)",
                        schema={"enum": ["auto", "grub", "kexec"]})
    install: str = setting("auto", "how the kernel is installed: deb (the Debian package "
                           "itself, with apt-get; only a packaged kernel), files (its "
                           "image and modules unpacked under /boot and /lib/modules, "
                           "then depmod and update-initramfs), auto (deb for a package "
                           "when the SUT has dpkg, else files)",
                           schema={"enum": ["auto", "deb", "files"]})
    reboot_timeout_s: float = setting(600.0, "longest wait for the SUT's SSH to answer "
                                      "again after the reboot", unit="s",
                                      schema={"type": "number", "minimum": 10,
                                              "maximum": 7200})


@dataclass(frozen=True)
class ProvisionSettings(Settings):
    """``provision`` block of a testbed file."""

    tools: bool = setting(True, "install the forwarder's tools on the SUT",
                          schema={"type": "boolean"})
    tuning: TuningSettings = setting(TuningSettings, "SUT tuning")
    trex: TrexInstall = setting(TrexInstall, "TRex on the tester")
    kernel: KernelInstallSettings = setting(KernelInstallSettings,
                                            "a named kernel installed on the SUT")
    vpp: dict[str, Any] = setting({}, "forwarder vpp: apt_source (an APT 'deb' line) and "
                                  "optional keyring_url", schema={
                                      "type": "object", "additionalProperties": False,
                                      "properties": {
                                          "apt_source": {"type": "string",
                                                         "pattern": "^deb "},
                                          "keyring_url": {"type": "string",
                                                          "pattern": "^https://"}}})
    srnk: dict[str, Any] = setting({}, "forwarder srnk: kernel and iproute2 sources, each "
                                   "{repo_url, commit, sha256}", schema={
                                       "type": "object", "additionalProperties": False,
                                       "properties": {"kernel": _SOURCE,
                                                      "iproute2": _SOURCE}})


__all__ = ["KernelInstallSettings", "ProvisionSettings", "TrexInstall", "TuningSettings"]
