"""The user-space delay line (srperf/traffic/delay_line.py, delay_line.c) in real namespaces: the
round trip grows by twice the delay, frames pass both ways (64 KB GSO frames whole, the
bytes intact), the loss share is drawn, a failed insertion leaves nothing, and the
program ends cleanly on SIGTERM."""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from srperf.traffic import delay_line
from srperf.util.netns import netns_names, run
from srperf.transports.netns import NetnsTransport
from ns_http import fetch, http_server

pytestmark = [pytest.mark.netns]

A, B = "fd00:d2::1", "fd00:d2::2"
MACHINE = NetnsTransport(None)


@contextmanager
def pair() -> Iterator[tuple[str, str]]:
    """Namespaces (a, b) joined by veth e0 (A in a, B in b), answering pings; deleted on
    the way out, with any delay-line namespace of theirs."""
    tag = uuid.uuid4().hex[:5]
    a, b = f"p8d-{tag}a", f"p8d-{tag}b"
    try:
        for ns in (a, b):
            run(["ip", "netns", "add", ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "-n", a, "link", "add", "e0", "type", "veth", "peer", "name", "e0",
             "netns", b])
        for ns, addr in ((a, A), (b, B)):
            run(["ip", "-n", ns, "addr", "add", f"{addr}/64", "dev", "e0", "nodad"])
            run(["ip", "-n", ns, "link", "set", "e0", "up"])
        assert any(run(["ping", "-c", "1", "-W", "1", B], ns=a, check=False).ok
                   for _ in range(10)), "the pair never answered a ping"
        yield a, b
    finally:
        for ns in netns_names():
            if ns.startswith((f"{a}-dl", f"{b}-dl")):
                run(["ip", "netns", "del", ns], check=False)
        for ns in (a, b):
            run(["ip", "netns", "del", ns], check=False)


def rtts(ns: str, count: int, interval: str = "0.05") -> list[float]:
    out = run(["ping", "-c", str(count), "-i", interval, "-W", "2", B], ns=ns,
              check=False).stdout
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]


def nothing_left(a: str, b: str) -> None:
    assert not [n for n in netns_names() if "-dl" in n and n.startswith((a, b))]
    for ns in (a, b):
        assert "dl-e0" not in run(["ip", "link", "show"], ns=ns).stdout
        assert "clsact" not in run(["tc", "qdisc", "show", "dev", "e0"], ns=ns).stdout


def test_round_trip_grows_by_twice_the_delay_both_ways() -> None:
    delay = 10.0
    with pair() as (a, b):
        base = statistics.median(rtts(a, 10))
        lines = [delay_line.insert(MACHINE, ns, "e0", delay) for ns in (a, b)]
        try:
            got = rtts(a, 10)
            counts = [line.counters() for line in lines]
        finally:
            for line in lines:
                line.remove()
        assert len(got) == 10
        added = statistics.median(got) - base
        # at least D each way; at most 2 ms late (a shared 2-vCPU machine's wake-ups)
        assert 2 * delay - 0.2 <= added <= 2 * delay + 2.0, (base, got)
        for c in counts:   # every frame went through and came out, both directions
            assert c["rx"] >= 10 and c["tx"] == c["rx"] and c["lost"] == 0, counts
        assert all(line.final["paths"][0]["pending"] == 0 for line in lines)
        nothing_left(a, b)
        assert statistics.median(rtts(a, 5)) < 2.0   # on time again


def test_loss_share_is_drawn() -> None:
    with pair() as (a, b):
        line = delay_line.insert(MACHINE, b, "e0", 1.0, loss_pct=30.0)
        try:
            answered = rtts(a, 300, "0.005")
            c = line.counters()
        finally:
            line.remove()
        assert c["rx"] >= 300
        assert 0.2 < c["lost"] / c["rx"] < 0.4, c
        assert c["tx"] + c["lost"] == c["rx"]
        assert 150 < len(answered) < 250   # the pings the line let through were answered
        nothing_left(a, b)


def test_gso_frames_pass_whole_and_the_bytes_are_intact(tmp_path: Path) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(bytes(range(256)) * 16_000)   # 4 MB
    with pair() as (a, b):
        lines = [delay_line.insert(MACHINE, ns, "e0", 2.0) for ns in (a, b)]
        try:
            with http_server(b, B, tmp_path, 8097, client_ns=a) as url:
                res = fetch(a, f"{url}/blob", timeout_s=30)
                into_a = lines[0].counters()
        finally:
            for line in lines:
                line.remove()
        assert res.returncode == 0 and res.stdout == blob.read_bytes()
        # TSO frames (up to 64 KB) crossed as one frame each, not cut to the MTU
        assert into_a["rx_bytes"] / into_a["rx"] > 3000, into_a
        nothing_left(a, b)


def test_a_failed_insertion_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    fake = tmp_path / "broken_delay_line"
    fake.write_text("#!/bin/sh\necho 'error: planted failure'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(delay_line, "build_delay_line", lambda: fake)
    with pair() as (a, b):
        with pytest.raises(delay_line.DelayLineError, match="planted failure"):
            delay_line.insert(MACHINE, b, "e0", 5.0)
        nothing_left(a, b)
        with pytest.raises(delay_line.DelayLineError, match="nosuchdev"):
            delay_line.insert(MACHINE, b, "nosuchdev", 5.0)
        nothing_left(a, b)
        assert statistics.median(rtts(a, 3)) < 2.0
    with pytest.raises(ValueError, match="delay_ms"):
        delay_line.DelayLine(MACHINE, "p8d-x", "e0", 20_000.0).insert()


def test_program_ends_cleanly_on_sigterm_and_refuses_bad_usage() -> None:
    exe = str(delay_line.build_delay_line())
    bad = subprocess.run([exe, "-d", "-3", "lo"], capture_output=True, text=True)
    assert bad.returncode == 2 and "error:" in bad.stdout
    assert subprocess.run([exe, "lo"], capture_output=True).returncode == 2
    with pair() as (a, _b):
        proc = subprocess.Popen(["ip", "netns", "exec", a, exe, "-S", "-d", "50", "e0"],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            rtts(a, 2, "0.2")   # frames held when the signal comes are counted as pending
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0
        tag, _, body = out.strip().partition(" ")
        assert tag == "final"
        stats = json.loads(body)
        assert stats["delay_ms"] == 50 and stats["paths"][0]["in"] == "e0"
