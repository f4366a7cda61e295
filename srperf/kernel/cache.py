"""The kernel cache (``kernel.cache_dir``): private to root, and its entries trusted only
when srperf made them.

The cache directory itself is made 0700 and checked (:mod:`srperf.safety.private_dirs`:
another owner or a mode that lets others write is refused, exit 2 naming
``kernel.cache_dir``).  Each manifest (``srperf-kernel.json`` of a fetched kernel,
``sources/PACKAGE_VERSION.json`` of a source package, ``built/ID/build.json``) and each
artefact it names (``.deb``, image) is read only when it is a regular file, reached
without following a symlink, owned by root (srperf's user) and writable by no one
else; a manifest larger than :data:`MANIFEST_BYTES` or that is no JSON mapping of the
expected fields is *damaged* (ConfigError naming the file, exit 2: remove it); an
artefact is used only when its SHA-256 (computed from the very descriptor checked)
is the one its manifest recorded.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srperf.errors import ConfigError
from srperf.safety import private_dirs, safe_paths

if TYPE_CHECKING:
    from srperf.kernel.image import KernelImage

KEY = "kernel.cache_dir"
MANIFEST_BYTES = 1 << 20
"""A manifest is a few hundred bytes; a larger one is not srperf's."""


def root(cache_dir: str | Path, file: str, create: bool) -> Path | None:
    """The cache directory, checked private (made 0700 when ``create``); None when it is
    missing and not ``create`` (nothing cached yet)."""
    if create:
        return private_dirs.ensure_private_dir(cache_dir, KEY, file)
    return Path(cache_dir) if private_dirs.check_private_dir(cache_dir, KEY, file) else None


def subdir(cache: Path, name: str, file: str, create: bool) -> Path | None:
    """``cache/name`` as a private directory (None: missing and not ``create``)."""
    if create:
        return private_dirs.ensure_private_dir(cache / name, KEY, file)
    return cache / name if private_dirs.check_private_dir(cache / name, KEY, file) else None


def _open_trusted(path: Path, file: str) -> int:
    """A descriptor of the regular file ``path``, opened without following a symlink and
    without blocking, refused (ConfigError) unless srperf's user owns it and no one else
    may write it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(str(path), "", ConfigError.SKIP, "a symlink in the kernel "
                              f"cache ({file}: {KEY}): not made by srperf, refused, not "
                              "followed; remove it") from None
        raise ConfigError(str(path), "", ConfigError.SKIP, f"cannot be read: "
                          f"{exc.strerror}") from None
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = f"is {safe_paths._kind(st.st_mode)}, not a regular file"
    elif st.st_uid not in (0, os.geteuid()):
        why = f"not made by srperf ({safe_paths.describe(st)})"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        why = f"others may write it ({safe_paths.describe(st)})"
    if why:
        os.close(fd)
        raise ConfigError(str(path), "", ConfigError.SKIP, f"in the kernel cache ({file}: "
                          f"{KEY}): {why}: not trusted; remove it (srperf fetches or builds "
                          "it again)")
    return fd


def read_manifest(path: Path, file: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """The JSON mapping of the manifest ``path``, trusted (see the module) and holding
    every one of ``fields`` as text; ConfigError naming it when damaged."""
    fd = _open_trusted(path, file)
    with os.fdopen(fd, "rb") as f:
        raw = f.read(MANIFEST_BYTES + 1)
    if len(raw) > MANIFEST_BYTES:
        raise ConfigError(str(path), "", ConfigError.SKIP, f"damaged kernel cache manifest "
                          f"(larger than {MANIFEST_BYTES} bytes); remove it")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(str(path), "", ConfigError.SKIP, f"damaged kernel cache manifest "
                          f"(not JSON: {str(exc)[:100]}); remove it (srperf fetches or "
                          "builds it again)") from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", ConfigError.SKIP, "damaged kernel cache manifest "
                          "(not a JSON object); remove it")
    missing = [k for k in fields if not isinstance(data.get(k), str) or not data.get(k)]
    if missing:
        raise ConfigError(str(path), "", ConfigError.SKIP, f"damaged kernel cache manifest "
                          f"(no {', '.join(missing)}); remove it (srperf fetches or builds "
                          "it again)")
    return data


def sha256_trusted(path: Path, file: str) -> str:
    """SHA-256 of the artefact ``path``, read from the descriptor whose owner and mode
    were checked (ConfigError: not srperf's)."""
    fd = _open_trusted(path, file)
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def inside(path: str, directory: Path, what: str, manifest: Path) -> Path:
    """``path`` (from a manifest) when it is exactly the name srperf gives it under
    ``directory``; ConfigError otherwise (a manifest pointing elsewhere is not ours)."""
    p = Path(path)
    if not p.is_absolute() or Path(os.path.normpath(p)) != p or directory not in p.parents:
        raise ConfigError(str(manifest), "", ConfigError.SKIP, f"damaged kernel cache "
                          f"manifest: its {what} {path!r} is not in {directory}; remove it")
    return p


def kernel_entry(entry: Path, file: str) -> "KernelImage | None":
    """The fetched kernel in the cache entry ``entry`` (``PACKAGE_VERSION/``): its
    manifest trusted and naming srperf's own image and modules under ``entry/root``, its
    one ``.deb`` srperf's with the recorded SHA-256.  None when the entry is incomplete
    or its ``.deb`` does not match (fetched again); ConfigError when it is not srperf's
    or its manifest is damaged."""
    from srperf.kernel.image import MANIFEST, KernelImage

    st = os.lstat(entry)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, os.geteuid()) \
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(str(entry), "", ConfigError.SKIP, f"in the kernel cache ({file}: "
                          f"{KEY}): not a directory srperf made ({safe_paths.describe(st)}): "
                          "not trusted; remove it")
    manifest = entry / MANIFEST
    data = read_manifest(manifest, file, ("name", "release", "image", "modules_dir",
                                          "sha256"))
    release = data["release"]
    if "/" in release or release in (".", "..") or len(release) > 100:
        raise ConfigError(str(manifest), "", ConfigError.SKIP, "damaged kernel cache "
                          f"manifest (release {release[:100]!r}); remove it")
    image = inside(data["image"], entry / "root", "image", manifest)
    modules = inside(data["modules_dir"], entry / "root", "modules_dir", manifest)
    if image != entry / "root" / "boot" / f"vmlinuz-{release}" or \
            modules != entry / "root" / "lib" / "modules" / release:
        raise ConfigError(str(manifest), "", ConfigError.SKIP, "damaged kernel cache "
                          "manifest (its image and modules are not where srperf unpacks "
                          "them); remove it")
    version = data.get("version")
    if version is not None and not isinstance(version, str):
        raise ConfigError(str(manifest), "", ConfigError.SKIP, "damaged kernel cache "
                          "manifest (version); remove it")
    debs = sorted(entry.glob("*.deb"))
    if len(debs) != 1 or not os.path.lexists(image):
        return None
    if sha256_trusted(debs[0], file) != data["sha256"]:
        return None
    os.close(_open_trusted(image, file))
    mst = os.lstat(modules) if os.path.lexists(modules) else None
    if mst is None or not stat.S_ISDIR(mst.st_mode) or mst.st_uid not in (0, os.geteuid()) \
            or mst.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(str(modules), "", ConfigError.SKIP, f"in the kernel cache ({file}: "
                          f"{KEY}): not the modules directory srperf unpacked: not trusted; "
                          "remove the entry")
    return KernelImage(name=data["name"], release=release, image=str(image),
                       modules_dir=str(modules), sha256=data["sha256"], version=version)


__all__ = ["KEY", "MANIFEST_BYTES", "inside", "kernel_entry", "read_manifest", "root", "sha256_trusted",
           "subdir"]
