"""xdpgen, the live-frames engine: refusals before sending, srgen's report, its call policy
(the program held in the XDP dispatcher by a link on lo; burst and chunk calls), and
cleanup (no program, map or link of the engine left after a run, a failed run or kill -9)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from srperf.drivers.linux import SrgenReport
from srperf.drivers.linux_sink import attach_sink
from srperf.drivers.xdpgen import build_xdpgen, xdpgen_object
from srperf.util.netns import run
from xdpgen_objects import bpftool_list

TX_NS, SINK_NS = "g43-tx", "g43-sink"
PROG = "xdpgen_tx"


def frame(size: int = 60) -> bytes:
    """Ethernet + IPv6 (no next header) padded to ``size`` bytes."""
    eth = bytes.fromhex("025e00000102" "025e00000101" "86dd")
    payload = bytes(size - 54)
    ip6 = (bytes.fromhex("60000000") + len(payload).to_bytes(2, "big") + bytes([59, 64])
           + bytes(32))
    return eth + ip6 + payload


def our_programs() -> list[dict[str, object]]:
    return [p for p in bpftool_list("prog") if p.get("name") == PROG]


def our_maps() -> list[dict[str, object]]:
    return [m for m in bpftool_list("map") if m.get("name") == "xdpgen_cfg"]


def our_links() -> list[dict[str, object]]:
    """XDP links of our program (the dispatcher hold on lo)."""
    ids = {p["id"] for p in our_programs()}
    return [lk for lk in bpftool_list("link") if lk.get("type") == "xdp" and lk.get("prog_id") in ids]


def gone(timeout_s: float = 5.0) -> bool:
    """The kernel frees a closed program and link asynchronously (RCU): wait a little."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not our_programs() and not our_maps() and not our_links():
            return True
        time.sleep(0.1)
    return False


def argv(frame_file: Path, *extra: str, tx: str = "t0") -> list[str]:
    return ["ip", "netns", "exec", TX_NS, str(build_xdpgen()), "-f", str(frame_file),
            "-t", tx, "-x", "t0", "-o", str(xdpgen_object()), "-d", "20", *extra]


@contextmanager
def veth_to_sink(path: Path, tx_ns: str = TX_NS, sink_ns: str = SINK_NS,
                 quiet: bool = False) -> Iterator[Path]:
    """t0 (tx_ns) -- veth -- s0 (sink_ns, XDP drop sink); yields a 60-byte frame file at
    ``path``.  ``quiet``: IPv6 off in both namespaces, so that no router solicitation or
    MLD report of t0's stack adds to the sink's count."""
    try:
        for ns in (tx_ns, sink_ns):
            run(["ip", "netns", "add", ns])
            if quiet:
                run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                     "net.ipv6.conf.default.disable_ipv6=1"], ns=ns)
        run(["ip", "link", "add", "name", "t0", "netns", tx_ns, "type", "veth",
             "peer", "name", "s0", "netns", sink_ns])
        run(["ip", "link", "set", "t0", "up"], ns=tx_ns)
        run(["ip", "link", "set", "s0", "up"], ns=sink_ns)
        attach_sink(sink_ns, "s0")
        path.write_bytes(frame())
        yield path
    finally:
        for ns in (tx_ns, sink_ns):
            run(["ip", "netns", "del", ns], check=False)


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[Path]:
    """t0 (g43-tx) -- veth -- s0 (g43-sink, XDP drop sink); yields a 60-byte frame file."""
    with veth_to_sink(tmp_path / "frame") as path:
        yield path


def test_refuses_frame_larger_than_a_page(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(frame(4000))
    proc = subprocess.run([str(build_xdpgen()), "-f", str(big), "-t", "lo", "-x", "lo",
                           "-o", str(xdpgen_object()), "-r", "0", "-n", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "one page" in proc.stderr


@pytest.mark.parametrize("extra,word", [
    (["-m", "ring"], "mode"),
    (["-k", "7"], "does not hold 7 frames"),
    (["-I", "60:1,60:1"], "does not describe"),
    (["-I", "60:0"], "weights >= 1"),
    (["-k", "2", "-I", "60:1"], "do not go together"),
    (["-a", "100"], "-a needs -p"),
    (["-p", "/dev/null"], "probe trailer"),
])
def test_refuses_what_it_cannot_do(tmp_path: Path, extra: list[str], word: str) -> None:
    f = tmp_path / "f"
    f.write_bytes(frame())
    proc = subprocess.run([str(build_xdpgen()), "-f", str(f), "-t", "lo", "-x", "lo",
                           "-o", str(xdpgen_object()), "-r", "0", "-n", "1", *extra],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert word in proc.stderr


def test_refuses_frames_that_differ_in_too_many_places(tmp_path: Path) -> None:
    """Every packet rewrites its frame's first 256 bytes and one span where the frames'
    ends differ (at most 256 bytes): two flows of 1000 bytes that differ past byte 256
    over more than that are refused before anything is sent."""
    a, b = bytearray(frame(1000)), bytearray(frame(1000))
    b[300] ^= 1
    b[900] ^= 1
    f = tmp_path / "f"
    f.write_bytes(bytes(a + b))
    proc = subprocess.run([str(build_xdpgen()), "-f", str(f), "-t", "lo", "-x", "lo",
                           "-o", str(xdpgen_object()), "-r", "0", "-n", "1", "-k", "2"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "differ over 601 bytes" in proc.stderr


@pytest.mark.netns
def test_report_parses_and_reconciles(topology: Path) -> None:
    proc = subprocess.run(argv(topology, "-r", "100000", "-n", "20000"), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rep = SrgenReport.parse(proc.stdout)
    assert rep.offered == 20000
    assert rep.raw["unaccounted"] == 0
    assert rep.refusals_counted      # every refused frame is a drop the veth counted
    assert gone()


@pytest.mark.netns
def test_serve_mode_and_cleanup(topology: Path) -> None:
    proc = subprocess.run(argv(topology, "-S"), input="trial 50000 5000 20000 2000\n"
                          "trial 0 5000 20000 2000\nquit\n", capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert json.loads(lines[0])["ready"] is True
    reports = [SrgenReport.parse(line) for line in lines[1:]]
    assert [r.offered for r in reports] == [5000, 5000]
    assert gone()


@pytest.mark.netns
def test_kill_9_leaves_nothing(topology: Path) -> None:
    proc = subprocess.Popen(argv(topology, "-r", "10000", "-n", "10000000"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 10
        while not our_programs() and time.monotonic() < end:
            time.sleep(0.05)
        assert our_programs(), "xdpgen never loaded its program"
        end = time.monotonic() + 10
        while not our_links() and time.monotonic() < end:
            time.sleep(0.05)
        assert len(our_links()) == 1      # the dispatcher hold (an XDP link on lo)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # ip netns exec execs xdpgen: same PID
        proc.wait(timeout=10)
    assert gone()


@pytest.mark.netns
def test_call_policy_by_rate(topology: Path) -> None:
    """Held in the dispatcher, xdpgen calls BPF_PROG_RUN many times per trial: one frame
    per call with sleeps in between at 10 kpps (burst), 1 ms chunks at 1 Mpps; -C trial
    makes one call (the program paces it all).  Before the hold each call cost two RCU
    grace periods and xdpgen made one call per trial."""
    proc = subprocess.run(argv(topology, "-S"), input="trial 10000 500 20000 2000\n"
                          "trial 1000000 20000 20000 2000\nquit\n", capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    low, high = (json.loads(line) for line in proc.stdout.splitlines()[1:])
    assert low["held"] == high["held"] == 1
    assert (low["call_policy"], low["per_call"], low["calls"]) == ("burst", 1, 500)
    assert low["sleeps"] > 0
    assert (high["call_policy"], high["per_call"], high["calls"]) == ("chunk", 1000, 20)
    assert low["offered"] == 500 and high["offered"] == 20000
    one = subprocess.run(argv(topology, "-C", "trial", "-r", "100000", "-n", "5000"),
                         capture_output=True, text=True, timeout=60)
    assert one.returncode == 0, one.stderr
    rep = json.loads(one.stdout)
    assert (rep["call_policy"], rep["calls"], rep["offered"]) == ("trial", 1, 5000)
    assert gone()


@pytest.mark.netns
def test_hold_sends_refused_frames_again(topology: Path) -> None:
    """-H: the frames the peer's ring refused are sent again after each call (at most
    HOLD_PKTS waiting); every frame is still sent once or counted refused."""
    attach_sink(SINK_NS, "s0", slow=True)   # a consumer far slower than the sender
    run(["sh", "-c", "echo 1 > /sys/class/net/s0/threaded"], ns=SINK_NS)
    proc = subprocess.run(argv(topology, "-r", "0", "-n", "200000", "-H", "4096"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep = SrgenReport.parse(proc.stdout)
    assert rep.attempts_refused > 0        # the slow sink's ring overflowed
    assert rep.raw["resent"] > 0 and 0 < rep.held_max <= 4096
    assert rep.offered == 200000 and rep.sent + rep.refused == rep.offered
    assert rep.refusals_counted            # every refused attempt is a veth drop
    assert gone()


@pytest.mark.parametrize("extra,word", [(["-C", "often"], "call policy"),
                                        (["-q", "0"], "quantum"), (["-K", "0"], "chunk"),
                                        (["-C", "trial", "-H", "8"], "re-send")])
def test_refuses_bad_call_policy(tmp_path: Path, extra: list[str], word: str) -> None:
    f = tmp_path / "f"
    f.write_bytes(frame())
    proc = subprocess.run([str(build_xdpgen()), "-f", str(f), "-t", "lo", "-x", "lo",
                           "-o", str(xdpgen_object()), "-r", "0", "-n", "1", *extra],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert word in proc.stderr


@pytest.mark.netns
def test_failed_run_leaves_nothing(topology: Path) -> None:
    proc = subprocess.run(argv(topology, "-r", "0", "-n", "1", tx="nosuchdev"),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert gone()


@pytest.mark.netns
def test_stop_lost_ends_the_run_early(topology: Path) -> None:
    attach_sink(SINK_NS, "s0", slow=True)   # a consumer far slower than the sender
    # In its own NAPI thread: in softirq on the sender's CPU the slow sink would pace
    # the sender itself and the ring would hardly ever overflow.
    run(["sh", "-c", "echo 1 > /sys/class/net/s0/threaded"], ns=SINK_NS)
    proc = subprocess.run(argv(topology, "-r", "0", "-n", "2000000", "-L", "1000"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep = SrgenReport.parse(proc.stdout)
    assert rep.stopped
    assert rep.attempts_refused > 1000
    assert rep.offered < 5000000
    assert rep.sent + rep.refused == rep.offered
    assert gone()


@pytest.mark.netns
def test_frames_the_sut_rewrote_in_place_are_not_sent_again(tmp_path: Path) -> None:
    """A kernel router (g4f-rr-*) forwards xdpgen's frames: it writes its new Ethernet
    header into the very page live frames sent, and the page comes back to xdpgen's page
    pool.  Before xdpgen rewrote every packet's headers, every later frame carried the
    router's header (destination t1, not r0) and was dropped: 65 of 20000 arrived."""
    import uuid

    tag = uuid.uuid4().hex[:6]
    tester, router = f"g4f-rt-{tag}", f"g4f-rr-{tag}"
    try:
        for ns in (tester, router):
            run(["ip", "netns", "add", ns])
        for t, r in (("t0", "r0"), ("t1", "r1")):
            run(["ip", "link", "add", t, "netns", tester, "type", "veth", "peer", "name", r,
                 "netns", router])
            run(["ip", "link", "set", t, "up"], ns=tester)
            run(["ip", "link", "set", r, "up"], ns=router)
        run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], ns=tester)
        run(["sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"], ns=router)
        run(["ethtool", "-K", "r0", "gro", "on"], ns=router)   # NAPI for ndo_xdp_xmit
        for dev, addr in (("r0", "fc00:1::1/64"), ("r1", "fc00:2::1/64")):
            run(["ip", "addr", "add", addr, "dev", dev, "nodad"], ns=router)
        t1mac = run(["cat", "/sys/class/net/t1/address"], ns=tester).stdout.strip()
        r0mac = run(["cat", "/sys/class/net/r0/address"], ns=router).stdout.strip()
        run(["ip", "-6", "neigh", "add", "fc00:2::2", "lladdr", t1mac, "dev", "r1",
             "nud", "permanent"], ns=router)
        payload = bytes(28)                 # UDP header (checksum 0) and 20 bytes
        ip6 = (bytes.fromhex("60000000") + len(payload).to_bytes(2, "big") + bytes([17, 64])
               + bytes.fromhex("fc000001" + "0" * 23 + "2")
               + bytes.fromhex("fc000002" + "0" * 23 + "2"))
        path = tmp_path / "routed"
        path.write_bytes(bytes.fromhex(r0mac.replace(":", "") + "020000000001" "86dd")
                         + ip6 + payload)
        proc = subprocess.run(["ip", "netns", "exec", tester, str(build_xdpgen()), "-f",
                               str(path), "-t", "t0", "-x", "t1", "-o", str(xdpgen_object()),
                               "-d", "100", "-s", "20000", "-r", "50000", "-n", "20000"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        rep = SrgenReport.parse(proc.stdout)
        assert rep.offered == 20000
        # every frame arrived (the router's own neighbour discovery may add a few)
        assert rep.sent <= rep.rx_packets_delta <= rep.sent + 20, (rep.sent, rep.rx_packets_delta)
    finally:
        for ns in (tester, router):
            run(["ip", "netns", "del", ns], check=False)


@pytest.fixture
def forwarding(tmp_path: Path) -> Iterator[Path]:
    """t0 (g4p-fa) -> s0 [g4p-fs: GRO, IPv6 forwarding, a static neighbour] s1 -> t1
    (g4p-fa, XDP sink): a SUT's stack that rewrites the frames it forwards (MACs, hop
    limit).  Yields a frame file addressed through it."""
    a, s = "g4p-fa", "g4p-fs"
    try:
        for ns in (a, s):
            run(["ip", "netns", "add", ns])
        for mine, peer, mac_a, mac_s in (("t0", "s0", "01", "02"), ("t1", "s1", "04", "03")):
            run(["ip", "link", "add", mine, "netns", a, "type", "veth", "peer", "name", peer,
                 "netns", s])
            run(["ip", "link", "set", mine, "address", f"02:5e:00:00:02:{mac_a}", "up"], ns=a)
            run(["ip", "link", "set", peer, "address", f"02:5e:00:00:02:{mac_s}", "up"], ns=s)
        run(["ethtool", "-K", "s0", "gro", "on"], ns=s)
        run(["sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1"], ns=s)
        run(["ip", "addr", "add", "2001:db8:1::1/64", "dev", "s0", "nodad"], ns=s)
        run(["ip", "addr", "add", "2001:db8:2::1/64", "dev", "s1", "nodad"], ns=s)
        run(["ip", "route", "add", "2001:db8:9::/64", "via", "2001:db8:2::2", "dev", "s1"], ns=s)
        run(["ip", "neigh", "add", "2001:db8:2::2", "lladdr", "02:5e:00:00:02:04", "dev", "s1",
             "nud", "permanent"], ns=s)
        attach_sink(a, "t1")
        eth = bytes.fromhex("025e00000202" "025e00000201" "86dd")
        payload = bytes(24)
        ip6 = (bytes.fromhex("60000000") + len(payload).to_bytes(2, "big") + bytes([59, 64])
               + bytes.fromhex("20010db8000100000000000000000002")
               + bytes.fromhex("20010db8000900000000000000000001"))
        path = tmp_path / "fwd"
        path.write_bytes(eth + ip6 + payload)
        yield path
    finally:
        for ns in (a, s):
            run(["ip", "netns", "del", ns], check=False)


@pytest.mark.netns
def test_frames_restored_on_recycled_pages(forwarding: Path) -> None:
    """One call of 2000 frames: past the first 64 the kernel sends from recycled pages,
    which the SUT's forwarding had rewritten in place (its MACs); before xdpgen wrote
    the frame again per send only those 64 arrived."""
    cmd = ["ip", "netns", "exec", "g4p-fa", str(build_xdpgen()), "-f", str(forwarding),
           "-t", "t0", "-x", "t1", "-o", str(xdpgen_object()), "-d", "200", "-s", "50000",
           "-C", "trial", "-r", "20000", "-n", "2000"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rep = SrgenReport.parse(proc.stdout)
    assert rep.offered == 2000 and rep.refused == 0
    # the sink may also count xdpgen's one start-up frame (sent before the trial, it can
    # arrive through the forwarding namespace after the trial's counters were read)
    assert rep.sent == 2000 and rep.rx_packets_delta - rep.sent in (0, 1), rep
    assert gone()
