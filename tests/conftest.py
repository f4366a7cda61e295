"""Shared hooks: root checks and a guard that the suite leaves no namespace or work
directory behind (checked once per session, by the controller under ``pytest -n``)."""

from __future__ import annotations

import os
import subprocess

import pytest

from netns_guard import forbid_unmarked_traffic  # noqa: F401 - autouse: the fast tier's rule

# Namespace prefixes the suite's tests use (one per test area).
TEST_PREFIXES = ("srpt", "tgen", "lxc", "ebp", "srpcli", "srpsig", "sshq", "srpssh", "cfgc",
                 "srpvp", "srppv", "srpbd", "srphd", "h16a", "h16b", "h17c", "h17e", "htrex",
                 "hvary", "s27", "s23", "s24b", "s25", "s22a", "s24a", "s26", "s22b", "s22d", "p8v",
                 "p8t", "p8d", "p8p", "p8c", "p8s", "p8f", "p8g", "q3b", "h38", "q3a", "k34", "s35",
                 "t36", "l37", "s5b", "k4b", "k4a", "t6b", "x45", "g43", "c4c", "x4b", "p4p", "m4k",
                 "m4x", "g4f", "g4p", "a4b", "a5u", "t5e", "s5h", "x5s", "k5t", "u5s", "l5n")


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


BESIDE_TRAFFIC = frozenset({"test_kernel_target.py", "test_kernel_provision_guest.py",
                            "test_cfg_contract.py", "test_provision.py",
                            "test_ssh_prepare.py", "test_ssh_endpoints.py",
                            "test_s5b_ssh_kill.py"})
"""``netns`` test files that start no packet generator (srgen, TRex) and assert no
rate: they configure, provision or boot a guest, or run iperf3 and wrk between SSH
hosts of their own, so they may run beside the tests that do."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``pytest -n 2 --dist loadscope -m netns`` (``make test``'s second pass): two scopes,
    ``traffic`` (every test that starts a traffic generator, one at a time on one
    worker: two generators would share CPU 0 at SCHED_FIFO and starve each other)
    and ``beside`` (:data:`BESIDE_TRAFFIC`, on the other worker).  xdist's own
    ``loadgroup`` cannot do this here: its ``xdist_group`` marks are lost under
    pytest 9 (it renames ``item._nodeid``, which pytest 9 no longer reads)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TrafficOrBeside(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return side_of(nodeid)

    return TrafficOrBeside(config, log)


def side_of(nodeid: str) -> str:
    """``beside`` for a test of :data:`BESIDE_TRAFFIC`, else ``traffic``."""
    return "beside" if nodeid.split("::")[0].rsplit("/", 1)[-1] in BESIDE_TRAFFIC \
        else "traffic"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces)")
    for item in items:
        if "netns" in item.keywords:
            item.add_marker(skip)


def _workdirs() -> set[str]:
    """Private work directories of transports (``mktemp -d /tmp/srperf.XXXXXXXXXX``)."""
    import glob

    return set(glob.glob("/tmp/srperf.??????????"))


def _is_xdist_worker(config: pytest.Config) -> bool:
    """True in a worker of ``pytest -n N``: the controller checks the whole session."""
    return hasattr(config, "workerinput")


_BEFORE = pytest.StashKey[tuple[set[str], set[str]]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_xdist_worker(session.config):
        return
    namespaces = _namespaces() if os.geteuid() == 0 else set()
    session.config.stash[_BEFORE] = (namespaces, _workdirs())


_RAN_NETNS: list[bool] = [False]
"""Whether this session ran a ``netns`` test (set from the test reports, which reach
xdist's controller with their marks)."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and "netns" in report.keywords:
        _RAN_NETNS[0] = True


def _may_make_namespaces(config: pytest.Config) -> bool:
    """Whether the session is held to "no new namespace of a test prefix": only if it
    ran a ``netns`` test.  Any other test cannot make one (an unmarked test that tries
    fails, tests/netns_guard.py), so a namespace appearing meanwhile is another
    session's on this shared host, not a leak of ours: the fast tier, or one file,
    failed so when a suite's ``netns`` pass had ``cfgc-*`` up at its end."""
    return _RAN_NETNS[0]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After the whole suite (every worker's tests), no namespace of ours and no
    transport work directory may remain: the session fails, naming them.

    Only reports: another pytest session on the same host may own a namespace that
    appeared meanwhile, so this guard never deletes anything itself.
    """
    if _is_xdist_worker(session.config) or _BEFORE not in session.config.stash:
        return
    namespaces, workdirs = session.config.stash[_BEFORE]
    problems = []
    if os.geteuid() == 0 and _may_make_namespaces(session.config):
        left = sorted(n for n in _namespaces() - namespaces if n.startswith(TEST_PREFIXES))
        if left:
            problems.append(f"tests left network namespaces behind: {left}")
    left_dirs = sorted(_workdirs() - workdirs)
    if left_dirs:
        problems.append(f"tests left transport work directories behind: {left_dirs}")
    if not problems:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        for problem in problems:
            reporter.write_line(f"ERROR: {problem}", red=True, bold=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
