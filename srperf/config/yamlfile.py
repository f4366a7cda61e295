"""Read a YAML configuration file strictly; every problem is a ConfigError.

Strict means: the path must be a regular, readable, UTF-8 text file of at most
:data:`MAX_BYTES`; a key written twice in one mapping is refused (PyYAML keeps
the last one silently), while a key that overrides one brought in by a YAML
merge key (``<<: *base``) is accepted, as YAML means it;
``.inf`` and ``.nan`` are refused wherever they appear (no setting of srperf is
infinite, and jsonschema's ``number`` accepts both); the top level must be a
mapping.  Limits keep a hostile or broken file from exhausting the machine:
nesting at most :data:`MAX_DEPTH` collections deep, and at most :data:`MAX_NODES`
nodes once every alias is expanded (counted while the document is composed, so a
"billion laughs" file is refused after reading it once, before anything expands
it).  Every loader of srperf (experiments, testbeds, nightly suites, ``--set``
values) goes through :func:`parse_text`.  Error messages quote at most a short excerpt of a value, never a whole
file (a path key may point at some unrelated large file).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from srperf.config.numbers import refuse_non_finite  # the one numeric gate (re-exported)
from srperf.errors import ConfigError

MAX_BYTES = 4 * 1024 * 1024
"""Largest configuration file read (bytes); srperf's own are a few kilobytes."""
MAX_DEPTH = 32
"""Deepest nesting of mappings and lists in a file (srperf's own go 5 deep)."""
MAX_NODES = 100_000
"""Most YAML nodes in a file with every alias expanded (srperf's own have a few hundred)."""

_MERGE_TAG = "tag:yaml.org,2002:merge"


class LimitExceeded(yaml.YAMLError):
    """A file beyond :data:`MAX_DEPTH` or :data:`MAX_NODES` (or a recursive alias)."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key repeated within one mapping and a document
    deeper than :data:`MAX_DEPTH` or larger than :data:`MAX_NODES` once expanded."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded = 0          # nodes so far, each alias counted as its whole tree
        self._sizes: dict[int, int] = {}   # id(node) -> its expanded size, once complete

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            size = self._sizes.get(id(node))
            if size is None:   # the alias sits inside the node it names
                raise LimitExceeded("a recursive alias (a node that contains itself)", mark)
            self._count(size, mark)
            return node
        mark = self.peek_event().start_mark
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise LimitExceeded(f"nested more than {MAX_DEPTH} levels deep (limit MAX_DEPTH "
                                f"= {MAX_DEPTH})", mark)
        before = self._expanded
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._count(1, mark)
        self._sizes[id(node)] = self._expanded - before
        return node

    def _count(self, nodes: int, mark: Any) -> None:
        self._expanded += nodes
        if self._expanded > MAX_NODES:
            raise LimitExceeded(f"more than {MAX_NODES} nodes with its aliases expanded "
                                f"(limit MAX_NODES = {MAX_NODES}; an alias bomb?)", mark)


def _mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    _refuse_duplicates(loader, node, deep)   # the node's own keys, before merging
    loader.flatten_mapping(node)             # merged keys first: the node's own win
    return loader.construct_mapping(node, deep=deep)


def _refuse_duplicates(loader: StrictLoader, node: yaml.MappingNode, deep: bool) -> None:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
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


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
# YAML 1.2 floats: PyYAML (YAML 1.1) reads 1e9 or 1E-3 (no dot) as text.
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+\Z"),
    list("-+0123456789"))


def parse_text(text: str, file: str) -> Any:
    """Parse YAML ``text`` strictly (duplicate keys refused); errors name ``file``."""
    try:
        data = yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if isinstance(exc, LimitExceeded):
            raise ConfigError(file, where, ConfigError.SKIP, f"refused: {problem}") from None
        raise ConfigError(file, where, ConfigError.SKIP, f"not valid YAML: {problem}") from None
    from srperf.safety import redact

    redact.scan(data)   # its passwords and proxy commands, before any message quotes them
    return data


def read_text(path: Path) -> str:
    """The text of a configuration file; ConfigError says why it cannot be read."""
    file = str(path)
    if not path.exists():
        raise ConfigError(file, "", ConfigError.SKIP, "file not found")
    if path.is_dir():
        raise ConfigError(file, "", ConfigError.SKIP, "is a directory, not a file")
    if not path.is_file():
        raise ConfigError(file, "", ConfigError.SKIP, "not a regular file")
    from srperf.safety.read_gate import read_config
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ConfigError(file, "", ConfigError.SKIP,
                              f"{size} bytes: too large for a configuration file "
                              f"(at most {MAX_BYTES}); is it the right file?")
        raw = read_config(path, file)   # srperf acts on it: root's or the user's, whole path
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


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "LimitExceeded", "StrictLoader", "parse_text", "read_mapping", "read_text", "refuse_non_finite"]
