"""Where a results store lives: every spelling of ``--db`` (a file path,
``sqlite:///PATH``, ``postgresql://...``) read in one place.

An SQLite store, however it is written, is opened through
:func:`srperf.safety.safe_paths.open_store_file` (checked before anything touches it, made
0600); a URL that is not understood is refused with a message naming the option,
never an internal error.  Messages show a URL without its password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from srperf.errors import ConfigError

SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite")
POSTGRES_DRIVERS = {"postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg",
                    "postgresql+psycopg": "postgresql+psycopg"}
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def shown(location: str | Path) -> str:
    """``location`` for a message: a URL's password replaced by ``***``."""
    return _PASSWORD.sub(r"\1***@", str(location))


def is_url(location: str | Path) -> bool:
    """True when ``location`` is a database URL rather than an SQLite file path."""
    return "://" in str(location)


@dataclass(frozen=True)
class StoreLocation:
    """A store's place: an SQLite file (``path``) or a server ``url``."""

    path: Path | None
    url: str


def resolve(location: str | Path, what: str = "--db",
            file: str = "<command line>") -> StoreLocation:
    """The store ``location`` names; ConfigError (exit 2) naming ``what`` for a URL of
    an unknown scheme, a bad port, or an SQLite URL with options."""
    text = str(location)
    if not text.strip():
        raise ConfigError(file, what, text, "empty: an SQLite file path or a database URL")
    if not is_url(text):
        return StoreLocation(Path(text), "")
    import sqlalchemy as sa   # a URL only: ``srperf runs`` on a file does without

    try:
        url = sa.engine.make_url(text)
    except (ValueError, sa.exc.ArgumentError) as exc:
        why = "bad port: not a number" if "int()" in str(exc) else f"not a database URL: {exc}"
        raise ConfigError(file, what, shown(text), why) from None
    driver = url.drivername
    if driver in SQLITE_DRIVERS:
        if url.query or url.host or url.username:
            raise ConfigError(file, what, shown(text), "an SQLite URL is sqlite:///PATH "
                              "(relative) or sqlite:////ABSOLUTE/PATH, without host or "
                              "options")
        if not url.database or url.database == ":memory:":
            raise ConfigError(file, what, shown(text), "an in-memory store keeps nothing; "
                              "name a file")
        return StoreLocation(Path(url.database), "")
    if driver not in POSTGRES_DRIVERS:
        raise ConfigError(file, what, shown(text), f"unknown URL scheme {driver!r}: give an "
                          "SQLite file path, sqlite:///PATH or postgresql://USER@HOST/DB")
    try:
        url.port   # parsed on access in some SQLAlchemy versions
    except ValueError as exc:
        raise ConfigError(file, what, shown(text), f"bad port: {exc}") from None
    return StoreLocation(None, url.set(drivername=POSTGRES_DRIVERS[driver])
                         .render_as_string(hide_password=False))


__all__ = ["StoreLocation", "is_url", "resolve", "shown"]
