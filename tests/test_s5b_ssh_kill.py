"""Issue 35: a stateful run over SSH killed with SIGKILL mid-repetition; ``srperf testbed
unprepare`` then leaves the SUT and both endpoint hosts as they were before ``prepare``
(prefix s5b).

Topology as tests/test_ssh_endpoints.py (its own namespaces, each host a real OpenSSH
sshd reached over a management veth)::

    s5b-cli (sshd)             s5b-sut (sshd)             s5b-srv (sshd)
      c0 (tester.tx.mac) ---- s0 ......... s1 ---- c1 (tester.rx.mac)

Killed: the run's iperf3 servers (server host), its iperf3 clients (client host, in the
middle of a 30 s repetition), its steering routes (all three hosts), the SUT's End.
After unprepare, at once (no waiting for the clients' own end): every host's processes,
addresses, routes of every table, tc filters, sysctls and lock-directory files are the
ones it had before prepare.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from sshd import SshdNode, sshd_endpoint_hosts
from srperf.cli.entry import main

pytestmark = [pytest.mark.netns, pytest.mark.slow]

MGMT, SUT, CLI, SRV = "s5b-mgmt", "s5b-sut", "s5b-cli", "s5b-srv"


def _in(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True,
                          text=True, check=True).stdout


def _cmdlines(ns: str) -> list[str]:
    out = []
    for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split():
        try:
            out.append(Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip())
        except OSError:
            continue
    return sorted(out)


def _tc(ns: str, *argv: str) -> str:
    res = subprocess.run(["ip", "netns", "exec", ns, "tc", *argv], capture_output=True,
                         text=True)
    return res.stdout + res.stderr


def _state(ns: str) -> dict[str, Any]:
    """What srperf may change on a host: processes, addresses, routes (every table),
    SRv6 source, tc filters, the sysctls of its ports, its lock-directory files."""
    devs = _in(ns, "ls", "/sys/class/net").split()
    return {
        # sshd's per-connection processes left out: a killed run's proxy (nc, a child of
        # the killed process) keeps its connections until it writes to them
        "processes": [c for c in _cmdlines(ns) if not c.startswith("sshd: ")],
        "addresses": _in(ns, "ip", "-br", "addr"),
        "routes": _in(ns, "ip", "-6", "route", "show", "table", "all"),
        "tunsrc": _in(ns, "ip", "sr", "tunsrc", "show"),
        "tc": {d: _tc(ns, "filter", "show", "dev", d, "ingress") +
               _tc(ns, "qdisc", "show", "dev", d) for d in devs},
        "sysctl": _in(ns, "sh", "-c", "grep -r . /proc/sys/net/ipv6/conf/*/seg6_enabled "
                      "/proc/sys/net/ipv6/conf/*/accept_dad "
                      "/proc/sys/net/ipv6/conf/all/forwarding"),
    }


@pytest.fixture
def hosts() -> Iterator[dict[str, SshdNode]]:
    with sshd_endpoint_hosts(MGMT, SUT, CLI, SRV, (17, 18, 19), links_up=True) as nodes:
        yield nodes


def _files(tmp_path: Path, hosts: dict[str, SshdNode]) -> tuple[Path, Path]:
    work = {side: tmp_path / f"work-{side}" for side in ("sut", "client", "server")}
    for path in work.values():
        path.mkdir()
    tb = {"name": "s5bkill", "kind": "ssh", "prefix": "s5b",
          "tester": {"driver": "linux", "netns": MGMT, "tx": {"name": "t0"},
                     "rx": {"name": "t1"}, "cpu": 0},
          "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                  "cpu": 1, "transport": {"kind": "ssh", "ssh": hosts["sut"].ssh_config(
                      tmp_base=str(work["sut"]))}},
          "endpoints": {side: {"dev": dev, "cpu": 0, "transport": {
              "kind": "ssh", "ssh": hosts[side].ssh_config(tmp_base=str(work[side]))}}
              for side, dev in (("client", "c0"), ("server", "c1"))}}
    exp = {"name": "s5b-goodput", "kind": "goodput", "forwarder": "linux",
           "behaviors": ["end"],
           "goodput": {"streams": 2, "duration_s": 30, "repetitions": 2}}
    tb_file, exp_file = tmp_path / "s5bkill.yaml", tmp_path / "exp.yaml"
    tb_file.write_text(yaml.safe_dump(tb))
    exp_file.write_text(yaml.safe_dump(exp))
    return tb_file, exp_file


def test_unprepare_after_kill_9_mid_repetition_leaves_every_host_as_before(
        hosts, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tb, exp = _files(tmp_path, hosts)
    deadline = time.monotonic() + 10   # the new links' addresses past DAD (routes settled)
    while any(_in(ns, "ip", "-6", "addr", "show", "tentative").strip()
              for ns in (SUT, CLI, SRV)):
        assert time.monotonic() < deadline, "addresses still tentative after 10 s"
        time.sleep(0.1)
    before = {ns: _state(ns) for ns in (SUT, CLI, SRV)}
    assert main(["testbed", "prepare", str(tb)]) == 0, capsys.readouterr().err
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "srperf.cli", "run", str(exp),
                             "--testbed", str(tb), "--results", str(tmp_path / "res")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 90
        # mid-repetition: both clients of the 30 s repetition are sending
        while sum(" -c " in c for c in _cmdlines(CLI) if c.startswith(("iperf3",
                                                                           "taskset"))) < 2:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the run started no iperf3 client"
            time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # what the killed run left: its load processes, its steering, its End
        assert any(c.startswith("iperf3 -s") for c in _cmdlines(SRV))
        assert any(" -c " in c for c in _cmdlines(CLI))
        assert "seg6" in _in(CLI, "ip", "-6", "route", "show")
        assert "seg6local" in _in(SUT, "ip", "-6", "route", "show", "table", "all")
        assert main(["testbed", "status", str(tb)]) == 0
        assert capsys.readouterr().out.count("a killed run's setup is left") == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()
        code = main(["testbed", "unprepare", str(tb)])
    cap = capsys.readouterr()
    assert code == 0, cap.out + cap.err
    after = {ns: _state(ns) for ns in (SUT, CLI, SRV)}
    for ns in (SUT, CLI, SRV):
        for key in before[ns]:
            assert after[ns][key] == before[ns][key], (ns, key, cap.out)
    for side in ("sut", "client", "server"):
        assert not any((tmp_path / f"work-{side}").iterdir()), side
    left = [p.name for p in Path("/run/srperf").glob("*s5bkill*")
            if p.name.startswith(("prepared-", "steering-"))]
    assert not left, left
    assert main(["testbed", "status", str(tb)]) == 0
    assert "killed run" not in capsys.readouterr().out
