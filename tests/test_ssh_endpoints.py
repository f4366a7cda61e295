"""Stateful experiments on an SSH testbed: client and server are hosts reached over SSH.

Topology (every host a namespace with a real OpenSSH sshd of its own, tests/sshd.py,
reached from ``p8s-mgmt`` over a management veth through ProxyCommand ``nc``)::

    p8s-cli (sshd)             p8s-sut (sshd)             p8s-srv (sshd)
      c0 (tester.tx.mac) ---- s0 ......... s1 ---- c1 (tester.rx.mac)

Every command on the client, server and SUT goes through paramiko to that host's sshd,
so iperf3, wrk and lighttpd run in the host's own network: the only path between
client and server is through the SUT's End."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from refusals import assert_refused
from sshd import SshdNode, sshd_endpoint_hosts
from srperf.cli.entry import main
from srperf.config.model import TestbedConfig
from srperf.testbeds.lock import LOCK_DIR

MGMT, SUT, CLI, SRV = "p8s-mgmt", "p8s-sut", "p8s-cli", "p8s-srv"
DEFAULTS = TestbedConfig(name="macs")   # the MACs and addresses a file names by default


def _in(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def hosts() -> Iterator[dict[str, SshdNode]]:
    with sshd_endpoint_hosts(MGMT, SUT, CLI, SRV, (28, 29, 30)) as nodes:
        yield nodes


def _testbed(tmp_path: Path, hosts: dict[str, SshdNode], name: str = "p8sep",
             **changes: Any) -> Path:
    work = {side: tmp_path / f"work-{side}" for side in ("client", "server")}
    for path in work.values():
        path.mkdir(exist_ok=True)
    data: dict[str, Any] = {
        "name": name, "kind": "ssh", "prefix": "p8s",
        "tester": {"driver": "linux", "netns": MGMT, "tx": {"name": "t0"},
                   "rx": {"name": "t1"}, "cpu": 0},
        "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                "cpu": 1, "transport": {"kind": "ssh", "ssh": hosts["sut"].ssh_config()}},
        "endpoints": {side: {"dev": dev, "cpu": 0, "transport": {
            "kind": "ssh", "ssh": hosts[side].ssh_config(tmp_base=str(work[side]))}}
            for side, dev in (("client", "c0"), ("server", "c1"))}}
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        where = data
        for part in path:
            where = where[part]
        where[last] = value
    out = tmp_path / f"{name}.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


def _experiment(tmp_path: Path, kind: str, block: dict[str, Any]) -> Path:
    path = tmp_path / f"exp-{kind}.yaml"
    path.write_text(yaml.safe_dump({"name": f"p8s-{kind}", "kind": kind, "forwarder": "linux",
                                    "behaviors": ["end"], kind: block}))
    return path


def _rows(results: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(results / "srperf.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM stateful_samples ORDER BY id")]
    for r in rows:
        r["metrics"] = json.loads(r["metrics"])
    return rows


def _rx_bytes(ns: str, dev: str) -> int:
    return int(_in(ns, "cat", f"/sys/class/net/{dev}/statistics/rx_bytes"))


def _assert_hosts_clean(tmp_path: Path, name: str = "p8sep") -> None:
    """Nothing of the run is left on the endpoint hosts: no base setup, no process but
    the sshd listener, no work directory."""
    a = DEFAULTS.addressing
    for ns, dev, addr, lo in ((CLI, "c0", a.tester_tx_ip6, a.src6),
                              (SRV, "c1", a.tester_rx_ip6, a.dst6)):
        assert addr not in _in(ns, "ip", "-6", "addr", "show", "dev", dev)
        assert lo not in _in(ns, "ip", "-6", "addr", "show", "dev", "lo")
        assert "fc00" not in _in(ns, "ip", "-6", "route", "show"), ns
        assert _in(ns, "ip", "sr", "tunsrc", "show").split()[-1] == "::"
        assert _comms(ns) == ["sshd"], ns
    for side in ("client", "server"):
        assert not Path(LOCK_DIR, f"prepared-{name}-{side}.json").exists()
        assert not Path(LOCK_DIR, f"prepared-{name}-{side}.workdirs").exists()
        assert not any((tmp_path / f"work-{side}").iterdir()), side


@pytest.mark.netns
def test_goodput_and_http_through_end_with_ssh_endpoints(
        hosts: dict[str, SshdNode], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Real iperf3 and wrk/lighttpd between two SSH hosts through SRv6 End on an SSH SUT:
    samples stored, the bytes crossed the SUT, nothing left on the hosts."""
    tb = _testbed(tmp_path, hosts)
    assert main(["validate", str(tb)]) == 0, capsys.readouterr().err
    assert main(["testbed", "prepare", str(tb)]) == 0, capsys.readouterr().err
    try:
        goodput = _experiment(tmp_path, "goodput", {"streams": 2, "duration_s": 1,
                                                    "repetitions": 2})
        before = _rx_bytes(SUT, "s0")
        results = tmp_path / "res"
        code = main(["run", str(goodput), "--testbed", str(tb), "--results", str(results)])
        cap = capsys.readouterr()
        assert code == 0, cap.out + cap.err
        rows = [r for r in _rows(results) if r["kind"] == "goodput"]
        assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), rows
        mbps = [r["metrics"]["goodput_mbps"] for r in rows]
        assert all(v > 0 for v in mbps)
        # what iperf3 counted went through the SUT's in port (encapsulated: more bytes)
        crossed = _rx_bytes(SUT, "s0") - before
        # measured-ok: what iperf3 received crossed this port (a count, not a rate race)
        assert crossed >= sum(v * 1e6 / 8 for v in mbps) * 0.9, (crossed, mbps)
        assert "fc00:1::1" in cap.out      # the steering named the SUT's End SID
        with sqlite3.connect(results / "srperf.sqlite") as db:
            env = json.loads(db.execute("SELECT environment FROM runs").fetchone()[0])
        for side, port in (("client", "c0"), ("server", "c1")):
            node = env["nodes"][f"endpoint_{side}"]
            assert hosts[side].host in node["reached_through"] and port in node["ports"]
        _assert_hosts_clean(tmp_path)

        http = _experiment(tmp_path, "http", {"object_sizes": ["1KB"], "duration_s": 1,
                                              "repetitions": 2, "threads": 1,
                                              "connections": 4})
        code = main(["run", str(http), "--testbed", str(tb), "--results", str(results)])
        cap = capsys.readouterr()
        assert code == 0, cap.out + cap.err
        rows = [r for r in _rows(results) if r["kind"] == "http"]
        assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), rows
        assert all(r["metrics"]["requests_per_s"] > 0 for r in rows)
        _assert_hosts_clean(tmp_path)
    finally:
        assert main(["testbed", "unprepare", str(tb)]) == 0


@pytest.mark.netns
def test_an_endpoint_host_that_refuses_leaves_nothing(
        hosts: dict[str, SshdNode], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A server host whose dev has another MAC than the SUT's neighbour entry: the run
    fails naming the keys, the client's setup is undone, nothing stays on either host."""
    tb = _testbed(tmp_path, hosts, name="p8sbad",
                  tester__rx={"name": "t1", "mac": "02:5e:00:00:02:99"})
    goodput = _experiment(tmp_path, "goodput", {"streams": 1, "duration_s": 1,
                                                "repetitions": 2})
    code = main(["run", str(goodput), "--testbed", str(tb), "--results",
                 str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert code != 0
    assert "endpoints.server.dev = c1" in err and "tester.rx.mac" in err, err
    _assert_hosts_clean(tmp_path, name="p8sbad")


def _comms(ns: str) -> list[str]:
    """Names of the processes in namespace ``ns`` (those that ended meanwhile left out)."""
    names = []
    for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split():
        try:
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            continue
    return names


class _Host:
    """A host's ssh block for files that are only validated (no sshd behind it)."""

    def __init__(self, host: str, keys: Path) -> None:
        self.host, self.keys = host, keys

    def ssh_config(self, **overrides: Any) -> dict[str, Any]:
        return {"host": self.host, "key_file": str(self.keys / "k"),
                "known_hosts": str(self.keys / "known_hosts"), **overrides}


def _offline_hosts(tmp_path: Path) -> dict[str, Any]:
    """Three hosts (TEST-NET-3 addresses nobody answers) whose keys are known."""
    keys = tmp_path / "keys"
    keys.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "k")],
                   check=True)
    pub = (keys / "k.pub").read_text().split()
    hosts = {role: _Host(f"203.0.113.{226 + i}", keys)
             for i, role in enumerate(("sut", "client", "server"))}
    (keys / "known_hosts").write_text("".join(f"{h.host} {pub[0]} {pub[1]}\n"
                                              for h in hosts.values()))
    return hosts


@pytest.mark.parametrize("changes, key, value", [
    ({"kind": "virtual"}, "endpoints", "client"),
    ({"endpoints__client__transport": {"kind": "netns"}},
     "endpoints.client.transport.kind", "netns"),
    ({"endpoints__server__cpu": 9000}, "endpoints.server.cpu", "9000"),
    ({"endpoints__server__dev": "c1/x"}, "endpoints.server.dev", "c1/x"),
    ({"endpoints__steering": "edge"}, "endpoints.steering", "edge"),
    ({"endpoints__client__transport": {"ssh": {"host": "203.0.113.227", "port": 70000}}},
     "endpoints.client.transport.ssh.port", "70000"),
    ({"endpoints__client__color": "red"}, "endpoints.client", "color"),
    ({"endpoints__server__transport": {"ssh": {"host": "203.0.113.226"}}},
     "endpoints.server.transport.ssh.host", "203.0.113.226"),
    ({"endpoints__client__transport": {"ssh": {"host": "-oProxy=x"}}},
     "endpoints.client.transport.ssh.host", "-oProxy=x"),
])
def test_validate_refuses_bad_endpoint_keys(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            changes: dict[str, Any], key: str,
                                            value: str) -> None:
    hosts = _offline_hosts(tmp_path)
    good = _testbed(tmp_path, hosts, name="p8sgood")
    assert main(["validate", str(good)]) == 0, capsys.readouterr().err
    tb = _testbed(tmp_path, hosts, **changes)
    assert_refused(main(["validate", str(tb)]), capsys.readouterr().err, str(tb),
                   (key, value))


def test_stateful_run_refused_on_an_ssh_testbed_without_endpoints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before anything starts (no host is reached: nobody answers at these addresses),
    exit 2 naming the experiment's kind and the testbed's missing block."""
    data = yaml.safe_load(_testbed(tmp_path, _offline_hosts(tmp_path)).read_text())
    del data["endpoints"]
    tb = tmp_path / "noends.yaml"
    tb.write_text(yaml.safe_dump(data))
    exp = _experiment(tmp_path, "goodput", {"streams": 1, "duration_s": 1, "repetitions": 2})
    code = main(["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")])
    assert_refused(code, capsys.readouterr().err, str(exp), ("kind", "goodput", "endpoints",
                                                             "noends.yaml"))
