"""The settings reference (docs/reference/settings.md), rendered from the declarations.

Every setting is declared once, with :func:`srperf.config.settings.setting` (default,
doc, unit, JSON Schema); this module walks those declarations from the blocks of the
experiment, testbed and forwarder files (:data:`ROOTS`) and renders one Markdown table
per block, so the reference cannot drift from the code.  ``scripts/docs_reference.py``
writes the page; ``tests/test_settings_reference.py`` fails when the committed page is
not what this renders, or when a setting has no doc.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from srperf.config.settings import Settings


class UndocumentedSetting(ValueError):
    """A setting declared without its doc (the reference would have a hole)."""

    def __init__(self, owner: type, key: str) -> None:
        super().__init__(f"{owner.__module__}.{owner.__qualname__}.{key}: the setting has no "
                         "doc; declare it with setting(default, 'what it means', ...)")
        self.owner, self.key = owner, key


@dataclass(frozen=True)
class Root:
    """One block of a file whose keys are declared settings."""

    file: str
    prefix: str
    load: Callable[[], type[Settings]]
    note: str = ""


def _forwarder_options(name: str) -> Callable[[], type[Settings]]:
    def load() -> type[Settings]:
        from srperf.forwarders import registry

        return registry.get(name).options
    return load


def _driver_options(name: str) -> Callable[[], type[Settings]]:
    def load() -> type[Settings]:
        from srperf.traffic.generators import options_class

        cls = options_class(name)
        assert cls is not None, name
        return cls
    return load


def _model(attr: str, module: str = "srperf.config.model") -> Callable[[], type[Settings]]:
    def load() -> type[Settings]:
        import importlib

        return getattr(importlib.import_module(module), attr)
    return load


ROOTS: tuple[Root, ...] = (
    Root("experiment", "search", _model("SearchConfig")),
    Root("experiment", "latency", _model("LatencyConfig")),
    Root("experiment", "profile", _model("ProfileConfig")),
    Root("experiment", "traffic", _model("TrafficConfig")),
    Root("experiment", "pm", _model("PmConfig", "srperf.config.pm"), "kind: pdr, forwarder: linux"),
    Root("experiment", "ab", _model("AbBlock", "srperf.config.ab"), "srperf ab FILE"),
    Root("experiment", "goodput", _model("GoodputConfig", "srperf.config.stateful"),
         "kind: goodput"),
    Root("experiment", "http", _model("HttpConfig", "srperf.config.stateful"), "kind: http"),
    Root("experiment", "options", _forwarder_options("ebpf"), "forwarder: ebpf"),
    Root("experiment", "options", _forwarder_options("vpp"), "forwarder: vpp"),
    Root("experiment", "options", _forwarder_options("srnk"), "forwarder: srnk"),
    Root("experiment", "options", _forwarder_options("pipes"), "forwarder: pipes"),
    Root("experiment", "options", _forwarder_options("xdp"), "forwarder: xdp"),
    Root("testbed", "tester.options", _driver_options("linux"), "tester.driver: linux"),
    Root("testbed", "tester.options", _driver_options("trex"), "tester.driver: trex"),
    Root("testbed", "provision", _model("ProvisionSettings", "srperf.config.provision")),
)
"""The blocks the reference covers, in page order."""


def _nested(owner: type[Settings], f: dataclasses.Field) -> type[Settings] | None:
    return owner._nested(f)


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
    else:
        return "(required)"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    if value is None:
        return "none"
    return f"`{json.dumps(value, default=str)}`"


def _allowed(schema: dict[str, Any]) -> str:
    parts = []
    if "enum" in schema:
        parts.append(", ".join(f"`{json.dumps(v)}`" for v in schema["enum"]))
    kind = schema.get("type")
    if kind and "enum" not in schema:
        parts.append(" or ".join(kind) if isinstance(kind, list) else str(kind))
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None or hi is not None:
        parts.append(f"{'' if lo is None else lo} .. {'' if hi is None else hi}")
    if "pattern" in schema:
        parts.append(f"pattern `{schema['pattern']}`")
    for alt in ("anyOf", "oneOf"):
        if alt in schema:
            parts.append(" or ".join(_allowed(s) or "any" for s in schema[alt]))
    return ", ".join(p for p in parts if p)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def rows(owner: type[Settings], prefix: str) -> Iterator[tuple[str, str, str, str, str]]:
    """(key, default, unit, doc, allowed) of every setting of ``owner``, nested blocks
    walked; :class:`UndocumentedSetting` for a setting without a doc."""
    for f in dataclasses.fields(owner):  # type: ignore[arg-type]
        if not f.init or f.name.startswith("_"):
            continue
        doc = (f.metadata.get("doc") or "").strip()
        if not doc:
            raise UndocumentedSetting(owner, f.name)
        key = f"{prefix}.{f.name}"
        nested = _nested(owner, f)
        if nested is not None:
            yield key, "(block)", "", doc, ""
            yield from rows(nested, key)
            continue
        schema = dict(f.metadata.get("schema") or {})
        yield key, _default(f), f.metadata.get("unit", ""), doc, _allowed(schema)


def covered() -> set[type[Settings]]:
    """Every Settings class the reference renders (roots and their nested blocks)."""
    seen: set[type[Settings]] = set()

    def walk(cls: type[Settings]) -> None:
        seen.add(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            nested = _nested(cls, f)
            if nested is not None:
                walk(nested)
    for root in ROOTS:
        walk(root.load())
    return seen


HEADER = """# Settings reference

<!-- Generated by scripts/docs_reference.py from each setting's declaration
     (srperf.config.settings.setting); do not edit: tests/test_settings_reference.py
     fails when this page and the code disagree. -->

Every key below is declared once in the code, with its default, unit, documentation and
schema; the JSON Schema `srperf validate` checks, the loader and `--set KEY=VALUE` derive
from the same declaration. Keys of an experiment file can be set on the command line:
`srperf run quick --set search.trial_duration_s=2`. The keys outside these blocks (`name`,
`forwarder`, `behaviors`, `packet_sizes`, the testbed's `tester`, `sut` and `addressing`)
and the limits every value obeys are in [Experiment and testbed files](../experiments.md).
"""


def render() -> str:
    """The whole reference page."""
    out = [HEADER]
    for root in ROOTS:
        cls = root.load()
        title = f"`{root.prefix}` ({root.file}" + (f", {root.note})" if root.note else ")")
        out.append(f"\n## {title}\n")
        summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        out.append(f"{summary} (`{cls.__module__}.{cls.__qualname__}`)\n".lstrip())
        table = list(rows(cls, root.prefix))
        if not table:
            out.append("No settings.\n")
            continue
        out.append("| key | default | unit | meaning | allowed |")
        out.append("|---|---|---|---|---|")
        for key, default, unit, doc_text, allowed in table:
            out.append(f"| `{key}` | {_cell(default)} | {_cell(unit)} | {_cell(doc_text)} "
                       f"| {_cell(allowed)} |")
    return "\n".join(out).rstrip("\n") + "\n"


SCHEMA_HEADER = """# Results store schema

<!-- Generated by scripts/docs_reference.py from srperf/results/schema.py; do not edit:
     tests/test_settings_reference.py fails when this page and the code disagree. -->

The tables of the results store (SQLite `RESULTS/srperf.sqlite`, or PostgreSQL with `--db`),
as `srperf/results/schema.py` declares them; each table's text is the comment beside its
declaration. How the store is used: [The results store](../results-store.md).
"""


def _table_docs() -> dict[str, str]:
    """Table name -> the string literal that follows its declaration in schema.py."""
    import ast
    import inspect

    from srperf.results import schema

    tree = ast.parse(inspect.getsource(schema))
    docs: dict[str, str] = {}
    body = tree.body
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str) and node.value.args
                and isinstance(node.value.args[0], ast.Constant)):
            docs[str(node.value.args[0].value)] = " ".join(after.value.value.split())
    return docs


def render_schema() -> str:
    """The results store's tables and columns, in declaration order."""
    from srperf.results import schema

    docs = _table_docs()
    out = [SCHEMA_HEADER]
    for table in schema.metadata.sorted_tables:
        out.append(f"\n## `{table.name}`\n")
        if table.name in docs:
            out.append(docs[table.name] + "\n")
        out.append("| column | type | key |")
        out.append("|---|---|---|")
        for col in table.columns:
            key = "primary" if col.primary_key else ("indexed" if col.index else "")
            out.append(f"| `{col.name}` | {col.type} | {key} |")
    return "\n".join(out).rstrip("\n") + "\n"
