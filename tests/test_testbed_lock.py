"""One run per testbed: the lock, its holder, stale locks, and testbeds srperf did not make.

The holder is a real second process (a child python that takes the lock and
sleeps, or a real ``srperf run``); a stale lock is made by ``kill -9`` of it.
Lock files live in /run/srperf (root's); every test checks none is left.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from srperf.cli.entry import main
from srperf.config.loader import load_experiment, load_testbed
from srperf.config.model import TestbedConfig
from srperf.util.netns import netns_names
from srperf.measure.orchestrator import Orchestrator
from srperf.testbeds.lock import LOCK_DIR, Holder, TestbedBusy
from srperf.testbeds.virtual import VirtualTestbed

netns = pytest.mark.netns

PREFIX = "h16b"
HOLDER = """
import sys, time
from srperf.config.model import TestbedConfig
from srperf.testbeds.virtual import VirtualTestbed
tb = VirtualTestbed(TestbedConfig(name="holder", prefix=sys.argv[1]))
tb.claim("lock holder of a test", run_id="run-of-the-holder")
print("ready", flush=True)
time.sleep(600)
"""
CHILD = "import sys; from srperf.cli.entry import main; sys.exit(main(sys.argv[1:]))"


def _lock_files() -> list[str]:
    return sorted(p.name for p in Path(LOCK_DIR).glob(f"virtual-{PREFIX}.*"))


def _ours() -> list[str]:
    return [n for n in netns_names() if n.startswith(f"{PREFIX}-")]


@pytest.mark.parametrize("name", ["_HOLD", "_PROBE", "_END_HOLDER"])
def test_lock_shell_snippets_pass_shellcheck(name: str) -> None:
    import shutil

    from srperf.testbeds import lock

    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    proc = subprocess.run(["shellcheck", "-s", "bash", "-"], capture_output=True, text=True,
                          input="#!/usr/bin/env bash\n" + getattr(lock, name))
    assert proc.returncode == 0, proc.stdout


@pytest.fixture
def clean() -> Iterator[None]:
    """Nothing of this test's testbed before; removed (and checked gone) after."""
    yield
    VirtualTestbed(TestbedConfig(name="cleanup", prefix=PREFIX)).down()
    for name in _lock_files():
        if name.endswith(".testbed.json"):
            continue
        pytest.fail(f"lock file left behind: {name}")
    assert not _ours()


@pytest.fixture
def holder(clean: None) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the testbed's lock (killed by PID at the end)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, PREFIX], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        time.sleep(0.2)  # its lock process sees end-of-file and ends
        tb = VirtualTestbed(TestbedConfig(name="cleanup", prefix=PREFIX))
        if tb.claim("test cleanup"):  # takes a stale lock over, then removes its files
            tb.unclaim()


def _files(tmp_path: Path, **addressing: object) -> tuple[Path, Path]:
    exp = {"name": "lock", "forwarder": "linux", "behaviors": ["ipv6"],
           "search": {"algorithm": "bisect", "trial_duration_s": 0.2, "accuracy": "10%",
                      "min_rate": "5%", "max_rate": "20%"}}
    tb: dict[str, object] = {"name": "locktest", "kind": "virtual", "prefix": PREFIX,
                             "tester": {"line_rate_pps": 300000}}
    if addressing:
        tb["addressing"] = addressing
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    (tmp_path / "tb.yaml").write_text(yaml.safe_dump(tb))
    return tmp_path / "exp.yaml", tmp_path / "tb.yaml"


@netns
def test_second_run_and_testbed_down_are_refused_naming_the_holder(
        holder: subprocess.Popen[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    exp, tb = _files(tmp_path)
    for argv in (["testbed", "down", str(tb)], ["testbed", "up", str(tb)],
                 ["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"srperf pid {holder.pid} on " in err and "run-of-the-holder" in err, err
        assert str(tb) in err and "Traceback" not in err
        assert err.startswith("srperf: testbed busy: "), err
    assert not (tmp_path / "r" / "srperf.sqlite").exists()  # refused before any run row
    assert not _ours()  # nothing brought up
    assert main(["testbed", "status", str(tb)]) == 0
    assert f"locked by srperf pid {holder.pid}" in capsys.readouterr().out
    with pytest.raises(TestbedBusy, match="run-of-the-holder"):
        Orchestrator(load_experiment(exp), load_testbed(tb), tmp_path / "r").run()


@netns
def test_stale_lock_of_a_killed_holder_is_taken_over_with_a_warning(
        holder: subprocess.Popen[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    _, tb = _files(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    time.sleep(0.2)
    assert main(["testbed", "status", str(tb)]) == 0
    out = capsys.readouterr().out
    assert f"free (stale lock of srperf pid {holder.pid}" in out, out
    with caplog.at_level(logging.WARNING, logger="srperf.testbeds.lock"):
        assert main(["testbed", "up", str(tb)]) == 0
    assert f"took over the stale lock of srperf pid {holder.pid}" in caplog.text
    assert _lock_files() == [f"virtual-{PREFIX}.testbed.json"]  # released: lock files gone
    assert main(["testbed", "down", str(tb)]) == 0
    assert _lock_files() == [] and not _ours()


@contextmanager
def _run_past_its_first_search(exp: Path, tb: Path,
                               tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """``srperf run`` in a child process, returned once its first search has ended
    (at most 120 s); killed afterwards if the test left it running."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, "run", str(exp), "--testbed", str(tb),
                             "--results", str(tmp_path / "r"), "--repetitions", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            if line.startswith("ipv6 size") or time.monotonic() > deadline:
                break
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@netns
def test_a_run_killed_with_sigkill_leaves_a_lock_the_next_command_takes_over(
        clean: None, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    exp, tb = _files(tmp_path)
    with _run_past_its_first_search(exp, tb, tmp_path) as proc:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    time.sleep(0.2)
    assert sorted(_ours()) == [f"{PREFIX}-sut", f"{PREFIX}-tester"]  # kill -9: left up
    holder = Holder.parse((Path(LOCK_DIR) / f"virtual-{PREFIX}.json").read_text())
    assert holder is not None and holder.pid == proc.pid and holder.run_id
    assert holder.workdirs and all(Path(d).is_dir() for d in holder.workdirs)
    with caplog.at_level(logging.WARNING, logger="srperf.testbeds.lock"):
        assert main(["testbed", "down", str(tb)]) == 0
    assert f"took over the stale lock of srperf pid {proc.pid}" in caplog.text
    assert "srperf run lock" in caplog.text  # the holder file named the run
    assert not any(Path(d).exists() for d in holder.workdirs)  # its CFG scripts went too
    assert not _ours() and _lock_files() == []


@netns
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_by_a_signal_releases_the_lock(clean: None, tmp_path: Path,
                                                     signum: int) -> None:
    exp, tb = _files(tmp_path)
    with _run_past_its_first_search(exp, tb, tmp_path) as proc:
        assert sorted(p.name for p in Path(LOCK_DIR).glob(f"virtual-{PREFIX}.*")) == [
            f"virtual-{PREFIX}.json", f"virtual-{PREFIX}.lock", f"virtual-{PREFIX}.testbed.json"]
        proc.send_signal(signum)
        assert proc.wait(timeout=60) in (130, 143)
    assert _lock_files() == [] and not _ours()  # released, and the testbed it made removed


@netns
def test_testbed_made_with_other_settings_or_not_by_srperf_is_refused(
        clean: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp, tb = _files(tmp_path)
    assert main(["testbed", "up", str(tb)]) == 0
    other = tmp_path / "other"
    other.mkdir()
    exp2, tb2 = _files(other, link_mtu=9000, tunsrc="fd00:2::9")
    capsys.readouterr()
    for argv in (["testbed", "up", str(tb2)],
                 ["run", str(exp2), "--testbed", str(tb2), "--results", str(other / "r")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{tb2}: addressing.link_mtu = 9000" in err, err
        assert "made with addressing.link_mtu = 1500" in err and "addressing.tunsrc" in err
        assert f"srperf testbed down {tb2}" in err
    assert not (other / "r" / "srperf.sqlite").exists()
    assert main(["testbed", "status", str(tb2)]) == 0
    assert "made with other settings: addressing.link_mtu" in capsys.readouterr().out
    assert main(["testbed", "up", str(tb)]) == 0  # same settings: reused
    assert "was already up" in capsys.readouterr().out
    assert main(["testbed", "down", str(tb)]) == 0
    # namespaces with the prefix that srperf did not make
    subprocess.run(["ip", "netns", "add", f"{PREFIX}-sut"], check=True)
    assert main(["testbed", "up", str(tb)]) == 2
    err = capsys.readouterr().err
    assert f"prefix = '{PREFIX}'" in err and "no record of making them" in err, err
    assert main(["testbed", "status", str(tb)]) == 0
    assert "not made by srperf" in capsys.readouterr().out
    assert main(["testbed", "down", str(tb)]) == 0
    assert not _ours()
