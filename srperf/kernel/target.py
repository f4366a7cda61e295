"""The ``kernel:`` block of a kernel testbed file, as a dataclass.

Either a Debian kernel package by name (``package``, optionally pinned to a
``version``), fetched once with ``apt-get download`` into ``cache_dir``; or a
kernel built elsewhere (``image``: its bzImage or vmlinux, ``modules_dir``: its
``lib/modules/RELEASE`` directory, as ``make modules_install INSTALL_MOD_PATH=...``
leaves it).
"""

from __future__ import annotations

import re
from pathlib import Path
from dataclasses import dataclass, fields
from typing import Any, Mapping

from srperf.errors import ConfigError
from srperf.util.host import host_cpus

ACCELERATORS = ("auto", "kvm", "tcg")
DEFAULT_CACHE_DIR = "/var/cache/srperf/kernels"
_PACKAGE = re.compile(r"^linux-image-[A-Za-z0-9.+~-]+\Z")
_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+~:-]*\Z")
"""A Debian version: it starts with a digit (an epoch or the upstream version), so it
is never read as an option."""


_RELEASE = re.compile(r"^[0-9][A-Za-z0-9._+~-]{0,80}\Z")
"""A kernel release (``uname -r``: 6.1.0-56-cloud-amd64, 6.12.3-srperf)."""

_WHOLE = ("memory_mb", "cpus", "host_cpu")
"""Keys whose value is a whole number: ``1024.0`` is read as 1024, as everywhere else."""


def _whole(file: str, key: str, value: Any) -> Any:
    """``value`` as an int when it is a whole number (an int or a whole float); a boolean
    (YAML's ``yes``, ``true``) is refused here, since Python counts it as an int."""
    if isinstance(value, bool):
        raise ConfigError(file, f"kernel.{key}", value, "a whole number, not a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class KernelTarget:
    """A named kernel and the guest it boots in."""

    package: str | None = None
    """Debian binary package of the kernel, e.g.
    ``linux-image-6.1.0-56-cloud-amd64-unsigned``."""
    version: str | None = None
    """The package's version (``apt-get download PACKAGE=VERSION``); None: the candidate."""
    image: str | None = None
    """A kernel image built elsewhere (bzImage or vmlinux), instead of ``package``."""
    modules_dir: str | None = None
    """With ``image``: its modules, ``.../lib/modules/RELEASE``."""
    build: Mapping[str, Any] | None = None
    """A kernel built from source by ``srperf kernel build`` (source, base_config,
    fragment, patches, localversion: :mod:`srperf.kernel.build`), instead of ``package``."""
    cache_dir: str = DEFAULT_CACHE_DIR
    """Where fetched packages are kept (one directory per package and version)."""
    accel: str = "auto"
    """auto (KVM when a test guest boots under it, else TCG), kvm or tcg."""
    memory_mb: int = 512
    """Guest memory, MiB."""
    cpus: int = 1
    """Guest vCPUs."""
    boot_timeout_s: float = 120.0
    """Longest wait for the guest's agent to answer after QEMU starts, seconds."""
    host_cpu: int | None = None
    """Host CPU the QEMU process is pinned to (None: not pinned)."""
    source_file: str = ""
    """The testbed file the block is from (not a key: set by :meth:`from_mapping`)."""

    @property
    def name(self) -> str:
        """How the kernel is named in messages and results."""
        if self.package:
            return self.package + (f"={self.version}" if self.version else "")
        if self.build is not None:
            return f"built from {self.build.get('source')}"
        return f"image {self.image}"

    @classmethod
    def from_mapping(cls, file: str, data: Mapping[str, Any] | None) -> "KernelTarget":
        """The ``kernel`` block of testbed ``file``; ConfigError names the bad key."""
        if not isinstance(data, Mapping):
            raise ConfigError(file, "kernel", data, "a kernel testbed needs a kernel block "
                              "(package: linux-image-..., or image: + modules_dir:)")
        known = {f.name for f in fields(cls)} - {"source_file"}
        for key in data:
            if key not in known:
                raise ConfigError(file, f"kernel.{key}", data[key],
                                  f"unknown key (known: {', '.join(sorted(known))})")
        values = dict(data)
        for key in _WHOLE:
            if key in values:
                values[key] = _whole(file, key, values[key])
        t = cls(**values, source_file=str(Path(file).resolve()))
        if [t.package, t.image, t.build].count(None) != 2:
            raise ConfigError(file, "kernel", dict(data),
                              "name exactly one of package (a Debian kernel package), "
                              "image (a kernel built elsewhere, with modules_dir) or build "
                              "(a kernel srperf kernel build makes)")
        if t.build is not None:
            from srperf.kernel.build import BuildRecipe

            BuildRecipe.from_mapping(t.source_file, t.build, str(t.cache_dir))
        if t.package is not None and not _PACKAGE.match(str(t.package)):
            raise ConfigError(file, "kernel.package", t.package,
                              "not a Debian kernel package name (linux-image-...)")
        if t.version is not None and (t.package is None or not _VERSION.match(str(t.version))):
            raise ConfigError(file, "kernel.version", t.version,
                              "a Debian version string, and only with package")
        if t.image is not None and (not str(t.image).startswith("/") or not t.modules_dir):
            raise ConfigError(file, "kernel.image", t.image,
                              "an absolute path, with modules_dir (its lib/modules/RELEASE)")
        if t.modules_dir is not None:
            _check_modules_path(file, t)
        if t.image is not None:
            check_built(t)
        if t.accel not in ACCELERATORS:
            raise ConfigError(file, "kernel.accel", t.accel, f"one of {', '.join(ACCELERATORS)}")
        if not isinstance(t.memory_mb, int) or not 128 <= t.memory_mb <= 65536:
            raise ConfigError(file, "kernel.memory_mb", t.memory_mb, "an integer, 128-65536")
        if not isinstance(t.cpus, int) or not 1 <= t.cpus <= 64:
            raise ConfigError(file, "kernel.cpus", t.cpus, "an integer, 1-64")
        cpus = host_cpus()  # what ``taskset -c`` can pin QEMU to
        if t.host_cpu is not None and t.host_cpu not in cpus:
            raise ConfigError(file, "kernel.host_cpu", t.host_cpu, "not a CPU of this host "
                              f"(it has {', '.join(map(str, sorted(cpus)))})")
        if isinstance(t.boot_timeout_s, bool) or not isinstance(t.boot_timeout_s, (int, float)) \
                or not 5 <= t.boot_timeout_s <= 3600:
            raise ConfigError(file, "kernel.boot_timeout_s", t.boot_timeout_s,
                              "a number of seconds, 5-3600")
        if not str(t.cache_dir).startswith("/"):
            raise ConfigError(file, "kernel.cache_dir", t.cache_dir, "an absolute path")
        from srperf.safety.private_dirs import check_private_dir

        check_private_dir(str(t.cache_dir), "kernel.cache_dir", file)   # root's only, or refused
        return t


def _check_modules_path(file: str, t: KernelTarget) -> None:
    """``modules_dir`` is an absolute ``.../lib/modules/RELEASE`` whose last part is a
    release (it becomes the guest's and the SUT's ``uname -r``), and only with image."""
    value = t.modules_dir
    if t.image is None:
        raise ConfigError(file, "kernel.modules_dir", value, "only with image (the modules "
                          "of a kernel built elsewhere)")
    if not isinstance(value, str) or not value.startswith("/"):
        raise ConfigError(file, "kernel.modules_dir", value, "an absolute path "
                          "(.../lib/modules/RELEASE)")
    release = Path(value).name
    if not _RELEASE.match(release):
        raise ConfigError(file, "kernel.modules_dir", value, f"its last part {release!r} "
                          "is not a kernel release: modules_dir is .../lib/modules/RELEASE "
                          "(e.g. 6.1.0-srperf), and RELEASE is what uname -r will show")


def check_present(target: KernelTarget) -> None:
    """A kernel built elsewhere is there to boot or install: ``image`` a trusted regular
    file, ``modules_dir`` a trusted tree holding ``modules.dep`` (ConfigError naming the
    key, exit 2: checked by ``validate``, ``testbed up`` and ``provision --kernel``
    before anything is made; loading the file alone leaves a missing one to them, so
    that ``testbed down`` still works once it is gone)."""
    import os

    if target.image is None or target.modules_dir is None:
        return
    file = target.source_file
    if not os.path.lexists(target.image):
        raise ConfigError(file, "kernel.image", target.image, "no such file on this host")
    if not os.path.lexists(target.modules_dir):
        raise ConfigError(file, "kernel.modules_dir", target.modules_dir,
                          "no such directory on this host")
    check_built(target)
    if not os.path.isfile(os.path.join(target.modules_dir, "modules.dep")):
        raise ConfigError(file, "kernel.modules_dir", target.modules_dir,
                          "no modules.dep in it (run depmod -b ROOT RELEASE, or make "
                          "modules_install)")


def check_host(target: KernelTarget, tester_cpu: int | None) -> None:
    """The guest fits this host: QEMU not pinned on the generator's CPU, no more vCPUs
    than the host has CPUs, no more memory than the host has (ConfigError naming the
    key; ``host_cpu`` beyond the host is refused at load already)."""
    from srperf.util.host import host_cpus, host_memory_mb

    file = target.source_file
    if target.host_cpu is not None and target.host_cpu == tester_cpu:
        raise ConfigError(file, "kernel.host_cpu", target.host_cpu,
                          "the tester's CPU (tester.cpu): QEMU pinned there would take the "
                          "generator's CPU; pin it to another one")
    cpus = host_cpus()
    if target.cpus > len(cpus):
        raise ConfigError(file, "kernel.cpus", target.cpus, f"more vCPUs than the "
                          f"{len(cpus)} CPUs this host lets srperf use")
    memory = host_memory_mb()
    if memory is not None and target.memory_mb > memory:
        raise ConfigError(file, "kernel.memory_mb", target.memory_mb,
                          f"more than this host's {memory} MiB of memory")


def check_built(target: KernelTarget) -> None:
    """A kernel built elsewhere (``image`` + ``modules_dir``) is booted and installed by
    root: both must be trusted (:mod:`srperf.safety.read_gate`: owned by root or the
    invoking user, along their whole path, writable by no one else; the image a regular
    file, the modules a tree of files, directories and symlinks).  Checked at validate
    and again when used; a path not there yet is left to the use (it is refused then)."""
    import os

    from srperf.safety import read_gate

    file = target.source_file
    if target.image is not None and os.path.lexists(target.image):
        read_gate.trusted_file(target.image, file, "kernel.image")
    if target.modules_dir is not None and os.path.lexists(target.modules_dir):
        read_gate.trusted_tree(target.modules_dir, file, "kernel.modules_dir")


__all__ = ["KernelTarget", "ACCELERATORS", "DEFAULT_CACHE_DIR", "check_built", "check_host",
           "check_present"]
