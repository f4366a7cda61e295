"""A kernel on this host, ready to boot: fetched once, unpacked, its modules indexed.

A Debian kernel package is downloaded with ``apt-get download`` (the host's own
package sources; nothing installed), unpacked with ``dpkg -x`` and indexed with
``depmod -b`` into ``CACHE_DIR/PACKAGE_VERSION/``; the ``.deb``'s SHA-256 is
recorded there and goes with every run's environment.  A second fetch of the
same package finds the cache and checks the recorded SHA-256 against the file.
A kernel built elsewhere (``image`` + ``modules_dir``) is used in place; its
image's SHA-256 is recorded instead.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path
from typing import IO

from srperf.errors import ConfigError

from srperf.kernel import cache as kcache
from srperf.safety import safe_paths
from srperf.kernel.image import (MANIFEST, KernelFetchError, KernelImage, _candidate, _run,
                                 sha256_file)
from srperf.kernel.target import KernelTarget, check_present

log = logging.getLogger(__name__)

def fetch(target: KernelTarget) -> KernelImage:
    """The kernel ``target`` names, fetched and unpacked once (cached)."""
    if target.image is not None:
        return _built(target)
    if target.build is not None:  # srperf kernel build made it (srperf.kernel.build)
        from srperf.kernel.build import BuildRecipe, built_image

        return built_image(BuildRecipe.from_mapping(target.source_file, target.build,
                                                    target.cache_dir))
    assert target.package is not None
    cache = kcache.root(target.cache_dir, target.source_file, create=True)
    assert cache is not None
    with _lock_file(cache, target) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs fetching the same kernel wait
        return _package(target, cache)


def _lock_file(cache: Path, target: KernelTarget) -> IO[bytes]:
    """``CACHE/.lock``, opened without blocking or following a symlink: a FIFO or
    symlink planted there is refused (exit 2 naming kernel.cache_dir), never waited on."""
    try:
        return safe_paths.open_append(cache / ".lock")
    except safe_paths.UnsafePath as exc:
        raise ConfigError(target.source_file, "kernel.cache_dir", str(cache),
                          f"its lock file cannot be used: {exc}") from None


def _package(target: KernelTarget, cache: Path) -> KernelImage:
    spec = target.package + (f"={target.version}" if target.version else "")
    # Which version apt would fetch now (so that a cached older one is not taken
    # for the candidate once the archive moves on).
    version = target.version or _candidate(target.package)
    entry = cache / f"{target.package}_{version}".replace(":", "%3a")
    manifest = entry / MANIFEST
    if os.path.lexists(manifest):   # trusted only if srperf made it (kernel.cache)
        cached = kcache.kernel_entry(entry, target.source_file)
        if cached is not None:
            log.info("kernel %s: cached in %s", spec, entry)
            return cached
        log.warning("kernel %s: the cache in %s is damaged; fetching again", spec, entry)
    if os.path.lexists(entry):
        safe_paths.remove_tree(entry)
    work = safe_paths.make_temp_dir(".fetch-", cache)
    try:
        log.info("kernel %s: apt-get download into %s", spec, entry)
        _run(["apt-get", "download", f"{target.package}={version}"], cwd=work)
        debs = list(work.glob("*.deb"))
        if len(debs) != 1:
            raise KernelFetchError(f"apt-get download {spec} left {len(debs)} .deb files")
        root = work / "root"
        _run(["dpkg", "-x", str(debs[0]), str(root)])
        releases = sorted(p.name for p in (root / "lib" / "modules").iterdir()) \
            if (root / "lib" / "modules").is_dir() else []
        if len(releases) != 1:
            raise KernelFetchError(f"{debs[0].name}: expected one lib/modules/RELEASE, "
                                   f"found {releases}")
        release = releases[0]
        _run(["depmod", "-b", str(root), release])
        safe_paths.rename_dir(work, entry)
    except BaseException:
        safe_paths.remove_tree(work)
        raise
    deb = next(entry.glob("*.deb"))
    vmlinuz = entry / "root" / "boot" / f"vmlinuz-{release}"
    if not vmlinuz.is_file():
        raise KernelFetchError(f"{deb.name} has no boot/vmlinuz-{release}")
    image = KernelImage(name=spec, release=release, image=str(vmlinuz),
                        modules_dir=str(entry / "root" / "lib" / "modules" / release),
                        sha256=sha256_file(deb), version=version)
    safe_paths.write_file(manifest, json.dumps(image.record(), indent=1, sort_keys=True),
                          make_parent=False)
    log.info("kernel %s: %s, sha256 %s", spec, release, image.sha256)
    return image


def _built(target: KernelTarget) -> KernelImage:
    assert target.image is not None and target.modules_dir is not None
    image, modules = Path(target.image), Path(target.modules_dir)
    check_present(target)   # again at use: there, and another user's is never booted
    return KernelImage(name=str(image), release=modules.name, image=str(image),
                       modules_dir=str(modules), sha256=sha256_file(image))


__all__ = ["MANIFEST", "KernelImage", "KernelFetchError", "fetch"]  # the first three: kernel.image
