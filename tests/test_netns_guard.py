"""The fast tier's guard (tests/netns_guard.py) names the commands that need the ``netns``
marker, and fails an unmarked test that starts one (a marked test may)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from netns_guard import traffic_command

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("argv", [
    ["ip", "netns", "add", "h38-x"], ["/sbin/ip", "netns", "exec", "h38-x", "true"],
    ["ip", "-n", "h38-x", "link", "add", "a", "type", "veth", "peer", "name", "b"],
    ["ip", "link", "set", "dev", "a", "xdpdrv", "obj", "p.o"],
    ["tc", "filter", "add", "dev", "a", "ingress", "bpf", "da", "obj", "p.o"],
    ["qemu-system-x86_64", "-kernel", "vmlinux"], ["nsenter", "--net=/run/netns/x"],
])
def test_traffic_commands_are_named(argv: list[str]) -> None:
    assert traffic_command(argv)


@pytest.mark.parametrize("argv", [
    ["ip", "netns", "list"], ["ip", "-j", "link", "show"], ["tc", "qdisc", "show"],
    ["gcc", "-o", "srgen", "srgen.c"], ["bash", "cfg_scripts/linux.sh", "end"], [],
])
def test_other_commands_pass(argv: list[str]) -> None:
    assert traffic_command(argv) is None


INNER = '''
import subprocess
import pytest

def test_unmarked():
    subprocess.run(["ip", "netns", "exec", "h38-no-such-ns", "true"], capture_output=True)

@pytest.mark.netns
def test_marked():
    subprocess.run(["ip", "netns", "exec", "h38-no-such-ns", "true"], capture_output=True)
'''


def test_an_unmarked_test_that_enters_a_namespace_fails(tmp_path: Path) -> None:
    """The inner command is harmless (no such namespace) should the guard miss it."""
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    netns: namespaces\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "netns_guard", str(tmp_path)], cwd=tmp_path,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": str(TESTS)},
                          capture_output=True, text=True, timeout=120)
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "creates or enters a network namespace" in proc.stdout
    assert "add pytest.mark.netns" in proc.stdout
