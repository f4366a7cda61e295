"""Impairments on a pipes chain are real: a share of packets is dropped (counted by the
drop program and seen by TCP as retransmissions); a delay (netem, else the user-space
delay line) adds its round trip, with a loss drawn by the delay line beside it."""

from __future__ import annotations

import re
import statistics
import subprocess

import pytest

from srperf.stateful import impair
from srperf.stateful.pipes_chain import ROUTER, PipesChain
from ns_http import fetch, http_server

pytestmark = [pytest.mark.netns]


def _retrans(ns: str) -> int:
    out = subprocess.run(["ip", "netns", "exec", ns, "nstat", "-az", "TcpRetransSegs"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split("TcpRetransSegs")[1].split()[0])


def test_loss_is_real(tmp_path) -> None:
    with PipesChain("s22b", [ROUTER]) as ch:
        ch.up()
        server, client = ch.names[-1], ch.names[0]
        with pytest.raises(ValueError):
            impair.Impairment(0, "sideways")
        has_netem, _ = impair.netem_available(client, "r0")
        applied = impair.apply(ch, impair.Impairment(1, "reverse", loss_pct=10))
        try:
            assert [a.method for a in applied] == ["netem" if has_netem else "bpf-drop"]
            assert applied[0].sender == (server, "l0")
            obj = tmp_path / "blob"
            obj.write_bytes(bytes(range(256)) * 8000)   # 2 MB from the server
            with http_server(server, ch.server_ip6, tmp_path, 8099, client_ns=client) as url:
                before = _retrans(server)
                res = fetch(client, f"{url}/blob")
                assert res.returncode == 0 and res.stdout == obj.read_bytes()
                assert _retrans(server) - before > 10   # the server resent lost segments
            if not has_netem:
                counts = impair.drop_counts(applied[0])
                total = counts["passed"] + counts["dropped"]
                assert total > 1000, counts   # one MTU-sized segment per packet (no GSO)
                assert 0.06 < counts["dropped"] / total < 0.14, counts
        finally:
            impair.remove(applied)


def _rtt_ms(ns: str, dst: str, count: int = 8) -> float:
    """Median round trip (ms) once a ping has been answered (the first ones through a
    fresh chain wait for neighbour discovery)."""
    for _ in range(20):
        if subprocess.run(["ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "1", dst],
                          capture_output=True).returncode == 0:
            break
    out = subprocess.run(["ip", "netns", "exec", ns, "ping", "-c", str(count), "-i", "0.05",
                          "-W", "2", dst], capture_output=True, text=True).stdout
    times = [float(t) for t in re.findall(r"time=([\d.]+) ms", out)]
    assert times, out
    return statistics.median(times)


def test_delay_and_loss_through_a_pipes_chain(tmp_path) -> None:
    """Link 0 delayed 10 ms each way, link 1 delayed 5 ms with 5 % loss each way: the
    client's round trip to the server grows by 30 ms, a fetch through the relay arrives
    intact, the delay line drew about the loss share asked for; removal undoes it all."""
    with PipesChain("p8d", ["relay"]) as ch:
        ch.up()
        client, server = ch.names[0], ch.names[-1]
        has_netem, _ = impair.netem_available(client, "r0")
        base = _rtt_ms(client, ch.server_ip6)
        applied = impair.apply(ch, impair.Impairment(0, "both", delay_ms=10))
        try:
            applied += impair.apply(ch, impair.Impairment(1, "both", loss_pct=5, delay_ms=5))
            want = "netem" if has_netem else "delay-line"
            assert [a.method for a in applied] == [want] * 4
            added = _rtt_ms(client, ch.server_ip6, 12) - base
            assert 29.8 <= added <= 34.0, (base, added)   # lost pings do not count
            obj = tmp_path / "blob"
            obj.write_bytes(bytes(range(256)) * 4000)   # 1 MB from the server
            with http_server(server, ch.server_ip6, tmp_path, 8098, client_ns=client) as url:
                res = fetch(client, f"{url}/blob")
                assert res.returncode == 0, res.stderr
                assert res.stdout == obj.read_bytes()
            if not has_netem:
                lossy = impair.drop_counts(applied[2])   # link 1, toward the server
                back = impair.drop_counts(applied[3])    # link 1, toward the relay
                assert back["passed"] > 500, back        # the object's segments
                total = back["passed"] + back["dropped"]
                assert 0.02 < back["dropped"] / total < 0.09, back
                assert lossy["passed"] > 0 and back["overflow"] == 0
        finally:
            impair.remove(applied)
        names = subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout.split()
        assert not [n for n in names if n.startswith("p8d-") and "-dl" in n]
        assert _rtt_ms(client, ch.server_ip6) < base + 2.0
