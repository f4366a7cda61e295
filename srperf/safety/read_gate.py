"""The one place where srperf decides whether a file, directory or tree it will execute,
apply, unpack, boot or install as root can be trusted (the read gate, beside the
write gate :mod:`srperf.safety.safe_paths`).

srperf runs as root.  What root runs (a source tree's Makefile), applies (a patch),
takes as configuration (a config fragment, a base ``.config``), boots (a kernel image)
or installs on a SUT (an image and its modules) must not be something another local
user can change.  The rules are those of OpenSSH's ``StrictModes`` and of sudo's
check of its own files:

* **Owner**: the entry and every directory on its whole path (``/`` included) belong
  to root or to the user srperf trusts: ``SUDO_UID`` when root runs srperf through
  sudo, else srperf's own user.
* **Modes**: none of them is writable by its group or by others.  One exception, as
  for ``/tmp``: a directory on the way that is world- or group-writable *with the
  sticky bit* is accepted, because there only an entry's owner may rename or remove
  it, and the next entry on the way is itself checked to be a trusted user's.  The
  entry itself (the file, the directory or the tree's top) is never accepted so.
* **Symlinks**: each component is looked at without following it; a symlink is
  followed only when a trusted user owns it (and it lies in a checked directory),
  then its target is checked the same way.  Inside a tree (:func:`trusted_tree`) no
  symlink is followed at all: each must belong to a trusted user.
* **Kind**: a regular file (or a directory) where one is expected; a FIFO, socket,
  device, or anything under ``/proc``, ``/sys`` or ``/dev`` is refused.  Files are
  opened ``O_NOFOLLOW|O_NONBLOCK`` (an open never blocks: a FIFO planted in place of
  a file cannot hang srperf) and checked with ``fstat`` on that very descriptor (no
  window between the check and the read).

Callers check at ``validate`` time and again when the input is used (it can change
in between).  A violation is a :class:`~srperf.errors.ConfigError` (exit 2) naming the
file, the key and the path, and why ("owned by nobody", "writable by others", "a
FIFO").  ``docs/root-safety.md`` lists what is trusted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from srperf.errors import ConfigError
from srperf.safety.safe_paths import _kind, _owner, _trusted_owners, _trusted_uid

MAX_SYMLINKS = 40
"""Symlinks followed on the way to one entry (as the kernel's limit)."""
READ_LIMIT = 16 << 20
"""Default bound of :func:`read_trusted_file` (a manifest, a fragment: far smaller)."""
MAX_INPUT_BYTES = 1 << 30
"""The largest file the gate accepts (a kernel image, a patch, a module: far smaller):
srperf hashes and copies what it takes, so a larger (or sparse 1 TiB) file would keep it
reading for minutes instead of being refused."""
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
"""Kernel interfaces, never a file srperf takes as input."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Untrusted(ConfigError):
    """An input root would act on is not trusted (a ConfigError: exit 2)."""


@dataclass(frozen=True)
class _Where:
    file: str
    key: str
    value: str

    def refuse(self, reason: str) -> Untrusted:
        return Untrusted(self.file, self.key, self.value, reason)


def _modes(st: os.stat_result) -> str:
    return f"mode {stat.S_IMODE(st.st_mode):04o}"


def _why_untrusted(st: os.stat_result, what: str, as_ancestor: bool) -> str | None:
    """Why the entry ``what`` (its lstat/fstat ``st``) is not trusted, or None."""
    if not _trusted_uid(st.st_uid):
        return (f"{what} is owned by {_describe_uid(st.st_uid)}, not by {_trusted_owners()}: "
                "that user could change it")
    if stat.S_ISLNK(st.st_mode):
        return None   # a symlink's own mode means nothing
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and as_ancestor and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX:
        return None   # sticky (/tmp): only owners may rename what is in it
    if writable:
        who = "others" if st.st_mode & stat.S_IWOTH else "its group"
        return f"{what} is writable by {who} ({_modes(st)}): chmod go-w it"
    return None


def _describe_uid(uid: int) -> str:
    name = _owner(uid)
    return name if name.startswith("uid ") else f"uid {uid} ({name})"


def _is_pseudo(real: str) -> bool:
    return any(real == r or real.startswith(r + "/") for r in PSEUDO_ROOTS)


@contextlib.contextmanager
def _walk(path: str | Path, where: _Where) -> Iterator[tuple[int, str, str]]:
    """(descriptor of the checked directory holding the entry, the entry's name, the
    entry's real path) of ``path``: every directory from ``/`` down opened without
    following a symlink and checked; a symlink followed only when a trusted user owns
    it.  The entry itself is not checked here."""
    text = os.fspath(path)
    if not text:
        raise where.refuse("an empty path")
    if "\0" in text:
        raise where.refuse("a path with a NUL character")
    if not os.path.isabs(text):
        text = os.path.join(os.getcwd(), text)
    todo = [p for p in text.split("/") if p not in ("", ".")]
    fds = [os.open("/", _DIR_FLAGS)]
    names: list[str] = []
    hops = 0
    try:
        why = _why_untrusted(os.fstat(fds[0]), "/", as_ancestor=True)
        if why:
            raise where.refuse(why)
        while True:
            if not todo:   # the path named a directory that is on the stack
                if not names:
                    raise where.refuse("is /, not an input file or tree")
                leaf = names.pop()
                os.close(fds.pop())
                yield fds[-1], leaf, "/" + "/".join([*names, leaf])
                return
            name = todo.pop(0)
            if name == "..":
                if names:
                    names.pop()
                    os.close(fds.pop())
                continue
            here = "/" + "/".join([*names, name])
            try:
                st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                raise where.refuse(f"{here}: no such file or directory") from None
            except OSError as exc:
                raise where.refuse(f"{here}: cannot be used: {exc.strerror}") from None
            if stat.S_ISLNK(st.st_mode):
                why = _why_untrusted(st, f"{here} (a symlink)", as_ancestor=True)
                if why:
                    raise where.refuse(f"{why}; refused, not followed")
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise where.refuse(f"more than {MAX_SYMLINKS} symlinks on the way")
                target = os.readlink(name, dir_fd=fds[-1])
                todo = [p for p in target.split("/") if p not in ("", ".")] + todo
                if target.startswith("/"):
                    while names:
                        names.pop()
                        os.close(fds.pop())
                continue
            if not todo:
                yield fds[-1], name, here
                return
            if not stat.S_ISDIR(st.st_mode):
                raise where.refuse(f"{here} is {_kind(st.st_mode)}, not a directory")
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=fds[-1])
            except OSError as exc:
                raise where.refuse(f"{here}: cannot be opened: {exc.strerror}") from None
            fds.append(fd)
            names.append(name)
            why = _why_untrusted(os.fstat(fd), f"the directory {here}", as_ancestor=True)
            if why:
                raise where.refuse(why)
    finally:
        for fd in fds:
            os.close(fd)


def _check_entry(st: os.stat_result, real: str, where: _Where, want_dir: bool) -> None:
    ok = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
    if not ok:
        raise where.refuse(f"{real} is {_kind(st.st_mode)}, not "
                           f"{'a directory' if want_dir else 'a regular file'}")
    if _is_pseudo(real):
        raise where.refuse(f"{real} is a kernel interface (under "
                           f"{', '.join(PSEUDO_ROOTS)}), not an input file")
    why = _why_untrusted(st, real, as_ancestor=False)
    if why:
        raise where.refuse(why)
    _check_size(st, real, where)


def _check_size(st: os.stat_result, real: str, where: _Where) -> None:
    if stat.S_ISREG(st.st_mode) and st.st_size > MAX_INPUT_BYTES:
        raise where.refuse(f"{real} is {st.st_size} bytes, more than the "
                           f"{MAX_INPUT_BYTES >> 20} MiB an input may be: not read")


def _inside(real: str, top: str) -> bool:
    return real == top or real.startswith(top.rstrip("/") + "/")


@contextlib.contextmanager
def open_trusted(path: str | Path, file: str, key: str) -> Iterator[tuple[int, str]]:
    """(descriptor, real path) of the trusted regular file ``path``, opened
    ``O_NOFOLLOW|O_NONBLOCK`` and checked on that descriptor; closed afterwards.
    Untrusted (ConfigError naming ``file``, ``key`` and ``path``) otherwise."""
    where = _Where(file, key, os.fspath(path))
    with _walk(path, where) as (dir_fd, name, real):
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        _check_entry(st, real, where, want_dir=False)   # never open a device or FIFO
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise where.refuse(f"{real} became a symlink: refused, not followed") \
                    from None
            raise where.refuse(f"{real}: cannot be opened: {exc.strerror}") from None
    try:
        fst = os.fstat(fd)
        _check_entry(fst, real, where, want_dir=False)
        if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            raise where.refuse(f"{real} was replaced while it was checked")
        yield fd, real
    finally:
        os.close(fd)


def trusted_file(path: str | Path, file: str, key: str) -> str:
    """The real path of ``path`` once it is a trusted regular file (see the module);
    Untrusted otherwise."""
    with open_trusted(path, file, key) as (_, real):
        return real


def read_trusted_file(path: str | Path, file: str, key: str, limit: int = READ_LIMIT) -> bytes:
    """The bytes of the trusted regular file ``path``, read from the descriptor that was
    checked, at most ``limit`` of them (Untrusted when it is larger)."""
    with open_trusted(path, file, key) as (fd, real):
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    if len(data) > limit:
        raise _Where(file, key, os.fspath(path)).refuse(
            f"{real} is larger than {limit} bytes: not read")
    return data


def read_config(path: str | Path, file: str, what: str = "", limit: int = 64 << 20) -> bytes:
    """The bytes of a file srperf takes as configuration (a testbed, an experiment, a
    nightly suite): :func:`srperf.safety.safe_paths.check_trusted_file` (its own owner
    and mode), then opened through this gate, so the whole path is checked too (a
    root-owned file in a directory another user may write could be swapped: StrictModes
    refuses that), and read from the checked descriptor.  A refusal is a ConfigError
    naming ``file`` and ``what``."""
    from srperf.safety.safe_paths import _check_trusted, check_trusted_file

    check_trusted_file(Path(path), file, what)
    try:
        with open_trusted(path, file, what) as (fd, _):
            _check_trusted(os.fstat(fd), file, what)
            with os.fdopen(os.dup(fd), "rb") as f:
                return f.read(limit + 1)
    except Untrusted as exc:
        raise ConfigError(file, what, ConfigError.SKIP, f"not trusted: {exc.reason}") \
            from None


def check_config_path(path: str | Path, file: str, what: str) -> None:
    """:func:`read_config`'s checks without the read (an SSH key or known_hosts file):
    ConfigError naming ``file`` and ``what`` when it or a directory on its path is
    another user's or writable by others."""
    from srperf.safety.safe_paths import check_trusted_file

    check_trusted_file(Path(path), file, what)
    try:
        with open_trusted(path, file, what):
            pass
    except Untrusted as exc:
        raise ConfigError(file, what, ConfigError.SKIP, f"not trusted: {exc.reason}") \
            from None


def trusted_dir(path: str | Path, file: str, key: str) -> str:
    """The real path of ``path`` once it is a trusted directory (only the directory and
    its path; :func:`trusted_tree` checks what is in it)."""
    where = _Where(file, key, os.fspath(path))
    with _walk(path, where) as (dir_fd, name, real):
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                raise where.refuse(f"{real} is {_kind(st.st_mode)}, not a directory") \
                    from None
            raise where.refuse(f"{real}: cannot be opened: {exc.strerror}") from None
    try:
        _check_entry(os.fstat(fd), real, where, want_dir=True)
    finally:
        os.close(fd)
    return real


def trusted_tree(path: str | Path, file: str, key: str) -> str:
    """The real path of ``path`` once it and everything under it are trusted: the top as
    :func:`trusted_dir`; every entry below owned by a trusted user, no file or directory
    writable by its group or others, no file larger than :data:`MAX_INPUT_BYTES`, only
    regular files, directories and symlinks.  A symlink is copied as a link, but what
    uses the copy (make, a shell, the initramfs builder) follows it, so its target must
    resolve inside the tree, where this walk checks it: a link out of the tree (to
    another user's Makefile, say), even a root-owned one, is refused."""
    real = trusted_dir(path, file, key)
    where = _Where(file, key, os.fspath(path))
    for top, dirs, files, top_fd in os.fwalk(real, follow_symlinks=False):
        for name in [*dirs, *files]:
            entry = f"{top}/{name}"
            try:
                st = os.stat(name, dir_fd=top_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            kind = st.st_mode
            if not (stat.S_ISREG(kind) or stat.S_ISDIR(kind) or stat.S_ISLNK(kind)):
                raise where.refuse(f"{entry} is {_kind(kind)}: a source tree holds only "
                                   "files, directories and symlinks")
            why = _why_untrusted(st, entry, as_ancestor=False)
            if why:
                raise where.refuse(why)
            _check_size(st, entry, where)
            if stat.S_ISLNK(kind):
                target = os.path.realpath(entry)
                if not _inside(target, real):
                    raise where.refuse(f"{entry} is a symlink to {target}, outside the "
                                       "tree: a link out of the tree is not followed")
    return real


__all__ = ["MAX_INPUT_BYTES", "MAX_SYMLINKS", "PSEUDO_ROOTS", "READ_LIMIT", "Untrusted",
           "check_config_path", "open_trusted", "read_config",
           "read_trusted_file", "trusted_dir", "trusted_tree", "trusted_file"]
