"""The fast path's cost, per-step statistics and cleanup on a virtual testbed (prefix
x4b): fp_steps counts each step's runs (and ns) only when the chain asks, ``srperf run``
stores each chain's BPF_PROG_RUN cost beside its trials and prints it, and ``clean``
finds the objects and holders of its namespace even when the attachment and the PID
file no longer show them."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import xdp_helpers as X
from srperf.behaviors import catalogue
from srperf.config.model import TestbedConfig
from srperf.forwarders.xdp.steps import parse_steps

pytestmark = pytest.mark.netns

TB = TestbedConfig(name="x4bp", prefix="x4bp")


@pytest.fixture(scope="module")
def testbed():
    yield from X.testbed_up(TB)


@pytest.fixture()
def sut(testbed):
    yield from X.clean_sut(TB)


def steps(tb: TestbedConfig) -> dict[str, tuple[int, int]]:
    res = X.script(tb, "steps", {})
    assert res.returncode == 0, res.stderr
    return parse_steps(res.stdout)


def run_chain(chain: str, repeat: int) -> None:
    frame = bytes(catalogue.get(chain).frame_builder(TB, 64))
    assert X.prog_run(TB, frame, repeat=repeat).verdict == "XDP_REDIRECT"


@pytest.mark.parametrize("mode", ["off", "count", "time"])
def test_steps_count_themselves_only_when_asked(sut, mode: str) -> None:
    X.load(TB, "xdp_nop3_fw", fw="static", step_stats=mode)
    run_chain("xdp_nop3_fw", 20)
    got = steps(TB)
    if mode == "off":
        assert got == {}
        return
    assert {k: runs for k, (runs, _) in got.items()} == {
        "fp_dispatch": 20, "fp_nop": 60, "fp_fw": 20}
    timed = {k: ns for k, (_, ns) in got.items() if k != "fp_dispatch"}
    if mode == "time":
        assert all(ns > 0 for ns in timed.values()), got
    else:
        assert all(ns == 0 for ns in timed.values()), got


def test_clean_sweeps_what_the_attachment_and_pid_file_no_longer_show(sut) -> None:
    """A lost PID file and a dispatcher detached by hand: the holder keeps the pins and
    so every program and map alive; clean ends it by its command line and empties the
    programs' fp_progs found by their fp_conf owner (the namespace)."""
    X.load(TB, "xdp_enc_mon_fw", fw="static")
    pid_file = Path(f"/run/srperf-xdp-{TB.sut_ns}.pid")
    assert pid_file.exists()
    pid_file.unlink()
    subprocess.run(["ip", "netns", "exec", TB.sut_ns, "ip", "link", "set", "dev",
                    TB.sut.in_port.name, "xdpgeneric", "off"], check=True)
    assert any(p.startswith("holder") for p in X.leftovers("x4bp"))
    other = TestbedConfig(name="x4bq", prefix="x4bq")    # another namespace's clean
    from srperf.testbeds.virtual import VirtualTestbed

    vt = VirtualTestbed(other)
    try:
        vt.up()
        assert X.script(other, "clean", {}).returncode == 0
        assert any(p.startswith("holder") for p in X.leftovers("x4bp")), \
            "another namespace's clean touched this one's holder"
    finally:
        vt.down()
    X.clean(TB)
    assert not X.wait_no_leftovers("x4bp"), X.leftovers("x4bp")


def test_a_run_stores_and_prints_each_chain_s_cost(tmp_path: Path) -> None:
    tb = tmp_path / "tb.yaml"
    tb.write_text("name: x4br\nkind: virtual\nprefix: x4br\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text("name: x4br\nforwarder: xdp\nbehaviors: [xdp_fw, xdp_nop1_fw]\n"
                   "packet_sizes: [64]\nrepetitions: 1\n"
                   "search: {algorithm: bisect, thresholds_pct: [0.5], trial_duration_s: 0.2,"
                   " accuracy: 20%, min_rate: 20%, max_rate: 60%}\n"
                   "options: {fw: static, cost_runs: 100, step_stats: count}\n")
    results = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-c", "import sys; from srperf.cli.entry import "
                           "main; sys.exit(main(sys.argv[1:]))", "run", str(exp), "--testbed",
                           str(tb), "--results", str(results)],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    db = sqlite3.connect(results / "srperf.sqlite")
    rows = db.execute("SELECT behavior, status, runs, verdict, programs, tail_calls, "
                      "ns_per_packet > 0, step_stats, search_seq FROM costs "
                      "ORDER BY search_seq").fetchall()
    assert rows == [("xdp_fw", "ok", 100, "XDP_REDIRECT", 2, 1, 1, "count", 1),
                    ("xdp_nop1_fw", "ok", 100, "XDP_REDIRECT", 3, 2, 1, "count", 2)], rows
    detail = db.execute("SELECT detail FROM costs WHERE behavior = 'xdp_nop1_fw'").fetchone()
    assert '"program": "fp_nop", "runs": 100' in detail[0]
    assert "per-packet cost without a generator" in proc.stdout
    assert "xdp_nop1_fw: " in proc.stdout and "BPF_PROG_RUNs" in proc.stdout
    assert not X.wait_no_leftovers("x4br"), X.leftovers("x4br")
