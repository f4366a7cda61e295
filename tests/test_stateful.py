"""Stateful experiments (srperf.stateful): the goodput kind's settings, statistics,
comparison, and real TCP (iperf3) through End and the eBPF caching proxy in namespaces."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.config.loader import load_experiment
from srperf.results.store import ResultStore
from srperf.stateful.stats import spread
from srperf.stateful.base import StatefulSample, Variant
from refusals import assert_experiment_refused

TB = "name: s22a\nkind: virtual\nprefix: s22a\n"


def _exp(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("body, key, value", [
    ("kind: goodput\ngoodput: {streams: 0}", "goodput.streams", "0"),
    ("kind: goodput\ngoodput: {streams: many}", "goodput.streams", "many"),
    ("kind: goodput\ngoodput: {segments: [2, 2]}", "goodput.segments", "[2, 2]"),
    ("kind: goodput\ngoodput: {segments: [1]}", "goodput.segments[0]", "1"),
    ("kind: goodput\ngoodput: {repetitions: 1}", "goodput.repetitions", "1"),
    ("kind: goodput\ngoodput: {vnf_modes: [shred]}", "goodput.vnf_modes[0]", "shred"),
    ("kind: goodput\ngoodput: {calibration: {growth_pct: 0}}",
     "goodput.calibration.growth_pct", "0"),
    ("kind: pdr\ngoodput: {streams: 2}", "goodput", "streams"),
    ("kind: http\nhttp: {threads: 20, connections: 10}", "http.threads", "20"),
    ("kind: http\nhttp: {object_sizes: [1XB]}", "http.object_sizes[0]", "1XB"),
    ("kind: http\nhttp: {server: apache}", "http.server", "apache"),
    ("kind: stateless", "kind", "stateless"),
])
def test_validate_refuses_bad_stateful_values(tmp_path, capsys, body, key, value):
    path = _exp(tmp_path, f"name: x\nbehaviors: [end]\n{body}\n")
    assert_experiment_refused(path, key, value, capsys)


def test_goodput_settings_parse():
    exp = load_experiment(Path(__file__).parent.parent / "experiments"
                          / "caching_proxy_goodput.yaml")
    assert exp.kind == "goodput" and exp.goodput.streams == "calibrated"
    assert exp.goodput.segments == (2, 4, 8) and exp.goodput.vnf_modes == ("forward", "drop",
                                                                             "snat")


def test_spread_positive_interval():
    sp = spread([10.0, 12.0, 11.0, 9.0, 13.0])
    assert sp is not None and sp.n == 5 and sp.mean == pytest.approx(11.0)
    # log-normal (Cox) interval, close to the t one (11 ± 1.96) for a small spread
    assert 0 < sp.low < sp.mean < sp.high
    assert sp.high - sp.low == pytest.approx(2 * 2.776 * 1.5811 / 5 ** 0.5, rel=0.05)
    assert spread([]) is None and spread([5.0]).low is None


def _plant(store: ResultStore, goodput: float, seed: int) -> str:
    run = store.begin_run("cache", "virtual", "ebpf", {})
    rnd = random.Random(seed)
    for rep in range(1, 11):
        value = goodput * (1 + rnd.uniform(-0.01, 0.01))
        store.add_stateful_sample(
            run, "goodput", "end_cache", "ebpf",
            Variant("vnf forward, 2 segs; 10 streams", {"streams": 10, "segments": 2}), rep,
            StatefulSample({"goodput_mbps": value}), duration_s=2.0,
            primary_metric="goodput_mbps")
    store.end_run(run, "finished")
    return run


def test_compare_flags_a_planted_goodput_regression(tmp_path, capsys):
    store = ResultStore(tmp_path / "srperf.sqlite")
    base, same, worse = _plant(store, 1000.0, 1), _plant(store, 1000.0, 2), \
        _plant(store, 900.0, 3)
    store.close()
    assert main(["compare", base, same, "--results", str(tmp_path)]) == 0  # measured-ok: planted
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "end_cache" in x and "goodput_mbps" in x)
    assert "no_change" in line  # measured-ok: planted
    assert main(["compare", base, worse, "--results", str(tmp_path)]) == 1  # measured-ok: planted
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "end_cache" in x and "goodput_mbps" in x)
    assert "regression" in line and "-10." in line  # measured-ok: planted


def _rows(results: Path) -> list[dict]:
    with sqlite3.connect(results / "srperf.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM stateful_samples ORDER BY id")]
    for r in rows:   # the primary metric's value and the stream count, for the checks
        r["value"] = json.loads(r["metrics"]).get(r["primary_metric"])
        r["streams"] = json.loads(r["variant_params"]).get("streams")
    return rows


@pytest.mark.netns
def test_goodput_through_caching_proxy_with_table_i(tmp_path, capsys):
    """Real iperf3 through end_cache and a VNF dropping 1 %: TCP completes, the proxy's
    counters show the behavior was hit, and Table I has zero not-cached."""
    tb = tmp_path / "tb.yaml"
    tb.write_text(TB)
    exp = _exp(tmp_path, "name: s22a_cache\nkind: goodput\nforwarder: ebpf\n"
                         "behaviors: [end_cache, end_as]\n"
                         "goodput: {streams: 2, duration_s: 1, repetitions: 2, "
                         "segments: [3], vnf_modes: [drop]}\n")
    results = tmp_path / "res"
    assert main(["run", str(exp), "--testbed", str(tb), "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "end_cache, vnf drop, 3 segs" in out and "Table I" in out
    rows = _rows(results)
    cache = [r for r in rows if r["behavior"] == "end_cache"]
    assert len(cache) == 2 and all(r["status"] == "ok" for r in cache)
    for r in cache:
        assert r["value"] > 0
        t = json.loads(r["counters"])["table_i"]
        assert t["ingress_ok"] > 0 and t["egress_ok"] > 0 and t["not_cached"] == 0
        assert t["egress_ok"] < t["ingress_ok"]      # the VNF dropped some
    static = [r for r in rows if r["behavior"] == "end_as"]
    assert [r["status"] for r in static] == ["unsupported"]
    assert "static header has 2" in static[0]["reason"]


@pytest.mark.netns
def test_goodput_through_end_with_calibration(tmp_path, capsys):
    """Linux End both ways, streams calibrated with the function bypassed (plain IPv6)."""
    tb = tmp_path / "tb.yaml"
    tb.write_text(TB)
    exp = _exp(tmp_path, "name: s22a_end\nkind: goodput\nbehaviors: [end]\n"
                         "goodput: {streams: calibrated, duration_s: 1, repetitions: 2, "
                         "calibration: {max_streams: 2, duration_s: 1, repetitions: 1}}\n")
    results = tmp_path / "res"
    assert main(["run", str(exp), "--testbed", str(tb), "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "(calibrated)" in out
    rows = _rows(results)
    chosen = [r for r in rows if r["kind"] == "calibration" and r["variant"] == "chosen"]
    assert len(chosen) == 1 and 1 <= chosen[0]["streams"] <= 2
    end = [r for r in rows if r["kind"] == "goodput"]
    assert len(end) == 2 and all(r["status"] == "ok" and r["value"] > 0 for r in end)
    assert all(r["streams"] == chosen[0]["streams"] for r in end)
    # a second run uses the stored calibration instead of running one
    assert main(["run", str(exp), "--testbed", str(tb), "--results", str(results)]) == 0
    assert "stored by run" in capsys.readouterr().out


def test_stateful_kind_refused_where_no_endpoints_are_made(tmp_path, capsys):
    """A goodput experiment on a testbed kind srperf cannot place a client and server on
    (here the simulated one) is refused before anything starts: exit 2 naming the key."""
    exp = _exp(tmp_path, "name: s22a_sim\nkind: goodput\nbehaviors: [end]\n"
                         "goodput: {streams: 1, duration_s: 1, repetitions: 2}\n")
    code = main(["run", str(exp), "--testbed", "simulated", "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "exp.yaml" in err and "kind" in err and "goodput" in err and "simulated" in err
