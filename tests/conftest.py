"""Shared fixtures: root checks and a guard that the suite leaves no namespace behind."""

from __future__ import annotations

import os
import subprocess

import pytest

from netns_guard import forbid_unmarked_traffic  # noqa: F401 - autouse: the fast tier's rule

# Namespace prefixes the suite's tests use (one per test area).
TEST_PREFIXES = ("srpt", "tgen", "lxc", "ebp", "srpcli", "srpsig", "sshq", "srpssh", "cfgc",
                 "srpvp", "srppv", "srpbd", "srphd", "h16a", "h16b", "h17c", "h17e", "htrex",
                 "hvary", "s27", "s23", "s24b", "s25", "s22a", "s24a", "s26", "s22b", "s22d",
                 "p8v", "p8t", "p8d", "p8p", "p8c", "p8s", "p8f", "p8g", "q3b", "h38", "q3a",
                 "k34", "s35", "t36", "l37", "k4a")


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces)")
    for item in items:
        if "netns" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def no_namespace_left_behind():
    """After the whole suite, no namespace of ours may remain."""
    before = _namespaces() if os.geteuid() == 0 else set()
    yield
    if os.geteuid() != 0:
        return
    # Only report: another pytest session on the same host may own a namespace
    # that appeared meanwhile, so this guard never deletes anything itself.
    left = sorted(n for n in _namespaces() - before if n.startswith(TEST_PREFIXES))
    assert not left, f"tests left network namespaces behind: {left}"


def _workdirs() -> set[str]:
    """Private work directories of transports (``mktemp -d /tmp/srperf.XXXXXXXXXX``)."""
    import glob

    return set(glob.glob("/tmp/srperf.??????????"))


@pytest.fixture(scope="session", autouse=True)
def no_workdir_left_behind():
    """After the whole suite, no transport's private work directory may remain."""
    before = _workdirs()
    yield
    left = sorted(_workdirs() - before)
    assert not left, f"tests left transport work directories behind: {left}"
