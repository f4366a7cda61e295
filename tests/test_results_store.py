"""The results store: versioned migrations, purpose, frames, export, PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest

from srperf.cli.entry import main
from srperf.drivers.base import TrialResult
from srperf.results import frames, schema
from srperf.results.export import export
from srperf.results.store import ResultStore, TrialKey
from srperf.search.base import GoalResult, SearchResult

# The schema of the first srperf release, as files written by it look.
FIRST_SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, started TEXT, finished TEXT, experiment TEXT,
    testbed TEXT, forwarder TEXT, status TEXT, environment TEXT);
CREATE TABLE trials (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, time TEXT,
    behavior TEXT, forwarder TEXT, packet_size INTEGER, repetition INTEGER, search_seq INTEGER,
    rate_pps REAL, duration_s REAL, intended INTEGER, sent INTEGER, refused INTEGER,
    received INTEGER, elapsed_s REAL, offered_rate_pps REAL, loss_ratio REAL,
    generator_limited INTEGER, counters_consistent INTEGER, note TEXT, extra TEXT);
CREATE TABLE searches (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, time TEXT,
    behavior TEXT, forwarder TEXT, packet_size INTEGER, repetition INTEGER, search_seq INTEGER,
    algorithm TEXT, threshold_pct REAL, status TEXT, lower_pps REAL, upper_pps REAL,
    conditional_pps REAL, n_trials INTEGER, trial_seconds REAL, wall_s REAL, note TEXT);
CREATE TABLE outcomes (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, time TEXT,
    behavior TEXT, forwarder TEXT, packet_size INTEGER, status TEXT, reason TEXT);
"""


def _trial(rate: float, received: int, intended: int = 1000) -> TrialResult:
    return TrialResult(rate_pps=rate, duration_s=1.0, intended=intended, sent=intended,
                       refused=0, received=received, elapsed_s=1.0)


def _fill(store: ResultStore, purpose: str = "run") -> str:
    run = store.begin_run("exp", "tb", "linux",
                          {"nodes": {"tester": {"cpu": "x"}, "sut": {"kernel": "6.18"}}},
                          purpose=purpose)
    key = TrialKey("end", "linux", 64, 1, 1)
    store.add_trial(run, key, _trial(100e3, 1000))
    store.add_trial(run, key, _trial(200e3, 990))
    store.add_search(run, key, SearchResult("bisect", [GoalResult(
        0.5, 200e3, 210e3, "ok", estimate_pps=205e3, estimate_low_pps=201e3,
        estimate_high_pps=209e3)], [_trial(100e3, 1000), _trial(200e3, 990)]))
    store.add_outcome(run, "end", "linux", 64, "measured")
    store.add_outcome(run, "end_dt4", "linux", 64, "unsupported", "Error: no VRF")
    store.end_run(run, "finished")
    return run


def test_a_first_release_file_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(FIRST_SCHEMA)
    db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?)",
               ("old-1", "2025-01-01T00:00:00", None, "quick", "virtual", "linux",
                "finished", '{"kernel": "6.1"}'))
    db.execute("INSERT INTO searches (run_id, behavior, packet_size, threshold_pct, status,"
               " lower_pps, upper_pps) VALUES ('old-1', 'end', 64, 0.5, 'ok', 7e5, 7.1e5)")
    db.commit()
    db.close()
    with ResultStore(path) as store:
        runs = store.frame("runs")
        assert runs.loc[0, "purpose"] == "run" and runs.loc[0, "run_id"] == "old-1"
        s = store.frame("searches")
        assert s.loc[0, "lower_pps"] == 7e5 and pd.isna(s.loc[0, "estimate_pps"])
        new = _fill(store, purpose="bench")
        assert set(store.frame("runs")["purpose"]) == {"run", "bench"}
        assert store.frame("searches", new).loc[0, "estimate_pps"] == 205e3
    versions = sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall()
    assert [v for (v,) in versions] == [m.version for m in schema.MIGRATIONS]
    # Opening again applies nothing twice.
    with ResultStore(path) as store:
        assert len(store.frame("runs")) == 2
    assert len(sqlite3.connect(path).execute("SELECT * FROM schema_version").fetchall()) \
        == len(schema.MIGRATIONS)


def test_purpose_is_checked(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(ValueError, match="purpose"):
            store.begin_run("e", "t", "linux", {}, purpose="weekly")
        run = store.begin_run("e", "t", "linux", {})
        store.tag_run(run, purpose="nightly", suite="s1")
        row = store.frame("runs", run).iloc[0]
        assert (row["purpose"], row["suite"]) == ("nightly", "s1")


def test_frames_derive_rates_and_ratios(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        run = _fill(store)
        t = frames.trials(store, run)
        # 990 of 1000 packets in 1 s at 200 kpps: received 990 pps, DR 0.99, loss 1 %.
        second = t.iloc[1]
        assert second["received_rate_pps"] == 990 and second["delivery_ratio"] == 0.99
        assert second["loss_ratio"] == pytest.approx(0.01) and second["offered_kpps"] == 200
        r = frames.runs(store, [run])
        assert r.loc[0, "env"]["nodes"]["sut"]["kernel"] == "6.18"
        assert not r.loc[0, "simulated"]
        s = frames.summaries(store, [run])
        end = s[s.behavior == "end"].iloc[0]
        assert end["run_id"] == run and end["forwarder"] == "linux" and end["mean_kpps"] == 200
        dt4 = s[s.behavior == "end_dt4"].iloc[0]
        assert dt4["status"] == "unsupported" and pd.isna(dt4.get("mean_kpps"))
        assert store.run_ids("last") == [run] and store.run_ids(run[:15]) == [run]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_export_round_trip(tmp_path: Path, fmt: str) -> None:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        run = _fill(store)
        files = export(store, [run], fmt, tmp_path / "out")
    if fmt == "json":
        doc = json.loads(files[0].read_text())
        assert doc["searches"][0]["lower_pps"] == 200e3 and len(doc["trials"]) == 2
        assert doc["summary"][0]["behavior"] == "end"
    else:
        read = pd.read_csv if fmt == "csv" else pd.read_parquet
        names = {p.stem: read(p) for p in files}
        assert set(names) == {"runs", "searches", "trials", "outcomes", "summary"}
        assert list(names["trials"]["received"]) == [1000, 990]
        assert names["runs"].loc[0, "run_id"] == run
    assert main(["export", run, "--format", fmt, "--results", str(tmp_path),
                 "-o", str(tmp_path / "cli")]) == 0


# -- PostgreSQL ----------------------------------------------------------------------
sys.path.insert(0, str(Path(__file__).parent))
import pg_server  # noqa: E402


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    why = pg_server.unavailable()
    if why:
        print(f"\nPostgreSQL round trip skipped: {why}", file=sys.stderr)
        pytest.skip(f"PostgreSQL round trip: {why}")
    server = pg_server.start()
    try:
        yield server.url
    finally:
        server.stop()


def test_postgresql_round_trip(pg_url: str, tmp_path: Path) -> None:
    with ResultStore(pg_url) as pg:
        assert pg.engine.dialect.name == "postgresql" and pg.path is None
        run = _fill(pg, purpose="nightly")
        t = frames.trials(pg, run)
        assert list(t["received"]) == [1000, 990]
        s = pg.frame("searches", run).iloc[0]
        assert (s["lower_pps"], s["estimate_high_pps"]) == (200e3, 209e3)
        assert frames.runs(pg, [run]).loc[0, "env"]["nodes"]["tester"]["cpu"] == "x"
        # A run made in a local SQLite file is copied to the shared database.
        with ResultStore(tmp_path / "local.sqlite") as local:
            other = _fill(local)
            local.copy_run(other, pg)
        assert len(pg.frame("trials", other)) == 2
        assert pg.frame("outcomes", other)["status"].tolist() == ["measured", "unsupported"]
        pg.tag_run(other, purpose="nightly", suite="s")
        pg.add_comparison(other, None, 5.0, "no_baseline")
        assert pg.last_good_run("exp", "tb", "s") == other
        pg.add_comparison(other, None, 5.0, "regression")
        assert pg.last_good_run("exp", "tb", "s") is None
    with ResultStore(pg_url) as again:  # migrations are not applied twice
        assert len(again.frame("runs")) == 2
        with again.engine.connect() as conn:
            assert schema.current_version(conn) == schema.CURRENT_VERSION


def test_update_environment(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        run = store.begin_run("e", "t", "linux", {"kernel": "x"})
        store.update_environment(run, {"nodes": {"sut": {"kernel": "6.18"}}})
        assert frames.runs(store, [run]).loc[0, "env"] == {"nodes": {"sut": {"kernel": "6.18"}}}


def test_a_run_is_found_by_any_unique_part_of_its_id(tmp_path: Path) -> None:
    """Every id starts with its date; the hex suffix is what a user remembers."""
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        first, second = _fill(store), _fill(store)
        assert first != second
        assert store.run_ids(first[-6:]) == [first]  # the hex suffix alone
        assert store.run_ids(second[-6:-1]) == [second]  # any unique part
        assert store.run_ids(first[:9]) == [first, second]  # the date: ambiguous
        assert store.run_ids("zz") == []
        assert store.run_ids(first) == [first]
