"""The eBPF SRv6 proxies on a real namespace testbed (prefix ``ebp``).

A frame goes tester -> SUT (proxy) -> legacy VNF -> SUT (proxy) -> tester and
is captured and compared with scapy; the proxy's counters must account for
every packet; ``clean`` must leave no program, map, pin, qdisc or route.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether

from srperf.behaviors import catalogue as behaviors
from srperf.traffic import packets as P
from srperf.config.model import TestbedConfig
from srperf.drivers.linux import LinuxGenerator
from srperf.forwarders.ebpf.counters import delta, read_counters
from srperf.util.netns import run
from ebpf_helpers import configure, local_env
from srperf.behaviors.proxies import target_sid
from srperf.forwarders.ebpf.forwarder import ProxySettings
from srperf.resources import cfg_script
from srperf.testbeds.virtual import VirtualTestbed
from srperf.testbeds.vnf import VnfSet
from srperf.measure.verify import STATEFUL_GAP_S

pytestmark = pytest.mark.netns

TB = TestbedConfig(name="ebp", prefix="ebp")
A = TB.addressing
SUT = TB.sut_ns
IN, OUT = TB.sut.in_port.name, TB.sut.out_port.name
VNF_IF = "vnf0"


@pytest.fixture(scope="module")
def vnfs():
    vt = VirtualTestbed(TB)
    vnf_set = VnfSet(TB, count=1)
    try:
        vt.up()
        vnf_set.up()
        yield vnf_set
    finally:
        vnf_set.down()
        vt.down()


@pytest.fixture(scope="module")
def gen(vnfs):
    g = LinuxGenerator(TB.tester_ns, TB.tester.tx.name, TB.tester.rx.name)
    try:
        yield g
    finally:
        g.close()


@pytest.fixture(autouse=True)
def clean_after(vnfs):
    yield
    configure(TB, "clean")


def capture(gen: LinuxGenerator, frame, count: int = 3) -> list[Ether]:
    # twins one after another, as verification sends them (a twin still in the VNF is dropped)
    got = gen.capture([bytes(frame)] * count, timeout_s=2.0, gap_s=STATEFUL_GAP_S)
    return [Ether(g) for g in got if P.is_test_frame(g)]


def srh_bytes(frame: Ether) -> bytes:
    """The SRH's bytes as on the wire (fixed part, SIDs, TLVs)."""
    raw = bytes(Ether(bytes(frame))[IPv6ExtHdrSegmentRouting])
    return raw[:8 + 8 * raw[1]]


PROXIES = ["end_ad", "end_ad_v4", "end_as", "end_am", "end_cache", "end_cache_v4"]


@pytest.mark.parametrize("name", PROXIES + ["end_baseline"])
def test_round_trip(name: str, gen: LinuxGenerator) -> None:
    beh = behaviors.get(name)
    configure(TB, beh.cfg_function)
    before = read_counters(SUT)
    frame = beh.build_frame(TB, 64)
    got = capture(gen, frame)
    result = beh.check(TB, frame, got)
    assert result.ok, str(result)
    assert len(got) == 3
    # the SRH that comes back is the one sent, with SL advanced by one
    sent_srh = bytearray(srh_bytes(frame))
    sent_srh[3] -= 1
    for rx in got:
        assert srh_bytes(rx) == bytes(sent_srh)
        assert rx[IPv6].dst == rx[IPv6ExtHdrSegmentRouting].addresses[sent_srh[3]]
    counts = delta(before, read_counters(SUT))
    if name == "end_baseline":
        assert counts == {}, "no proxy may be attached for the baseline"
        return
    # the VNF's own link-local/multicast chatter is counted as from_ignored
    assert counts["in_packets"] == 3
    assert counts["from_packets"] - counts["from_ignored"] == 3
    assert counts["fib_redirect"] == 3
    for bad in ("in_bad", "in_too_long", "err", "miss_drop", "miss_pass", "from_no_state",
                "cache_miss", "cache_dup", "cache_race", "cache_stale", "fib_fallback",
                "in_hop_limit", "in_ext_unsupported", "in_l2_unsupported", "from_hop_limit"):
        assert counts[bad] == 0, (bad, counts)
    if name.startswith("end_ad"):
        assert counts["in_ad"] == counts["from_ad"] == 3
        assert counts["ad_learn"] >= 1 and counts["ad_learn"] + counts["ad_age_skip"] == 3
    elif name == "end_as":
        assert counts["in_as"] == counts["from_as"] == 3 and counts["ad_learn"] == 0
    elif name == "end_am":
        assert counts["in_am"] == counts["from_am"] == 3
    else:
        assert counts["in_cache"] == counts["cache_hit"] == 3
        assert counts["cache_insert"] == 3


def _two_chain_frames() -> tuple[Ether, Ether]:
    """Same inner packet, SID lists (VNF, sid_next) and (VNF, sid_last)."""
    inner = P.udp6(TB, 64)
    a = P.to_sut(TB, P.srv6(A.tester_tx_ip6, [target_sid(TB), A.sid_next], 1, 41) / inner)
    b = P.to_sut(TB, P.srv6(A.tester_tx_ip6, [target_sid(TB), A.sid_last], 1, 41) / inner)
    return a, b


def test_end_ad_age_limits_relearning(gen: LinuxGenerator) -> None:
    """SRNK's age: within it a changed chain is not learned; with age 0 at once."""
    first, changed = _two_chain_frames()
    configure(TB, "end_ad", ProxySettings(age_s=1000))
    assert [f[IPv6].dst for f in capture(gen, first, 1)] == [A.sid_next]
    stale = capture(gen, changed, 2)
    assert [f[IPv6].dst for f in stale] == [A.sid_next] * 2, "restored the first chain"
    counts = read_counters(SUT)
    assert counts["ad_learn"] == 1 and counts["ad_age_skip"] == 2

    configure(TB, "end_ad", ProxySettings(age_s=0))
    assert [f[IPv6].dst for f in capture(gen, first, 1)] == [A.sid_next]
    fresh = capture(gen, changed, 2)
    assert [f[IPv6].dst for f in fresh] == [A.sid_last] * 2
    assert [f[IPv6ExtHdrSegmentRouting].addresses for f in fresh] == \
        [[A.sid_last, target_sid(TB)]] * 2
    counts = read_counters(SUT)
    assert counts["ad_learn"] == 3 and counts["ad_age_skip"] == 0


def test_return_path_through_the_kernel(gen: LinuxGenerator) -> None:
    beh = behaviors.get("end_ad")
    configure(TB, "end_ad", ProxySettings(fib=False))
    frame = beh.build_frame(TB, 64)
    result = beh.check(TB, frame, capture(gen, frame))
    assert result.ok, str(result)
    counts = read_counters(SUT)
    assert counts["fib_fallback"] == 3 and counts["fib_redirect"] == 0


def test_other_traffic_is_left_to_the_kernel(gen: LinuxGenerator) -> None:
    configure(TB, "end_ad")
    plain = behaviors.get("ipv6")
    frame = plain.build_frame(TB, 64)
    result = plain.check(TB, frame, capture(gen, frame))
    assert result.ok, str(result)
    counts = read_counters(SUT)
    assert counts["in_not_sid"] == 3 and counts["in_ad"] == 0 and counts["from_packets"] == 0


@pytest.mark.parametrize("case", ["sl0", "no_srh", "inner_udp"])
def test_malformed_packets_to_a_proxy_sid_are_dropped(case: str, gen: LinuxGenerator) -> None:
    configure(TB, "end_ad")
    sid = target_sid(TB)
    if case == "sl0":
        pkt = P.srv6(A.tester_tx_ip6, [A.sid_next, sid], 0, 41) / P.udp6(TB, 64)
    elif case == "no_srh":
        pkt = IPv6(src=A.tester_tx_ip6, dst=sid, nh=41) / P.udp6(TB, 64)
    else:  # End.AD needs an inner IP packet, not a bare UDP payload
        pkt = P.srv6(A.tester_tx_ip6, [sid, A.sid_next], 1, 17) / P.udp6(TB, 64)[2]
    assert capture(gen, P.to_sut(TB, pkt)) == []
    counts = read_counters(SUT)
    assert counts["in_bad"] == 3 and counts["in_ad"] == 0 and counts["from_packets"] == 0


def _attached(ns: str) -> list[tuple[str, int]]:
    out = run(["bpftool", "net", "show"], ns=ns).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[2].startswith("srp_"):
            found.append((parts[0].split("(")[0], int(parts[4])))
    return found


def _map_ids(prog_id: int) -> list[int]:
    import json

    info = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(prog_id)]).stdout)
    return list(info["map_ids"])


def _gone(kind: str, obj_id: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while run(["bpftool", kind, "show", "id", str(obj_id)], check=False).ok:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture()
def host_bpffs(tmp_path: Path):
    """A bpffs mounted in the host's mount namespace: pins outlive each script run."""
    root = tmp_path / "bpffs"
    root.mkdir()
    subprocess.run(["mount", "-t", "bpf", "bpf", str(root)], check=True)
    try:
        yield root
    finally:
        subprocess.run(["umount", str(root)], check=False)


@pytest.mark.parametrize("function", ["end_ad", "end_as", "end_am", "end_cache",
                                      "end_baseline"])
def test_clean_removes_everything(function: str, host_bpffs: Path) -> None:
    env = local_env(TB)
    # ebpf.sh pins under /sys/fs/bpf/srperf-<ns>; `ip netns exec` gives each command
    # a private /sys, so the host bpffs is bind-mounted there to watch the pins.
    argv = ["sh", "-c", 'mount --bind "$0" /sys/fs/bpf && exec "$@"', str(host_bpffs),
            "env", *[f"{k}={v}" for k, v in env.items()], "bash", str(cfg_script("ebpf"))]
    run(argv + [function], ns=SUT)
    pins = host_bpffs / f"srperf-{SUT}"
    progs = _attached(SUT)
    if function == "end_baseline":
        assert progs == [] and not pins.exists()
    else:
        assert sorted(dev for dev, _ in progs) == sorted([IN, VNF_IF])
        assert (pins / "srp_inbound").exists() and (pins / "maps" / "srp_cache").exists()
    maps = {m for _, p in progs for m in _map_ids(p)}
    assert run(["ip", "-6", "route", "show", "proto", "83"], ns=SUT).stdout.strip()

    run(argv + ["clean"], ns=SUT)
    assert _attached(SUT) == []
    assert not pins.exists()
    # programs and maps are freed after an RCU grace period: give them a moment
    for kind, ids in (("prog", [p for _, p in progs]), ("map", sorted(maps))):
        for obj_id in ids:
            assert _gone(kind, obj_id), f"{kind} {obj_id} still exists after clean"
    for dev in (IN, OUT, VNF_IF):
        assert "clsact" not in run(["tc", "qdisc", "show", "dev", dev], ns=SUT).stdout
    for family in ("-6", "-4"):
        assert run(["ip", family, "route", "show", "proto", "83"], ns=SUT).stdout == ""


def test_clean_removes_only_its_own_pins(host_bpffs: Path) -> None:
    """Another testbed's pin directory, made empty a moment ago by its `load` (the state
    in which the shared /sys/fs/bpf/srperf parent once vanished under it, removed by a
    concurrent `clean`'s rmdir), and any other directory on the bpffs stay as they were:
    `clean` in a namespace removes that namespace's own pins and nothing else."""
    ns = "p8v-pins-a"
    own = host_bpffs / f"srperf-{ns}" / "maps"
    # B's directory just made, and an empty srperf/ as B's load made it under the
    # old layout before its own subdirectory
    others = [host_bpffs / "srperf-p8v-pins-b", host_bpffs / "srperf"]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        own.mkdir(parents=True)
        for d in others:
            d.mkdir(exist_ok=True)
        before = set(host_bpffs.rglob("*"))
        argv = ["sh", "-c", 'mount --bind "$0" /sys/fs/bpf && exec "$@"', str(host_bpffs),
                "bash", str(cfg_script("ebpf")), "clean"]
        run(argv, ns=ns)
        assert not own.parent.exists()
        assert set(host_bpffs.rglob("*")) == before - {own, own.parent}
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
