"""The Transport interface on this host and in a network namespace, and the CFG
manager through it.  SSH against a real sshd: tests/test_ssh_transport.py."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from srperf.config.model import TestbedConfig
from srperf.forwarders.base import Forwarder
from srperf.testbeds.sut import SutControl
from srperf.errors import CfgError, TransportError, UnsupportedBehavior
from srperf.util.netns import CommandFailed
from srperf.transports.base import Transport
from srperf.transports.netns import NetnsTransport

FAKE_CFG = """#!/usr/bin/env bash
set -euo pipefail
case "$1" in
  ok) echo "${SRPERF_GREETING}" > "${SRPERF_OUT}" ;;
  unsupported) echo "unsupported: Error: kernel says no" >&2; exit 3 ;;
  clean) rm -f "${SRPERF_OUT}" ;;
  *) echo "boom" >&2; exit 1 ;;
esac
"""


def exercise_cfg(transport: Transport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CFG manager's contract (exit 0 / 3 / other) through ``transport``."""
    script = tmp_path / "fake.sh"
    script.write_text(FAKE_CFG)
    monkeypatch.setattr("srperf.resources.cfg_script", lambda fwd: script)
    out = tmp_path / "out.txt"
    class FakeForwarder(Forwarder):
        name, script = "fake", "fake.sh"

    cfg = SutControl(FakeForwarder(), transport, TestbedConfig(name="t"))
    cfg.install()
    cfg.env = {"SRPERF_GREETING": "hello world", "SRPERF_OUT": str(out)}
    cfg.apply("ok", "behavior_ok")
    assert out.read_text().strip() == "hello world"
    with pytest.raises(UnsupportedBehavior) as info:
        cfg.apply("unsupported", "end_dt4")
    assert info.value.reason == "Error: kernel says no"
    with pytest.raises(CfgError, match="boom"):
        cfg.apply("broken", "x")
    cfg.clean()
    assert not out.exists()


def exercise_files(transport: Transport, tmp_path: Path, tmp_base: str = "/tmp") -> str:
    """workdir is private (0700, random name under tmp_base); push keeps modes;
    push_tree copies regular files only.  Returns the workdir (this host's file
    system is the node's in these tests)."""
    work = transport.workdir()
    assert work == transport.workdir()  # created once
    assert work.startswith(tmp_base.rstrip("/") + "/srperf.") and len(Path(work).name) == 17
    assert stat.S_IMODE(os.stat(work).st_mode) == 0o700
    local = tmp_path / "tool.sh"
    local.write_text("#!/bin/sh\necho tool ran\n")
    local.chmod(0o750)
    remote = transport.push(local)
    assert remote == f"{work}/tool.sh"
    assert stat.S_IMODE(os.stat(remote).st_mode) == 0o750
    assert transport.check([remote]).stdout == "tool ran\n"
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.c").write_text("int a;\n")
    (tree / "Makefile").write_text("all:\n")
    (tree / "sub" / "skipped").write_text("x")
    remote_dir = transport.push_tree(tree, "src")
    assert remote_dir == f"{work}/src"
    assert sorted(os.listdir(remote_dir)) == ["Makefile", "a.c"]
    assert Path(remote_dir, "a.c").read_text() == "int a;\n"
    with pytest.raises(ValueError):
        transport.push_tree(tree, "../escape")
    return work


def test_this_host_transport(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with NetnsTransport(None, tmp_base=str(tmp_path)) as transport:
        assert transport.where == "this host" and transport.machine() is transport
        result = transport.run(["sh", "-c", 'cat; printf "%s" "$X" >&2; exit 4'],
                               env={"X": "a b'c"}, input_text="from stdin\n")
        assert (result.returncode, result.stdout, result.stderr) == (4, "from stdin\n", "a b'c")
        assert transport.run(["no-such-command-srperf"]).returncode == 127
        with pytest.raises(CommandFailed, match="^this host: false exited 1"):
            transport.check(["false"])
        work = exercise_files(transport, tmp_path, str(tmp_path))
        exercise_cfg(transport, tmp_path, monkeypatch)
        other = NetnsTransport(None, tmp_base=str(tmp_path))
        other_work = other.workdir()
        assert other_work != work
        other.close()
        assert not Path(other_work).exists() and Path(work).exists()
    assert not Path(work).exists()
    transport.close()  # idempotent


def test_timeout_kills_the_command_and_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "late"
    transport = NetnsTransport(None)
    start = time.monotonic()
    result = transport.run(["sh", "-c", f"(sleep 2; touch {marker}) & sleep 30"], timeout=0.3)
    assert result.returncode == 124 and "timed out" in result.stderr
    assert time.monotonic() - start < 5
    time.sleep(2.5)
    assert not marker.exists(), "a child of the timed-out command kept running"


@pytest.mark.netns
def test_netns_transport_runs_in_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = f"srpt-tr{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        transport = NetnsTransport(ns)
        assert transport.where == f"netns {ns}" and transport.machine().where == "this host"
        result = transport.run(["ip", "-o", "link", "show"])
        assert result.ok and "lo" in result.stdout and result.stdout.count("\n") == 1
        result = transport.run(["sh", "-c", "echo err >&2; exit 7"])
        assert (result.returncode, result.stderr) == (7, "err\n")
        assert transport.run(["sleep", "5"], timeout=0.3).returncode == 124
        assert transport.run(["cat"], input_text="x\n").stdout == "x\n"
        with pytest.raises(CommandFailed, match=f"^netns {ns}: "):
            transport.check(["false"])
        work = exercise_files(transport, tmp_path)
        exercise_cfg(transport, tmp_path, monkeypatch)
        transport.close()
        assert not Path(work).exists()
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


@pytest.mark.netns
def test_missing_namespace_is_a_transport_error() -> None:
    transport = NetnsTransport(f"srpt-missing{os.getpid()}")
    with pytest.raises(TransportError, match=r"^netns srpt-missing\d+: Cannot open network"):
        transport.run(["true"])
    transport.close()
