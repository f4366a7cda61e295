"""End to end on an SSH testbed with a real sshd: `srperf run` over SSH, and its failures.

Topology: a virtual testbed with prefix ``srpssh`` provides the data links
(tester t0/t1 <-> SUT s0/s1) and the SUT's base setup; :class:`sshd.SshdNode`
(a test fixture) runs a real OpenSSH sshd inside ``srpssh-sut`` on a management
veth to ``srpssh-tester``.  The ssh testbed's tester is the local namespace
``srpssh-tester``; its SUT is reached only through SSH (ProxyCommand
``ip netns exec srpssh-tester nc``), so every CFG script, eBPF object, VNF and
counter on the SUT goes over SSH.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cfg_doubles import hang_linux_function
from sshd import SHORT_SEARCH, SshdNode, virtual_sshd_fixture
from srperf.cli.entry import main
from srperf.config.loader import load_experiment, load_testbed
from srperf.measure.orchestrator import Orchestrator
from srperf.measure.progress import ProgressEvents
from srperf.testbeds.lock import LOCK_DIR
from srperf.testbeds import registry as testbeds
from busy_host import BUSY_HOST_OPTIONS

pytestmark = pytest.mark.netns

PREFIX = "srpssh"
SUT_NS, TESTER_NS = f"{PREFIX}-sut", f"{PREFIX}-tester"
SEARCH = SHORT_SEARCH
node = virtual_sshd_fixture(PREFIX, tag=7, name="ssh-links")


def _testbed(tmp_path: Path, node: SshdNode, forwarder: str, **ssh: Any) -> Path:
    data = {"name": "ssh-local", "kind": "ssh", "prefix": PREFIX,
            "tester": {"driver": "linux", "netns": TESTER_NS, "tx": {"name": "t0"},
                       "rx": {"name": "t1"}, "line_rate_pps": 1_500_000, "cpu": 0,
                       "options": BUSY_HOST_OPTIONS},
            "sut": {"forwarder": forwarder, "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": node.ssh_config(**ssh)}}}
    path = tmp_path / f"tb-{forwarder}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _experiment(tmp_path: Path, forwarder: str, behaviors: list[str]) -> Path:
    path = tmp_path / f"exp-{forwarder}.yaml"
    path.write_text(yaml.safe_dump({"name": f"ssh-{forwarder}", "forwarder": forwarder,
                                    "behaviors": behaviors, "search": SEARCH}))
    return path


def _sut(*argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", SUT_NS, *argv], capture_output=True,
                          text=True, check=True).stdout


def _assert_sut_clean() -> None:
    """No SRv6 route, no tc filter, no VNF, no private work directory left on the SUT."""
    routes = _sut("ip", "-6", "route", "show", "table", "all")
    assert "seg6" not in routes and "fc00:" not in routes, routes
    for dev in ("s0", "s1"):
        assert "bpf" not in _sut("tc", "filter", "show", "dev", dev, "ingress")
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{PREFIX}-vnf" not in names
    assert not list(Path("/tmp").glob("srperf.*")) or all(
        not p.is_dir() or not any(p.glob("*.sh")) for p in Path("/tmp").glob("srperf.*"))


def _environment(results: Path) -> dict[str, Any]:
    db = sqlite3.connect(results / "srperf.sqlite")
    (env,), = db.execute("SELECT environment FROM runs ORDER BY started DESC LIMIT 1")
    return json.loads(env)


def test_linux_behaviors_run_over_ssh(node: SshdNode, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", str(_experiment(tmp_path, "linux", ["ipv6", "end", "end_dt4"])),
               "--testbed", str(_testbed(tmp_path, node, "linux")),
               "--results", str(tmp_path / "res")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "ipv6: verified" in out and "end: verified" in out
    assert "end_dt4: unsupported:" in out  # the SUT's own reason, read over SSH
    sut = _environment(tmp_path / "res")["nodes"]["sut"]
    assert sut["reached_through"] == f"ssh root@{node.host}:22"
    assert sut["kernel"] == _sut("uname", "-r").strip()
    assert sut["forwarder"]["iproute2"].startswith("ip utility")
    assert sut["ports"]["s0"]["driver"] == "veth"
    db = sqlite3.connect(tmp_path / "res" / "srperf.sqlite")
    assert {b for (b,) in db.execute("SELECT DISTINCT behavior FROM trials")} == {"ipv6", "end"}
    _assert_sut_clean()


def test_end_ad_runs_over_ssh(node: SshdNode, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", str(_experiment(tmp_path, "ebpf", ["end_ad"])),
               "--testbed", str(_testbed(tmp_path, node, "ebpf")),
               "--results", str(tmp_path / "res")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "end_ad: verified" in out
    sut = _environment(tmp_path / "res")["nodes"]["sut"]
    assert sut["reached_through"].startswith("ssh ")
    assert "bpftool" in sut["forwarder"]["bpftool"] and "clang" in sut["forwarder"]["clang"]
    db = sqlite3.connect(tmp_path / "res" / "srperf.sqlite")
    extras = [json.loads(e) for (e,) in db.execute("SELECT extra FROM trials")]
    assert extras and all("dataplane" in e for e in extras)  # counters read over SSH
    assert sum(sum(e["dataplane"].values()) for e in extras) > 0
    _assert_sut_clean()


def test_unknown_host_key_is_refused_before_connecting_and_trust_adds_it(
        node: SshdNode, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    tb = str(_testbed(tmp_path, node, "linux", known_hosts=str(known)))
    exp = str(_experiment(tmp_path, "linux", ["ipv6"]))
    assert main(["run", exp, "--testbed", tb, "--results", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert f"sut.transport.ssh.host = '{node.host}'" in err and "no host key" in err
    assert "srperf testbed trust" in err and not (tmp_path / "res").exists()
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["testbed", "trust", tb]) == 0
    out = capsys.readouterr().out
    assert "SHA256:" in out and "sut: not added" in out and known.read_text() == ""
    monkeypatch.setattr("builtins.input", lambda prompt: "yes")
    assert main(["testbed", "trust", tb]) == 0
    assert "sut: added to" in capsys.readouterr().out
    assert main(["validate", tb]) == 0  # the key is known now
    _assert_sut_clean()


@pytest.mark.parametrize("what, ssh, message", [
    ("wrong key", {"key_file": "OTHER"}, "authentication"),
    ("refused connection", {"port": 2222, "known_hosts": "PORT2222"}, "refused"),
])
def test_connection_failures_name_the_host(node: SshdNode, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], what: str,
                                           ssh: dict[str, Any], message: str) -> None:
    if ssh.get("known_hosts") == "PORT2222":  # the key known, so that the port is tried
        lines = Path(node.known_hosts).read_text().splitlines()
        (tmp_path / "kh").write_text("".join(
            f"[{node.host}]:2222 {line.split(' ', 1)[1]}\n" for line in lines if line))
        ssh = dict(ssh, known_hosts=str(tmp_path / "kh"))
    if ssh.get("key_file") == "OTHER":
        ssh = {"key_file": node.new_key(f"other-{tmp_path.name}")}
    rc = main(["run", str(_experiment(tmp_path, "linux", ["ipv6"])),
               "--testbed", str(_testbed(tmp_path, node, "linux", **ssh)),
               "--results", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert node.host in err and message in err.lower(), err
    assert "Traceback" not in err
    _assert_sut_clean()


class SessionDropper(ProgressEvents):
    """Kills every SSH session's sshd (SIGKILL, as a crash would) after the
    ``after``-th trial of ``behavior``'s search: the connection drops mid-search."""

    def __init__(self, node: SshdNode, behavior: str, after: int) -> None:
        self.node, self.behavior, self.after = node, behavior, after
        self.current, self.trials, self.dropped = "", 0, 0

    def search_started(self, behavior: str, *args: object, **kw: object) -> None:
        self.current, self.trials = behavior, 0

    def trial_done(self, *args: object, **kw: object) -> None:
        self.trials += 1
        if self.current == self.behavior and self.trials == self.after and not self.dropped:
            self.dropped = self.node.drop_sessions()

    def __call__(self, text: str) -> None:
        pass


def test_session_dropped_mid_search_reconnects_and_the_search_goes_on(
        node: SshdNode, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    exp = load_experiment(_experiment(tmp_path, "linux", ["ipv6", "end"]))
    tb = load_testbed(_testbed(tmp_path, node, "linux"))
    dropper = SessionDropper(node, "end", after=1)
    report = Orchestrator(exp, tb, tmp_path / "res", progress=dropper).run()
    assert dropper.dropped >= 2  # the SUT's session and the lock's
    assert report.status == "finished"
    assert report.outcomes[("end", 64)] == ("measured", "")
    assert "reconnecting once" in caplog.text or "taking the lock again" in caplog.text
    db = sqlite3.connect(tmp_path / "res" / "srperf.sqlite")
    assert db.execute("SELECT status FROM runs").fetchone() == ("finished",)
    for behavior in ("ipv6", "end"):
        kept = db.execute("SELECT COUNT(*) FROM trials WHERE behavior = ?",
                          (behavior,)).fetchone()[0]
        (searched,), = db.execute("SELECT DISTINCT n_trials FROM searches WHERE behavior = ?",
                                  (behavior,))
        assert kept == searched >= 2  # no trial lost, the search went on past the drop
    assert not list(Path(LOCK_DIR).glob("ssh-ssh-local.*"))  # lock released, its files gone
    _assert_sut_clean()


def test_second_run_on_a_locked_ssh_testbed_is_refused(node: SshdNode, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    tb_file = _testbed(tmp_path, node, "linux")
    holder = testbeds.create(load_testbed(tb_file))
    assert holder.claim("a test holding the SUT", run_id="run-holding-the-sut")
    try:
        assert main(["run", str(_experiment(tmp_path, "linux", ["ipv6"])), "--testbed",
                     str(tb_file), "--results", str(tmp_path / "res")]) == 2
        err = capsys.readouterr().err
        assert f"srperf pid {os.getpid()}" in err and "run-holding-the-sut" in err, err
        assert f"{LOCK_DIR}/ssh-ssh-local.lock on ssh root@{node.host}:22" in err
        assert main(["testbed", "status", str(tb_file)]) == 0
        assert "locked by srperf pid" in capsys.readouterr().out
    finally:
        holder.unclaim()
    assert not list(Path(LOCK_DIR).glob("ssh-ssh-local.*"))


def test_hanging_cfg_function_over_ssh_is_stopped_named_and_the_run_goes_on(
        node: SshdNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hang_linux_function(tmp_path, monkeypatch, "end")
    exp = load_experiment(_experiment(tmp_path, "linux", ["end", "ipv6"]))
    tb = load_testbed(_testbed(tmp_path, node, "linux"))
    report = Orchestrator(exp, tb, tmp_path / "res").run()
    assert report.status == "finished"
    status, reason = report.outcomes[("end", 64)]
    assert status == "error" and f"linux.sh end on ssh root@{node.host}:22 hung" in reason
    assert report.outcomes[("ipv6", 64)] == ("measured", "")
    assert subprocess.run(["pgrep", "-f", "^sleep 100000$"]).returncode == 1  # stopped there
    assert not list(Path(LOCK_DIR).glob("ssh-ssh-local.*"))
    _assert_sut_clean()


def test_one_round_trip_per_trial_over_ssh(node: SshdNode, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """During the searches of an eBPF run (whose proxy counters are read every trial),
    the SSH round trips to the SUT (a command run, or a line sent to a held process:
    the counter shell, the lock) are one per trial, plus one counter read at each
    search's start and a lock ping at most every PING_EVERY_S seconds."""
    from srperf.measure.session import MeasurementSession
    from srperf.testbeds.lock import PING_EVERY_S
    from srperf.transports import ssh as ssh_mod

    state = {"in_search": False, "trips": 0, "searches": 0, "search_s": 0.0}
    run, send, search = (ssh_mod.SshTransport.run, ssh_mod._HeldChannel.send,
                         MeasurementSession.search)

    def counted_run(self, *a, **k):  # type: ignore[no-untyped-def]
        state["trips"] += state["in_search"]
        return run(self, *a, **k)

    def counted_send(self, *a, **k):  # type: ignore[no-untyped-def]
        state["trips"] += state["in_search"]
        return send(self, *a, **k)

    def counted_search(self, *a, **k):  # type: ignore[no-untyped-def]
        import time

        state["in_search"], started = True, time.monotonic()
        try:
            return search(self, *a, **k)
        finally:
            state["in_search"] = False
            state["searches"] += 1
            state["search_s"] += time.monotonic() - started

    monkeypatch.setattr(ssh_mod.SshTransport, "run", counted_run)
    monkeypatch.setattr(ssh_mod._HeldChannel, "send", counted_send)
    monkeypatch.setattr(MeasurementSession, "search", counted_search)
    rc = main(["run", str(_experiment(tmp_path, "ebpf", ["end_ad"])),
               "--testbed", str(_testbed(tmp_path, node, "ebpf")),
               "--results", str(tmp_path / "res")])
    # 3 is "nothing measured": on a busy host the generator may not offer the first
    # trial's rate, and every search ends generator-limited. The round trips per trial
    # are what this test is about, and they are counted for those trials too.
    assert rc in (0, 3)
    db = sqlite3.connect(tmp_path / "res" / "srperf.sqlite")
    extras = [json.loads(e) for (e,) in db.execute("SELECT extra FROM trials")]
    assert extras and all("dataplane" in e for e in extras)
    pings = state["searches"] + int(state["search_s"] / PING_EVERY_S) + 1
    assert state["trips"] <= len(extras) + state["searches"] + pings, state
    _assert_sut_clean()
