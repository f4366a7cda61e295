"""Caches and work directories private to srperf's user (root): made 0700, or refused.

srperf keeps directories whose contents root later runs, unpacks or boots: the kernel
cache (``kernel.cache_dir``: fetched packages, unpacked kernels, source packages,
builds), the build directory of the C programs it runs (``$SRPERF_BUILD_DIR``) and
the internal-error log directory (``$SRPERF_LOG_DIR``).  Another local user who can
create a name in one of them can plant what root then trusts (a manifest with its
``.deb``, a ``release`` symlink).  So, as apt keeps ``/var/cache/apt/archives``:

* a missing directory is made mode 0700 (its missing parents too);
* an existing one must be a real directory (not a symlink) owned by root or by
  srperf's user (the effective uid), and no one but its owner may write it; every
  directory above it must belong to root or srperf's user and be writable by no one
  else unless it is sticky (as ``/tmp``: then no one else can rename what is in it).
  Otherwise :class:`~srperf.errors.ConfigError` (exit 2) names the key or variable and
  the path -- never an errno with exit 1;
* one of srperf's user's own that others may only read (an older srperf made it 0755)
  is made 0700, and that is logged.

Under ``sudo`` with the user's ``HOME`` kept, the default ``~/.cache/srperf`` is
root's own (``/root/.cache/srperf``), never the user's: :func:`cache_home`.  A path
named explicitly that belongs to the user is refused (the user could plant entries
in it), as pip turns off a cache that root does not own.
"""

from __future__ import annotations

import logging
import os
import pwd
import stat
from pathlib import Path

from srperf.errors import ConfigError
from srperf.safety import safe_paths

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700


def cache_home() -> Path:
    """``~/.cache`` of srperf's user: root's own home as the password database names it
    when srperf runs as root (``sudo`` may have kept the user's ``HOME``)."""
    if os.geteuid() == 0:
        try:
            return Path(pwd.getpwuid(0).pw_dir) / ".cache"
        except KeyError:
            return Path("/root/.cache")
    return Path.home() / ".cache"


def _owner_ok(uid: int) -> bool:
    return uid in (0, os.geteuid())


def _owners() -> str:
    return "root" if os.geteuid() == 0 else f"root or {safe_paths._owner(os.geteuid())}"


def _check_above(path: Path, key: str, file: str) -> None:
    """Every existing directory above ``path``: root's or srperf's user's, writable by no
    one else unless sticky; no symlink of another user on the way."""
    for above in reversed(path.parents):
        try:
            lst = os.lstat(above)
            st = os.stat(above)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConfigError(file, key, str(path), f"{above}: cannot be used: "
                              f"{exc.strerror}") from None
        if stat.S_ISLNK(lst.st_mode) and not _owner_ok(lst.st_uid):
            raise ConfigError(file, key, str(path), f"{above} is a symlink owned by "
                              f"{safe_paths._owner(lst.st_uid)}: refused, not followed")
        if not stat.S_ISDIR(st.st_mode):
            raise ConfigError(file, key, str(path), f"{above} is "
                              f"{safe_paths._kind(st.st_mode)}, not a directory")
        if not _owner_ok(st.st_uid):
            raise ConfigError(file, key, str(path), f"{above} ({safe_paths.describe(st)}) "
                              f"is not {_owners()}'s: its owner could replace srperf's "
                              "private directory below it")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise ConfigError(file, key, str(path), f"{above} ({safe_paths.describe(st)}) "
                              "may be written by other users without the sticky bit: "
                              "they could replace srperf's private directory below it")


def _check_own(st: os.stat_result, path: Path, key: str, file: str) -> bool:
    """ConfigError unless ``st`` is a private directory of srperf's user; True when it
    is ours but others may read it (to be made 0700)."""
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(file, key, str(path), f"is a symlink ({safe_paths.describe(st)}): "
                          "srperf's private directory must be a real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(file, key, str(path), f"is {safe_paths._kind(st.st_mode)}, not a "
                          "directory")
    if not _owner_ok(st.st_uid):
        raise ConfigError(file, key, str(path), f"not private to {_owners()} "
                          f"({safe_paths.describe(st)}): another user could plant what "
                          "srperf would trust in it; use a directory only root owns (or "
                          "remove it: srperf makes it 0700)")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "everyone" if st.st_mode & stat.S_IWOTH else "its group"
        raise ConfigError(file, key, str(path), f"not private ({safe_paths.describe(st)}): "
                          f"writable by {who}, so another user could plant what srperf "
                          "would trust in it; use a directory only root may write (mode "
                          "0700), or remove it: srperf makes it 0700")
    return bool(st.st_mode & 0o077)


def check_private_dir(path: Path | str, key: str, file: str = "<command line>") -> bool:
    """True when ``path`` is there as a private directory (see the module), False when
    it is missing; ConfigError (exit 2, naming ``key`` in ``file`` and the path)
    otherwise.  Nothing is made or changed (validate, dry runs, reading a cache)."""
    path = Path(os.path.abspath(path))
    _check_above(path, key, file)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ConfigError(file, key, str(path), f"cannot be used: {exc.strerror}") from None
    _check_own(st, path, key, file)
    return True


def ensure_private_dir(path: Path | str, key: str, file: str = "<command line>") -> Path:
    """``path`` as a private directory: made 0700 (with its missing parents) when
    missing, checked when there (ConfigError naming ``key``, exit 2)."""
    path = Path(os.path.abspath(path))
    _check_above(path, key, file)
    for parent in reversed([*path.parents][:-1]):
        if not os.path.lexists(parent):
            _make(parent, key, file, path)
            _check_above(parent, key, file)
    _make(path, key, file, path)
    return path


def _make(one: Path, key: str, file: str, wanted: Path) -> None:
    try:
        fd = safe_paths.make_private_dir(one)
    except OSError as exc:
        try:
            st = os.lstat(one)
        except OSError:
            st = None
        if st is not None:
            _check_own(st, one, key, file)   # a symlink or a file there: named
        raise ConfigError(file, key, str(wanted), f"{one} cannot be made: "
                          f"{exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if _check_own(st, one, key, file):
            safe_paths.tighten_private_dir(fd)
            log.info("%s: made private (mode 0700; it was %04o)", one,
                     stat.S_IMODE(st.st_mode))
    finally:
        os.close(fd)


__all__ = ["PRIVATE_DIR", "cache_home", "check_private_dir", "ensure_private_dir"]
