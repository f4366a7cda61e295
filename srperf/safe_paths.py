"""Files and directories handled safely when srperf runs as root.

srperf runs as root and writes, and deletes, under directories a user names
(``--results``, a nightly suite's ``reports``).  Another local user who can
write into such a directory could plant a symlink there and make root write or
delete elsewhere.  So:

* :func:`check_dir` refuses a results or reports directory that another user can
  write (group- or world-writable without the sticky bit, or owned by another
  user), or a path that is not a directory at all (a regular file, a device);
* :func:`open_subdirs` walks below such a directory with directory file
  descriptors and ``O_NOFOLLOW``: a symlink is refused, never followed, and a
  component renamed meanwhile does not redirect srperf;
* :func:`remove_subtree` deletes with :func:`shutil.rmtree` relative to such a
  descriptor (``dir_fd``), which never follows a symlink;
* :func:`file_in` keeps a generated file name inside its directory;
* :func:`create_private_file` makes a file (the results database) mode 0600.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import pwd
import re
import shutil
import stat
from pathlib import Path
from typing import Iterator

from srperf.errors import ConfigError, SrperfError

log = logging.getLogger(__name__)

_KINDS = ((stat.S_ISREG, "a regular file"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink"))


class UnsafePath(SrperfError):
    """A path below a checked directory is not what srperf made (a symlink, another
    owner): refused instead of followed."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a directory")


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a directory with this status lets another user plant files, or None."""
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return (f"owned by {_owner(st.st_uid)}, not by {_owner(me)}: that user could plant "
                "a symlink in it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        who = "everyone" if st.st_mode & stat.S_IWOTH else "its group"
        return (f"writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}) without the sticky "
                "bit: another user could plant a symlink in it; chmod go-w it")
    return None


def check_dir(path: Path, what: str, file: str = "<command line>") -> None:
    """ConfigError (``what``: the option or key naming it, in ``file``) when ``path``
    exists and is not a directory, or is a directory another user can write into."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except NotADirectoryError:   # a file or device on the way: name it
        above = next(p for p in path.parents if p.exists())
        kind = _kind(os.stat(above).st_mode)
        raise ConfigError(file, what, str(path), f"{above} is {kind}, not a directory") \
            from None
    except OSError as exc:
        raise ConfigError(file, what, str(path), f"cannot be used: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(file, what, str(path), f"is {_kind(st.st_mode)}, not a directory")
    why = unsafe_reason(st)
    if why:
        raise ConfigError(file, what, str(path), f"refused as srperf's directory: {why}")


def ensure_dir(path: Path, what: str, file: str = "<command line>") -> Path:
    """``path`` checked (:func:`check_dir`), made when missing (with its parents)."""
    for parent in reversed([path, *path.parents]):   # a file or device above it
        if parent.exists() and not parent.is_dir():
            check_dir(parent, what, file)
    check_dir(path, what, file)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(file, what, str(path), f"cannot be made: {exc.strerror}") from None
    check_dir(path, what, file)
    return path


def _open_child(parent_fd: int, name: str, create: bool, where: str) -> int:
    """The directory ``name`` in ``parent_fd`` (made 0700 when ``create``), opened
    without following a symlink; UnsafePath when it is not srperf's own."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent_fd)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePath(f"{where}: not a directory srperf made (a symlink or a file "
                             "in its place): refused, not followed") from None
        raise
    why = unsafe_reason(os.fstat(fd))
    if why:
        os.close(fd)
        raise UnsafePath(f"{where}: {why}")
    return fd


@contextlib.contextmanager
def open_subdirs(base: Path, names: list[str], create: bool = True) -> Iterator[list[int]]:
    """Descriptors of ``base`` and of ``base/names[0]``, ``.../names[1]``... (made
    when ``create``), each opened without following a symlink; closed afterwards."""
    fds = [os.open(base, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        why = unsafe_reason(os.fstat(fds[0]))
        if why:
            raise UnsafePath(f"{base}: {why}")
        where = base
        for name in names:
            where = where / name
            fds.append(_open_child(fds[-1], name, create, str(where)))
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


def remove_subtree(base: Path, names: list[str]) -> bool:
    """Remove ``base/names[0]/.../names[-1]`` and everything under it, never following a
    symlink on the way (a symlink in the path is refused and logged).  True when
    something was removed."""
    *parents, leaf = names
    try:
        with open_subdirs(base, parents, create=False) as fds:
            try:
                st = os.stat(leaf, dir_fd=fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                return False
            if not stat.S_ISDIR(st.st_mode):   # a planted symlink: removed, not followed
                os.unlink(leaf, dir_fd=fds[-1])
                log.warning("%s: was %s, not a directory: removed the entry only",
                            base.joinpath(*names), _kind(st.st_mode))
                return True
            shutil.rmtree(leaf, dir_fd=fds[-1])
            return True
    except FileNotFoundError:
        return False
    except (UnsafePath, OSError) as exc:
        log.warning("not removing %s: %s", base.joinpath(*names), exc)
        return False


def remove_empty(base: Path, names: list[str]) -> None:
    """Remove ``base/names...`` from the deepest up while each is empty (no symlink
    followed)."""
    for depth in range(len(names), 0, -1):
        *parents, leaf = names[:depth]
        try:
            with open_subdirs(base, parents, create=False) as fds:
                os.rmdir(leaf, dir_fd=fds[-1])
        except (OSError, UnsafePath):
            return


_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_.+-]")


def safe_component(text: str, limit: int = 64) -> str:
    """``text`` as one file-name component: characters other than letters, digits and
    ``_.+-`` replaced by ``_``, no leading dot, at most ``limit`` characters."""
    out = _UNSAFE_CHARS.sub("_", text).lstrip(".")[:limit]
    return out or "_"


def file_in(directory: Path, name: str, what: str, file: str = "<command line>") -> Path:
    """``directory/name``, refused (ConfigError naming ``what``) unless it is a file
    name directly inside ``directory`` (no ``/``, no ``..``)."""
    path = directory / name
    if "/" in name or name in (".", "..") or "\0" in name or path.parent != directory:
        raise ConfigError(file, what, name, f"would make a file outside {directory}")
    return path


def create_private_file(path: Path) -> None:
    """Make ``path`` (mode 0600) if it does not exist; refuse a symlink in its place;
    tighten an existing file of ours that others can read."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        return
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(str(path), "", ConfigError.SKIP,
                          "is a symlink: refused as a results database (not followed)")
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
        os.chmod(path, 0o600, follow_symlinks=False)
        log.info("%s: made private (mode 0600)", path)


__all__ = ["UnsafePath", "check_dir", "create_private_file", "ensure_dir", "file_in",
           "open_subdirs", "remove_empty", "remove_subtree", "safe_component",
           "unsafe_reason"]
