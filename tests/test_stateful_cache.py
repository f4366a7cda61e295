"""The caching-proxy goodput experiment's open points, with real iperf3 in namespaces
(prefix ``p8c``): TCP through a source-NAT VNF behind the caching proxy, segments carried
in the SRH instead of visited, and repetitions interleaved across configurations."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from srperf.cli.entry import main

TB = "name: p8c\nkind: virtual\nprefix: p8c\n"


def _files(tmp_path: Path, exp: str) -> tuple[Path, Path, Path]:
    tb = tmp_path / "tb.yaml"
    tb.write_text(TB)
    path = tmp_path / "exp.yaml"
    path.write_text(exp)
    return tb, path, tmp_path / "res"


def _rows(results: Path) -> list[dict]:
    with sqlite3.connect(results / "srperf.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM stateful_samples ORDER BY id")]
    for r in rows:
        r["value"] = json.loads(r["metrics"]).get(r["primary_metric"])
        r["params"] = json.loads(r["variant_params"])
    return rows


@pytest.mark.netns
@pytest.mark.skipif(shutil.which("nft") is None, reason="nft (nftables) not installed")
def test_tcp_through_a_snat_vnf_behind_the_caching_proxy(tmp_path, capsys):
    """Real iperf3 through end_cache and a VNF that source-NATs (nftables): the client's
    packets leave the VNF with a new source, the server's answers come back to that
    address and leave the VNF de-NATed (a new destination). Both must find their cached
    header: TCP connects, carries data, and the proxy reports nothing not cached."""
    tb, exp, results = _files(tmp_path, "name: p8c_snat\nkind: goodput\nforwarder: ebpf\n"
                              "behaviors: [end_cache]\n"
                              "goodput: {streams: 2, duration_s: 1, repetitions: 2, "
                              "segments: [2], vnf_modes: [snat]}\n")
    assert main(["run", str(exp), "--testbed", str(tb), "--results", str(results)]) == 0, \
        capsys.readouterr().out
    rows = [r for r in _rows(results) if r["kind"] == "goodput"]
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["reason"] for r in rows]
    for r in rows:
        assert r["value"] > 0
        counters = json.loads(r["counters"])
        t = counters["table_i"]
        assert t["ingress_ok"] > 0 and t["not_cached"] == 0, t
        assert counters["dataplane"]["cache_hit"] > 0


def test_carried_segments_come_first_and_only_two_are_visited():
    """segment_mode carried: the extra SIDs lead the list (srh_carry marks them visited),
    so the server installs no End SID for them; visited: they follow the behavior's."""
    from srperf.config.model import TestbedConfig
    from srperf.stateful.steering import route_for, segment_lists

    tb = TestbedConfig(name="p8c", prefix="p8c")
    route = route_for("end_cache", tb)
    carried = segment_lists(route, tb, 5, 2, "carried")
    visited = segment_lists(route, tb, 5, 2, "visited")
    for k in range(2):
        assert sorted(carried[k]) == sorted(visited[k]) and len(carried[k]) == 5
        assert carried[k][3:] == [route.forward[0], visited[k][-1]]
        assert visited[k][0] == route.forward[0]
    assert carried[0][-1] != carried[1][-1]      # each chain ends at its own server SID


@pytest.mark.netns
def test_carried_segments_and_interleaved_repetitions(tmp_path, capsys):
    """Real iperf3 through end_cache with 2 and 6 segments carried: the 6-segment SRH
    reaches the SUT with 4 SIDs marked visited (the server has no route for them: had
    anything visited one, TCP would not connect), and the repetitions are stored
    interleaved (rep 1 of each configuration, then rep 2)."""
    tb, exp, results = _files(tmp_path, "name: p8c_carry\nkind: goodput\nforwarder: ebpf\n"
                              "behaviors: [end_cache]\n"
                              "goodput: {streams: 1, duration_s: 1, repetitions: 2, "
                              "segments: [2, 6], segment_mode: carried, "
                              "vnf_modes: [forward]}\n")
    assert main(["run", str(exp), "--testbed", str(tb), "--results", str(results)]) == 0, \
        capsys.readouterr().out
    out = capsys.readouterr().out
    assert "the first 4 carried, not visited" in out
    rows = [r for r in _rows(results) if r["kind"] == "goodput"]
    assert [(r["params"]["segments"], r["repetition"]) for r in rows] == \
        [(2, 1), (6, 1), (2, 2), (6, 2)]
    assert all(r["status"] == "ok" and r["value"] > 0 for r in rows), \
        [r["reason"] for r in rows]
    for r in rows:
        counters = json.loads(r["counters"])
        assert counters["table_i"]["not_cached"] == 0
        if r["params"]["segments"] == 6:
            assert "(4 carried)" in r["variant"]
            assert counters["srh_carry"]["carried"] > 0, counters
        else:
            assert "carried" not in r["variant"] and "srh_carry" not in counters


def test_validate_refuses_an_unknown_segment_mode(tmp_path, capsys):
    from refusals import assert_experiment_refused

    path = tmp_path / "exp.yaml"
    path.write_text("name: x\nbehaviors: [end_cache]\nforwarder: ebpf\nkind: goodput\n"
                    "goodput: {segment_mode: skipped}\n")
    assert_experiment_refused(path, "goodput.segment_mode", "skipped", capsys)
