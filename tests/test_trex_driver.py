"""The trex driver against FakeTrexClient (tests/doubles/trex_fake), a test double of
``trex.stl.api`` at the library boundary: the driver, its worker process and the
JSON protocol between them all run for real; only the client library is fake.
Stream building is checked with the real lbr-trex-client when it is installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from srperf.config.loader import load_testbed
from srperf.drivers.trex import TrexError, TrexGenerator, TrexOptions
from srperf.errors import ConfigError
from srperf.traffic.generators import create_generator

FAKE = str(Path(__file__).parent / "doubles" / "trex_fake")
ROOT = Path(__file__).resolve().parents[1]
FRAME = bytes(range(64))


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Returns ``start(scenario, **options) -> (generator, calls())``."""
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("SRPERF_FAKE_TREX_LOG", str(log))
    made: list[TrexGenerator] = []

    def calls() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines()]

    def start(scenario: dict[str, Any] | None = None, **options: Any):
        sc = tmp_path / "scenario.json"
        sc.write_text(json.dumps(scenario or {}))
        monkeypatch.setenv("SRPERF_FAKE_TREX_SCENARIO", str(sc))
        gen = TrexGenerator(TrexOptions(client_path=FAKE, **options), line_rate_pps=1e6)
        made.append(gen)
        gen.prepare(FRAME)
        return gen, calls

    yield start
    for gen in made:
        gen.close()


# The fake's wall time is real: on a busy machine its client adds far more than the
# default poll_slack_s (a 0.1 s trial took 0.38 s beside busy loops), which would read as
# duration stretching.  Tests of the arithmetic give it the largest slack; stretching has
# its own test (test_duration_stretching_is_generator_limited, default slack).
BUSY_SLACK = {"poll_slack_s": 5.0}


def test_exact_calls_of_one_trial(fake) -> None:
    gen, calls = fake(server="192.0.2.9", sync_port=4601, async_port=4600, **BUSY_SLACK)
    t = gen.trial(10_000, 0.2)
    gen.close()
    names = [c["call"] for c in calls()]
    assert names == ["STLClient", "connect", "acquire", "reset", "remove_all_streams",
                     "add_streams", "clear_stats", "clear_events", "start",
                     "wait_on_traffic", "get_stats", "stop", "release", "disconnect"]
    by = {c["call"]: c["args"] for c in calls()}
    assert by["STLClient"] == {"server": "192.0.2.9", "sync_port": 4601, "async_port": 4600}
    assert by["acquire"] == {"ports": [0, 1], "force": False}
    # the frame keeps its own MACs (a real TRex puts its port's on a bytes frame)
    assert by["add_streams"] == {"ports": [0], "pps": 10_000, "frame": FRAME.hex(),
                                 "pg_id": None, "keeps_macs": True}
    assert by["start"] == {"ports": [0], "duration": 0.2, "force": True, "mult": "1"}
    assert (t.intended, t.sent, t.received, t.lost) == (2000, 2000, 2000, 0)
    assert t.usable and t.note == ""
    assert t.extra["line_rate_percent"] == pytest.approx(1.0)


def test_loss_arithmetic(fake) -> None:
    gen, _ = fake({"loss": 0.25}, **BUSY_SLACK)
    t = gen.trial(20_000, 0.1)
    assert (t.intended, t.sent, t.received, t.lost) == (2000, 2000, 1500, 500)
    assert t.loss_ratio == pytest.approx(0.25)
    assert t.usable


def test_surplus_packet_never_hides_a_lost_one(fake) -> None:
    """TRex sometimes sends pps x duration + 1: the surplus counts against arrivals."""
    gen, _ = fake({"surplus": 1, "loss": 0.0005})  # 2001 sent, 2000 arrive
    t = gen.trial(20_000, 0.1)
    # the store holds what TRex really sent (2001), as the note says
    assert (t.sent, t.received, t.lost) == (2001, 1999, 1)
    assert "1 packet more than intended" in t.note


def test_duration_stretching_is_generator_limited(fake) -> None:
    gen, _ = fake({"cap_pps": 5_000})  # all 2000 packets, but in 0.4 s instead of 0.2 s
    t = gen.trial(10_000, 0.2)
    assert t.sent == 2000
    assert t.generator_limited and not t.usable
    assert t.note.startswith("generator limited: offered ")
    assert t.offered_rate_pps < 0.75 * 10_000  # 2000 packets in 0.4 s less the poll slack


def test_too_few_sent_is_generator_limited(fake) -> None:
    gen, _ = fake({"cap_pps": 5_000, "stop_at_duration": True})
    t = gen.trial(10_000, 0.2)
    assert t.sent == 1000 and t.generator_limited


def test_queue_full_is_generator_limited_and_warnings_kept(fake) -> None:
    gen, _ = fake({"queue_full": 3, "warnings": ["CPU util is high"]})
    t = gen.trial(10_000, 0.1)
    assert t.generator_limited
    assert "TRex TX queue full 3 times" in t.note
    assert "TRex warning: CPU util is high" in t.note
    assert t.extra["trex_warnings"] == ["CPU util is high"]


def test_warnings_are_those_of_the_trial(fake) -> None:
    """The client piles events up for the whole session: each trial clears them first."""
    gen, _ = fake({"warnings": ["CPU util is high"]})
    gen.trial(10_000, 0.1)
    assert gen.trial(10_000, 0.1).extra["trex_warnings"] == ["CPU util is high"]


def test_frames_the_rx_port_missed_are_generator_limited(fake) -> None:
    """Seen on TRex 3.08 with AF_PACKET ports: from 0.2 Mpps its receiver misses frames
    the SUT forwarded (rx port ierrors); as loss they would be blamed on the SUT."""
    gen, _ = fake({"rx_missed": 30})
    t = gen.trial(10_000, 0.2)
    assert (t.sent, t.received) == (2000, 1970)
    assert t.generator_limited and not t.usable
    assert "missed 30 frames" in t.note and t.extra["rx_missed"] == 30
    assert t.extra["limited_by"] == ["receiver"]


def test_a_search_names_the_receiver_not_the_generator(fake) -> None:
    """Every frame sent, TRex's receive port missed some: the goal says so, not 'the
    generator could not offer N pps' (seen on a real lab)."""
    from srperf.search.base import SearchSettings
    from srperf.search.bisect import BisectSearch

    gen, _ = fake({"rx_missed": 30})
    settings = SearchSettings(min_rate_pps=5_000, max_rate_pps=20_000, accuracy_pps=2_000,
                              trial_duration_s=0.05, initial_trial_duration_s=0.05)
    goal = BisectSearch(settings).run(gen.trial).goals[0]
    assert goal.status == "generator_limited"
    assert "tester's receive port missed frames" in goal.note, goal.note
    assert "could not offer" not in goal.note


def test_latency_rx_delay_is_not_stretching(fake) -> None:
    """wait_on_traffic waits 100 ms more after a latency stream (software ports): the
    trial's time ends when the ports go idle, so that wait is not read as stretching."""
    gen, _ = fake({"latency": {"latency": {"total_min": 1, "average": 2, "total_max": 3,
                                           "jitter": 0, "histogram": {"0": 10}}}},
                  poll_slack_s=0.02)
    t = gen.latency_trial(10_000, 0.2, 1000)
    assert t.extra["wall_s"] < 0.2 + 0.08
    assert not t.generator_limited, t.note


def test_drain_ends_when_every_frame_is_counted(fake) -> None:
    """The drain after the stream: one read when the rx port has counted every sent
    frame; frames still in flight are waited for (the count moves); a count that stopped
    short (loss) ends the wait after settle_s, not drain_s; settle_s 0 waits drain_s."""
    gen, calls = fake(drain_s=0.5)
    t = gen.trial(10_000, 0.1)
    assert t.lost == 0 and t.extra["drain_s"] < 0.25
    assert [c["call"] for c in calls()].count("get_stats") == 1
    gen, _ = fake({"late_frames": 100, "late_s": 0.06}, drain_s=0.5, settle_s=0.1)
    t = gen.trial(10_000, 0.1)
    assert t.lost == 0 and 0.04 <= t.extra["drain_s"] < 0.35, t.extra["drain_s"]
    gen, _ = fake({"loss": 0.25}, drain_s=0.5, settle_s=0.03)
    t = gen.trial(10_000, 0.1)
    assert t.lost == 250 and 0.03 <= t.extra["drain_s"] < 0.3, t.extra["drain_s"]
    gen, _ = fake(drain_s=0.3, settle_s=0)
    assert gen.trial(10_000, 0.1).extra["drain_s"] >= 0.3


def test_stray_frames_make_counters_inconsistent(fake) -> None:
    gen, _ = fake({"stray": 2})
    t = gen.trial(10_000, 0.1)
    assert not t.counters_consistent and "stray frames" in t.note


def test_zero_packet_trial_sends_nothing(fake) -> None:
    gen, calls = fake()
    t = gen.trial(1, 0.1)
    assert t.intended == 0 and "nothing sent" in t.note
    assert "start" not in [c["call"] for c in calls()]


def test_capture_pushes_in_service_mode(fake) -> None:
    gen, calls = fake()
    got = gen.capture([FRAME, FRAME[::-1]])
    assert got == [FRAME, FRAME[::-1]]
    names = [c["call"] for c in calls()]
    i = names.index("set_service_mode")
    assert names[i:i + 5] == ["set_service_mode", "start_capture", "push_packets",
                              "wait_on_traffic", "stop_capture"]
    assert names[i + 5] == "set_service_mode"
    assert [c["args"]["keeps_macs"] for c in calls() if c["call"] == "push_packets"] == [True]


@pytest.mark.parametrize("scenario,kind,words", [
    ({"connect_error": "*** [RPC] - Failed to get server response from tcp://192.0.2.9:4501"},
     "unreachable", ["192.0.2.9:4501", "is the server running"]),
    ({"connect_error": "API version mismatch: server 5.1, client 4.6"},
     "api", ["API version mismatch", "server from 2.94"]),
    ({"acquire_error": "Port 0 : port is already owned by 'bob'"},
     "owned", ["owned by 'bob'", "force_acquire"]),
    # the words of a real TRex 3.08 server (lbr-trex-client 3.4.0, API 5.1 vs 5.1)
    ({"connect_error": "RPC version mismatch: a newer client version is required (API type "
                       "'STL':  - server: '5.1', client: '4.0')"},
     "api", ["newer client version", "server from 2.94"]),
    ({"connect_error": "Version mismatch: your client version is too new to be supported by "
                       "the server (API type 'STL':  - server: '5.1', client: '5.9')"},
     "api", ["too new", "server from 2.94"]),
    ({"acquire_error": "Port 0 : *** port is already taken by 'someone-else' Port 1 : *** "
                       "port is already taken by 'someone-else'"},
     "owned", ["taken by 'someone-else'", "force_acquire"]),
])
def test_errors_are_named(fake, scenario, kind, words) -> None:
    with pytest.raises(TrexError) as e:
        fake(scenario, server="192.0.2.9")
    assert e.value.kind == kind
    for w in words:
        assert w in str(e.value)


def test_force_acquire_takes_owned_ports(fake) -> None:
    gen, calls = fake({"acquire_error": "port is already owned by 'bob'"},
                      force_acquire=True)
    assert [c["args"] for c in calls() if c["call"] == "acquire"] == [
        {"ports": [0, 1], "force": True}]


def test_missing_client(tmp_path: Path) -> None:
    with pytest.raises(TrexError) as e:
        TrexGenerator(TrexOptions(client_path=str(tmp_path)))
    assert e.value.kind == "client"
    assert "srperf[trex]" in str(e.value)


def test_old_pypi_client_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "site" / "trex_stl_lib"
    old.mkdir(parents=True)
    (old / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    with pytest.raises(TrexError) as e:
        TrexGenerator(TrexOptions(client_path=str(tmp_path / "empty")))
    assert "trex-stl-lib" in str(e.value) and "API 4.x" in str(e.value)
    assert "lbr-trex-client" in str(e.value)


def test_options_refuse_one_port_for_both() -> None:
    with pytest.raises(ValueError, match="tx_port and rx_port are both 0"):
        TrexOptions(tx_port=0, rx_port=0)


def test_example_testbed_selects_the_trex_driver(fake, monkeypatch) -> None:
    tb = load_testbed(ROOT / "testbed" / "trex.yaml")
    assert tb.tester.driver == "trex"
    options = dict(tb.tester.options, client_path=FAKE, server="127.0.0.1")
    monkeypatch.setenv("SRPERF_FAKE_TREX_LOG", "")
    import dataclasses
    tester = dataclasses.replace(tb.tester, options=options)
    gen = create_generator(dataclasses.replace(tb, tester=tester), None)
    try:
        assert isinstance(gen, TrexGenerator)
        assert gen.line_rate_pps == tb.tester.line_rate_pps
    finally:
        gen.close()


def test_bad_trex_option_names_file_and_key(tmp_path: Path) -> None:
    text = (ROOT / "testbed" / "trex.yaml").read_text().replace("sync_port: 4501",
                                                               "sync_port: 99999")
    bad = tmp_path / "tb.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_testbed(bad)
    assert str(bad) in str(e.value) and "sync_port" in str(e.value) and "99999" in str(e.value)


def test_stream_built_with_the_real_client() -> None:
    """The worker's streams, built by the real lbr-trex-client in a process of its own."""
    pytest.importorskip("lbr_trex_client")
    code = """
import json, sys
from srperf.drivers.trex_worker import load_client, Worker
api, how = load_client()
class Rec:
    def __init__(self): self.streams = []
    def remove_all_streams(self, ports): pass
    def add_streams(self, s, ports): self.streams.append((s, ports))
w = Worker(api); w.client = Rec()
w.load([{"port": 0, "frame": sys.argv[1], "pps": 12345.0, "pg_id": 7}])
s, ports = w.client.streams[0]
j = s.to_json()
print(json.dumps({"how": how, "ports": ports, "packet": j["packet"]["binary"],
                  "mode": j["mode"], "flow": j["flow_stats"], "flags": j["flags"]}))
"""
    out = subprocess.run([sys.executable, "-c", code, FRAME.hex()], capture_output=True,
                         text=True, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    import base64
    assert got["how"] == "lbr-trex-client" and got["ports"] == [0]
    assert base64.b64decode(got["packet"]) == FRAME
    assert got["mode"]["type"] == "continuous"
    assert got["mode"]["rate"] == {"type": "pps", "value": 12345.0}
    assert got["flow"]["enabled"] and got["flow"]["stream_id"] == 7
    assert got["flow"]["rule_type"] == "latency"
    # bit 0: source MAC from the frame; bits 1-2: destination MAC from the frame
    # (STLStreamDstMAC_PKT); without them TRex sends the port's MACs
    assert got["flags"] & 0b111 == 0b011


LATENCY_BLOCK = {"total_min": 4.0, "average": 9.5, "total_max": 60.0, "jitter": 2.0,
                 "histogram": {"10": 900, "20": 90, "50": 9, "60": 1}}


def test_latency_trial_with_bucket_histogram(fake) -> None:
    gen, calls = fake({"latency": {"latency": LATENCY_BLOCK}})
    t = gen.latency_trial(20_000, 0.1, 1000)
    streams = [c["args"] for c in calls() if c["call"] == "add_streams"]
    assert [(s["pps"], s["pg_id"]) for s in streams] == [(19_000, None), (1000, 7)]
    assert (t.intended, t.sent) == (2000, 2000)
    lat = t.extra["latency"]
    assert (lat["min_us"], lat["avg_us"], lat["max_us"], lat["jitter_us"]) == (4, 9.5, 60, 2)
    assert (lat["p50_us"], lat["p90_us"], lat["p99_us"], lat["p999_us"]) == (10, 10, 20, 50)
    assert lat["source"] == "buckets" and lat["packets"] == 1000


def test_latency_percentiles_from_hdr_histogram(fake) -> None:
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(1, 60_000_000, 3)
    for value, count in ((11, 500), (13, 400), (47, 99), (333, 1)):
        h.record_value(value, count)
    block = dict(LATENCY_BLOCK, hdrh=h.encode().decode())
    gen, _ = fake({"latency": {"latency": block}})
    lat = gen.latency_trial(20_000, 0.1, 1000).extra["latency"]
    assert lat["source"] == "hdrh"
    assert (lat["p50_us"], lat["p90_us"], lat["p99_us"], lat["p999_us"]) == (11, 13, 47, 47)


def test_latency_missing_figures_are_said(fake) -> None:
    gen, _ = fake({})
    t = gen.latency_trial(20_000, 0.1, 1000)
    assert "latency" not in t.extra and "no latency figures" in t.note


def test_imix_shares_the_rate_by_weight(fake) -> None:
    gen, calls = fake()
    small, big = bytes(60), bytes(1514)
    gen.prepare_mix([(small, 7), (big, 1)])
    t = gen.trial(8_000, 0.1)
    streams = [c["args"] for c in calls() if c["call"] == "add_streams"]
    assert [(len(bytes.fromhex(s["frame"])), s["pps"]) for s in streams] == [
        (60, 7_000), (1514, 1_000)]
    assert (t.intended, t.sent, t.received) == (800, 800, 800)


def test_linux_driver_refuses_a_mix_only_in_ring_mode() -> None:
    """The linux driver sends a mix too (issue 43, linux_gen/mix.h), but not with srgen's
    ring send path."""
    from srperf.drivers.base import MixUnsupported
    from srperf.drivers.linux import LinuxGenerator

    gen = LinuxGenerator.__new__(LinuxGenerator)  # no namespace needed to refuse
    gen.mode, gen.engine = "ring", "packet"
    with pytest.raises(MixUnsupported, match="mode 'mmsg' only"):
        gen.prepare_mix([(bytes(64), 1)])


def test_bidirectional_sends_both_ways_and_sums_counters(fake) -> None:
    gen, calls = fake({"loss": 0.1}, bidirectional=True)
    gen.prepare_reverse(FRAME[::-1])
    t = gen.trial(20_000, 0.1)
    streams = [c["args"] for c in calls() if c["call"] == "add_streams"]
    assert [(s["ports"], s["pps"]) for s in streams] == [([0], 10_000), ([1], 10_000)]
    assert bytes.fromhex(streams[1]["frame"]) == FRAME[::-1]
    assert [c["args"]["ports"] for c in calls() if c["call"] == "start"] == [[0, 1]]
    assert (t.intended, t.sent, t.received) == (2000, 2000, 1800)


def test_one_way_behavior_refuses_bidirectional_traffic() -> None:
    from srperf.behaviors import catalogue as behaviors
    from srperf.config.model import TestbedConfig

    tb = TestbedConfig(name="x")
    rev = behaviors.get("ipv6").build_reverse_frame(tb, 64)
    assert rev is not None and rev.dst == tb.sut.out_port.mac
    assert rev["IPv6"].dst == tb.addressing.tester_tx_ip6
    assert behaviors.get("end").build_reverse_frame(tb, 64) is None


def test_latency_block_of_a_real_server() -> None:
    """The latency block a TRex 3.08 server (--hdrh, AF_PACKET ports, 1000 pps for 2 s)
    returned for srperf's pg_id, as the client gives it: ints and floats, a bucket
    histogram keyed by lower edge in us, and the HDR histogram base64-compressed."""
    from srperf.drivers.latency import from_trex

    block = json.loads((Path(FAKE) / "latency_block_v3.08.json").read_text())
    lat = from_trex(block)
    assert lat.source == "hdrh" and lat.packets == 2001
    assert (lat.min_us, lat.avg_us, lat.max_us, lat.jitter_us) == (26, 522, 1977, 355)
    assert (lat.p50_us, lat.p90_us, lat.p99_us, lat.p999_us) == (494, 989, 1085, 1223)
    buckets = from_trex({k: v for k, v in block.items() if k != "hdrh"})
    assert buckets.source == "buckets" and buckets.p50_us == 400  # the bucket holding it


def test_distinct_frames_are_refused_not_faked(fake) -> None:
    """The trex driver does not write per-packet counters: it says so rather than
    send identical copies of a frame that must be distinct."""
    from srperf.drivers.base import DistinctUnsupported

    gen, _ = fake()
    with pytest.raises(DistinctUnsupported, match="trex driver"):
        gen.prepare_distinct(FRAME, 54)


def test_streams_stay_loaded_between_trials(fake) -> None:
    """The connection and the streams stay: a later trial changes only TRex's rate
    multiplier (and the duration); a new frame loads new streams."""
    gen, calls = fake({"loss": 0.1})
    a = gen.trial(10_000, 0.1)
    b = gen.trial(25_000, 0.2)
    names = [c["call"] for c in calls()]
    assert names.count("add_streams") == 1 and names.count("remove_all_streams") == 1
    assert names.count("connect") == 1
    starts = [c["args"] for c in calls() if c["call"] == "start"]
    assert [(s["mult"], s["duration"]) for s in starts] == [("1", 0.1), ("2.5", 0.2)]
    assert (a.intended, a.sent, a.received) == (1000, 1000, 900)
    assert (b.intended, b.sent, b.received) == (5000, 5000, 4500)   # 25 kpps really sent
    gen.prepare(FRAME[::-1])
    gen.trial(10_000, 0.1)
    adds = [c["args"] for c in calls() if c["call"] == "add_streams"]
    assert len(adds) == 2 and bytes.fromhex(adds[1]["frame"]) == FRAME[::-1]


def test_latency_trial_reloads_and_the_next_trial_too(fake) -> None:
    gen, calls = fake({"latency": {"latency": LATENCY_BLOCK}})
    gen.trial(20_000, 0.1)
    gen.latency_trial(20_000, 0.1, 1000)
    t = gen.trial(20_000, 0.1)
    adds = [(c["args"]["pps"], c["args"]["pg_id"]) for c in calls()
            if c["call"] == "add_streams"]
    assert adds == [(20_000, None), (19_000, None), (1000, 7), (20_000, None)]
    assert t.sent == 2000


def _flow_frame(name: str = "end_dt4") -> bytes:
    """A behavior's frame; end_dt4's is IPv4/UDP inside IPv6 + SRH."""
    from srperf.behaviors import catalogue as behaviors
    from srperf.measure.bench_support import EBPF_TB

    return bytes(behaviors.get(name).build_frame(EBPF_TB, 64))


def test_flows_go_to_the_field_engine(fake) -> None:
    from srperf.traffic.flows import Flows, flow_fields, udp_place

    gen, calls = fake()
    frame = _flow_frame()
    gen.prepare_flows(frame, Flows(256))
    gen.trial(10_000, 0.1)
    add = next(c["args"] for c in calls() if c["call"] == "add_streams")
    fields = flow_fields(frame, Flows(256))
    assert bytes.fromhex(add["frame"]) == frame
    assert add["vm"][0] == ["STLVmFlowVar", {"name": "flow", "min_value": 0,
                                             "max_value": 255, "size": 2, "op": "inc"}]
    assert [i[1] for i in add["vm"][1:-1]] == [
        {"fv_name": "flow", "pkt_offset": f.offset, "add_val": f.base} for f in fields]
    inner = udp_place(frame)
    assert inner is not None and inner.ipv4 and inner.l3_offset > 14 + 40  # the inner IPv4
    assert add["vm"][-1] == ["STLVmFixChecksumHw", {"l3_offset": inner.l3_offset,
                                                    "l4_offset": inner.l3_offset + 20,
                                                    "l4_type": 11}]


def test_flows_the_field_engine_cannot_fix_are_refused(fake) -> None:
    from srperf.drivers.base import FlowsUnsupported
    from srperf.traffic.flows import Flows

    gen, _ = fake()
    with pytest.raises(FlowsUnsupported, match="SRH"):
        gen.prepare_flows(_flow_frame("end_am"), Flows(16))
    with pytest.raises(FlowsUnsupported, match="counters"):
        gen.prepare_flows(_flow_frame("end_cache"), Flows(16), 70)


def test_flow_program_built_with_the_real_client() -> None:
    """The field-engine program of many flows, built by the real lbr-trex-client: one
    variable 0..count-1 written into each varied field, then TRex's checksum fix;
    applied here to the frame as TRex would, every flow's checksums are right."""
    pytest.importorskip("lbr_trex_client")
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from srperf.traffic.flows import Flows, flow_frames, udp_place

    frame = _flow_frame()
    inner = udp_place(frame)
    assert inner is not None

    class G(TrexGenerator):
        def __init__(self) -> None:  # no worker: only the streams are built here
            self.opt, self.bidirectional, self.frames, self.flows = TrexOptions(), False, [], None

    g = G()
    g.prepare_flows(frame, Flows(300))
    code = """
import json, sys
from srperf.drivers.trex_worker import load_client, Worker
api, how = load_client()
class Rec:
    def __init__(self): self.streams = []
    def remove_all_streams(self, ports): pass
    def add_streams(self, s, ports): self.streams.append(s)
w = Worker(api); w.client = Rec()
w.load(json.loads(sys.argv[1]))
print(json.dumps(w.client.streams[0].to_json()["vm"]))
"""
    out = subprocess.run([sys.executable, "-c", code, json.dumps(g._streams(1000.0))],
                         capture_output=True, text=True, check=True).stdout
    program = json.loads(out.splitlines()[-1])["instructions"]
    var, *writes, fix = program
    assert (var["type"], var["min_value"], var["max_value"], var["size"], var["op"]) == (
        "flow_var", 0, 299, 2, "inc")
    assert all(w["type"] == "write_flow_var" and w["name"] == "flow" for w in writes)
    assert fix == {"type": "fix_checksum_hw", "l2_len": inner.l3_offset, "l3_len": 20,
                   "l4_type": 11}
    # What TRex makes of it, packet i: write i + add_value at each offset, fix checksums.
    for i in (0, 1, 150, 299):
        raw = bytearray(frame)
        for w in writes:
            raw[w["pkt_offset"]:w["pkt_offset"] + 2] = (i + w["add_value"]).to_bytes(2, "big")
        pkt = Ether(bytes(raw))
        pkt[IP].chksum = None
        pkt[UDP].chksum = None
        assert bytes(pkt) == flow_frames(frame, Flows(300))[i], f"flow {i}"
