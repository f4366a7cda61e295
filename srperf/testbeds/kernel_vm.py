"""A kernel target: the SUT is a QEMU guest booting a named kernel.

Topology (names from the testbed file, defaults shown)::

    <prefix>-tester (namespace of this host)          QEMU guest (the SUT)
      t0 (tx, tap) ---- virtio-net, vhost=off ---- s0 (in)
      t1 (rx, tap) ---- virtio-net, vhost=off ---- s1 (out)
      (no IP stack on t0/t1)                       console agent on ttyS1

The tester's ports are the tap devices themselves (QEMU runs in the tester's
namespace), so the local generator and the verification work as on the virtual
testbed.  The kernel (``kernel:`` block, :class:`srperf.kernel.target.KernelTarget`)
is fetched once and cached; each ``up`` builds the guest's initramfs, boots it,
renames its NICs by MAC to ``sut.in``/``sut.out`` and applies the SUT's base setup
(the same as an SSH SUT gets, :mod:`srperf.testbeds.ssh_prepare`).  CFG scripts
reach the guest through :class:`srperf.transports.console.ConsoleTransport`:
``cfg_scripts/linux.sh`` runs there unchanged.

Accelerator: KVM where it boots the guest, else TCG.  Under TCG every figure is
an emulated one (the emulated vCPU is the bottleneck): the run's environment says
``execution: emulated``, every progress line says so, and ``compare``/``nightly``
never judge such a run against a native one (:mod:`srperf.results.emulation`).

Everything srperf makes for it lives in ``/run/srperf/kernel-PREFIX/`` (the record
of its settings, QEMU's PID, sockets, logs, initramfs) and the tester namespace;
``down`` stops QEMU by its PID and removes both.  Only the kernel cache stays.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from srperf.safety import bounded_read, safe_paths
from srperf.config.model import TestbedConfig
from srperf.errors import ConfigError, SrperfError
from srperf.forwarders.base import Forwarder
from srperf.kernel import qemu
from srperf.kernel.target import KernelTarget
from srperf.util.netns import netns_exists, run
from srperf.testbeds.base import Testbed, TestbedError
from srperf.testbeds.lock import LOCK_DIR
from srperf.transports.base import Transport
from srperf.transports.console import ConsoleTransport
from srperf.transports.netns import NetnsTransport

log = logging.getLogger(__name__)

OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro", "lro")
KVM_PROBE_S = 20.0
"""Longest wait for a KVM guest before TCG is taken instead (``accel: auto``), s: a
guest boots in 1-2 s under hardware KVM; this host's software KVM hangs silently."""
PROBE_FILE = "accel-probe.json"
"""In the kernel cache: the kernels this host's KVM refused (the probe is not repeated)."""




class KernelTestbed(Testbed):
    """A tester namespace on this host and a QEMU guest booting a named kernel as the SUT."""

    kind = "kernel"
    lock_roles = ("tester",)  # the guest's files go with the guest

    def __init__(self, config: TestbedConfig) -> None:
        super().__init__(config)
        self.target = KernelTarget.from_mapping(config.source, config.kernel)

    # -- description -------------------------------------------------------------
    @classmethod
    def check_config(cls, config: TestbedConfig) -> None:
        KernelTarget.from_mapping(config.source, config.kernel)
        if config.sut.transport.kind != "console":
            raise ConfigError(config.source, "sut.transport.kind", config.sut.transport.kind,
                              "a kernel testbed reaches its guest through 'console'")
        if config.tester.netns is not None:
            raise ConfigError(config.source, "tester.netns", config.tester.netns,
                              f"a kernel testbed's tester is {config.tester_ns} (from prefix)")
        if config.tester.driver != "linux":
            raise ConfigError(config.source, "tester.driver", config.tester.driver,
                              "a kernel testbed's tester is the local generator (linux)")

    def check_forwarder(self, forwarder: Forwarder, source: str) -> None:
        if forwarder.name != "linux":
            raise ConfigError(source, "forwarder", forwarder.name,
                              f"the kernel target {self.config.source} runs the guest "
                              "kernel's own SRv6 (forwarder linux)")

    @property
    def run_dir(self) -> Path:
        """Where this testbed's files live while it is up."""
        return Path(LOCK_DIR) / f"kernel-{self.config.prefix}"

    @property
    def record_path(self) -> Path:
        return self.run_dir / "testbed.json"

    def record(self) -> dict[str, Any] | None:
        """What the testbed now up was made with (None: no record)."""
        data = bounded_read.read_record(self.record_path)
        return data if isinstance(data, dict) else None

    def spec(self, image: str = "", initrd: str = "") -> qemu.GuestSpec:
        tb = self.config
        return qemu.GuestSpec(
            name=f"srperf-kernel-{tb.prefix}", image=image,
            initrd=initrd or str(self.run_dir / "initrd.gz"), memory_mb=self.target.memory_mb,
            cpus=self.target.cpus,
            taps=((tb.tester.tx.name, tb.sut.in_port.mac), (tb.tester.rx.name, tb.sut.out_port.mac)),
            run_dir=str(self.run_dir), netns=tb.tester_ns, host_cpu=self.target.host_cpu)

    def _settings(self) -> dict[str, Any]:
        tb = self.config
        return json.loads(json.dumps({
            "kernel": self.target.__dict__, "tester.tx": [tb.tester.tx.name, tb.tester.tx.mac],
            "tester.rx": [tb.tester.rx.name, tb.tester.rx.mac],
            "sut.in": [tb.sut.in_port.name, tb.sut.in_port.mac],
            "sut.out": [tb.sut.out_port.name, tb.sut.out_port.mac],
            "addressing": tb.addressing.__dict__}, default=str))

    # -- nodes ---------------------------------------------------------------------
    def _make_node(self, role: str) -> Transport:
        if role == "tester":
            return NetnsTransport(self.config.tester_ns)
        return ConsoleTransport(self.spec().agent_socket, label=f"guest {self.config.prefix}")

    def tester_netns(self) -> str | None:
        return self.config.tester_ns

    def forwarding_cpu(self) -> int | None:
        """The guest's CPU that forwards (its first vCPU)."""
        return 0

    # -- state -----------------------------------------------------------------------
    def is_up(self) -> bool:
        """The tester namespace with both taps, and this guest's QEMU running."""
        tb = self.config
        if not netns_exists(tb.tester_ns) or self.record() is None:
            return False
        for dev in (tb.tester.tx.name, tb.tester.rx.name):
            if not run(["ip", "link", "show", "dev", dev], ns=tb.tester_ns, check=False).ok:
                return False
        return qemu.pid_of(self.spec()) is not None

    def check_reusable(self) -> None:
        """Refuse (exit 2) a tester namespace srperf did not make, or a guest made
        with other settings (another kernel above all)."""
        tb = self.config
        advice = f"remove it first with `srperf testbed down {tb.source}`"
        if not netns_exists(tb.tester_ns):
            return
        rec = self.record()
        if rec is None:
            raise ConfigError(tb.source, "prefix", tb.prefix,
                              f"network namespace {tb.tester_ns} exists but srperf has no "
                              f"record of making it ({self.record_path}); {advice}")
        if rec.get("settings") != self._settings():
            raise ConfigError(tb.source, "kernel", self.target.name,
                              f"the kernel testbed {tb.prefix} is up with other settings "
                              f"(kernel {rec.get('image', {}).get('name')}); {advice}")

    # -- up / down -------------------------------------------------------------------
    def up(self) -> bool:
        """Fetch the kernel (cached), boot the guest, wire and set it up.  Does
        nothing (False) when this guest is already up with the same settings."""
        self.check_reusable()
        if self.is_up():
            return False
        self.down()
        from srperf.kernel import initramfs, package

        image = package.fetch(self.target)
        safe_paths.make_dirs(self.run_dir, 0o700)
        record: dict[str, Any] = {"source": self.config.source, "settings": self._settings(),
                                  "image": image.record()}
        self._write_record(record)
        try:
            initramfs.build(image, self.run_dir / "initrd.gz")
            self._tester()
            spec = self.spec(image.image)
            record.update(self._boot(spec))
            self._write_record(record)
            # No XDP sink on the rx tap: a tap counts frames its XDP program drops as
            # rx_dropped, not rx_packets (the generator's received count). With no IP
            # stack on the tester's ports the kernel drops each frame, answering nothing.
            self._guest_setup()
        except BaseException:
            log.error("kernel testbed %s: bringing it up failed; removing what was made",
                      self.config.prefix)
            self.close()
            self.down()
            raise
        log.info("kernel testbed %s up: %s (%s) under %s", self.config.prefix, image.name,
                 record.get("uname_r"), record.get("accelerator"))
        return True

    def _write_record(self, record: dict[str, Any]) -> None:
        safe_paths.write_file(self.record_path, json.dumps(record, sort_keys=True, indent=1),
                              make_parent=False)

    def _tester(self) -> None:
        """The tester namespace and its two tap devices (no IP stack on them)."""
        tb = self.config
        ns = tb.tester_ns
        run(["ip", "netns", "add", ns])
        run(["ip", "link", "set", "dev", "lo", "up"], ns=ns)
        run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
             "net.ipv6.conf.default.disable_ipv6=1"], ns=ns)
        for port in (tb.tester.tx, tb.tester.rx):
            run(["ip", "tuntap", "add", "dev", port.name, "mode", "tap"], ns=ns)
            run(["ip", "link", "set", "dev", port.name, "address", port.mac, "mtu",
                 str(tb.addressing.link_mtu), "up"], ns=ns)
            for feature in OFFLOADS:
                run(["ethtool", "-K", port.name, feature, "off"], ns=ns, check=False)
            # No qdisc, as on a veth: a frame the guest's ring cannot take is dropped
            # by the tap (its tx_dropped), not queued on the tester's side.
            run(["tc", "qdisc", "replace", "dev", port.name, "root", "noqueue"], ns=ns)

    def _boot(self, spec: qemu.GuestSpec) -> dict[str, Any]:
        """Boot the guest with the accelerator the target asks for; what was used."""
        wanted = self.target.accel
        out: dict[str, Any] = {}
        refused = self._kvm_refused_before(spec) if wanted == "auto" else None
        if refused:
            out["kvm_refused"] = f"{refused} (probed before; cached in " \
                                 f"{Path(self.target.cache_dir) / PROBE_FILE})"
            log.info("KVM refused %s on this host before (%s): TCG", self.target.name, refused)
        elif wanted == "kvm" or (wanted == "auto" and qemu.kvm_usable()):
            started = time.monotonic()
            try:
                self._start(spec, "kvm", min(self.target.boot_timeout_s, KVM_PROBE_S))
                out.update(accelerator="kvm", boot_s=round(time.monotonic() - started, 2))
            except SrperfError as exc:
                words = qemu.kvm_failed(spec) or _silent(spec, exc)
                self.close()
                qemu.stop(spec)
                if wanted == "kvm":
                    raise TestbedError(f"{self.config.source}: kernel.accel kvm: the guest "
                                       f"does not run under this host's KVM: {words}") from exc
                log.warning("KVM cannot run %s here (%s): using TCG (emulated)",
                            self.target.name, words)
                out["kvm_refused"] = words
                self._remember_kvm_refusal(spec, words)
        elif wanted == "auto":
            out["kvm_refused"] = "/dev/kvm does not open"
        if "accelerator" not in out:
            started = time.monotonic()
            self._start(spec, "tcg", self.target.boot_timeout_s)
            out.update(accelerator="tcg", boot_s=round(time.monotonic() - started, 2))
        res = self.node("sut").check(["uname", "-r"], timeout=30.0)
        out["uname_r"] = res.stdout.strip()
        return out

    def _probe_key(self, spec: qemu.GuestSpec) -> str:
        import os

        return f"{os.uname().release} {_qemu_version()} {Path(spec.image).name} " \
               f"{Path(spec.image).stat().st_size}"

    def _kvm_refused_before(self, spec: qemu.GuestSpec) -> str | None:
        from srperf.safety import bounded_read

        try:   # in the private kernel cache; bounded, and never a FIFO's wait
            data = json.loads(bounded_read.read_bytes(Path(self.target.cache_dir) / PROBE_FILE,
                                                      1 << 20))
        except (OSError, ValueError, bounded_read.TooLarge):
            return None
        found = data.get(self._probe_key(spec)) if isinstance(data, dict) else None
        return str(found) if found else None

    def _remember_kvm_refusal(self, spec: qemu.GuestSpec, words: str) -> None:
        from srperf.safety import bounded_read

        path = Path(self.target.cache_dir) / PROBE_FILE
        try:
            data = json.loads(bounded_read.read_bytes(path, 1 << 20))
        except (OSError, ValueError, bounded_read.TooLarge):
            data = {}
        data[self._probe_key(spec)] = words
        safe_paths.write_file(path, json.dumps(data, indent=1, sort_keys=True))

    def _start(self, spec: qemu.GuestSpec, accel: str, timeout: float) -> None:
        qemu.start(spec, accel)
        node = self.node("sut")
        assert isinstance(node, ConsoleTransport)
        node.wait_ready(timeout, alive=lambda: qemu.pid_of(spec) is not None
                        and (accel != "kvm" or qemu.kvm_failed(spec) is None))

    def _guest_setup(self) -> None:
        """Name the guest's NICs by MAC as the testbed file does, then the SUT's base
        setup (addresses, static neighbours, sysctls, tunsrc), in one script."""
        from srperf.testbeds.ssh_prepare import base_setup
        from srperf.transports.base import shell_line

        tb = self.config
        lines = ["set -e"]
        for port in (tb.sut.in_port, tb.sut.out_port):
            lines.append(
                f"dev=$(for d in /sys/class/net/*; do [ \"$(cat $d/address)\" = "
                f"{port.mac.lower()} ] && basename $d; done; true)\n"
                f"[ -n \"$dev\" ] || {{ echo 'no NIC with MAC {port.mac}' >&2; exit 1; }}\n"
                f"[ \"$dev\" = {port.name} ] || ip link set dev \"$dev\" name {port.name}")
        lines += [shell_line(argv) for argv in base_setup(tb).commands()]
        for port in (tb.sut.in_port, tb.sut.out_port):
            lines.append(f"ethtool -K {port.name} gro off gso off tso off >/dev/null 2>&1 "
                         "|| true")
        res = self.node("sut").run(["bash", "-c", "\n".join(lines)], timeout=60.0)
        if not res.ok:
            raise TestbedError(f"{self.node('sut').where}: the guest's base setup failed: "
                               f"{(res.stderr or res.stdout).strip()}")

    def down(self) -> None:
        """Stop this guest's QEMU (by its PID), remove the tester namespace (and its
        taps) and the run directory."""
        for role in list(self._nodes):
            if role == "sut":
                self._nodes.pop(role).close()
        qemu.stop(self.spec())
        if netns_exists(self.config.tester_ns):
            run(["ip", "netns", "del", self.config.tester_ns], check=False)
        safe_paths.remove_tree(self.run_dir)

    def close(self) -> None:
        # The guest's work directory dies with the guest: no clean-up call through a
        # console that may be gone.
        sut = self._nodes.get("sut")
        if sut is not None:
            sut.forget_workdir()
        super().close()

    def status(self) -> list[str]:
        lines = super().status()
        rec = self.record()
        if rec is not None:
            lines.insert(1, f"kernel {rec.get('image', {}).get('name')} "
                            f"({rec.get('uname_r', '?')}), {rec.get('accelerator', '?')}"
                            + (" (EMULATED)" if rec.get("accelerator") == "tcg" else ""))
        return lines

    # -- what runs are told ---------------------------------------------------------
    @property
    def accelerator(self) -> str | None:
        """kvm or tcg once the guest is up (None: not up)."""
        rec = self.record()
        return None if rec is None else rec.get("accelerator")

    def sut_pid(self) -> int | None:
        """The PID of this guest's QEMU (None: not running)."""
        return qemu.pid_of(self.spec())

    def label_line(self, line: str) -> str:
        return f"[EMULATED tcg] {line}" if self.accelerator == "tcg" else line

    def environment(self, forwarder: Forwarder | None = None) -> dict[str, Any]:
        env = super().environment(forwarder)
        rec = self.record() or {}
        accel = rec.get("accelerator")
        env["kernel_target"] = {
            "kernel": rec.get("image"), "accelerator": accel, "uname_r": rec.get("uname_r"),
            "kvm_refused": rec.get("kvm_refused"), "boot_s": rec.get("boot_s"),
            "qemu": _qemu_version(), "memory_mb": self.target.memory_mb,
            "cpus": self.target.cpus}
        env["execution"] = {"mode": "emulated" if accel == "tcg" else "native",
                            "how": f"QEMU {accel}" if accel else "QEMU (not up)"}
        return env


def _silent(spec: qemu.GuestSpec, exc: Exception) -> str:
    """Why a KVM guest is taken for failed when QEMU said nothing."""
    log_file = Path(spec.console_log)
    if log_file.exists() and log_file.stat().st_size == 0:
        return f"no answer within {KVM_PROBE_S:g} s under KVM, nothing on its console"
    return str(exc)


def _qemu_version() -> str:
    res = run(["qemu-system-x86_64", "--version"], check=False)
    return res.stdout.splitlines()[0] if res.ok and res.stdout else "not installed"


__all__ = ["KernelTestbed"]
