"""Provisioning steps for the SRNK and VPP forwarders on a SUT (see :mod:`srperf.provision.steps`).

:func:`srnk_steps` builds and installs an SRNK kernel and its patched iproute2
on the SUT from their public sources, pinned by commit and SHA-256: the SUT
downloads each source archive itself at provisioning time, checks its
checksum before unpacking it, builds and installs it.  :func:`vpp_steps`
installs VPP's packages from an APT source the caller names.  Both only
return data (``list[Step]``); the ``srperf provision`` command runs them or,
with ``--dry-run``, prints every command.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from srperf.provision.steps import Role, Step

SHA256_RE = re.compile(r"[0-9a-f]{64}")
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
KERNEL_OPTIONS = ("IPV6", "IPV6_SEG6_LWTUNNEL", "IPV6_SEG6_HMAC", "LWTUNNEL", "NET_VRF",
                  "IPV6_MULTIPLE_TABLES", "VETH")
"""Kernel options switched on in the SRNK kernel's configuration (SRv6, policy routing)."""
KERNEL_BUILD_DEPS = ("build-essential", "bc", "bison", "flex", "libelf-dev", "libssl-dev",
                     "dwarves", "rsync", "curl", "ca-certificates", "kmod", "cpio")
IPROUTE2_BUILD_DEPS = ("build-essential", "bison", "flex", "pkg-config", "libmnl-dev",
                       "libelf-dev", "curl", "ca-certificates")


@dataclass(frozen=True)
class PinnedSource:
    """A source archive: ``<repo_url>/archive/<commit>.tar.gz`` with its SHA-256."""

    repo_url: str
    """Public git repository over HTTPS, e.g. ``https://github.com/OWNER/NAME``."""
    commit: str
    """Full 40-hex-digit commit."""
    sha256: str
    """SHA-256 of the archive of that commit (64 hex digits)."""

    def __post_init__(self) -> None:
        if not self.repo_url.startswith("https://"):
            raise ValueError(f"repo_url {self.repo_url!r}: must be an https:// URL")
        if not COMMIT_RE.fullmatch(self.commit):
            raise ValueError(f"commit {self.commit!r}: must be 40 lowercase hex digits")
        if not SHA256_RE.fullmatch(self.sha256):
            raise ValueError(f"sha256 {self.sha256!r}: must be 64 lowercase hex digits")

    @property
    def url(self) -> str:
        return f"{self.repo_url.rstrip('/')}/archive/{self.commit}.tar.gz"


def _q(text: str) -> str:
    return shlex.quote(text)


def _apt(packages: tuple[str, ...]) -> str:
    return ("DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            + " ".join(packages))


def _fetch_steps(name: str, src: PinnedSource, workdir: str, deps: tuple[str, ...]
                 ) -> tuple[list[Step], str, str]:
    """Build dependencies and the checked, unpacked source: (steps, archive, source dir)."""
    archive = f"{workdir}/{name}-{src.commit}.tar.gz"
    tree = f"{workdir}/{name}-{src.commit}"
    verify = f"echo {_q(src.sha256 + '  ' + archive)} | sha256sum -c --status"
    steps = [
        Step(name=f"sut: {name} build dependencies", role=Role.SUT,
             check="dpkg -s " + " ".join(deps) + " >/dev/null 2>&1",
             apply=("apt-get update", _apt(deps)),
             why=f"compilers and libraries to build {name}"),
        Step(name=f"sut: {name} source {src.commit[:12]}", role=Role.SUT,
             check=f"test -f {_q(tree)}/.srperf-unpacked",
             apply=(f"mkdir -p {_q(workdir)}",
                    f"curl -fsSL --retry 3 -o {_q(archive)} {_q(src.url)}",
                    f"{verify} || {{ echo 'checksum mismatch: {archive} is not sha256 "
                    f"{src.sha256}' >&2; rm -f {_q(archive)}; exit 1; }}",
                    f"rm -rf {_q(tree)} && mkdir -p {_q(tree)}",
                    f"tar --no-same-owner --no-same-permissions -xzf {_q(archive)} "
                    f"-C {_q(tree)} --strip-components=1",
                    f"touch {_q(tree)}/.srperf-unpacked"),
             why=f"{src.url}, checked against its SHA-256 before it is unpacked"),
    ]
    return steps, archive, tree


def srnk_steps(kernel: PinnedSource, iproute2: PinnedSource, *,
               workdir: str = "/usr/local/src/srperf-srnk", jobs: int = 0,
               local_version: str = "-srnk") -> list[Step]:
    """Steps that build and install an SRNK kernel and its iproute2 on the SUT.

    Parameters:
        kernel: the SRNK kernel's source (a Linux tree with the SRNK patches), pinned.
        iproute2: the SRNK iproute2's source (``End.AD``, ``seg6local-behaviour``), pinned.
        workdir: directory on the SUT for archives, sources and builds.
        jobs: ``make -j`` parallelism; 0 = the SUT's CPU count (``nproc``).
        local_version: ``CONFIG_LOCALVERSION`` of the kernel, which names it in ``uname -r``.

    The kernel configuration starts from the running kernel's (``/boot/config-$(uname
    -r)``) with :data:`KERNEL_OPTIONS` switched on.  Each step's check makes a re-run
    skip what is done: the kernel step checks its installed image, the iproute2 step
    that ``ip -6 route help`` lists End.AD (mainline iproute2 does not).
    """
    if jobs < 0:
        raise ValueError(f"jobs {jobs}: must be >= 0")
    if not re.fullmatch(r"-[A-Za-z0-9._]+", local_version):
        raise ValueError(f"local_version {local_version!r}: '-' then letters, digits, . or _")
    if not workdir.startswith("/"):
        raise ValueError(f"workdir {workdir!r}: must be an absolute path")
    make_j = f"make -j{jobs}" if jobs else 'make -j"$(nproc)"'
    k_steps, _, ktree = _fetch_steps("linux-srnk", kernel, workdir, KERNEL_BUILD_DEPS)
    i_steps, _, itree = _fetch_steps("iproute2-srnk", iproute2, workdir, IPROUTE2_BUILD_DEPS)
    release = f"{ktree}/.srperf-kernelrelease"
    enable = " ".join(f"--enable {opt}" for opt in KERNEL_OPTIONS)
    kernel_build = Step(
        name="sut: SRNK kernel built and installed", role=Role.SUT,
        check=f"test -s {_q(release)} && test -f \"/boot/vmlinuz-$(cat {_q(release)})\"",
        apply=(f"cd {_q(ktree)} && cp \"/boot/config-$(uname -r)\" .config",
               f"cd {_q(ktree)} && scripts/config {enable} "
               f"--set-str LOCALVERSION {_q(local_version)} --disable SYSTEM_TRUSTED_KEYS "
               "--disable SYSTEM_REVOCATION_KEYS --disable DEBUG_INFO_BTF",
               f"cd {_q(ktree)} && make olddefconfig",
               f"cd {_q(ktree)} && {make_j}",
               f"cd {_q(ktree)} && make modules_install && make install",
               f"cd {_q(ktree)} && make -s kernelrelease > {_q(release)}"),
        timeout_s=4 * 3600.0,
        why="builds the SRNK kernel (hours on a small machine) and installs it with its "
            "modules and initramfs")
    steps = [*k_steps, kernel_build]
    steps.append(Step(
        name="sut: SRNK kernel in the boot menu", role=Role.SUT,
        check=f"grep -qs \"$(cat {_q(release)})\" /boot/grub/grub.cfg",
        apply=("update-grub",),
        why="GRUB lists the SRNK kernel (booting it, e.g. with grub-reboot, is the "
            "operator's: srperf does not reboot a SUT)"))
    steps += [*i_steps, Step(
        name="sut: SRNK iproute2 built and installed", role=Role.SUT,
        check="ip -6 route help 2>&1 | grep -qwF 'End.AD'",
        apply=(f"cd {_q(itree)} && ./configure", f"cd {_q(itree)} && {make_j}",
               f"cd {_q(itree)} && make install"),
        timeout_s=1800.0,
        why="the patched ip that configures End.AD/End.AS and the seg6local-behaviour rule")]
    return steps


def vpp_steps(apt_source: str, *, packages: tuple[str, ...] = ("vpp", "vpp-plugin-core"),
              keyring_url: str | None = None,
              keyring_path: str = "/usr/share/keyrings/srperf-vpp.gpg") -> list[Step]:
    """Steps that install VPP's packages (with the SRv6 proxy plugins) on the SUT.

    Parameters:
        apt_source: the APT source line of a VPP package repository, e.g.
            ``deb [signed-by=/usr/share/keyrings/srperf-vpp.gpg] https://HOST/PATH bookworm main``
            (srperf names no repository itself: the operator chooses it).
        packages: the packages to install; ``vpp-plugin-core`` holds af_packet and
            the srv6ad/srv6as/srv6am proxies.
        keyring_url: where the SUT downloads the repository's signing key (armoured);
            None when the key is installed already.
        keyring_path: where the key is stored (the ``signed-by`` of ``apt_source``).
    """
    if not apt_source.startswith("deb "):
        raise ValueError(f"apt_source {apt_source!r}: must be an APT 'deb ...' line")
    if not packages:
        raise ValueError("packages: give at least one package")
    list_file = "/etc/apt/sources.list.d/srperf-vpp.list"
    steps = []
    if keyring_url is not None:
        steps.append(Step(
            name="sut: VPP repository key", role=Role.SUT, check=f"test -s {_q(keyring_path)}",
            apply=(f"curl -fsSL {_q(keyring_url)} | gpg --dearmor -o {_q(keyring_path)}",),
            why="the signing key of the VPP package repository"))
    steps += [
        Step(name="sut: VPP repository", role=Role.SUT,
             check=f"grep -qxF {_q(apt_source)} {list_file}",
             apply=(f"echo {_q(apt_source)} > {list_file}", "apt-get update"),
             why="the APT source of the VPP packages"),
        Step(name="sut: VPP packages", role=Role.SUT,
             check="dpkg -s " + " ".join(packages) + " >/dev/null 2>&1",
             apply=(_apt(packages),),
             timeout_s=1200.0, why="VPP, vppctl and the SRv6 proxy plugins"),
        Step(name="sut: VPP answers", role=Role.SUT,
             check="vppctl show version | grep -q '^vpp '",
             apply=("systemctl enable --now vpp", "sleep 3"),
             why="the vpp service runs and its CLI socket answers"),
    ]
    return steps


__all__ = ["PinnedSource", "srnk_steps", "vpp_steps", "KERNEL_OPTIONS"]
