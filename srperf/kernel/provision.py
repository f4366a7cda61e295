"""Install a named kernel on an SSH SUT, make it the boot default, reboot into it, check it.

The kernel is the one a kernel testbed names (its ``kernel:`` block,
:class:`srperf.kernel.target.KernelTarget`): a Debian package from the same
cache as the QEMU targets (:func:`srperf.kernel.package.fetch`, its SHA-256
checked), or a kernel built from source (``image`` + ``modules_dir``, e.g. by
``srperf kernel build``).  So a CloudLab node gets exactly the kernel a VM
target had.

What happens on the SUT (each phase's shell commands are data: ``--dry-run``
prints them and runs nothing):

1. **look**: ``uname -r``, the boot id, which tools it has (dpkg, grub-reboot,
   kexec, update-initramfs).  Already running the release: nothing to do.
2. **copy**: the payload (the ``.deb``; or a tar of ``boot/vmlinuz-RELEASE``,
   its config and System.map, and ``lib/modules/RELEASE``) is copied over the
   SSH transport (SFTP) into its private work directory, and its SHA-256 is
   checked there against the one computed here.
3. **pin** (grub): the running kernel is made the saved boot default first
   (``GRUB_DEFAULT=saved`` in ``/etc/default/grub.d/99-srperf-kernel.cfg``,
   ``update-grub``, ``grub-set-default`` to its entry), so that installing a newer
   kernel cannot change what the node boots by itself.
4. **install**: ``deb``: ``apt-get install ./PACKAGE.deb`` (the package's own hooks
   make its initramfs); ``files``: the tar unpacked under ``/``, ``depmod
   RELEASE``, ``update-initramfs -c -k RELEASE``; what this step unpacked is
   removed again when a later command of it fails.
5. **arm**: grub: ``update-grub``, then ``grub-reboot ENTRY`` (the new kernel for
   the next boot only); kexec: ``kexec -l`` the new image and initramfs with the
   running command line.  A failure up to here leaves the SUT running, and
   booting, its old kernel.
6. **reboot** (``systemctl reboot``/``kexec``, or ``reboot``/``kexec -e``), wait
   until SSH answers with a new boot id (``provision.kernel.reboot_timeout_s``),
   and check ``uname -r``.  grub: only then ``grub-set-default ENTRY`` makes the
   new kernel the lasting default; had it not come up, a power cycle boots the
   pinned old kernel.

How the boot method is chosen: ``provision.kernel.boot`` (``grub``, ``kexec``,
``auto``: grub where the SUT has ``grub-reboot`` and ``/boot/grub/grub.cfg``,
else kexec).  kexec boots the installed kernel now, but a node's boot loader still
boots its old default on a cold start: it suits a VM booted with ``-kernel`` (no
boot loader; the test guest of :mod:`srperf.kernel.guest_sshd`) or a node that
should fall back to its old kernel when power-cycled.
"""

from __future__ import annotations

import logging
import shlex
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from srperf.safety import safe_paths
from srperf.config.model import TestbedConfig
from srperf.config.provision import KernelInstallSettings
from srperf.errors import ConfigError, SrperfError, TransportError
from srperf.kernel.image import sha256_file as sha256_of
from srperf.kernel.package import KernelImage
from srperf.kernel.target import KernelTarget
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

GRUB_CFG = "/boot/grub/grub.cfg"
GRUB_DROP_IN = "/etc/default/grub.d/99-srperf-kernel.cfg"
POLL_S = 2.0
"""Seconds between connection attempts while the SUT reboots."""


class KernelInstallError(SrperfError):
    """A kernel could not be installed or booted on the SUT."""


@dataclass(frozen=True)
class KernelRequest:
    """What ``srperf provision`` is asked to install, and how."""

    testbed_file: str
    """The SSH testbed file (errors name it)."""
    kernel_file: str
    """The kernel testbed file whose ``kernel:`` block names the kernel."""
    key: str
    """Where the kernel was named: ``provision.kernel.target`` or ``--kernel``."""
    target: KernelTarget
    settings: KernelInstallSettings


def request(config: TestbedConfig, kernel_arg: str | None) -> KernelRequest | None:
    """The kernel to install on ``config``'s SUT (None: none named); ConfigError (exit
    2) names the file, key and value of a bad one."""
    from srperf.config.loader import load_testbed
    from srperf.config.provision import ProvisionSettings
    from srperf.resources import find_config

    settings = ProvisionSettings.from_mapping(config.provision or {}).kernel
    name, key, file = settings.target, "provision.kernel.target", config.source
    if kernel_arg is not None:
        name, key, file = kernel_arg, "--kernel", "<command line>"
    if name is None:
        return None
    if config.kind != "ssh":
        raise ConfigError(config.source, "kind", config.kind,
                          "srperf provision installs a kernel on an SSH SUT (kind ssh)")
    # a relative path in the testbed file is taken from the file's directory
    base = Path(config.source).parent if key != "--kernel" else Path.cwd()
    found = base / name if (base / name).is_file() else find_config(name, "testbed")
    if not found.is_file():
        raise ConfigError(file, key, name, "file not found (neither a path nor a shipped "
                          "testbed name; name a kernel testbed, e.g. kernel-6.12)")
    kernel_tb = load_testbed(found)
    if kernel_tb.kind != "kernel" or kernel_tb.kernel is None:
        raise ConfigError(file, key, name, f"{kernel_tb.source} is a testbed of kind "
                          f"{kernel_tb.kind!r}: name a kernel testbed (kind kernel), e.g. "
                          "testbed/kernel-6.12.yaml")
    target = KernelTarget.from_mapping(kernel_tb.source, kernel_tb.kernel)
    from srperf.kernel.target import check_present

    check_present(target)   # a kernel built elsewhere is there (before any plan)
    return KernelRequest(testbed_file=config.source, kernel_file=kernel_tb.source, key=key,
                         target=target, settings=settings)


# -- the payload ---------------------------------------------------------------------

def deb_of(image: KernelImage) -> Path | None:
    """The cached ``.deb`` of a packaged kernel, its SHA-256 checked against the one
    recorded at fetch time (None: not a package)."""
    if image.version is None:
        return None
    entry = Path(image.image).parents[2]
    debs = sorted(entry.glob("*.deb"))
    if len(debs) != 1:
        raise KernelInstallError(f"{entry}: expected the kernel's one .deb, found "
                                 f"{[d.name for d in debs]}")
    from srperf.kernel import cache as kcache

    got = kcache.sha256_trusted(debs[0], str(entry))
    if got != image.sha256:
        raise KernelInstallError(f"{debs[0]}: SHA-256 {got} is not the {image.sha256} "
                                 "recorded when it was fetched (the cache is damaged: "
                                 "remove the entry and fetch again)")
    return debs[0]


def payload_members(image: KernelImage) -> list[tuple[Path, str]]:
    """(file on this host, name in the tar) of a kernel installed as files."""
    rel = image.release
    img = Path(image.image)
    members = [(img, f"boot/vmlinuz-{rel}")]
    for name in (f"config-{rel}", f"System.map-{rel}"):
        if (img.parent / name).is_file():
            members.append((img.parent / name, f"boot/{name}"))
    members.append((Path(image.modules_dir), f"lib/modules/{rel}"))
    return members


def write_payload(image: KernelImage, directory: Path) -> Path:
    """The files payload (an uncompressed tar: modules are compressed already)."""
    from srperf.safety import read_gate

    for path, arcname in payload_members(image):   # what root installs on the SUT
        check = read_gate.trusted_tree if path.is_dir() else read_gate.trusted_file
        check(path, image.name, f"kernel payload {arcname}")
    dest = directory / f"srperf-kernel-{image.release}.tar"
    with safe_paths.open_new(dest) as out, tarfile.TarFile(fileobj=out, mode="w",
                                                           format=tarfile.GNU_FORMAT) as tar:
        for path, arcname in payload_members(image):
            tar.add(str(path), arcname=arcname, recursive=True,
                    filter=lambda info: _owned_by_root(info))
    return dest


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


# -- what runs on the SUT --------------------------------------------------------------

LOOK = ("printf 'release=%s\\n' \"$(uname -r)\"; "
        "printf 'boot_id=%s\\n' \"$(cat /proc/sys/kernel/random/boot_id)\"; "
        "for t in dpkg apt-get grub-reboot grub-set-default update-grub kexec "
        "update-initramfs depmod systemctl; do "
        "command -v \"$t\" >/dev/null 2>&1 && printf 'has=%s\\n' \"$t\"; done; "
        f"test -f {GRUB_CFG} && echo has=grub.cfg; "
        "test -s /var/lib/dpkg/status && echo has=dpkg-database; "
        "test -d /run/systemd/system && echo has=systemd; true")
"""Prints ``key=value`` lines: the running release, the boot id and the tools."""

GRUB_ENTRY = (
    "grub_entry() {{ "   # $1 = release; prints SUBMENU_ID>ENTRY_ID of 'with Linux REL'
    "local sub ent; "
    "sub=$(sed -n \"s/^submenu .*\\$menuentry_id_option '\\([^']*\\)'.*/\\1/p\" {cfg} "
    "| head -n 1); "
    "ent=$(grep -F \"with Linux $1'\" {cfg} "
    "| sed -n \"s/.*\\$menuentry_id_option '\\([^']*\\)'.*/\\1/p\" | head -n 1); "
    "[ -n \"$ent\" ] || {{ echo \"no GRUB entry for Linux $1 in {cfg}\" >&2; return 1; }}; "
    "if [ -n \"$sub\" ] && grep -q \"^[[:space:]]\\+menuentry .*'$ent'\" {cfg}; "
    "then echo \"$sub>$ent\"; else echo \"$ent\"; fi; }}; ")
"""A shell function printing the GRUB menu entry of a release (as grub-reboot wants:
``SUBMENU>ENTRY`` for an entry under "Advanced options")."""


def grub_entry_function(cfg: str = GRUB_CFG) -> str:
    return GRUB_ENTRY.format(cfg=cfg)


@dataclass(frozen=True)
class Phase:
    """One named group of shell commands run on the SUT (``bash -c``, as root)."""

    name: str
    commands: tuple[str, ...]
    timeout_s: float = 600.0


@dataclass
class Plan:
    """How a kernel gets onto one SUT: the methods chosen and the phases' commands."""

    release: str
    install: str
    boot: str
    payload: str
    """The payload's file name on this host (its path on the SUT: the work directory)."""
    payload_sha256: str
    phases: list[Phase] = field(default_factory=list)
    finish: tuple[str, ...] = ()
    """Run after the new kernel answered (grub: make it the lasting default)."""


def choose(req: KernelRequest, image: KernelImage, tools: set[str] | None) -> tuple[str, str]:
    """(install method, boot method) for the SUT with ``tools`` (None: unknown, a dry
    run: ``auto`` is then shown as what each choice would depend on)."""
    s = req.settings
    install, boot = s.install, s.boot
    is_package = image.version is not None
    if install == "deb" and not is_package:
        raise ConfigError(req.testbed_file, "provision.kernel.install", install,
                          f"{req.target.name} is not a Debian package (built kernels "
                          "install as files)")
    if install == "auto":
        # busybox has a dpkg applet: a Debian system is dpkg, apt-get and their database
        debian = tools is None or {"dpkg", "apt-get", "dpkg-database"} <= tools
        install = "deb" if is_package and debian else "files"
    if boot == "auto":
        if tools is None:
            boot = "grub|kexec"
        else:
            boot = "grub" if {"grub-reboot", "grub.cfg"} <= tools else "kexec"
    if tools is not None:
        need = {"grub": ("grub-reboot", "grub-set-default", "update-grub", "grub.cfg"),
                "kexec": ("kexec",)}[boot]
        missing = [t for t in need if t not in tools]
        if missing:
            raise KernelInstallError(
                f"{req.testbed_file}: provision.kernel.boot = {s.boot!r}: the SUT has no "
                f"{', '.join(missing)} (boot method {boot}); nothing was installed")
        need_install = {"deb": ("dpkg", "apt-get", "dpkg-database"),
                        "files": ("depmod", "update-initramfs")}[install]
        missing = [t for t in need_install if t not in tools]
        if missing:
            raise KernelInstallError(
                f"{req.testbed_file}: provision.kernel.install = {s.install!r}: the SUT "
                f"has no {', '.join(missing)} (install method {install}); nothing was "
                "installed")
    return install, boot


def plan(req: KernelRequest, image: KernelImage, payload: Path, payload_sha256: str,
         tools: set[str] | None, workdir: str = "$WORKDIR") -> Plan:
    """The commands that install ``image`` on the SUT (``tools``: what it has)."""
    install, boot = choose(req, image, tools)
    rel = shlex.quote(image.release)
    on_sut = f"{workdir}/{payload.name}"
    q_payload = on_sut if workdir == "$WORKDIR" else shlex.quote(on_sut)
    p = Plan(release=image.release, install=install, boot=boot, payload=payload.name,
             payload_sha256=payload_sha256)
    p.phases.append(Phase("copy", (
        f"(copy {payload} to {on_sut} over SFTP)",
        f"echo {payload_sha256}'  '{q_payload} | sha256sum -c -"), 1800.0))
    grub = grub_entry_function()
    if boot in ("grub", "grub|kexec"):
        p.phases.append(Phase("pin the running kernel as the boot default (grub)", (
            f"mkdir -p /etc/default/grub.d && echo GRUB_DEFAULT=saved > {GRUB_DROP_IN}",
            "update-grub",
            grub + "grub-set-default \"$(grub_entry \"$(uname -r)\")\""), 600.0))
    if install == "deb":
        p.phases.append(Phase("install (deb)", (
            f"DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            f"{q_payload}",
            f"test -s /boot/vmlinuz-{rel} && test -s /boot/initrd.img-{rel}"), 1800.0))
    else:
        p.phases.append(Phase("install (files)", (
            # unpack, index, initramfs; what was unpacked goes again when a step fails
            f"fresh=1; test -e /lib/modules/{rel} && fresh=0; "
            f"undo() {{ [ $fresh = 1 ] && rm -rf /lib/modules/{rel} /boot/vmlinuz-{rel} "
            f"/boot/config-{rel} /boot/System.map-{rel} /boot/initrd.img-{rel}; }}; "
            f"tar -xf {q_payload} -C / && depmod {rel} "
            f"&& update-initramfs -c -k {rel} "
            f"&& test -s /boot/vmlinuz-{rel} && test -s /boot/initrd.img-{rel} "
            f"|| {{ s=$?; undo; exit $s; }}",), 1800.0))
    p.phases.append(Phase("remove the payload", (f"rm -f {q_payload}",), 60.0))
    if boot in ("grub", "grub|kexec"):
        p.phases.append(Phase("arm: boot it once (grub)", (
            "update-grub",
            grub + f"grub-reboot \"$(grub_entry {rel})\""), 600.0))
        p.finish = (grub + f"grub-set-default \"$(grub_entry {rel})\"",)
    if boot in ("kexec", "grub|kexec"):
        p.phases.append(Phase("arm: load it (kexec)", (
            f"kexec -l /boot/vmlinuz-{rel} --initrd=/boot/initrd.img-{rel} "
            "--reuse-cmdline",), 120.0))
    return p


def reboot_command(boot: str) -> str:
    """Reboot in the background (the SSH command returns first)."""
    if boot == "kexec":
        now = "if [ -d /run/systemd/system ]; then systemctl kexec; else kexec -e; fi"
    else:
        now = "if [ -d /run/systemd/system ]; then systemctl reboot; else reboot; fi"
    # as nohup does (a busybox system may have none): SIGHUP ignored, no terminal
    script = shlex.quote("trap '' HUP; sleep 1; " + now)
    return f"sh -c {script} </dev/null >/dev/null 2>&1 &"


# -- on the SUT ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Look:
    """What the SUT said about itself."""

    release: str
    boot_id: str
    tools: frozenset[str]


def look(node: Transport) -> Look:
    res = node.check(["bash", "-c", LOOK], timeout=60.0)
    release = boot_id = ""
    tools: set[str] = set()
    for line in res.stdout.splitlines():
        key, _, value = line.partition("=")
        if key == "release":
            release = value.strip()
        elif key == "boot_id":
            boot_id = value.strip()
        elif key == "has":
            tools.add(value.strip())
    return Look(release, boot_id, frozenset(tools))


def _phase(node: Transport, phase: Phase, workdir: str, say: Callable[[str], None]) -> None:
    for command in phase.commands:
        if command.startswith("(copy "):
            continue
        line = command.replace("$WORKDIR", shlex.quote(workdir))
        res = node.run(["bash", "-c", line], timeout=phase.timeout_s)
        if not res.ok:
            out = (res.stdout + res.stderr).strip()
            raise KernelInstallError(f"{node.where}: {phase.name}: `{line}` failed (exit "
                                     f"{res.returncode}): {out[-2000:] or '(no output)'}")
    say(f"{phase.name}: done")


@dataclass
class Outcome:
    """What ``install`` did."""

    release: str
    before: str
    """``uname -r`` before."""
    after: str
    """``uname -r`` after the reboot (== before when nothing was needed)."""
    install: str = ""
    boot: str = ""
    reboot_s: float | None = None
    """Seconds from the reboot command until SSH answered with a new boot id."""
    changed: bool = False


def install(req: KernelRequest, image: KernelImage, node: Transport,
            say: Callable[[str], None], before_reboot: Callable[[], None] | None = None
            ) -> Outcome:
    """Install ``image`` on ``node``, reboot into it, check ``uname -r``.

    ``say`` gets one line per phase; ``before_reboot`` runs just before the reboot
    command (the CLI releases the testbed's lock there: the lock's holder process
    dies with the old kernel).
    """
    seen = look(node)
    if seen.release == image.release:
        say(f"the SUT runs {image.release} already: nothing to do")
        return Outcome(image.release, seen.release, seen.release)
    install_method, boot = choose(req, image, set(seen.tools))
    work = safe_paths.make_temp_dir("srperf-kernel-")
    try:
        deb = deb_of(image) if install_method == "deb" else None
        payload = deb if deb is not None else write_payload(image, work)
        digest = image.sha256 if deb is not None else sha256_of(payload)
        p = plan(req, image, payload, digest, set(seen.tools))
        remote = node.push(payload)
        say(f"copy: {payload.name} ({payload.stat().st_size / 1e6:.1f} MB) to {remote}")
        workdir = remote.rsplit("/", 1)[0]
        for phase in p.phases:
            _phase(node, phase, workdir, say)
    finally:
        safe_paths.remove_tree(work)
    if before_reboot is not None:
        before_reboot()
    started = time.monotonic()
    node.run(["bash", "-c", reboot_command(boot)], timeout=30.0)
    say(f"reboot ({boot}) into {image.release}")
    wait_for_new_boot(req, node, seen.boot_id, image.release)
    reboot_s = time.monotonic() - started
    now = look(node)
    if now.release != image.release:
        old = ("the pinned old kernel stays the boot default"
               if boot == "grub" else "a cold boot returns to the boot loader's default")
        raise KernelInstallError(
            f"{node.where}: after the reboot the SUT runs {now.release}, not "
            f"{image.release} ({req.kernel_file}: kernel {req.target.name}); {old}")
    for command in p.finish:
        res = node.run(["bash", "-c", command], timeout=600.0)
        if not res.ok:
            raise KernelInstallError(f"{node.where}: the SUT runs {image.release}, but making "
                                     f"it the lasting boot default failed: `{command}`: "
                                     f"{(res.stdout + res.stderr).strip()}")
    if p.finish:
        say(f"{image.release} is the boot default (grub-set-default)")
    return Outcome(image.release, seen.release, now.release, install_method, boot,
                   round(reboot_s, 1), True)


def wait_for_new_boot(req: KernelRequest, node: Transport, old_boot_id: str,
                      release: str) -> None:
    """Reconnect until the SUT answers with another boot id than ``old_boot_id``
    (KernelInstallError after ``reboot_timeout_s`` seconds)."""
    timeout = req.settings.reboot_timeout_s
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    time.sleep(POLL_S)
    while True:
        try:
            node.reconnect()
            res = node.run(["cat", "/proc/sys/kernel/random/boot_id"], timeout=20.0)
            if res.ok and res.stdout.strip() and res.stdout.strip() != old_boot_id:
                return
            last = "still the old boot (same boot id)"
        except (TransportError, OSError) as exc:
            last = str(exc).splitlines()[0]
        if time.monotonic() > deadline:
            raise KernelInstallError(
                f"{req.testbed_file}: provision.kernel.reboot_timeout_s = {timeout:g}: the "
                f"SUT ({node.where}) did not answer within {timeout:g} s after the reboot "
                f"into {release} (last: {last})")
        time.sleep(POLL_S)


__all__ = ["KernelInstallError", "KernelRequest", "Look", "Outcome", "Plan", "choose",
           "install", "look", "plan", "request", "reboot_command", "grub_entry_function",
           "payload_members", "write_payload", "deb_of"]


def cached(target: KernelTarget) -> KernelImage | None:
    """The kernel ``target`` names as the cache has it, fetching nothing (None: not
    fetched yet).  For a dry run."""
    from srperf.kernel.package import MANIFEST, KernelFetchError, _built

    if target.image is not None:
        try:
            return _built(target)
        except KernelFetchError:
            return None
    if target.build is not None:   # srperf kernel build made it (or not yet: None)
        from srperf.kernel.build import BuildRecipe, KernelBuildError, built_image

        try:
            return built_image(BuildRecipe.from_mapping(target.source_file, target.build,
                                                        target.cache_dir))
        except KernelBuildError:
            return None
    assert target.package is not None
    from srperf.kernel import cache as kcache

    cache = kcache.root(target.cache_dir, target.source_file, create=False)
    if cache is None:
        return None
    version = (target.version or "*").replace(":", "%3a")
    found = sorted(cache.glob(f"{target.package}_{version}/{MANIFEST}"),
                   key=lambda p: p.lstat().st_mtime)
    if not found:
        return None
    # trusted only if srperf made it: manifest, .deb (its SHA-256) and image root's
    return kcache.kernel_entry(found[-1].parent, target.source_file)
