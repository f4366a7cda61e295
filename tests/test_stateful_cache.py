"""The caching-proxy goodput experiment's open points, with real iperf3 in namespaces
(prefix ``p8c``): TCP through a source-NAT VNF behind the caching proxy, segments carried
in the SRH instead of visited, and repetitions interleaved across configurations."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from srperf.cli import main

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
