"""The session guard of tests/conftest.py: which sessions it holds to "no namespace left"."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conftest import _may_make_namespaces


def _config(markexpr: str | None) -> SimpleNamespace:
    return SimpleNamespace(getoption=lambda name, default=None: {"markexpr": markexpr}.get(
        name, default))


@pytest.mark.parametrize("markexpr, checked", [
    ("not netns", False), ("  not   netns ", False),   # the fast tier makes none
    ("netns", True), ("", True), (None, True), ("not slow", True),
])
def test_only_a_session_that_may_run_netns_tests_is_checked_for_namespaces(
        markexpr: str | None, checked: bool) -> None:
    assert _may_make_namespaces(_config(markexpr)) is checked
