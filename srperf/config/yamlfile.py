"""Read a YAML configuration file strictly; every problem is a ConfigError.

Strict means: the path must be a regular, readable, UTF-8 text file; a key
written twice in one mapping is refused (PyYAML keeps the last one silently);
``.inf`` and ``.nan`` are refused wherever they appear (no setting of srperf is
infinite, and jsonschema's ``number`` accepts both); the top level must be a
mapping.  Error messages quote at most a short excerpt of a value, never a whole
file (a path key may point at some unrelated large file).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from srperf.errors import ConfigError

MAX_BYTES = 4 * 1024 * 1024
"""Largest configuration file read (bytes); srperf's own are a few kilobytes."""


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key repeated within one mapping."""


def _mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)  # type: ignore[arg-type]
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "found an unhashable key", key_node.start_mark) from None
        if key in seen:
            first = seen[key].start_mark.line + 1
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {first})",
                key_node.start_mark)
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _key(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def refuse_non_finite(file: str, data: Any, path: list[Any] | None = None) -> None:
    """Raise ConfigError at the first ``.inf``/``.nan`` anywhere in ``data``."""
    path = path or []
    if isinstance(data, float) and not math.isfinite(data):
        raise ConfigError(file, _key(path), data, "must be a finite number")
    if isinstance(data, dict):
        for key, value in data.items():
            refuse_non_finite(file, value, path + [key])
    elif isinstance(data, list):
        for i, value in enumerate(data):
            refuse_non_finite(file, value, path + [i])


def parse_text(text: str, file: str) -> Any:
    """Parse YAML ``text`` strictly (duplicate keys refused); errors name ``file``."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(file, where, ConfigError.SKIP, f"not valid YAML: {problem}") from None


def read_text(path: Path) -> str:
    """The text of a configuration file; ConfigError says why it cannot be read."""
    file = str(path)
    if not path.exists():
        raise ConfigError(file, "", ConfigError.SKIP, "file not found")
    if path.is_dir():
        raise ConfigError(file, "", ConfigError.SKIP, "is a directory, not a file")
    if not path.is_file():
        raise ConfigError(file, "", ConfigError.SKIP, "not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ConfigError(file, "", ConfigError.SKIP,
                              f"{size} bytes: too large for a configuration file "
                              f"(at most {MAX_BYTES}); is it the right file?")
        raw = path.read_bytes()
    except PermissionError:
        raise ConfigError(file, "", ConfigError.SKIP, "permission denied") from None
    except OSError as exc:
        raise ConfigError(file, "", ConfigError.SKIP, f"cannot read: {exc.strerror}") from None
    if b"\0" in raw:
        raise ConfigError(file, "", ConfigError.SKIP,
                          "a binary file, not YAML text (it holds NUL bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(file, "", ConfigError.SKIP,
                          f"not UTF-8 text (byte {exc.start}): a binary file, not YAML") from None


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML file holding a mapping, strictly."""
    file = str(path)
    data = parse_text(read_text(path), file)
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}"
        raise ConfigError(file, "", ConfigError.SKIP,
                          f"the file must hold a YAML mapping (key: value lines); it is {what}")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise ConfigError(file, str(bad[0]), data[bad[0]], "keys must be text")
    refuse_non_finite(file, data)
    return data


__all__ = ["StrictLoader", "parse_text", "read_mapping", "read_text", "refuse_non_finite"]
