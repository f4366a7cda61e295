"""Stateful samples in the results store: migration 7, frames and their summary."""

from __future__ import annotations

import math
import sqlite3
import statistics
import sys
from pathlib import Path

import pytest

from srperf.results import frames, schema
from srperf.results.store import ResultStore
from srperf.stateful.base import StatefulSample, Variant

sys.path.insert(0, str(Path(__file__).parent))
from stateful_samples import goodput_run  # noqa: E402

V1K = Variant("1KB", {"object_size_bytes": 1024})


def _http_run(store: ResultStore) -> str:
    run = store.begin_run("stateful-http", "virtual", "linux", {})
    for rep, (rps, lat) in enumerate([(1000.0, 2.0), (1100.0, 2.5), (1300.0, 1.5)], 1):
        store.add_stateful_sample(
            run, "http", "end_am", "ebpf", V1K, rep,
            StatefulSample({"requests_per_s": rps, "latency_p50_ms": lat},
                           detail={"wrk": "raw"}),
            duration_s=2.0, primary_metric="requests_per_s",
            counters={"ingress_ok": 10 * rep, "egress_ok": 9 * rep, "not_cached": rep,
                      "in_ad": 10 * rep},
            started="2026-11-26T12:00:00+00:00", finished="2026-11-26T12:00:02+00:00")
    store.add_stateful_sample(run, "http", "end_am", "ebpf", V1K, 4,
                              StatefulSample({}, status="failed", reason="wrk: timeout"),
                              duration_s=2.0, primary_metric="requests_per_s")
    store.add_stateful_sample(run, "http", "end_as", "ebpf", V1K, 1,
                              StatefulSample({}, status="unsupported",
                                             reason="no End.AS in this kernel"),
                              primary_metric="requests_per_s")
    store.end_run(run, "finished")
    return run


def test_round_trip(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        run = _http_run(store)
        rows = store.stateful_samples(run)
        assert [r["status"] for r in rows] == ["ok", "ok", "ok", "failed", "unsupported"]
        first = rows[0]
        assert first["metrics"] == {"requests_per_s": 1000.0, "latency_p50_ms": 2.0}
        assert first["variant"] == "1KB" and first["variant_params"] == {
            "object_size_bytes": 1024}
        assert first["detail"] == {"wrk": "raw"} and first["counters"]["ingress_ok"] == 10
        assert first["started"] == "2026-11-26T12:00:00+00:00" and first["duration_s"] == 2.0
        assert rows[3]["metrics"] == {} and rows[3]["reason"] == "wrk: timeout"
        overview = store.runs_overview().set_index("run_id")
        assert overview.loc[run, "searches"] == 5 and overview.loc[run, "trials"] == 0
        with pytest.raises(ValueError, match="reason"):
            store.add_stateful_sample(run, "http", "end", "linux", V1K, 1,
                                      StatefulSample({}, status="failed"))
        # copied with its run (nightly's shared database)
        with ResultStore(tmp_path / "other.sqlite") as other:
            store.copy_run(run, other)
            assert len(other.stateful_samples(run)) == 5


def test_a_version_6_file_is_migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "v6.sqlite"
    monkeypatch.setattr(schema, "MIGRATIONS",
                        tuple(m for m in schema.MIGRATIONS if m.version <= 6))
    monkeypatch.setattr(schema, "CURRENT_VERSION", 6)
    with ResultStore(path) as store:
        old = store.begin_run("quick", "virtual", "linux", {})
    db = sqlite3.connect(path)
    tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert "stateful_samples" not in tables
    monkeypatch.undo()
    with ResultStore(path) as store:
        assert store.run_row(old) is not None
        run = goodput_run(store, 900.0, reps=2)
        assert len(store.stateful_samples(run)) == 4
    versions = [v for (v,) in sqlite3.connect(path).execute(
        "SELECT version FROM schema_version ORDER BY version")]
    assert 7 in versions and versions == sorted(set(versions))


def test_summary_matches_hand_computation(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        run = _http_run(store)
        s = frames.stateful_samples(store, run)
    summ = frames.stateful_summary(s)
    am = summ[summ["behavior"] == "end_am"]
    assert list(am["metric"]) == ["requests_per_s", "latency_p50_ms"]  # primary first
    rps = am.iloc[0]
    vals = [1000.0, 1100.0, 1300.0]
    mean, sd = sum(vals) / 3, statistics.stdev(vals)
    assert rps["primary"] and rps["n"] == 3
    assert rps["mean"] == pytest.approx(1133.333333)
    assert rps["cv_pct"] == pytest.approx(100 * sd / mean)          # 13.48 %
    # the interval of a positive quantity (srperf.results.positive): Cox's log-normal
    logs = [math.log(v) for v in vals]
    m, var = statistics.fmean(logs), statistics.variance(logs)
    half = 4.302653 * math.sqrt(var / 3 + var * var / 4)                # t(.975, 2)
    assert rps["ci_low"] == pytest.approx(math.exp(m + var / 2 - half), rel=1e-6)
    assert rps["ci_high"] == pytest.approx(math.exp(m + var / 2 + half), rel=1e-6)
    assert rps["ci_low"] > 0 and rps["ci95"] == pytest.approx(
        (rps["ci_high"] - rps["ci_low"]) / 2)
    assert rps["failed"] == 1 and rps["reason"] == "wrk: timeout"
    assert "failed x1" in rps["statuses"] and "ok x3" in rps["statuses"]
    lat = am.iloc[1]
    assert lat["mean"] == pytest.approx(2.0) and lat["std"] == pytest.approx(0.5)
    as_ = summ[summ["behavior"] == "end_as"].iloc[0]
    assert as_["n"] == 0 and as_["metric"] == "" and math.isnan(as_["mean"])
    assert as_["statuses"] == "unsupported x1"
    counters = frames.stateful_counters(s)
    row = counters[counters["behavior"] == "end_am"].iloc[0]
    assert (row["ingress_ok"], row["egress_ok"], row["not_cached"]) == (60, 54, 6)


# -- PostgreSQL ----------------------------------------------------------------------
import pg_server  # noqa: E402


def test_postgresql_round_trip(tmp_path: Path) -> None:
    why = pg_server.unavailable()
    if why:
        pytest.skip(f"PostgreSQL round trip: {why}")
    server = pg_server.start()
    try:
        with ResultStore(server.url) as pg:
            run = _http_run(pg)
            rows = pg.stateful_samples(run)
            assert rows[1]["metrics"]["requests_per_s"] == 1100.0
            assert rows[4]["status"] == "unsupported"
            summ = frames.stateful_summary(frames.stateful_samples(pg, run))
            assert summ.iloc[0]["mean"] == pytest.approx(1133.333333)
            assert pg.runs_overview().set_index("run_id").loc[run, "searches"] == 5
    finally:
        server.stop()


def test_report_renders_the_stateful_section(tmp_path: Path) -> None:
    from srperf.results.report import write_report

    with ResultStore(tmp_path / "r.sqlite") as store:
        http = _http_run(store)
        good = goodput_run(store, 940.0, reps=3)
        html, md = tmp_path / "r.html", tmp_path / "r.md"
        data = write_report(store, [http, good], html, md)
    kinds = {t.kind: t for t in data.stateful}
    assert set(kinds) == {"goodput", "http"}
    am = next(r for r in kinds["http"].rows if r["behavior"] == "end_am")
    assert am["n"] == 3 and am["mean"] == pytest.approx(1133.333333)
    assert am["others"][0]["metric"] == "latency_p50_ms"
    as_ = next(r for r in kinds["http"].rows if r["behavior"] == "end_as")
    assert not as_["has"] and "unsupported" in as_["status"]
    assert kinds["http"].counter_columns == ["ingress_ok", "egress_ok", "not_cached"]
    assert kinds["goodput"].counters == []
    text = html.read_text()
    assert 'id="stateful"' in text and "mean requests_per_s" in text
    assert "unsupported x1: no End.AS in this kernel" in text
    assert "<th>ingress_ok</th>" in text and "<td>60</td>" in text
    assert text.count('alt="bars: ') == 2 and "No search finished" not in text
    summary = md.read_text()
    assert "## Stateful http: requests_per_s" in summary
    assert "| end_am | 1KB |" in summary and "1133.33" in summary
    assert "| 60 | 54 | 6 |" in summary
