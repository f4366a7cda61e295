"""The generated reference pages (docs/reference/) are what the code declares (issue 47).

``srperf.config.reference`` renders docs/reference/settings.md from each setting's one
declaration and docs/reference/results-schema.md from the store's schema; after a change
``.venv/bin/python scripts/docs_reference.py`` writes them again.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

from srperf.config import reference
from srperf.config.settings import Settings, setting

ROOT = Path(__file__).resolve().parents[1]
FIX = "run .venv/bin/python scripts/docs_reference.py and commit the page"


def test_the_settings_page_is_up_to_date() -> None:
    page = ROOT / "docs" / "reference" / "settings.md"
    assert page.read_text() == reference.render(), f"{page} differs from the code: {FIX}"


def test_the_schema_page_is_up_to_date() -> None:
    page = ROOT / "docs" / "reference" / "results-schema.md"
    assert page.read_text() == reference.render_schema(), f"{page} differs from the code: {FIX}"


def test_a_setting_is_in_the_page() -> None:
    """A known setting, with its default and unit, as its declaration says."""
    text = reference.render()
    assert "| `search.trial_duration_s` | `1.0` | s | duration of a final trial |" in text
    assert "## `options` (experiment, forwarder: ebpf)" in text
    assert "`options.proxy.age_s`" in text      # a nested block is walked


def _all_settings_classes() -> set[type[Settings]]:
    for name in ("srperf.config.model", "srperf.config.stateful", "srperf.config.provision",
                 "srperf.forwarders.registry", "srperf.drivers.linux", "srperf.drivers.trex"):
        importlib.import_module(name)
    from srperf.forwarders import registry

    for name in registry.names():
        registry.get(name)
    found: set[type[Settings]] = set()
    todo = list(Settings.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in found and cls.__module__.startswith("srperf"):
            found.add(cls)
            todo.extend(cls.__subclasses__())
    return {c for c in found if dataclasses.is_dataclass(c) and dataclasses.fields(c)}


def test_every_settings_block_is_covered() -> None:
    """A new block of settings must be added to reference.ROOTS (or nested in one)."""
    missing = {f"{c.__module__}.{c.__qualname__}" for c in _all_settings_classes()} - \
        {f"{c.__module__}.{c.__qualname__}" for c in reference.covered()}
    assert not missing, f"settings blocks not in the reference (srperf.config.reference.ROOTS): " \
        f"{sorted(missing)}"


def test_every_setting_has_a_doc() -> None:
    for cls in reference.covered():
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            assert (f.metadata.get("doc") or "").strip(), \
                f"{cls.__module__}.{cls.__qualname__}.{f.name} has no doc"


def test_a_setting_without_a_doc_fails() -> None:
    """Declared with an empty doc, the reference refuses to render it, naming it."""

    @dataclasses.dataclass(frozen=True)
    class Block(Settings):
        """A block with one undocumented setting."""

        fine: int = setting(1, "a documented one")
        bare: int = setting(2, "")

    with pytest.raises(reference.UndocumentedSetting, match=r"Block\.bare: the setting has no doc"):
        list(reference.rows(Block, "block"))
