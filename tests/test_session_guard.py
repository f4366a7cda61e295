"""The session guard of tests/conftest.py: which sessions it holds to "no namespace left"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import conftest

NETNS_INI = "[pytest]\nmarkers =\n    netns: namespaces\n"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _report(when: str, keywords: dict[str, int]) -> pytest.TestReport:
    return pytest.TestReport("t.py::x", ("t.py", 0, "x"), keywords, "passed", None, when)


def test_only_a_session_that_ran_a_netns_test_is_checked(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(conftest, "_RAN_NETNS", [False])
    conftest.pytest_runtest_logreport(_report("call", {"x": 1, "fast": 1}))
    conftest.pytest_runtest_logreport(_report("setup", {"x": 1, "netns": 1}))
    assert not conftest._may_make_namespaces(pytest.Config)   # type: ignore[arg-type]
    conftest.pytest_runtest_logreport(_report("call", {"x": 1, "netns": 1}))
    assert conftest._may_make_namespaces(pytest.Config)   # type: ignore[arg-type]


@pytest.mark.netns
@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_a_netns_session_is_still_told_of_a_namespace_it_left(tmp_path: Path,
                                                              workers: list[str]) -> None:
    """A session of ours that leaks ``u5s-left`` fails, naming it, in one process and
    under xdist (whose controller sees the marks only in the reports); the guard
    itself deletes nothing, so the test removes it after."""
    here = Path(__file__).parent
    (tmp_path / "pytest.ini").write_text(NETNS_INI)
    (tmp_path / "conftest.py").write_text((here / "conftest.py").read_text())
    (tmp_path / "test_leak.py").write_text(
        "import subprocess\nimport pytest\n\n\n@pytest.mark.netns\ndef test_leak():\n"
        "    subprocess.run(['ip', 'netns', 'add', 'u5s-left'], check=True)\n")
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *workers, str(tmp_path)], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={"PYTHONPATH": str(here), "PATH": PATH})
        assert "u5s-left'" in proc.stdout and "left network namespaces behind" in proc.stdout, \
            proc.stdout
    finally:
        subprocess.run(["ip", "netns", "delete", "u5s-left"], capture_output=True)
