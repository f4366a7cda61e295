"""The QEMU process of a kernel target, and the accelerator it runs with.

QEMU runs in the tester's network namespace, where its two tap devices are the
tester's ports; it is started in a session of its own (it outlives the srperf
command that brought the testbed up, until ``testbed down``), its PID written to
the run directory, and stopped only by that PID once ``/proc/PID/cmdline`` still
names this guest.

Accelerator: ``kvm`` where the host's KVM boots the guest, else ``tcg`` (QEMU's
software emulation: correct, but every figure is an emulated one).  ``auto``
tries KVM first when ``/dev/kvm`` opens, and takes TCG when the KVM guest fails
(this host's software KVM stops stock Debian kernels with "KVM internal error").
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from srperf.safety import bounded_read, safe_paths
from srperf.errors import SrperfError

log = logging.getLogger(__name__)

KVM_FAILURES = ("KVM internal error", "emulation failure", "failed to initialize kvm",
                "Could not access KVM kernel module", "kvm run failed")
"""Words in QEMU's output that say the KVM guest cannot run."""


class QemuError(SrperfError):
    """QEMU could not start the guest."""


def kvm_usable() -> bool:
    """True when ``/dev/kvm`` exists and may be opened read-write."""
    return os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK)


@dataclass(frozen=True)
class GuestSpec:
    """What one QEMU guest is booted with."""

    name: str
    """QEMU's ``-name`` (how srperf recognises its own process)."""
    image: str
    initrd: str
    memory_mb: int
    cpus: int
    taps: tuple[tuple[str, str], ...]
    """(tap device in the tester namespace, the guest NIC's MAC), in NIC order."""
    run_dir: str
    netns: str
    host_cpu: int | None = None

    @property
    def agent_socket(self) -> str:
        return str(Path(self.run_dir) / "agent.sock")

    @property
    def console_log(self) -> str:
        return str(Path(self.run_dir) / "console.log")

    @property
    def qemu_log(self) -> str:
        return str(Path(self.run_dir) / "qemu.log")

    @property
    def pid_file(self) -> Path:
        return Path(self.run_dir) / "qemu.pid"

    def argv(self, accel: str) -> list[str]:
        """The QEMU command line for accelerator ``accel`` (kvm or tcg)."""
        if accel == "kvm":
            accel_args = ["-accel", "kvm", "-cpu", "host"]
        else:
            accel_args = ["-accel", "tcg,thread=multi", "-cpu", "max"]
        argv = ["qemu-system-x86_64", "-name", self.name, "-nodefaults", "-no-user-config",
                *accel_args, "-smp", str(self.cpus), "-m", str(self.memory_mb),
                "-display", "none", "-monitor", "none", "-no-reboot",
                "-kernel", self.image, "-initrd", self.initrd,
                "-append", "console=ttyS0 panic=1 loglevel=4 net.ifnames=0",
                "-serial", f"file:{self.console_log}",
                "-serial", f"unix:{self.agent_socket},server=on,wait=off"]
        for i, (tap, mac) in enumerate(self.taps):
            argv += ["-netdev", f"tap,id=n{i},ifname={tap},script=no,downscript=no,vhost=off",
                     "-device", f"virtio-net-pci,netdev=n{i},mac={mac}"]
        return argv


def start(spec: GuestSpec, accel: str) -> int:
    """Start QEMU for ``spec`` with ``accel``; its PID (also in ``spec.pid_file``)."""
    argv = ["ip", "netns", "exec", spec.netns, *spec.argv(accel)]
    if spec.host_cpu is not None:
        argv = ["taskset", "-c", str(spec.host_cpu), *argv]
    log.info("starting %s (%s): %s", spec.name, accel, " ".join(argv))
    for stale in (spec.agent_socket, spec.console_log):
        safe_paths.remove_file(Path(stale))
    with safe_paths.open_append(Path(spec.qemu_log)) as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except FileNotFoundError as exc:
            raise QemuError(f"cannot start QEMU: {exc} (install qemu-system-x86: "
                            "scripts/install.sh)") from exc
    safe_paths.write_file(spec.pid_file, f"{proc.pid}\n", make_parent=False)
    # ip netns exec (and taskset) exec QEMU itself: the PID becomes QEMU's.
    deadline = time.monotonic() + 10.0
    while not _is_ours(proc.pid, spec.name):
        if proc.poll() is not None:
            raise QemuError(f"QEMU ended at once (exit {proc.returncode}): "
                            f"{_log_tail(spec.qemu_log).strip()}")
        if time.monotonic() > deadline:
            raise QemuError(f"{argv[0]} {proc.pid} did not become QEMU within 10 s")
        time.sleep(0.02)
    return proc.pid


def pid_of(spec: GuestSpec) -> int | None:
    """The PID of this guest's QEMU when it runs (None: not running)."""
    try:
        pid = int(bounded_read.read_state(spec.pid_file, 64).split()[0])
    except (OSError, ValueError, IndexError, bounded_read.TooLarge):
        return None
    return pid if _is_ours(pid, spec.name) else None


def _is_ours(pid: int, name: str) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state == "Z":
        _reap(pid)
        return False
    return cmdline[0].endswith(b"qemu-system-x86_64") and cmdline[1:3] == [b"-name",
                                                                         name.encode()]


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop(spec: GuestSpec, grace_s: float = 5.0) -> bool:
    """Stop this guest's QEMU (TERM, then KILL) by its PID; True when one ran."""
    pid = pid_of(spec)
    if pid is None:
        safe_paths.remove_file(spec.pid_file)
        return False
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _is_ours(pid, spec.name):
            _reap(pid)
            time.sleep(0.05)
        if not _is_ours(pid, spec.name):
            break
    _reap(pid)
    if _is_ours(pid, spec.name):
        raise QemuError(f"QEMU {pid} ({spec.name}) did not end")
    safe_paths.remove_file(spec.pid_file)
    log.info("QEMU %d (%s) stopped", pid, spec.name)
    return True


LOG_TAIL = 1 << 20
"""Bytes of a guest's log read for a message (its end: a long-running guest's log grows)."""


def _log_tail(path: str | Path) -> str:
    """The end of a log srperf keeps for its guest ("" when it is not there, or not a
    regular file of srperf's: a FIFO in its place never blocks the read)."""
    try:
        return bounded_read.read_state(path, LOG_TAIL, tail=True)
    except OSError:
        return ""


def kvm_failed(spec: GuestSpec) -> str | None:
    """QEMU's words when its KVM guest failed (None: no failure seen)."""
    texts = [_log_tail(path) for path in (spec.qemu_log, spec.console_log)]
    for text in texts:
        for word in KVM_FAILURES:
            if word in text:
                line = next(ln for ln in text.splitlines() if word in ln)
                return line.strip()
    return None


__all__ = ["GuestSpec", "QemuError", "kvm_usable", "start", "stop", "pid_of", "kvm_failed"]
