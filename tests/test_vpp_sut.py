"""VPP as the SUT of the virtual testbed (srperf/testbeds/vpp_sut.py).

Always: the generated startup.conf (4 KiB pages, no DPDK, one worker, private
paths), the core choice, and the testbed key ``sut.vpp_binary``.

Opt-in (``SRPERF_VPP_BIN`` names a VPP binary with vppctl beside it):
``srperf run`` with VPP as the SUT of a virtual testbed: VPP started in the
SUT namespace, every behavior verified (those where VPP deviates from the
catalogue through its declared deviations; H.Insert fails, naming its bug) and
searched, VPP stopped, nothing left behind (namespaces, processes, its work
directory).
"""

from __future__ import annotations

import glob
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from srperf.config.model import SutConfig, TestbedConfig
from srperf.testbeds.vpp_sut import PLUGINS, VppStartup, cores

VPP_BIN = os.environ.get("SRPERF_VPP_BIN")


def test_startup_conf_4k_pages_af_packet_no_driver(tmp_path: Path) -> None:
    text = VppStartup(tmp_path, main_core=0, worker_core=1).render()
    assert f"cli-listen {tmp_path}/cli.sock" in text
    assert text.count("page-size 4k") == 3 and "main-heap-page-size 4k" in text
    assert "corelist-workers 1" in text and "main-core 0" in text
    assert "plugin default { disable }" in text
    for plugin in PLUGINS:
        assert f"plugin {plugin}_plugin.so {{ enable }}" in text
    assert "dpdk" not in text.replace(str(tmp_path), "")
    assert "corelist-workers" not in VppStartup(tmp_path, worker_core=None).render()


def test_worker_runs_on_the_sut_cpu() -> None:
    tb = TestbedConfig(name="x", sut=SutConfig(cpu=1))
    main, worker = cores(tb)
    assert worker == 1 and main != 1 or (worker is None and main == 1)


@pytest.mark.parametrize("ncpu,expected", [(2, (1, None)), (4, (2, 1)), (1, (1, None))])
def test_main_thread_never_on_the_generators_cpu(ncpu: int, expected: tuple) -> None:
    """tester.cpu 0 (the generator), sut.cpu 1: on 2 CPUs VPP forwards on its main
    thread on CPU 1 (no worker), never on CPU 0; with more CPUs main takes a free one."""
    from srperf.config.model import TesterConfig

    tb = TestbedConfig(name="x", sut=SutConfig(cpu=1), tester=TesterConfig(cpu=0))
    assert cores(tb, ncpu) == expected


def test_runtime_dir_is_private(tmp_path: Path) -> None:
    text = VppStartup(tmp_path).render()
    assert f"runtime-dir {tmp_path}/run" in text


@pytest.mark.netns
def test_a_vpp_that_exits_at_once_is_reported_with_its_output_and_code(
        tmp_path: Path) -> None:
    from srperf.errors import CfgError
    from srperf.testbeds.vpp_sut import VppProcess

    fake = tmp_path / "vpp"
    fake.write_text("#!/bin/sh\necho 'vpp[1]: unknown input: cpu bogus' >&2\nexit 7\n")
    fake.chmod(0o755)
    ns = f"s26vpp{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        work = tmp_path / "w"
        work.mkdir()
        started = time.monotonic()
        with pytest.raises(CfgError, match="sut.vpp_binary = .*exited at start with code 7"
                                           ".*unknown input"):
            VppProcess(str(fake), ns, VppStartup(work)).start()
        assert time.monotonic() - started < 10   # not the 30 s wait
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def test_testbed_yaml_names_the_binary(tmp_path: Path) -> None:
    from srperf.config.loader import load_testbed
    from srperf.errors import ConfigError

    path = tmp_path / "tb.yaml"
    path.write_text(yaml.safe_dump({"name": "v", "sut": {"vpp_binary": "/opt/vpp/bin/vpp"}}))
    assert load_testbed(path).sut.vpp_binary == "/opt/vpp/bin/vpp"
    path.write_text(yaml.safe_dump({"name": "v", "sut": {"vpp_binary": "vpp"}}))
    with pytest.raises(ConfigError, match="vpp_binary"):
        load_testbed(path)


def _vpp_pids() -> set[int]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return {int(line.split()[0]) for line in out.splitlines()[1:]
            if VPP_BIN and line.split()[1:2] == [VPP_BIN]}


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(not VPP_BIN, reason="SRPERF_VPP_BIN names no VPP binary")
def test_srperf_run_with_vpp_as_sut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from srperf.cli.entry import main

    behaviors = ["ipv6", "ipv4", "end", "end_x", "end_dt6", "end_dx6", "h_encaps_l2",
                 "h_encaps", "end_b6_encaps", "end_ad", "end_as", "end_am"]
    deviating = {"h_encaps", "end_b6_encaps", "end_ad", "end_as", "end_am"}
    exp = {"name": "vpp-e2e", "forwarder": "vpp", "behaviors": behaviors + ["h_insert"],
           "repetitions": 1,
           # 1 s trials: VPP's af_packet rx ring (TPACKET_V3, 160 blocks of 64 KiB) holds
           # about 70k 64-byte frames, so a 0.2 s trial at 200 kpps (40k packets) fits in it
           # whole and never shows a loss (every search ended at_max against VPP v26.06)
           "search": {"algorithm": "bisect", "thresholds_pct": [0.5], "trial_duration_s": 1.0,
                      "accuracy": "10%", "min_rate": "5%", "max_rate": "100%"}}
    tb = {"name": "vpp-e2e", "kind": "virtual", "prefix": "srpvp",
          "tester": {"line_rate_pps": 200000}, "sut": {"vpp_binary": VPP_BIN}}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    (tmp_path / "tb.yaml").write_text(yaml.safe_dump(tb))
    before = _vpp_pids()
    workdirs = set(glob.glob("/tmp/srperf-vpp.*"))
    rc = main(["run", str(tmp_path / "exp.yaml"), "--testbed", str(tmp_path / "tb.yaml"),
               "--results", str(tmp_path / "res")])
    out = capsys.readouterr().out
    assert rc == 1, out      # H.Insert fails verification, nothing else
    assert [x for x in out.splitlines() if ": verify_failed" in x or ": error" in x] == [
        line for line in out.splitlines() if line.startswith("h_insert: verify_failed")], out
    for beh in behaviors:
        line = next((x for x in out.splitlines() if x.startswith(f"{beh}: verified")), "")
        assert line, out
        assert ("declared deviation" in line) == (beh in deviating), line
    # H.Insert's double decrement is a declared bug: it fails, naming RFC 8200
    line = next(x for x in out.splitlines() if x.startswith("h_insert: verify_failed"))
    assert "known deviation" in line and "RFC 8200" in line, line
    db = sqlite3.connect(tmp_path / "res" / "srperf.sqlite")
    measured = {b for (b,) in db.execute("SELECT DISTINCT behavior FROM trials")}
    assert measured == set(behaviors)
    env = db.execute("SELECT environment FROM runs").fetchone()[0]
    assert '"vpp": "vpp v' in env, env
    assert '"deviations"' in env and "RFC 8986" in env, env
    # a PDR was found for every behavior searched, or the test says why not
    goals = db.execute("SELECT behavior, status, lower_pps, note FROM searches").fetchall()
    without = [f"{b}: {st} ({note})" for b, st, low, note in goals
               if st not in ("ok", "at_max") or low is None]
    assert not without, "no PDR found: " + "; ".join(without)
    assert _vpp_pids() == before, "VPP left running"
    assert set(glob.glob("/tmp/srperf-vpp.*")) == workdirs, "VPP work directory left"
    assert "srpvp-" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                          text=True).stdout


def test_vpp_sockets_stay_within_the_unix_socket_path_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A run's temporary directory under a deep results folder would make VPP's
    # stats.sock path longer than sun_path holds (found with a real VPP).
    from srperf.testbeds import vpp_sut

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert vpp_sut._socket_parent() == str(tmp_path)
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    assert vpp_sut._socket_parent() == "/tmp"


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(not VPP_BIN, reason="SRPERF_VPP_BIN names no VPP binary")
def test_profile_trial_with_vpp_stores_and_reports_per_node_cost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real profile trial with VPP as the SUT: ``show runtime`` per graph node read
    after the trial, the nodes that forwarded (clocks and vectors) stored with the
    search, and shown in the HTML report."""
    import json

    from srperf.cli.entry import main

    exp = {"name": "vpp-prof", "forwarder": "vpp", "behaviors": ["end", "end_ad"],
           "repetitions": 1,
           "search": {"algorithm": "bisect", "thresholds_pct": [0.5], "trial_duration_s": 0.2,
                      "accuracy": "10%", "min_rate": "5%", "max_rate": "100%"},
           "profile": {"enabled": True, "fraction": 0.9, "duration_s": 0.5}}
    tb = {"name": "vpp-prof", "kind": "virtual", "prefix": "p8v",
          "tester": {"line_rate_pps": 200000}, "sut": {"vpp_binary": VPP_BIN}}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    (tmp_path / "tb.yaml").write_text(yaml.safe_dump(tb))
    res = tmp_path / "res"
    rc = main(["run", str(tmp_path / "exp.yaml"), "--testbed", str(tmp_path / "tb.yaml"),
               "--results", str(res)])
    out = capsys.readouterr().out
    assert rc == 0, out
    db = sqlite3.connect(res / "srperf.sqlite")
    rows = db.execute("SELECT behavior, rate_pps, packets, detail FROM profiles").fetchall()
    assert sorted(b for b, *_ in rows) == ["end", "end_ad"], rows
    expected = {"end": "sr-localsid", "end_ad": "srv6-ad-localsid"}
    for behavior, rate, packets, detail in rows:
        assert rate > 0 and packets > 0, (behavior, rate, packets)
        nodes = {n["node"]: n for n in json.loads(detail)["nodes"]}
        node = nodes.get(expected[behavior])
        assert node is not None, f"{behavior}: no {expected[behavior]} in {sorted(nodes)}"
        # the node handled about the trial's packets, at a real cost per packet
        assert node["vectors"] >= 0.5 * packets and node["clocks"] > 0, node
        assert node["vectors_per_call"] >= 1.0, node
    run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    assert main(["report", run_id, "--results", str(res), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "VPP graph nodes" in html and "srv6-ad-localsid" in html and "sr-localsid" in html
