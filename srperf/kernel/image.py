"""What a kernel on this host is once it is ready to boot, and the commands that make it.

Shared by :mod:`srperf.kernel.package` (a Debian package or an image built elsewhere)
and :mod:`srperf.kernel.build` (a kernel built from source), neither of which the
other's module needs to import for it.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from srperf.errors import SrperfError

MANIFEST = "srperf-kernel.json"


class KernelFetchError(SrperfError):
    """A kernel could not be fetched, unpacked or found."""


@dataclass(frozen=True)
class KernelImage:
    """A kernel this host can boot in a guest."""

    name: str
    """The package (``PACKAGE=VERSION``) or the image path."""
    release: str
    """Its ``uname -r`` (the name of its modules directory)."""
    image: str
    """The kernel image QEMU boots (bzImage)."""
    modules_dir: str
    """Its ``lib/modules/RELEASE`` directory (with modules.dep)."""
    sha256: str
    """SHA-256 of the ``.deb`` (package) or of the image (built elsewhere)."""
    version: str | None = None
    """The Debian package version (None: not a package)."""

    def record(self) -> dict[str, str | None]:
        """What the run's environment keeps of it."""
        return asdict(self)


def sha256_file(path: Path | str) -> str:
    """SHA-256 of a file's bytes, hex (kernel packages, images, configs, patches)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _run(argv: list[str], cwd: Path | None = None, timeout: float = 600.0) -> str:
    try:
        res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise KernelFetchError(f"cannot run {argv[0]}: {exc} (scripts/install.sh installs "
                               "what kernel targets need)") from exc
    except subprocess.TimeoutExpired as exc:
        raise KernelFetchError(f"{' '.join(argv)} took longer than {timeout:g} s") from exc
    if res.returncode != 0:
        raise KernelFetchError(f"{' '.join(argv)} failed (exit {res.returncode}): "
                               f"{(res.stderr or res.stdout).strip()}")
    return res.stdout


def _candidate(package: str) -> str:
    """The version ``apt-get download PACKAGE`` would fetch (KernelFetchError: none)."""
    out = _run(["apt-cache", "policy", package], timeout=60.0)
    for line in out.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Candidate" and value.strip() and value.strip() != "(none)":
            return value.strip()
    raise KernelFetchError(f"no package {package} in this host's package sources "
                           "(apt-cache policy names no candidate; apt-get update?)")
