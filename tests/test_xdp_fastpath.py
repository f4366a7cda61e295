"""The fast path on a virtual testbed (prefix x45): every program against scapy frames
with BPF_PROG_RUN (frame in, frame out, verdict), the dispatcher's miss path, End's
drops, the hop limit, per-flow and per-colour counters, a short ``srperf run`` and
cleanup after success, failure and ``kill -9``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import xdp_helpers as X
from srperf.behaviors import catalogue, fastpath
from srperf.config.model import TestbedConfig

pytestmark = pytest.mark.netns

TB = TestbedConfig(name="x45p", prefix="x45p")
REDIRECT, PASS, DROP = 4, 2, 1


@pytest.fixture(scope="module")
def testbed():
    yield from X.testbed_up(TB)


@pytest.fixture()
def sut(testbed):
    yield from X.clean_sut(TB)


def frame_of(chain: str) -> bytes:
    return bytes(catalogue.get(chain).frame_builder(TB, 64))


CHAINS = ["xdp_fw", "xdp_end_fw", "xdp_enc_fw", "xdp_enc_mon_fw", "xdp_mon_fw", "xdp_pass",
          "xdp_nop7_fw", "xdp_enc8_fw", "xdp_end_mon_fw"]


@pytest.mark.parametrize("fw", ["static", "fib"])
@pytest.mark.parametrize("chain", CHAINS)
def test_each_chain_emits_its_frame(sut, chain: str, fw: str) -> None:
    X.load(TB, chain, fw=fw)
    sent = frame_of(chain)
    steps = fastpath.parse_chain(chain)
    run = X.prog_run(TB, sent, repeat=1, tail_calls=len(steps))
    expected = catalogue.get(chain).expect(TB, catalogue.get(chain).frame_builder(TB, 64))
    assert run.verdict == "XDP_REDIRECT", run
    assert run.frame_out == bytes(expected.frame)
    assert X.counters(TB)["tail_call_failed"] == 0


@pytest.mark.parametrize("chain", ["xdp_end", "xdp_enc", "xdp_nop", "xdp_mon", "xdp_end_fw"])
def test_a_chain_ending_in_the_kernel_passes_the_frame_as_its_steps_left_it(sut,
                                                                            chain: str) -> None:
    X.load(TB, chain, fw="kernel")
    steps = fastpath.parse_chain(chain)
    sent = catalogue.get(chain).frame_builder(TB, 64)
    upto = len(steps) - 1 if steps[-1].program == "fw" else len(steps)
    run = X.prog_run(TB, bytes(sent))
    assert run.verdict == "XDP_PASS"
    assert run.frame_out == bytes(fastpath.model(TB, steps, sent, upto=upto))
    counts = X.counters(TB)
    assert counts["fw_kernel" if steps[-1].program == "fw" else "chain_end"] == 1


def test_a_lookup_miss_goes_to_the_kernel_unchanged(sut) -> None:
    X.load(TB, "xdp_end_fw")
    other = frame_of("xdp_fw")     # plain IPv6 to dst6: no chain on it
    run = X.prog_run(TB, other, repeat=3)
    assert (run.verdict, run.frame_out) == ("XDP_PASS", other)
    arp = bytes.fromhex("ffffffffffff" "020000000001" "0806") + bytes(46)
    assert X.prog_run(TB, arp).verdict == "XDP_PASS"
    counts = X.counters(TB)
    assert (counts["miss"], counts["rx"]) == (4, 4)


def test_end_drops_what_the_kernel_s_end_drops(sut) -> None:
    from scapy.layers.inet6 import IPv6
    import srperf.traffic.packets as P

    X.load(TB, "xdp_end_fw")
    a = TB.addressing
    sl0 = P.to_sut(TB, P.srv6(a.tester_tx_ip6, [a.sid_next, a.sid_sut], 0, P.NH_IPV6)
                   / P.udp6(TB, 64))
    no_srh = P.to_sut(TB, IPv6(src=a.tester_tx_ip6, dst=a.sid_sut) / P.udp6(TB, 64))
    assert X.prog_run(TB, bytes(sl0)).verdict == "XDP_DROP"
    assert X.prog_run(TB, bytes(no_srh)).verdict == "XDP_DROP"
    counts = X.counters(TB)
    assert (counts["end_sl0"], counts["end_no_srh"], counts["end_done"]) == (1, 1, 0)


def test_hop_limit_1_is_left_to_the_kernel(sut) -> None:
    from scapy.layers.inet6 import IPv6

    X.load(TB, "xdp_fw", fw="static")
    sent = catalogue.get("xdp_fw").frame_builder(TB, 64)
    sent[IPv6].hlim = 1
    run = X.prog_run(TB, bytes(sent))
    assert (run.verdict, run.frame_out) == ("XDP_PASS", bytes(sent))
    assert X.counters(TB)["fw_hop_limit"] == 1


def test_mon_counts_per_flow_and_colour(sut) -> None:
    from scapy.layers.inet6 import IPv6

    X.load(TB, "xdp_mon_fw", flows=4)
    plain = catalogue.get("xdp_mon_fw").frame_builder(TB, 64)
    coloured = plain.copy()
    coloured[IPv6].tc = 0x04      # PM_COLOUR_TC_BIT: colour 1
    X.prog_run(TB, bytes(plain), repeat=10)
    X.prog_run(TB, bytes(coloured), repeat=5)
    assert X.flow_counts(TB) == {0: 10, 1: 5}  # flow 0: index 0 colour 0, index 1 colour 1
    # a packet of no monitored flow is not counted (but forwarded)
    other = catalogue.get("xdp_end_fw").frame_builder(TB, 64)   # another SID list
    X.load(TB, "xdp_mon_fw", flows=4)   # reload: counters from zero
    X.prog_run(TB, bytes(other))
    assert X.flow_counts(TB) == {}


def test_mon_marks_the_colour_when_asked(sut) -> None:
    from scapy.layers.inet6 import IPv6

    X.load(TB, "xdp_mon_fw", mark=True)
    coloured = catalogue.get("xdp_mon_fw").frame_builder(TB, 64)
    coloured[IPv6].tc = 0x04
    run = X.prog_run(TB, bytes(coloured), repeat=3)
    assert X.flow_counts(TB) == {0: 3}       # marked colour 0 before counting
    assert run.frame_out[15] & 0x40 == 0     # Traffic Class bit 2 cleared


def test_prog_run_gives_a_cost_per_packet(sut) -> None:
    X.load(TB, "xdp_nop7_fw")
    run = X.prog_run(TB, frame_of("xdp_nop7_fw"), repeat=200, tail_calls=8)
    assert run.verdict == "XDP_REDIRECT" and run.ns_per_packet > 0 and run.repeat == 200
    assert X.counters(TB)["rx"] == 200


def test_a_failing_load_leaves_nothing(sut) -> None:
    opts = X.XdpOptions()
    variables = dict(X.env(TB, opts, "xdp_enc_fw"), SRPERF_OUT_IF="x45-nodev")
    res = X.script(TB, "xdp_chain", variables)
    assert res.returncode == 1 and "x45-nodev" in res.stderr
    assert not X.wait_no_leftovers("x45p"), X.leftovers("x45p")
    # a bad chain is refused before anything changes
    res = X.script(TB, "xdp_chain", dict(X.env(TB, opts, "xdp_fw"), SRPERF_XDP_CHAIN="9:0"))
    assert res.returncode == 2 and "SRPERF_XDP_CHAIN" in res.stderr


def _run_cli(tmp_path: Path, name: str, behaviors: str, duration: float = 0.5,
             options: str = "{fw: fib}") -> tuple[Path, Path, list[str]]:
    tb = tmp_path / "tb.yaml"
    tb.write_text(f"name: {name}\nkind: virtual\nprefix: {name}\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"name: {name}\nforwarder: xdp\nbehaviors: [{behaviors}]\n"
                   "packet_sizes: [64]\nrepetitions: 1\n"
                   f"search: {{algorithm: bisect, thresholds_pct: [0.5], "
                   f"trial_duration_s: {duration}, accuracy: 10%, min_rate: 5%, "
                   f"max_rate: 100%}}\noptions: {options}\n")
    argv = [sys.executable, "-c", "import sys; from srperf.cli.entry import main; "
            "sys.exit(main(sys.argv[1:]))", "run", str(exp), "--testbed", str(tb),
            "--results", str(tmp_path / "res")]
    return tb, tmp_path / "res", argv


def test_a_short_run_measures_verified_chains_and_leaves_nothing(tmp_path: Path) -> None:
    _, results, argv = _run_cli(tmp_path, "x45r", "xdp_fw, xdp_end_fw, xdp_enc_mon_fw")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=400)
    # 3: nothing measured, when the generator was the limit of every search
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    db = sqlite3.connect(results / "srperf.sqlite")
    (status, forwarder), = db.execute("SELECT status, forwarder FROM runs").fetchall()
    assert (status, forwarder) == ("finished", "xdp")
    rows = db.execute("SELECT behavior, status, lower_pps FROM searches").fetchall()
    assert sorted(r[0] for r in rows) == ["xdp_enc_mon_fw", "xdp_end_fw", "xdp_fw"]
    # at_max: the chain passed the testbed's line rate (xdpgen offers it since its fix)
    assert all(r[1] in ("ok", "at_max", "generator_limited") for r in rows), rows
    assert all(r[2] and r[2] > 0 for r in rows if r[1] in ("ok", "at_max")), rows
    assert (proc.returncode == 0) == any(r[1] in ("ok", "at_max") for r in rows), rows
    assert not X.wait_no_leftovers("x45r"), X.leftovers("x45r")


def test_a_failed_run_leaves_nothing(tmp_path: Path) -> None:
    """Native XDP on the veth in-port, whose redirects the tester's end drops (no XDP or
    GRO there): the verification sees no frame, the behavior fails, the SUT is clean."""
    _, results, argv = _run_cli(tmp_path, "x45n", "xdp_fw", options="{mode: native}")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=400)
    assert proc.returncode in (1, 3), proc.stdout + proc.stderr
    db = sqlite3.connect(results / "srperf.sqlite")
    statuses = [r[0] for r in db.execute("SELECT status FROM outcomes")]
    assert statuses and all(s.startswith("verify_failed") for s in statuses), statuses
    assert not X.wait_no_leftovers("x45n"), X.leftovers("x45n")


def test_a_killed_run_leaves_nothing_once_its_testbed_is_down(tmp_path: Path) -> None:
    tb, _, argv = _run_cli(tmp_path, "x45k", "xdp_fw", duration=2.0)
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                p.startswith("prog fp_dispatch") for p in X.leftovers("x45k")):
            time.sleep(0.2)
        assert any(p.startswith("prog fp_dispatch") for p in X.leftovers("x45k"))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        subprocess.run([sys.executable, "-c", "import sys; from srperf.cli.entry import main; "
                        "sys.exit(main(sys.argv[1:]))", "testbed", "down", str(tb)],
                       capture_output=True, text=True, timeout=120)
        # srgen and anything else the killed run started in its session, by PID
        listed = subprocess.run(["ps", "-o", "pid=", "-s", str(proc.pid)],
                                capture_output=True, text=True).stdout.split()
        for pid in listed:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert not X.wait_no_leftovers("x45k", timeout_s=15), X.leftovers("x45k")


def test_conform_covers_the_fast_path(tmp_path: Path) -> None:
    """The kernel's matrices for the chains that twin ipv6, End and H.Encaps: no failure;
    the differences are the documented findings (enc keeps the inner hop limit, as
    Linux; end does not parse extension headers before the SRH)."""
    tb = tmp_path / "tb.yaml"
    tb.write_text("name: x45f\nkind: virtual\nprefix: x45f\n")
    results = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-c", "import sys; from srperf.cli.entry import "
                           "main; sys.exit(main(sys.argv[1:]))", "conform", "-f", "xdp",
                           "-b", "xdp_fw", "-b", "xdp_end_fw", "-b", "xdp_enc_fw",
                           "--testbed", str(tb), "--results", str(results)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "xdp_fw on xdp: pass 9, fail 0, finding 0, n/a 0" in proc.stdout
    assert "xdp_end_fw on xdp: pass 22, fail 0, finding 2, n/a 0" in proc.stdout
    assert "xdp_enc_fw on xdp: pass 1, fail 0, finding 9, n/a 0" in proc.stdout
    db = sqlite3.connect(results / "srperf.sqlite")
    found = db.execute("SELECT case_name FROM conformance WHERE behavior = 'xdp_end_fw' AND "
                       "status = 'finding' ORDER BY case_name").fetchall()
    assert found == [("ext_dest_opts",), ("ext_hop_by_hop",)]
    assert not X.wait_no_leftovers("x45f"), X.leftovers("x45f")
