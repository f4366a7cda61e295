"""The guest's root file system: one initramfs (``newc`` cpio, gzip) per boot.

It holds busybox (static) for the basics, this host's iproute2 ``/sbin/ip`` and
``bash`` with their shared libraries (the CFG scripts run unchanged: busybox's
``ip`` applet knows no seg6, so no ``ip`` applet link is made), ``ethtool`` when
the host has it, the kernel's own modules that srperf needs (virtio_net and vrf,
with their dependencies, loaded in ``modprobe --show-depends`` order), an
``/init`` that mounts, loads the modules and serves the console agent
(:mod:`srperf.transports.console`) on the second serial port.
"""

from __future__ import annotations

import gzip
import io
import logging
import lzma
import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from srperf.safety import safe_paths
from srperf.kernel.package import KernelFetchError, KernelImage
from srperf.transports.console import AGENT_SCRIPT, GUEST_TTY

log = logging.getLogger(__name__)

MODULES = ("virtio_pci", "virtio_net", "vrf")
"""Modules loaded in the guest (those built in are skipped; one the kernel does not
have is left out: the behaviors that need it are then reported unsupported)."""
BUSYBOX = "/bin/busybox"
HOST_PROGRAMS = {"/sbin/ip": True, "/bin/bash": True, "/sbin/ethtool": False}
"""Host programs copied into the guest -> required."""
READY = "srperf-init: ready"
"""What /init prints on the kernel console once the agent serves."""

INIT = f"""#!/bin/busybox sh
# srperf guest init: mount, load modules, serve the console agent on {GUEST_TTY}.
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
while read -r m; do
    insmod "$m" || echo "srperf-init: insmod $m failed"
done < /etc/srperf-modules
/sbin/ip link set dev lo up
stty -F {GUEST_TTY} raw -echo
echo "{READY} $(uname -r)"
while true; do
    /bin/bash /srperf-agent.sh < {GUEST_TTY} > {GUEST_TTY} 2>/dev/null
    sleep 1
done
"""


@dataclass
class _Cpio:
    """A ``newc`` cpio archive being written."""

    out: io.BytesIO = field(default_factory=io.BytesIO)
    ino: int = 1
    names: set[str] = field(default_factory=set)

    def _entry(self, name: str, mode: int, data: bytes = b"") -> None:
        name = name.lstrip("/")
        if name in self.names:
            return
        self.names.add(name)
        raw = name.encode() + b"\0"
        header = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0))
        self.ino += 1
        self.out.write(header.encode() + raw)
        self.out.write(b"\0" * (-(110 + len(raw)) % 4))
        self.out.write(data)
        self.out.write(b"\0" * (-len(data) % 4))

    def dir(self, name: str) -> None:
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self._entry("/".join(parts[:i]), stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        parent = os.path.dirname(name.strip("/"))
        if parent:
            self.dir(parent)
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        parent = os.path.dirname(name.strip("/"))
        if parent:
            self.dir(parent)
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        return self.out.getvalue()


def _libraries(program: str) -> list[str]:
    """The shared libraries ``program`` loads (ldd), the dynamic loader included."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True, check=False).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"(/\S+)\s+\(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def module_order(kernel: KernelImage, names: tuple[str, ...] = MODULES) -> list[Path]:
    """The module files to load for ``names``, dependencies first, each once
    (``modprobe --show-depends``); built-in and absent modules are left out."""
    modules = Path(kernel.modules_dir)
    root = modules.parent.parent.parent
    order: list[Path] = []
    for name in names:
        res = subprocess.run(["modprobe", "-d", str(root), "-S", kernel.release,
                              "--show-depends", name], capture_output=True, text=True,
                             check=False)
        if res.returncode != 0:
            log.info("kernel %s: no module %s (%s)", kernel.release, name, res.stderr.strip())
            continue
        for line in res.stdout.splitlines():
            words = line.split()
            if words[:1] == ["insmod"] and Path(words[1]) not in order:
                order.append(Path(words[1]))
    return order


def build(kernel: KernelImage, dest: Path) -> Path:
    """Write the guest's initramfs for ``kernel`` to ``dest`` (gzip'd newc cpio)."""
    if shutil.which("modprobe") is None:
        raise KernelFetchError("modprobe (kmod) is missing: scripts/install.sh installs it")
    if not Path(BUSYBOX).is_file():
        raise KernelFetchError(f"{BUSYBOX} is missing: install busybox-static "
                               "(scripts/install.sh)")
    cpio = _Cpio()
    for d in ("proc", "sys", "dev", "tmp", "run", "etc", "root", "bin", "sbin",
              "usr/bin", "usr/sbin", "lib", "lib64"):
        cpio.dir(d)
    cpio.file("/init", INIT.encode(), 0o755)
    cpio.file("/srperf-agent.sh", AGENT_SCRIPT.encode(), 0o755)
    cpio.file("/bin/busybox", Path(BUSYBOX).read_bytes(), 0o755)
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
    copied: set[str] = set()
    for program, required in HOST_PROGRAMS.items():
        if not Path(program).is_file():
            if required:
                raise KernelFetchError(f"{program} is missing on this host")
            continue
        for path in [program, *_libraries(program)]:
            if path not in copied:
                real = Path(path).resolve()
                cpio.file(path, real.read_bytes(), stat.S_IMODE(real.stat().st_mode))
                copied.add(path)
    for applet in applets:
        if applet in ("ip", "busybox") or f"/sbin/{applet}" in copied \
                or f"/bin/{applet}" in copied:
            continue
        cpio.symlink(f"/bin/{applet}", "busybox")
    cpio.file("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    lines = []
    for i, module in enumerate(module_order(kernel)):
        data = module.read_bytes()
        if module.suffix == ".xz":
            data = lzma.decompress(data)
        elif module.suffix == ".zst":
            data = subprocess.run(["zstd", "-dc", str(module)], capture_output=True,
                                  check=True).stdout
        target = f"/lib/modules/{i:02d}-{module.name.split('.ko')[0]}.ko"
        cpio.file(target, data)
        lines.append(target)
    cpio.file("/etc/srperf-modules", "".join(f"{m}\n" for m in lines).encode())
    safe_paths.write_file(dest, gzip.compress(cpio.finish(), compresslevel=1),
                          mode=safe_paths.PRIVATE, make_parent=False)
    log.info("initramfs %s for %s: modules %s", dest, kernel.release,
             " ".join(Path(m).name for m in lines) or "none")
    return dest


__all__ = ["build", "module_order", "MODULES", "READY"]
