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
from srperf.stateful.pipes_plan import warm_up

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


def reconfigure(ch: PipesChain, endpoints, roles) -> None:
    """New roles, then one unmeasured fetch as the pipes plan does (``warm_up``): the
    first SYN through a just-configured chain can wait a one-second retransmission."""
    ch.reconfigure(roles)
    warm_up(endpoints, HttpConfig(object_sizes=SIZES, port=8080), SIZES[0])


def download(ch: PipesChain, size: int) -> tuple[int, str]:
    res = subprocess.run(["ip", "netns", "exec", ch.names[0], "curl", "-sS", "-m", "5",
                          f"http://[{ch.server_ip6}]:8080/{object_name(size)}"],
                         capture_output=True, timeout=30)
    return res.returncode, hashlib.sha256(res.stdout).hexdigest()


@pytest.mark.parametrize("roles", [[ROUTER, ROUTER], ["relay", ROUTER], ["xor:3", ROUTER],
                                   [ROUTER, "relay"], ["xormask", "xormask"]],
                         ids=["routers", "relay", "xor3", "router-relay", "xormask-chain"])
def test_bytes_arrive_unchanged(chain, roles) -> None:
    ch, endpoints, runner = chain
    reconfigure(ch, endpoints, roles)
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
    ch, endpoints, runner = chain
    reconfigure(ch, endpoints, ["xormask", ROUTER])
    for size in SIZES:
        rc, digest = download(ch, size)
        assert rc != 0 or digest != runner.server.sha256(size)
    assert ch.counters()[ch.names[1]]["accepted"] >= len(SIZES)


def test_wrk_through_the_relay(chain) -> None:
    ch, endpoints, runner = chain
    reconfigure(ch, endpoints, ["relay", ROUTER])
    cfg = HttpConfig(object_sizes=SIZES, port=8080, connections=4, duration_s=1)
    variants = runner.variants(cfg)
    assert [v.label for v in variants] == ["1KB", "100KB"]
    sample = runner.run(endpoints, cfg, 1, variants[0])
    assert sample.ok, sample.reason
    assert sample.metrics["requests_per_s"] > 0
    assert sample.metrics["latency_p99_ms"] >= sample.metrics["latency_p50_ms"] > 0
    assert ch.counters()[ch.names[1]]["accepted"] >= 4


def qdiscs(ch: PipesChain) -> list[str]:
    """`tc qdisc show` of both ends of every link."""
    out = []
    for link in range(len(ch.roles) + 1):
        for ns, dev in ch.link_devs(link):
            out.append(subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "show", "dev",
                                       dev, "root"], capture_output=True, text=True,
                                      check=True).stdout)
    return out


def test_a_rate_cap_holds_every_link_to_it(chain) -> None:
    """1 Gb/s on every link: wrk's 100 KB transfers stay under it (veth alone carries
    several Gb/s here), and removing the cap removes every tbf."""
    ch, endpoints, runner = chain
    reconfigure(ch, endpoints, ["relay", ROUTER])
    cfg = HttpConfig(object_sizes=SIZES, port=8080, connections=4, duration_s=1)
    ch.set_rate(1000)
    try:
        shown = qdiscs(ch)
        assert all("tbf" in q and "rate 1Gbit" in q for q in shown), shown
        sample = runner.run(endpoints, cfg, 1, runner.variants(cfg)[1])
        assert sample.ok, sample.reason
        # measured-ok: the 1 Gb/s tbf caps it
        assert 0 < sample.metrics["transfer_mbps"] < 1000 * 1.02
    finally:
        ch.set_rate(0)
    assert not any("tbf" in q for q in qdiscs(ch))


def test_relay_counts_its_cpu_time(chain) -> None:
    ch, endpoints, _ = chain
    reconfigure(ch, endpoints, ["relay", ROUTER])
    download(ch, SIZES[1])
    counts = ch.counters()[ch.names[1]]
    assert counts["cpu_user_ms"] >= 0 and counts["cpu_sys_ms"] >= 0
    assert counts["bytes_down"] >= SIZES[1]


def test_nodes_and_endpoints_on_cpus_of_their_own() -> None:
    """node_cpu / endpoint_cpu: the relay's threads are pinned to the node CPU, the links'
    receive processing is steered by RPS, and the bytes still arrive unchanged."""
    import os

    from srperf.forwarders.pipes import PipesOptions

    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two CPUs")
    ch = PipesChain("p8p", ["relay", ROUTER], options=PipesOptions(
        threads=2, node_cpu=1, endpoint_cpu=0))
    try:
        endpoints = ch.up()
        assert endpoints.client.cpu == endpoints.server.cpu == 0
        pid = int(open(ch._envs[1]["SRPERF_PIPES_RUNDIR"] + "/relay.pid").read())
        tids = os.listdir(f"/proc/{pid}/task")
        assert len(tids) == 3   # main thread and two workers
        assert all(os.sched_getaffinity(int(t)) == {1} for t in tids)

        def rps(ns: str, dev: str) -> int:
            text = subprocess.run(["ip", "netns", "exec", ns, "cat",
                                   f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"],
                                  capture_output=True, text=True, check=True).stdout
            return int(text.strip().replace(",", ""), 16)

        assert rps(ch.names[0], "r0") == 1 and rps(ch.names[-1], "l0") == 1
        assert rps(ch.names[1], "l0") == rps(ch.names[1], "r0") == 2
        assert rps(ch.names[2], "l0") == 2
        runner = HttpRunner()
        runner.start(endpoints, HttpConfig(object_sizes=SIZES[:1], port=8080))
        try:
            rc, digest = download(ch, SIZES[0])
            assert rc == 0 and digest == runner.server.sha256(SIZES[0])
        finally:
            runner.stop(endpoints)
    finally:
        ch.down()
