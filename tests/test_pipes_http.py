"""SRv6Pipes end to end, with real lighttpd, wrk and curl in namespaces.

The client downloads objects through a chain of nodes (tproxy + pipes_relay, or End)
and compares their SHA-256 with the server's copy: unchanged through ``relay``,
``xor:3`` (6 passes) and two ``xormask`` nodes (a function and its inverse); a single
``xormask`` node without its inverse must change the bytes (so the check can fail).
"""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from srperf.stateful.http_load import HttpRunner
from srperf.stateful.http_server import object_name
from srperf.stateful.pipes_chain import ROUTER, PipesChain
from srperf.config.stateful import HttpConfig

pytestmark = [pytest.mark.netns]

SIZES = (1000, 100_000)


@pytest.fixture(scope="module")
def chain():
    ch = PipesChain("s22b", [ROUTER, ROUTER])
    try:
        endpoints = ch.up()
        runner = HttpRunner()
        runner.start(endpoints, HttpConfig(object_sizes=SIZES, port=8080))
        yield ch, endpoints, runner
        runner.stop(endpoints)
    finally:
        ch.down()


def download(ch: PipesChain, size: int) -> tuple[int, str]:
    res = subprocess.run(["ip", "netns", "exec", ch.names[0], "curl", "-sS", "-m", "5",
                          f"http://[{ch.server_ip6}]:8080/{object_name(size)}"],
                         capture_output=True, timeout=30)
    return res.returncode, hashlib.sha256(res.stdout).hexdigest()


@pytest.mark.parametrize("roles", [[ROUTER, ROUTER], ["relay", ROUTER], ["xor:3", ROUTER],
                                   [ROUTER, "relay"], ["xormask", "xormask"]],
                         ids=["routers", "relay", "xor3", "router-relay", "xormask-chain"])
def test_bytes_arrive_unchanged(chain, roles) -> None:
    ch, _, runner = chain
    ch.reconfigure(roles)
    for size in SIZES:
        rc, digest = download(ch, size)
        assert rc == 0, f"curl failed through {roles}"
        assert digest == runner.server.sha256(size), f"{size} B changed through {roles}"
    proxies = ch.counters()
    assert len(proxies) == sum(r != ROUTER for r in roles)
    for name, counts in proxies.items():
        assert counts["accepted"] >= len(SIZES), (name, counts)
        assert counts["bytes_down"] >= sum(SIZES), (name, counts)


def test_one_xormask_without_its_inverse_changes_the_bytes(chain) -> None:
    ch, _, runner = chain
    ch.reconfigure(["xormask", ROUTER])
    for size in SIZES:
        rc, digest = download(ch, size)
        assert rc != 0 or digest != runner.server.sha256(size)
    assert ch.counters()[ch.names[1]]["accepted"] >= len(SIZES)


def test_wrk_through_the_relay(chain) -> None:
    ch, endpoints, runner = chain
    ch.reconfigure(["relay", ROUTER])
    cfg = HttpConfig(object_sizes=SIZES, port=8080, connections=4, duration_s=1)
    variants = runner.variants(cfg)
    assert [v.label for v in variants] == ["1KB", "100KB"]
    sample = runner.run(endpoints, cfg, 1, variants[0])
    assert sample.ok, sample.reason
    assert sample.metrics["requests_per_s"] > 0
    assert sample.metrics["latency_p99_ms"] >= sample.metrics["latency_p50_ms"] > 0
    assert ch.counters()[ch.names[1]]["accepted"] >= 4
