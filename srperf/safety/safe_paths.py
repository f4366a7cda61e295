"""The one place where srperf changes the file system: every file or directory srperf
creates, opens for writing, removes, renames or changes the mode of goes through here.

srperf runs as root, often on a shared server, and writes under directories a user
names (``--results``, ``--db``, ``-o``, a nightly suite's ``reports``).  Another local
user who can write into such a directory (``/tmp``) could plant a symlink, a store or
a testbed file there and make root write, delete or run something elsewhere.  The
rules, each kept here and nowhere else (``tests/test_root_safety.py`` reads the
package's source and fails when another module calls ``open(..., "w")``,
``os.chmod``, ``shutil.rmtree``, ``Path.write_text``, ``mkdir``... itself):

* Trust: a file srperf reads and then acts on (a results store, an experiment,
  testbed or nightly suite file, a testbed named by a stored run's recipe) must belong
  to root or to the invoking user and be writable by nobody else
  (:func:`check_trusted_file`); a directory srperf writes into must not let another
  user plant files in it unnoticed (:func:`check_dir`), and no symlink owned by
  another user is followed on the way to it.
* Creating: a new file is made ``O_CREAT|O_EXCL|O_NOFOLLOW`` under a temporary name
  inside its checked directory, filled, given its mode, then renamed over its name
  (:func:`write_file`): a name another user planted (a symlink, their own file) is
  refused and never written through.  Several outputs of one command are all checked
  before any is written (:func:`check_outputs`).
* Removing: relative to directory descriptors opened without following a symlink
  (:func:`remove_subtree`, :func:`remove_tree`).
* The results store: :func:`open_store_file` checks an existing file (it must be an
  SQLite srperf store of ours) before anything touches it, and makes a new one 0600.

Modes: stores, exports, error logs, known_hosts and frame files 0600; run and work
directories 0700; reports, JUnit files, summaries and build outputs 0644.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import pwd
import re
import secrets
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import IO, Iterable, Iterator

from srperf.errors import ConfigError, SrperfError

log = logging.getLogger(__name__)

_KINDS = ((stat.S_ISREG, "a regular file"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink"),
          (stat.S_ISDIR, "a directory"))

PRIVATE = 0o600
"""Mode of what may hold an environment or a secret: stores, exports, error logs."""
SHARED = 0o644
"""Mode of documents meant to be read: reports, JUnit files, summaries, built programs."""

SQLITE_MAGIC = b"SQLite format 3\0"
STORE_TABLES = ("runs", "schema_version")
"""An SQLite file holding one of these tables is an srperf results store."""
STORE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
"""An empty file so named is taken as a new store (an empty file otherwise is not)."""


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


def _trusted_uid(uid: int) -> bool:
    """Root, srperf's user, or (srperf started by ``sudo``) the user who ran sudo."""
    if uid in (0, os.geteuid()):
        return True
    sudo = os.environ.get("SUDO_UID", "")
    return os.geteuid() == 0 and sudo.isdigit() and uid == int(sudo)


def _trusted_owners() -> str:
    """Whose files srperf trusts, in words."""
    users = ["root"] if os.geteuid() == 0 else ["root", _owner(os.geteuid())]
    sudo = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and sudo.isdigit() and int(sudo) != 0:
        users.append(f"{_owner(int(sudo))} (who ran sudo)")
    return " or ".join(users)


def describe(st: os.stat_result) -> str:
    """``owner nobody, mode 0644`` of a status."""
    return f"owner {_owner(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):04o}"


def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a directory with this status lets another user plant files, or None."""
    if not _trusted_uid(st.st_uid):
        return (f"owned by {_owner(st.st_uid)}, not by {_trusted_owners()}: that user could "
                "plant a symlink in it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        who = "everyone" if st.st_mode & stat.S_IWOTH else "its group"
        return (f"writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}) without the sticky "
                "bit: another user could plant a symlink in it; chmod go-w it")
    return None


def others_can_write(st: os.stat_result) -> bool:
    """True when a user other than root and the owner may create names in this directory
    (group- or world-writable, sticky or not)."""
    return bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def foreign_symlink(path: Path) -> str | None:
    """The first symlink on the way to ``path`` (each component, not resolved) that
    belongs to another user, described; None when there is none.  Such a link is never
    followed: its owner could point it anywhere."""
    here = Path(os.path.abspath(path))
    for part in [*reversed(here.parents), here][1:]:
        try:
            st = os.lstat(part)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode) and not _trusted_uid(st.st_uid):
            return f"{part} is a symlink owned by {_owner(st.st_uid)}: refused, not followed"
    return None


def check_trusted_file(path: Path, file: str | None = None, what: str = "") -> None:
    """ConfigError unless ``path`` (a file srperf reads and then acts on) belongs to root
    or the invoking user and neither its group nor others may write it, and no symlink
    of another user leads to it.  ``file``/``what``: how the message names it."""
    name = file or str(path)
    link = foreign_symlink(path)
    if link:
        raise ConfigError(name, what, ConfigError.SKIP, link)
    try:
        st = os.stat(path)
    except OSError:
        return   # the reader says why it cannot be read
    _check_trusted(st, name, what)


def read_trusted(path: Path, file: str | None = None, what: str = "") -> bytes:
    """The bytes of ``path``, read from the very file whose owner and mode were checked
    (:func:`check_trusted_file`; one descriptor, so it cannot be swapped in between)."""
    check_trusted_file(path, file, what)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        _check_trusted(os.fstat(f.fileno()), file or str(path), what)
        return f.read()


def _check_trusted(st: os.stat_result, name: str, what: str) -> None:
    if not _trusted_uid(st.st_uid):
        raise ConfigError(name, what, ConfigError.SKIP,
                          f"not trusted ({describe(st)}): srperf acts only on files of "
                          f"{_trusted_owners()}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(name, what, ConfigError.SKIP,
                          f"not trusted ({describe(st)}): other users may write it; "
                          "chmod go-w it")


def check_dir(path: Path, what: str, file: str = "<command line>") -> None:
    """ConfigError (``what``: the option or key naming it, in ``file``) when ``path``
    exists and is not a directory, is a directory another user can write into, or is
    reached through a symlink another user owns."""
    link = foreign_symlink(path)
    if link:
        raise ConfigError(file, what, str(path), link)
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


def check_dir_to_be_made(path: Path, what: str, file: str = "<command line>") -> None:
    """:func:`check_dir` of ``path``, and a file or device on the way to it refused, as
    :func:`ensure_dir` checks before making it (``srperf validate`` makes nothing)."""
    for parent in reversed([path, *path.parents]):   # a file or device above it
        if parent.exists() and not parent.is_dir():
            check_dir(parent, what, file)
    check_dir(path, what, file)


def ensure_dir(path: Path, what: str, file: str = "<command line>",
               mode: int = 0o755) -> Path:
    """``path`` checked (:func:`check_dir_to_be_made`), made when missing (with its
    parents)."""
    check_dir_to_be_made(path, what, file)
    try:
        path.mkdir(mode=mode, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(file, what, str(path), f"cannot be made: {exc.strerror}") from None
    check_dir(path, what, file)
    return path


def make_dirs(path: Path, mode: int = 0o755) -> Path:
    """``path`` and its parents made when missing (srperf's own places: the build
    directory, the error-log directory, ``/run/srperf``); a symlink of another user on
    the way, or a directory others may plant files in, is refused (UnsafePath)."""
    link = foreign_symlink(path)
    if link:
        raise UnsafePath(link)
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    why = unsafe_reason(os.stat(path))
    if why:
        raise UnsafePath(f"{path}: {why}")
    return path


def _open_dir(path: Path) -> int:
    """A descriptor of the directory ``path``, checked after opening (no other user can
    plant names unnoticed, unless it is sticky)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    why = unsafe_reason(os.fstat(fd))
    if why:
        os.close(fd)
        raise UnsafePath(f"{path}: {why}")
    return fd


def _open_child(parent_fd: int, name: str, create: bool, where: str,
                mode: int = 0o700) -> int:
    """The directory ``name`` in ``parent_fd`` (made ``mode`` when ``create``), opened
    without following a symlink; UnsafePath when it is not srperf's own."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=parent_fd)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=parent_fd)
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
    link = foreign_symlink(base)
    if link:
        raise UnsafePath(link)
    fds = [os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
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


def remove_tree(path: Path) -> bool:
    """Remove the directory ``path`` and everything under it (srperf's own temporary
    and work directories, pinned BPF objects), never following a symlink: a symlink at
    ``path`` is removed itself.  Errors are logged; True when something was removed."""
    path = Path(os.path.abspath(path))
    return remove_subtree(path.parent, [path.name])


def remove_file(path: Path) -> bool:
    """Remove the file (or symlink, never followed) ``path`` if it is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{path}: is a directory, not a file srperf made")
    os.unlink(path)
    return True


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


# -- creating files --------------------------------------------------------------------------
def _refuse(what: str | None, file: str, path: Path, why: str) -> SrperfError:
    if what:
        return ConfigError(file, what, str(path), why)
    return UnsafePath(f"{path}: {why}")


def _check_name(dir_fd: int, name: str, path: Path, what: str | None, file: str,
                directory: bool = False) -> os.stat_result | None:
    """The status of ``name`` in ``dir_fd`` (not followed), or None when absent; an
    entry srperf must not replace (a symlink, another kind, another user's) refused."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    wanted = stat.S_ISDIR if directory else stat.S_ISREG
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(what, file, path, f"is a symlink ({describe(st)}): refused, not "
                      "written through")
    if not wanted(st.st_mode):
        raise _refuse(what, file, path, f"is {_kind(st.st_mode)}, not "
                      f"{'a directory' if directory else 'a regular file'}: not replaced")
    if not _trusted_uid(st.st_uid):
        raise _refuse(what, file, path, f"exists and is not srperf's ({describe(st)}): "
                      "not replaced")
    return st


def _output_dir(path: Path, what: str | None, file: str, make: bool) -> Path:
    parent = Path(os.path.abspath(path)).parent
    if what:
        (ensure_dir if make else check_dir)(parent, what, file)
    elif make:
        make_dirs(parent)
    return parent


def _new_temp(dir_fd: int, name: str, mode: int = PRIVATE) -> tuple[str, int]:
    """A new file ``.NAME.RANDOM.tmp`` in ``dir_fd``, made O_EXCL|O_NOFOLLOW."""
    for _ in range(100):
        tmp = f".{name[:40]}.{secrets.token_hex(6)}.tmp"
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def write_file(path: Path, data: bytes | str, mode: int = SHARED, what: str | None = None,
               file: str = "<command line>", make_parent: bool = True) -> Path:
    """Write ``data`` as the file ``path`` (mode ``mode``): made under a new temporary
    name in its checked directory, then renamed over ``path``.  A symlink, a directory
    or another user's file at ``path`` is refused (ConfigError naming ``what`` in
    ``file`` when given, else UnsafePath); nothing is ever written through a name.
    ``what`` also names the option in the error when the directory cannot be used."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    parent = _output_dir(path, what, file, make_parent)
    name = Path(path).name
    try:
        dir_fd = _open_dir(parent)
    except (UnsafePath, OSError) as exc:
        raise _refuse(what, file, parent, f"cannot be used: "
                      f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        _check_name(dir_fd, name, path, what, file)
        try:
            tmp, fd = _new_temp(dir_fd, name)
        except OSError as exc:
            raise _refuse(what, file, path, f"cannot be written in {parent}: "
                          f"{exc.strerror}") from None
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(raw)
                os.fchmod(out.fileno(), mode)
            _check_name(dir_fd, name, path, what, file)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)
    return Path(path)


def check_outputs(outputs: Iterable[tuple[Path, str]], file: str = "<command line>") -> None:
    """Check every output of a command (path, the option naming it) before any is
    written: its directory usable (a temporary file is made and removed there) and its
    name not planted.  ConfigError naming the first option that fails."""
    for path, what in outputs:
        parent = _output_dir(path, what, file, make=True)
        try:
            dir_fd = _open_dir(parent)
        except (UnsafePath, OSError) as exc:
            raise ConfigError(file, what, str(path), f"{parent} cannot be used: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
        try:
            _check_name(dir_fd, Path(path).name, path, what, file)
            try:
                tmp, fd = _new_temp(dir_fd, Path(path).name)
            except OSError as exc:
                raise ConfigError(file, what, str(path), f"cannot be written in {parent}: "
                                  f"{exc.strerror}") from None
            os.close(fd)
            os.unlink(tmp, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)


def write_files(directory: Path, files: dict[str, bytes | str], mode: int = PRIVATE,
                what: str | None = None, file: str = "<command line>") -> list[Path]:
    """Write ``files`` (name -> data) into ``directory``, made 0700 when missing; an
    existing ``directory`` must be a real directory of srperf's user (a symlink is
    refused, not followed).  Each file as :func:`write_file` makes it."""
    path = Path(os.path.abspath(directory))
    parent = _output_dir(path, what, file, make=True)
    try:
        with open_subdirs(parent, [path.name]) as fds:
            for name in files:
                _check_name(fds[-1], file_in(path, name, what or "file", file).name,
                            path / name, what, file)
    except UnsafePath as exc:
        raise _refuse(what, file, path, str(exc).split(": ", 1)[-1]) from None
    except OSError as exc:
        raise _refuse(what, file, path, f"cannot be made: {exc.strerror}") from None
    return [write_file(path / name, data, mode, what, file, make_parent=False)
            for name, data in files.items()]


def open_append(path: Path) -> IO[bytes]:
    """The file ``path`` opened for binary appending (a process's log), made 0600 when
    missing; never through a symlink and only a regular file of srperf's user."""
    try:
        # O_NONBLOCK: a FIFO planted at the name (a lock file) fails or opens at once,
        # and is refused below, instead of blocking the open until someone reads it
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, PRIVATE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{path}: is a symlink: refused, not written through") from None
        if exc.errno == errno.ENXIO:   # a FIFO no one reads
            raise UnsafePath(f"{path}: is a FIFO, not a regular file of srperf's") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or not _trusted_uid(st.st_uid):
        os.close(fd)
        raise UnsafePath(f"{path}: not a regular file of srperf's user ({describe(st)}, "
                         f"{_kind(st.st_mode)})")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


def append_private(path: Path, text: str) -> Path:
    """Append ``text`` to the file ``path`` (made 0600 with its directory 0700 when
    missing), never through a symlink and only to a regular file of srperf's user."""
    make_dirs(Path(path).parent, 0o700)
    with open_append(Path(path)) as out:
        out.write(text.encode("utf-8"))
    return Path(path)


def new_private_file(directory: Path, prefix: str, suffix: str, text: str) -> Path:
    """A new file ``PREFIX<random>SUFFIX`` (0600) in ``directory`` (made 0700) holding
    ``text``; its name is unpredictable and made O_EXCL."""
    make_dirs(directory, 0o700)
    dir_fd = _open_dir(directory)
    try:
        for _ in range(100):
            name = f"{prefix}{secrets.token_hex(4)}{suffix}"
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, PRIVATE, dir_fd=dir_fd)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, "no free name", str(directory))
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
    finally:
        os.close(dir_fd)
    return Path(directory) / name


def open_new(path: Path, mode: int = PRIVATE) -> IO[bytes]:
    """A new file ``path`` opened for binary writing (a process's output), made
    O_EXCL|O_NOFOLLOW: an existing name is never opened."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode)
    return os.fdopen(fd, "wb")


def make_temp_dir(prefix: str, directory: str | Path | None = None) -> Path:
    """A new private (0700) directory with an unpredictable name, in ``directory`` or the
    temporary directory (a run's ``runs/RUN_ID/tmp`` while a run goes on)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=prefix, dir=directory))


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    """:func:`make_temp_dir`, removed (no symlink followed) at the end of the block."""
    path = make_temp_dir(prefix)
    try:
        yield path
    finally:
        remove_tree(path)


def make_dir(path: Path, mode: int = 0o700) -> Path:
    """Make the one directory ``path`` (its parent exists and is srperf's) unless it is
    there already as a real directory of srperf's user."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, mode)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or not _trusted_uid(st.st_uid):
        raise UnsafePath(f"{path}: not a directory srperf made ({describe(st)})")
    return Path(path)


def make_private_dir(path: Path) -> int:
    """Make the one directory ``path`` (mode 0700) unless it is there, and return a
    descriptor of it opened without following a symlink; a directory of srperf's
    user that others may read is made 0700 (its caller has checked that no one else
    could write it: :mod:`srperf.safety.private_dirs`).  OSError as the system says."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    return fd


def tighten_private_dir(fd: int) -> None:
    """Make the directory of descriptor ``fd`` (srperf's user's own) mode 0700."""
    os.fchmod(fd, 0o700)


def replace(src: Path | str, dst: Path | str) -> None:
    """Rename srperf's own ``src`` over ``dst`` in the same directory (a build output);
    the name ``dst`` is replaced itself, never followed."""
    st = os.lstat(src)
    if not stat.S_ISREG(st.st_mode) or not _trusted_uid(st.st_uid):
        raise UnsafePath(f"{src}: not a file srperf made ({describe(st)})")
    os.replace(src, dst)


def rename_dir(src: Path, dst: Path) -> None:
    """Rename srperf's own directory ``src`` to the free name ``dst`` (a cache entry
    filled under a temporary name); an existing ``dst`` is refused, never replaced."""
    st = os.lstat(src)
    if not stat.S_ISDIR(st.st_mode) or not _trusted_uid(st.st_uid):
        raise UnsafePath(f"{src}: not a directory srperf made ({describe(st)})")
    if os.path.lexists(dst):
        raise UnsafePath(f"{dst}: already there; not replaced")
    os.rename(src, dst)


def copy_file(src: Path, dst: str | Path) -> None:
    """Copy ``src`` to ``dst`` (in a work directory srperf made) with ``src``'s mode."""
    write_file(Path(dst), Path(src).read_bytes(), stat.S_IMODE(os.stat(src).st_mode),
               make_parent=False)


def write_sysctl(path: Path, value: str) -> None:
    """Write ``value`` to the existing kernel setting ``path`` (under /proc/sys only),
    never creating a file and never through a symlink."""
    if not str(path).startswith("/proc/sys/"):
        raise UnsafePath(f"{path}: not a kernel setting under /proc/sys")
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "w") as out:
        out.write(value)


# -- the results store -----------------------------------------------------------------------
def read_only_sqlite(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file ``path`` (``mode=ro``: it never makes,
    changes or journals the file); call it only after :func:`open_store_file`."""
    import urllib.parse

    return sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True)



def _tables(path: Path, mode: str) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True)
    try:
        return {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def _is_store(path: Path) -> str | None:
    """Why the existing regular file ``path`` is not an srperf store, or None.  Read
    only (nothing in the file changes), except that a hot journal a killed writer left
    is rolled back, as SQLite does on any writable open."""
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        return "not an SQLite file"
    try:
        tables = _tables(path, "ro")
    except sqlite3.Error as exc:
        journal = Path(f"{path}-journal")
        if "readonly" not in str(exc) or not journal.is_file() or not journal.stat().st_size:
            return f"an SQLite file srperf cannot read ({exc})"
        # a hot journal: a writer was killed mid-transaction (kill -9 of a live run);
        # only a writable connection may roll it back, as any later open of the store
        # would, which restores the last committed state
        log.info("%s: rolling back the journal a killed writer left", path)
        try:
            tables = _tables(path, "rw")
        except sqlite3.Error as exc2:
            return f"an SQLite file srperf cannot read ({exc2})"
    if tables and not tables & set(STORE_TABLES):
        return f"an SQLite database of something else (tables {', '.join(sorted(tables)[:5])})"
    return None


def open_store_file(path: Path, what: str = "--db", file: str = "<command line>",
                    create: bool = True) -> Path:
    """The SQLite results store ``path``, checked before anything touches it (exit 2,
    ConfigError naming ``what``): an existing file must be a regular file of root or
    of srperf's user, writable by no one else, and an SQLite srperf store (or an empty
    one srperf made, mode 0600); it is left unchanged otherwise.  Its directory must not
    let another user plant files (SQLite makes journals beside the store).  A missing
    store is made 0600 (O_EXCL, no symlink followed), unless ``create`` is False (a
    check before a run that may still be refused).  An existing store of ours that
    others may read is made 0600 once checked."""
    path = Path(os.path.abspath(path))
    link = foreign_symlink(path)
    if link:
        raise ConfigError(file, what, str(path), link)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ConfigError(file, what, str(path), f"cannot be used: {exc.strerror}") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise ConfigError(file, what, str(path), f"is a symlink ({describe(st)}): "
                              "refused as a results store, not followed")
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(file, what, str(path), f"is {_kind(st.st_mode)}, not a "
                              "results store file")
        if not _trusted_uid(st.st_uid) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ConfigError(file, what, str(path), f"not trusted as a results store "
                              f"({describe(st)}): it must belong to {_trusted_owners()} "
                              "and be writable by no one else")
    ensure_dir(path.parent, what, file)
    dir_st = os.stat(path.parent)
    if others_can_write(dir_st):
        raise ConfigError(file, what, str(path), f"its directory {path.parent} "
                          f"({describe(dir_st)}) lets other users make files: SQLite's "
                          "journal files beside the store could be planted; use a "
                          "directory only you can write")
    if st is None:
        if not create:
            return path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, PRIVATE)
        except FileExistsError:   # made meanwhile (another srperf): checked as any other
            return open_store_file(path, what, file)
        except OSError as exc:
            raise ConfigError(file, what, str(path), f"cannot be made: {exc.strerror}") \
                from None
        os.close(fd)
        return path
    if st.st_size == 0:   # a new store (SQLite writes nothing before the first table)
        if stat.S_IMODE(st.st_mode) != PRIVATE and path.suffix not in STORE_SUFFIXES:
            raise ConfigError(file, what, str(path), f"an empty file srperf did not make "
                              f"({describe(st)}, not named *.sqlite): not a results store; "
                              "left unchanged")
    else:
        try:
            why = _is_store(path)
        except OSError as exc:
            raise ConfigError(file, what, str(path), f"cannot be read: {exc.strerror}") \
                from None
        if why:
            raise ConfigError(file, what, str(path), f"not an srperf results store ({why}); "
                              "left unchanged")
    if st.st_mode & 0o077 and st.st_uid == os.geteuid():
        os.chmod(path, PRIVATE, follow_symlinks=False)
        log.info("%s: made private (mode 0600)", path)
    return path


__all__ = ["PRIVATE", "SHARED", "UnsafePath", "append_private", "check_dir",
           "check_dir_to_be_made", "check_outputs", "check_trusted_file", "copy_file", "read_trusted", "describe", "ensure_dir", "file_in",
           "foreign_symlink", "make_dir", "make_dirs", "make_temp_dir", "new_private_file",
           "open_new", "open_store_file", "open_subdirs", "others_can_write", "remove_empty",
           "remove_file", "remove_subtree", "remove_tree", "replace", "safe_component",
           "temp_dir", "unsafe_reason", "write_file", "write_files", "write_sysctl"]
