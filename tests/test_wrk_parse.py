"""wrk's report parser on recorded outputs of wrk 4.1 (tests/data/wrk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from srperf.stateful.http_load import FAILED, sample_of
from srperf.stateful.wrk import WrkParseError, parse_wrk, url, wrk_argv

DATA = Path(__file__).parent / "data" / "wrk"


def test_latency_report() -> None:
    r = parse_wrk((DATA / "ok_latency.txt").read_text())
    assert r.requests == 78128
    assert r.duration_s == pytest.approx(1.10)
    assert r.bytes_read == round(86.80 * 1024 ** 2)
    assert r.requests_per_s == pytest.approx(71020.68)
    assert r.transfer_bytes_per_s == pytest.approx(78.91 * 1024 ** 2)
    assert r.transfer_mbps == pytest.approx(78.91 * 1024 ** 2 * 8 / 1e6)
    assert r.latency_avg_ms == pytest.approx(0.18620)
    assert r.latency_stdev_ms == pytest.approx(0.62572)
    assert r.latency_max_ms == pytest.approx(8.80)
    assert r.latency_pct_ms == pytest.approx({50: 0.037, 75: 0.072, 90: 0.379, 99: 2.96})
    assert r.errors == 0 and r.non_2xx == 0
    sample = sample_of(r)
    assert sample.ok
    assert sample.metrics["requests_per_s"] == pytest.approx(71020.68)
    assert sample.metrics["latency_p99_ms"] == pytest.approx(2.96)


def test_seconds_and_socket_errors() -> None:
    r = parse_wrk((DATA / "errors_seconds.txt").read_text())
    assert r.latency_avg_ms == pytest.approx(1210.0)
    assert r.latency_pct_ms[99] == pytest.approx(1990.0)
    assert r.socket_errors == {"connect": 0, "read": 3, "write": 0, "timeout": 7}
    assert r.errors == 10
    assert r.bytes_read == round(248.11 * 1024 ** 2)
    assert sample_of(r).metrics["socket_errors"] == 10


def test_non_2xx_is_a_failed_sample_not_a_rate() -> None:
    r = parse_wrk((DATA / "non2xx.txt").read_text())
    assert r.non_2xx == 112903 == r.requests
    assert r.latency_pct_ms == {}   # run without --latency
    sample = sample_of(r)
    assert sample.status == FAILED and not sample.metrics
    assert "not 2xx/3xx" in sample.reason


@pytest.mark.parametrize("cut", ["Requests/sec", "Transfer/sec", "requests in", "Latency  "])
def test_missing_line_is_an_error(cut: str) -> None:
    text = "\n".join(line for line in (DATA / "ok_latency.txt").read_text().splitlines()
                     if cut not in line)
    with pytest.raises(WrkParseError, match="no"):
        parse_wrk(text)


def test_command_line() -> None:
    target = url("fd00::2", 8080, "/obj-1000.bin")
    assert target == "http://[fd00::2]:8080/obj-1000.bin"
    argv = wrk_argv(target, threads=2, connections=20, duration_s=1.4, cpu=1)
    assert argv[:3] == ["taskset", "-c", "1"]
    assert argv[3:] == ["wrk", "-t", "2", "-c", "20", "-d", "1s", "--timeout", "2s",
                        "--latency", target]
