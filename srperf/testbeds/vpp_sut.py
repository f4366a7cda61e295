"""srperf's own VPP as the SUT of the virtual testbed (when the testbed names a VPP binary).

:class:`VppProcess` starts ``vpp -c <generated startup.conf>`` in the SUT
namespace (``cfg_scripts/vpp-startup.conf.j2``: one main core, one worker, no
DPDK, 4 KiB pages, every socket and log in a private ``mktemp -d`` directory)
and stops it by its PID.  :class:`VppSutControl` is the SUT handle of a run:
it starts VPP on :meth:`open`, hands the SUT's veths to VPP as af_packet
host-interfaces (``vpp.sh setup``), turns the kernel's own forwarding off in
the SUT namespace while VPP forwards (af_packet hands VPP a copy of every
frame; the kernel would forward its own), configures and cleans behaviors
through ``vpp.sh`` like any forwarder, and on :meth:`close` stops VPP,
restores the sysctls and removes the directory: nothing is left behind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from jinja2 import Environment, StrictUndefined

from srperf import resources
from srperf.safety import safe_paths
from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.errors import CfgError
from srperf.forwarders.base import Forwarder
from srperf.forwarders.vpp import VppOptions
from srperf.testbeds.sut import SutControl
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

PLUGINS = ("af_packet", "srv6ad", "srv6as", "srv6am")
"""VPP plugins srperf's VPP loads (every other one stays disabled)."""
FORWARDING_SYSCTLS = ("net.ipv6.conf.all.forwarding", "net.ipv4.ip_forward")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0



SUN_PATH_MAX = 107
"""Longest path of a unix socket (sun_path holds 108 bytes with its NUL)."""


def _socket_parent() -> str:
    """Where VPP's private directory goes: the run's temporary directory
    (``tempfile.gettempdir()``), unless its sockets' paths would be too long for a
    unix socket there (a deep results directory); then ``/tmp``."""
    base = tempfile.gettempdir()
    longest = len(base) + len("/srperf-vpp.XXXXXXXX/stats.sock")
    return base if longest <= SUN_PATH_MAX else "/tmp"

@dataclass(frozen=True)
class VppStartup:
    """What the startup.conf template needs (paths on this host)."""

    workdir: Path
    main_core: int = 0
    worker_core: int | None = 1
    buffers: int = 16384
    plugins: tuple[str, ...] = PLUGINS

    @property
    def cli_sock(self) -> Path:
        return self.workdir / "cli.sock"

    @property
    def runtime_dir(self) -> Path:
        """VPP's ``unix { runtime-dir }``: in the run's private directory (removed with
        it), never the shared default ``/run/vpp`` another VPP on the host uses."""
        return self.workdir / "run"

    def render(self) -> str:
        """The startup.conf text."""
        template = resources.cfg_script("vpp").parent / "vpp-startup.conf.j2"
        env = Environment(undefined=StrictUndefined, keep_trailing_newline=True)
        return env.from_string(template.read_text()).render(
            runtime_dir=self.runtime_dir, cli_sock=self.cli_sock, log_file=self.workdir / "vpp.log",
            api_prefix=f"srperf{os.getpid()}", api_sock=self.workdir / "api.sock",
            stats_sock=self.workdir / "stats.sock", main_core=self.main_core,
            worker_core=self.worker_core, buffers=self.buffers, plugins=self.plugins)


def cores(tb: TestbedConfig, ncpu: int | None = None) -> tuple[int, int | None]:
    """(main core, worker core): the worker on the SUT's CPU, the main thread on a CPU
    that is neither the SUT's nor the generator's (``tester.cpu``).  When there is no
    such CPU (a 2-CPU host), VPP runs without a worker: its main thread forwards, on
    the SUT's CPU, and never sits on the generator's."""
    ncpu = ncpu or os.cpu_count() or 1
    worker = tb.sut.cpu if tb.sut.cpu is not None else ncpu - 1
    free = [c for c in range(ncpu) if c not in (worker, tb.tester.cpu)]
    if not free:
        return worker, None
    return free[0], worker


class VppProcess:
    """One VPP started by srperf in a network namespace; stopped by its PID."""

    def __init__(self, binary: str, ns: str, startup: VppStartup, source: str = "") -> None:
        self.binary = binary
        self.source = source or "<testbed>"
        """The testbed file naming the binary (for the read gate's message)."""
        self.ns = ns
        self.startup = startup
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def vppctl(self) -> str:
        """The vppctl beside the binary (or the one on PATH)."""
        beside = Path(self.binary).parent / "vppctl"
        return str(beside) if beside.exists() else "vppctl"

    def start(self) -> None:
        if not (os.path.isfile(self.binary) and os.access(self.binary, os.X_OK)):
            raise CfgError(f"sut.vpp_binary = {self.binary}: not an executable file")
        from srperf.safety import programs

        programs.check_vpp(self.source, self.binary)   # again at use: root runs it
        conf = self.startup.workdir / "startup.conf"
        safe_paths.make_dir(self.startup.runtime_dir, 0o700)
        safe_paths.write_file(conf, self.startup.render(), make_parent=False)
        out = safe_paths.open_new(self.startup.workdir / "vpp.out")
        log.info("starting %s in netns %s (%s)", self.binary, self.ns, conf)
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, self.binary, "-c",
                                      str(conf)], stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        out.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self.startup.cli_sock.exists() and self._answers():
                return
            time.sleep(0.2)
        code = self.proc.poll()
        tail = self.output()[-2000:].strip() or "no output"
        self.stop()
        if code is not None:
            raise CfgError(f"sut.vpp_binary = {self.binary}: VPP exited at start with code "
                           f"{code} in netns {self.ns}: {tail}")
        raise CfgError(f"sut.vpp_binary = {self.binary}: VPP did not answer on "
                       f"{self.startup.cli_sock} in netns {self.ns} within "
                       f"{START_TIMEOUT_S:g} s: {tail}")

    def _answers(self) -> bool:
        res = subprocess.run([self.vppctl, "-s", str(self.startup.cli_sock), "show", "version"],
                             capture_output=True, text=True, timeout=10)
        return res.returncode == 0 and res.stdout.startswith("vpp ")

    def output(self) -> str:
        """What VPP printed (its stdout/stderr and log)."""
        text = ""
        for name in ("vpp.out", "vpp.log"):
            path = self.startup.workdir / name
            if path.exists():
                text += path.read_text(errors="replace")
        return text

    def stop(self) -> None:
        """SIGTERM, then SIGKILL, to the process group of the VPP we started."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc = None


class VppSutControl(SutControl):
    """The SUT handle of a virtual testbed whose SUT is srperf's own VPP."""

    def __init__(self, forwarder: Forwarder, sut: Transport, tb: TestbedConfig,
                 options: Settings | None = None, timeout_s: float = 120.0) -> None:
        super().__init__(forwarder, sut, tb, options, timeout_s)
        if tb.sut.vpp_binary is None:
            raise CfgError(f"{tb.source}: sut.vpp_binary is not set")
        self.binary = tb.sut.vpp_binary
        self.vpp: VppProcess | None = None
        self._workdir: Path | None = None
        self._sysctls: dict[str, str] = {}

    def open(self) -> None:
        """Start VPP, give it the ports, stop the kernel forwarding, leave VPP clean."""
        self._workdir = safe_paths.make_temp_dir("srperf-vpp.", _socket_parent())
        main, worker = cores(self.tb)
        self.vpp = VppProcess(self.binary, self.tb.sut_ns,
                              VppStartup(self._workdir, main_core=main, worker_core=worker),
                              source=self.tb.source)
        try:
            self.vpp.start()
            assert isinstance(self.options, VppOptions)
            self.options = replace(self.options, cli_sock=str(self.vpp.startup.cli_sock),
                                   vppctl=self.vpp.vppctl, af_packet=True)
            self._kernel_forwarding(off=True)
            self.install()
            self.call("setup")
            self.clean()
        except BaseException:
            self.close()
            raise

    def _kernel_forwarding(self, off: bool) -> None:
        for key in FORWARDING_SYSCTLS:
            if off:
                res = self.transport.check(["sysctl", "-n", key])
                self._sysctls[key] = res.stdout.strip()
                self.transport.check(["sysctl", "-qw", f"{key}=0"])
            elif key in self._sysctls:
                self.transport.run(["sysctl", "-qw", f"{key}={self._sysctls.pop(key)}"])

    def versions(self) -> dict[str, str]:
        """VPP's version through vpp.sh (the run's environment)."""
        res = self.transport.run(["bash", self.script, "version"], env=self.env, timeout=30)
        return {"vpp": res.stdout.strip() if res.ok else f"unknown: {res.stderr.strip()}"}

    def close(self) -> None:
        """Clean, stop VPP, restore the kernel's forwarding, remove the work directory."""
        try:
            if self.vpp is not None and self.vpp.proc is not None:
                super().close()
        finally:
            if self.vpp is not None:
                self.vpp.stop()
                self.vpp = None
            self._kernel_forwarding(off=False)
            if self._workdir is not None:
                safe_paths.remove_tree(self._workdir)
                self._workdir = None


__all__ = ["VppProcess", "VppStartup", "VppSutControl", "PLUGINS", "cores"]
