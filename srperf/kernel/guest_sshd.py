"""A QEMU guest that plays an SSH host: what ``srperf provision`` installs a kernel on in tests.

The guest boots a named kernel (:mod:`srperf.kernel.package`) from an initramfs
srperf writes here: busybox, this host's OpenSSH ``sshd`` (with its libraries),
``bash``, iproute2, ``kmod`` (``modprobe``/``depmod``, which read ``.ko.xz``),
``kexec`` and util-linux ``flock``, and only the kernel's own modules its NIC
needs.  Its one NIC is a tap device in a network namespace srperf makes
(``PREFIX-mgmt``), with an address from TEST-NET-3 (RFC 5737, never routed):
the host reaches its sshd only through that namespace
(``ip netns exec PREFIX-mgmt nc %h %p`` as the SSH transport's proxy command).

It behaves like a small Debian host where ``srperf provision`` needs it to:
``/lib/modules/$(uname -r)`` is where its init loads modules from (so a kernel
booted with kexec brings its own), and ``/usr/sbin/update-initramfs -c -k
RELEASE`` makes ``/boot/initrd.img-RELEASE``.  That ``update-initramfs`` is a
**test double of Debian's initramfs-tools** (this guest's own script, named
:data:`UPDATE_INITRAMFS`): it archives the running root file system with the
modules of RELEASE that the NIC needs, as initramfs-tools would archive the
installed system's.  There is no boot loader in the guest (QEMU boots it with
``-kernel``): a kernel installed here is booted with ``kexec``.

Everything lives in ``/run/srperf/sshguest-PREFIX/`` (initramfs, host key, QEMU's
PID and logs) and the namespace; :meth:`SshGuest.stop` stops QEMU by its PID and
removes both.
"""

from __future__ import annotations

import ipaddress
import logging
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srperf.safety import bounded_read, safe_paths
from srperf.kernel import qemu
from srperf.kernel.initramfs import BUSYBOX, _Cpio, _libraries, module_order
from srperf.kernel.package import KernelFetchError, KernelImage
from srperf.util.netns import netns_exists, run
from srperf.testbeds.lock import LOCK_DIR

log = logging.getLogger(__name__)

NIC_MODULES = ("virtio_pci", "virtio_net")
"""What the guest's one NIC needs (built-in ones are skipped by modprobe)."""
PROGRAMS = {"/bin/bash": True, "/sbin/ip": True, "/usr/sbin/sshd": True,
            "/usr/bin/kmod": True, "/usr/bin/flock": True, "/usr/sbin/kexec": False}
"""Host programs copied into the guest -> required."""
KMOD_LINKS = ("/sbin/modprobe", "/sbin/depmod", "/sbin/insmod", "/sbin/rmmod",
              "/sbin/lsmod", "/sbin/modinfo")
READY = "srperf-sshguest: ready"
UPDATE_INITRAMFS = "/usr/sbin/update-initramfs"
"""The guest's test double of Debian's initramfs-tools command (module docstring)."""
MGMT_NET = ipaddress.IPv4Network("203.0.113.0/24")
"""TEST-NET-3 (RFC 5737): documentation addresses, never routed."""

INIT = f"""#!/bin/busybox sh
# srperf SSH guest init: mount, load the NIC's modules of the running kernel, address
# the NIC found by its MAC, start sshd; PID 1 then only reaps.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
ln -s /proc/self/fd /dev/fd   # as udev makes it: the lock script compares /dev/fd/9
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /run/sshd /var/log
for m in {' '.join(NIC_MODULES)}; do
    modprobe "$m" || echo "srperf-init: modprobe $m failed ($(uname -r))"
done
. /etc/srperf-net
ip link set dev lo up
dev=""
for d in /sys/class/net/*; do
    [ "$(cat "$d/address")" = "$NIC_MAC" ] && dev=$(basename "$d")
done
if [ -z "$dev" ]; then echo "srperf-init: no NIC with MAC $NIC_MAC"; fi
ip addr add "$NIC_ADDR" dev "$dev"
ip link set dev "$dev" up
/usr/sbin/sshd -e -f /etc/ssh/sshd_config || echo "srperf-init: sshd did not start"
echo "{READY} $(uname -r)"
while true; do wait; sleep 1; done
"""

UPDATE_INITRAMFS_SCRIPT = """#!/bin/bash
# TEST DOUBLE of Debian's initramfs-tools (srperf SSH guest): update-initramfs -c -k REL
# writes /boot/initrd.img-REL: this running root file system (no /boot, no modules
# of other kernels) with the modules of REL that the NIC needs and REL's module indexes.
set -euo pipefail
rel=""
while [ $# -gt 0 ]; do
    case "$1" in
        -k) rel=$2; shift 2 ;;
        -c|-u) shift ;;
        *) echo "update-initramfs (srperf guest): unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$rel" ] || { echo "update-initramfs (srperf guest): -k RELEASE" >&2; exit 2; }
mods=/lib/modules/$rel
[ -f "$mods/modules.dep" ] || { echo "no $mods/modules.dep (depmod $rel first)" >&2; exit 1; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT
cd /
find . -xdev \\( -path ./boot -o -path ./lib/modules -o -path ./tmp -o -path ./run \\) \\
    -prune -o -print | sed 's,^\\./,,' | grep -v '^\\.$' > "$list"
printf '%s\\n' boot tmp run lib/modules "lib/modules/$rel" >> "$list"
find "lib/modules/$rel" -maxdepth 1 -name 'modules.*' >> "$list"
for m in NIC_MODULES; do
    modprobe -S "$rel" --show-depends "$m" 2>/dev/null | awk '$1 == "insmod" {print $2}'
done | sed 's,^/,,' | while read -r f; do
    d=$(dirname "$f")
    while [ "$d" != "lib/modules/$rel" ] && [ "$d" != "." ]; do echo "$d"; d=$(dirname "$d"); done
    echo "$f"
done | sort -u >> "$list"
cpio -o -H newc < "$list" > "/boot/initrd.img-$rel.new" 2>/dev/null
mv "/boot/initrd.img-$rel.new" "/boot/initrd.img-$rel"
echo "update-initramfs (srperf guest): /boot/initrd.img-$rel"
""".replace("NIC_MODULES", " ".join(NIC_MODULES))


@dataclass(frozen=True)
class GuestAddress:
    """The guest's management link: a /29 of TEST-NET-3 per ``tag`` (0-31)."""

    tag: int

    def __post_init__(self) -> None:
        if not 0 <= self.tag < 32:
            raise ValueError(f"tag {self.tag}: 0-31 (a /29 of {MGMT_NET} each)")

    @property
    def host_side(self) -> str:
        return str(MGMT_NET.network_address + self.tag * 8 + 1)

    @property
    def guest(self) -> str:
        return str(MGMT_NET.network_address + self.tag * 8 + 2)

    prefix_len = 29


def _module_files(kernel: KernelImage, cpio: _Cpio) -> None:
    """The modules the NIC needs and the module indexes, at their paths under
    ``/lib/modules/RELEASE`` (kmod's modprobe reads them, compressed or not)."""
    modules = Path(kernel.modules_dir)
    dest = f"/lib/modules/{kernel.release}"
    for path in modules.glob("modules.*"):
        if path.is_file():
            cpio.file(f"{dest}/{path.name}", path.read_bytes())
    for path in module_order(kernel, NIC_MODULES):
        rel = path.resolve().relative_to(modules.resolve())
        cpio.file(f"{dest}/{rel}", path.read_bytes())


def key_only_sshd_config(port: int, listen: str, host_key: str, authorized_keys: str,
                         pid_file: str) -> str:
    """An sshd_config for root by public key only (no password, no PAM), listening on
    ``listen``:``port`` alone; the paths as sshd reads them."""
    return f"""Port {port}
ListenAddress {listen}
HostKey {host_key}
AuthorizedKeysFile {authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile {pid_file}
Subsystem sftp internal-sftp
"""


def build_initramfs(kernel: KernelImage, dest: Path, *, host_key: Path,
                    authorized_keys: str, address: GuestAddress, mac: str) -> Path:
    """Write the SSH guest's initramfs for ``kernel`` to ``dest`` (uncompressed newc)."""
    if not Path(BUSYBOX).is_file():
        raise KernelFetchError(f"{BUSYBOX} is missing: install busybox-static "
                               "(scripts/install.sh)")
    cpio = _Cpio()
    for d in ("proc", "sys", "dev", "tmp", "run", "etc/ssh", "root/.ssh", "bin", "sbin",
              "usr/bin", "usr/sbin", "lib", "lib64", "boot", "var/empty"):
        cpio.dir(d)
    cpio.file("/init", INIT.encode(), 0o755)
    cpio.file("/bin/busybox", Path(BUSYBOX).read_bytes(), 0o755)
    copied: set[str] = set()
    for program, required in PROGRAMS.items():
        if not Path(program).is_file():
            if required:
                raise KernelFetchError(f"{program} is missing on this host "
                                       "(scripts/install.sh installs it)")
            continue
        for path in [program, *_libraries(program)]:
            if path not in copied:
                real = Path(path).resolve()
                cpio.file(path, real.read_bytes(), 0o755)
                copied.add(path)
    for link in KMOD_LINKS:
        cpio.symlink(link, "/usr/bin/kmod")
        copied.add(link)
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
    for applet in applets:
        if applet in ("ip", "busybox") or any(f"{d}/{applet}" in copied for d in
                                             ("/bin", "/sbin", "/usr/bin", "/usr/sbin")):
            continue
        cpio.symlink(f"/bin/{applet}", "busybox")
    cpio.file(UPDATE_INITRAMFS, UPDATE_INITRAMFS_SCRIPT.encode(), 0o755)
    cpio.file("/etc/passwd", b"root:x:0:0:root:/root:/bin/bash\n"
              b"sshd:x:101:65534::/run/sshd:/usr/sbin/nologin\n")
    cpio.file("/etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    cpio.file("/etc/srperf-net", f"NIC_MAC={mac.lower()}\n"
              f"NIC_ADDR={address.guest}/{address.prefix_len}\n".encode())
    cpio.file("/etc/ssh/sshd_config", key_only_sshd_config(
        22, str(address.guest), "/etc/ssh/ssh_host_ed25519_key",
        "/root/.ssh/authorized_keys", "/run/sshd.pid").encode())
    cpio.file("/etc/ssh/ssh_host_ed25519_key", host_key.read_bytes(), 0o600)
    cpio.file("/root/.ssh/authorized_keys", authorized_keys.encode(), 0o600)
    _module_files(kernel, cpio)
    safe_paths.write_file(dest, cpio.finish(), mode=safe_paths.PRIVATE, make_parent=False)
    log.info("SSH guest initramfs %s for %s", dest, kernel.release)
    return dest


class SshGuest:
    """A QEMU guest booting ``kernel`` whose sshd is reached through namespace
    ``PREFIX-mgmt`` (see the module docstring).  Use as a context manager."""

    def __init__(self, kernel: KernelImage, prefix: str, authorized_keys: str, *,
                 tag: int = 29, memory_mb: int = 768, boot_timeout_s: float = 180.0,
                 host_cpu: int | None = None, accel: str = "tcg") -> None:
        self.kernel, self.prefix = kernel, prefix
        self.authorized_keys = authorized_keys
        self.address = GuestAddress(tag)
        self.memory_mb, self.boot_timeout_s, self.host_cpu = memory_mb, boot_timeout_s, host_cpu
        self.accel = accel
        """tcg (default: this host's KVM stops stock kernels) or kvm."""
        self.netns = f"{prefix}-mgmt"
        self.tap = f"{prefix}g0"
        self.mac = f"02:5e:4b:00:{tag:02x}:02"
        self.run_dir = Path(LOCK_DIR) / f"sshguest-{prefix}"
        self.known_hosts_line = ""

    @property
    def spec(self) -> qemu.GuestSpec:
        return qemu.GuestSpec(
            name=f"srperf-sshguest-{self.prefix}", image=self.kernel.image,
            initrd=str(self.run_dir / "initrd.cpio"), memory_mb=self.memory_mb, cpus=1,
            taps=((self.tap, self.mac),), run_dir=str(self.run_dir), netns=self.netns,
            host_cpu=self.host_cpu)

    @property
    def proxy_command(self) -> str:
        return f"ip netns exec {self.netns} nc %h %p"

    def ssh_config(self, known_hosts: str, key_file: str) -> dict[str, Any]:
        """A ``sut.transport.ssh`` mapping that reaches this guest."""
        return {"host": self.address.guest, "port": 22, "user": "root",
                "key_file": key_file, "known_hosts": known_hosts,
                "proxy_command": self.proxy_command, "timeout_s": 20}

    def start(self) -> "SshGuest":
        """Namespace, tap, host key, initramfs, QEMU; returns once sshd answers."""
        if netns_exists(self.netns):
            raise KernelFetchError(f"namespace {self.netns} exists already: not made by this "
                                   "guest (remove it, or choose another prefix)")
        try:
            safe_paths.make_dirs(self.run_dir, 0o700)
            key = self.run_dir / "ssh_host_ed25519_key"
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.spec.name,
                 "-f", str(key)])
            pub = bounded_read.read_state(self.run_dir / "ssh_host_ed25519_key.pub",
                                          4096).split()
            self.known_hosts_line = f"{self.address.guest} {pub[0]} {pub[1]}\n"
            build_initramfs(self.kernel, Path(self.spec.initrd), host_key=key,
                            authorized_keys=self.authorized_keys, address=self.address,
                            mac=self.mac)
            ns = self.netns
            run(["ip", "netns", "add", ns])
            run(["ip", "link", "set", "dev", "lo", "up"], ns=ns)
            run(["ip", "tuntap", "add", "dev", self.tap, "mode", "tap"], ns=ns)
            run(["ip", "addr", "add", f"{self.address.host_side}/{self.address.prefix_len}",
                 "dev", self.tap], ns=ns)
            run(["ip", "link", "set", "dev", self.tap, "up"], ns=ns)
            qemu.start(self.spec, self.accel)
            self.wait_ssh(self.boot_timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ssh(self, timeout_s: float) -> None:
        """Wait until the guest's sshd accepts a TCP connection (QemuError after
        ``timeout_s`` seconds, or when QEMU ends)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if qemu.pid_of(self.spec) is None:
                raise qemu.QemuError(f"{self.spec.name}: QEMU ended; console: "
                                     f"{self.console_tail()}")
            probe = run(["nc", "-z", "-w", "1", self.address.guest, "22"], ns=self.netns,
                        check=False)
            if probe.ok:
                return
            time.sleep(0.5)
        raise qemu.QemuError(f"{self.spec.name}: sshd did not answer within {timeout_s:g} s; "
                             f"console: {self.console_tail()}")

    def console_tail(self, lines: int = 15) -> str:
        try:
            text = bounded_read.read_state(self.spec.console_log, qemu.LOG_TAIL, tail=True)
        except OSError:
            return "(no console log)"
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self) -> None:
        """Stop QEMU (by its PID), remove the namespace (and the tap) and the files."""
        try:
            qemu.stop(self.spec)
        finally:
            if netns_exists(self.netns):
                run(["ip", "netns", "del", self.netns], check=False)
            safe_paths.remove_tree(self.run_dir)

    def __enter__(self) -> "SshGuest":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["SshGuest", "GuestAddress", "build_initramfs", "UPDATE_INITRAMFS"]
