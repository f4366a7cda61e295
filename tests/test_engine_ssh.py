"""tester.options.engine on an ssh testbed (issue 43), through a real sshd (tests/sshd.py):
the TX port's driver is read where the tester's ports are (``tester.netns`` on this
host), so ``xdp`` is accepted on its veth and refused on a tap before the SUT is
touched; ``auto`` runs live frames on the veth, and the run's environment records the
engine asked and the engines used."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from busy_host import BUSY_HOST_OPTIONS
from refusals import assert_refused
from srperf.cli.entry import main
from srperf.cli.guard import EXIT_NOTHING_MEASURED, EXIT_OK
from sshd import SHORT_SEARCH, SshdNode, virtual_sshd_fixture

pytestmark = [pytest.mark.netns]

PREFIX = "s5h"
SUT_NS, TESTER_NS = f"{PREFIX}-sut", f"{PREFIX}-tester"
TAP = "s5htap"
node = virtual_sshd_fixture(PREFIX, tag=19, name="s5h-links")


def _testbed(tmp_path: Path, node: SshdNode, engine: str, tx: str = "t0") -> Path:
    data = {"name": "ssh-engine", "kind": "ssh", "prefix": PREFIX,
            "tester": {"driver": "linux", "netns": TESTER_NS, "tx": {"name": tx},
                       "rx": {"name": "t1"}, "line_rate_pps": 1_500_000, "cpu": 0,
                       "options": {**BUSY_HOST_OPTIONS, "engine": engine}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": node.ssh_config()}}}
    path = tmp_path / f"tb-{engine}-{tx}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _experiment(tmp_path: Path) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "ssh-engine", "forwarder": "linux",
                                    "behaviors": ["ipv6"], "search": SHORT_SEARCH}))
    return path


def _sut_routes() -> str:
    return subprocess.run(["ip", "netns", "exec", SUT_NS, "ip", "-6", "route", "show",
                           "table", "all"], capture_output=True, text=True, check=True).stdout


def _environment(results: Path) -> dict[str, Any]:
    db = sqlite3.connect(results / "srperf.sqlite")
    try:
        (env,), = db.execute("SELECT environment FROM runs ORDER BY started DESC LIMIT 1")
        engines = {e for (e,) in db.execute(
            "SELECT DISTINCT json_extract(extra, '$.engine') FROM trials")}
    finally:
        db.close()
    return {**json.loads(env), "trial_engines": engines}


def test_auto_sends_live_frames_over_the_veth_and_the_run_says_so(
        node: SshdNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", str(_experiment(tmp_path)), "--testbed",
               str(_testbed(tmp_path, node, "auto")), "--results", str(tmp_path / "res")])
    out = capsys.readouterr().out
    # what is checked is the engine's record, not a PDR: a busy host may measure nothing
    assert rc in (EXIT_OK, EXIT_NOTHING_MEASURED), out
    env = _environment(tmp_path / "res")
    gen = env["generator"]
    assert gen["engine"] == "auto" and gen["tx_driver"] == "veth"
    assert gen["port_refusal"] is None and gen["engine_reasons"] == []
    assert set(gen["engines_sent"]) == {"xdp"} and gen["engines_sent"]["xdp"] > 0
    assert env["trial_engines"] == {"xdp"}


@pytest.fixture()
def tester_tap() -> Iterator[str]:
    """A tap in the tester's namespace, as a kernel target's tester port (no reader)."""
    subprocess.run(["ip", "-n", TESTER_NS, "tuntap", "add", "dev", TAP, "mode", "tap"],
                   check=True)
    try:
        yield TAP
    finally:
        subprocess.run(["ip", "-n", TESTER_NS, "link", "del", "dev", TAP], check=False)


def test_xdp_accepted_on_the_veth_refused_on_a_tap_before_the_sut_is_touched(
        node: SshdNode, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        tester_tap: str) -> None:
    exp = _experiment(tmp_path)
    assert main(["validate", str(exp), "--testbed", str(_testbed(tmp_path, node, "xdp"))]) == 0
    capsys.readouterr()
    tb = _testbed(tmp_path, node, "xdp", tx=tester_tap)
    before = _sut_routes()
    for argv in (["validate", str(exp), "--testbed", str(tb)],
                 ["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")]):
        code = main(argv)
        assert_refused(code, capsys.readouterr().err, tb.name,
                       ("tester.options.engine", "'xdp'", "tap", "tun"))
    assert not (tmp_path / "r").exists(), "the run started"
    assert _sut_routes() == before
