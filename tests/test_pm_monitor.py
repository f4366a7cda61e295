"""The loss monitor's pure parts: settings and flow refusals, the flow key, counter
dumps, the flip and the read of the inactive colour, the T / T/2 schedule (a fake
node stands for bpftool; the real programs: test_pm_accuracy.py)."""

from __future__ import annotations

import ipaddress
import json
import struct

import pytest

from srperf.errors import ConfigError
from srperf.pm.maps import PmMaps, flow_key, parse_counters
from srperf.pm.model import MIN_PERIOD_S, Count, PmSettings, c_limits, make_flows
from srperf.pm.monitor import LossMonitor, PmNode
from srperf.pm.node import Attached


def test_limits_come_from_the_header() -> None:
    assert c_limits() == {"PM_MAX_SEGS": 8, "PM_MAX_FLOWS": 1024}


def test_refusals_name_key_and_value() -> None:
    with pytest.raises(ConfigError, match=r"pm.period_s = 0.05"):
        PmSettings(period_s=0.05)
    PmSettings(period_s=MIN_PERIOD_S)
    too_many = [[f"fc00::{i:x}"] for i in range(c_limits()["PM_MAX_FLOWS"] + 1)]
    with pytest.raises(ConfigError, match=r"pm.flows = 1025: at most 1024"):
        make_flows(too_many)
    with pytest.raises(ConfigError, match=r"pm.flows\[1\]"):
        make_flows([["fc00::1"], ["fc00::1"]])
    with pytest.raises(ConfigError, match=r"pm.flows\[0\] = \['nope'\]"):
        make_flows([["nope"]])
    with pytest.raises(ConfigError, match=r"1..8 SIDs"):
        make_flows([[f"fc00::{i + 1:x}" for i in range(9)]])


def test_flow_key_is_srh_order_zero_filled() -> None:
    flow = make_flows([["fc00:1::1", "fc00:2::2"]])[0]
    key = flow_key(flow)
    assert len(key) == 8 + 16 * 8
    assert key[0] == 2 and key[1:8] == bytes(7)
    assert key[8:24] == ipaddress.IPv6Address("fc00:2::2").packed   # Segment List[0]: last
    assert key[24:40] == ipaddress.IPv6Address("fc00:1::1").packed
    assert key[40:] == bytes(16 * 6)


def test_parse_counters_formatted_and_raw() -> None:
    formatted = [{"key": 0, "value": [], "formatted": {"key": 3, "values": [
        {"cpu": 0, "value": {"packets": 5, "bytes": 500}},
        {"cpu": 1, "value": {"packets": 2, "bytes": 200}}]}},
        {"formatted": {"key": 0, "values": [{"cpu": 0, "value": {"packets": 0, "bytes": 0}}]}}]
    assert parse_counters(json.dumps(formatted)) == {3: Count(7, 700)}
    raw_val = [f"{b:02x}" for b in struct.pack("<QQ", 4, 400)]
    raw = [{"key": ["02", "00", "00", "00"], "values": [{"cpu": 0, "value": raw_val},
                                                        {"cpu": 1, "value": raw_val}]}]
    assert parse_counters(json.dumps(raw)) == {2: Count(8, 800)}
    assert parse_counters("") == {}


class FakeNode:
    """A node's maps as bpftool would show them: counters it is told, the state written."""

    def __init__(self) -> None:
        self.counters: dict[int, Count] = {}
        self.state: tuple[int, int] | None = None
        self.flows: list[bytes] = []

    def __call__(self, argv: list[str]) -> str:
        if argv[:3] == ["bpftool", "map", "update"] and argv[3:5] == ["id", "3"]:
            vals = bytes(int(b, 16) for b in argv[argv.index("value") + 2:])
            self.state = struct.unpack("<II", vals)
        elif argv[:3] == ["bpftool", "map", "update"]:
            self.flows.append(bytes(int(b, 16) for b in argv[7:argv.index("value")]))
        elif argv[:4] == ["bpftool", "-j", "map", "dump"]:
            return json.dumps([{"formatted": {"key": k, "values": [
                {"cpu": 0, "value": {"packets": c.packets, "bytes": c.bytes}}]}}
                for k, c in self.counters.items()])
        return ""


def _monitor(period: float = 1.0, clock=None) -> tuple[LossMonitor, FakeNode, FakeNode]:
    ing, eg = FakeNode(), FakeNode()
    maps = PmMaps(prog_id=1, flows=2, counters=4, state=3)
    flows = make_flows([["fc00::1"], ["fc00::2", "fc00::3"]])
    kw = {"clock": clock} if clock else {}
    mon = LossMonitor(PmNode(ing, Attached("ingress", "x", maps)),
                      PmNode(eg, Attached("egress", "y", maps)), flows,
                      PmSettings(period_s=period), **kw)
    return mon, ing, eg


def test_flip_and_read_inactive_colour_per_block() -> None:
    mon, ing, eg = _monitor()
    mon.start()
    assert ing.state == (0, 1) and len(ing.flows) == 2 and len(eg.flows) == 2
    ing.counters = {0: Count(100, 10000), 2: Count(50, 5000)}      # block 0, colour 0
    eg.counters = {0: Count(99, 9900), 2: Count(50, 5000)}
    b0 = mon.flip()
    assert (b0.index, b0.colour) == (0, 0) and ing.state == (1, 1)
    ing.counters.update({1: Count(30, 3000)})                       # block 1 runs meanwhile
    block, losses = mon.read(b0)
    assert [(x.flow, x.lost_packets) for x in losses] == [(0, 1), (1, 0)]
    assert losses[0].sent == Count(100, 10000) and losses[0].loss_ratio == pytest.approx(0.01)
    b1 = mon.flip()
    eg.counters.update({1: Count(27, 2700)})
    _, losses = mon.read(b1)
    assert (b1.colour, [x.lost_packets for x in losses]) == (1, [3, 0])
    ing.counters.update({0: Count(160, 16000), 2: Count(50, 5000)})  # block 2: colour 0 again
    eg.counters.update({0: Count(159, 15900), 2: Count(50, 5000)})
    _, losses = mon.read(mon.flip())
    assert [(x.block, x.sent.packets, x.received.packets) for x in losses] == [
        (2, 60, 60), (2, 0, 0)]


def test_run_flips_every_t_and_reads_at_half_t() -> None:
    now = [0.0]
    events: list[tuple[str, float]] = []
    mon, ing, _ = _monitor(period=0.4, clock=lambda: now[0])
    mon.start()

    def sleep(s: float) -> None:
        now[0] += s

    orig_flip, orig_read = mon.flip, mon.read
    mon.flip = lambda: (events.append(("flip", round(now[0], 6))), orig_flip())[1]  # type: ignore[method-assign]
    mon.read = lambda b: (events.append(("read", round(now[0], 6))), orig_read(b))[1]  # type: ignore[method-assign]
    out = list(mon.run(3, sleep=sleep))
    assert events == [("flip", 0.4), ("read", 0.6), ("flip", 0.8), ("read", 1.0),
                      ("flip", 1.2), ("read", 1.4)]
    assert [(b.index, b.colour) for b, _ in out] == [(0, 0), (1, 1), (2, 0)]
    assert ing.state == (1, 1)


def test_build_makes_both_programs(tmp_path, monkeypatch) -> None:
    from srperf.pm.build import OBJECTS, build_pm

    monkeypatch.setenv("SRPERF_BUILD_DIR", str(tmp_path))
    built = build_pm()
    assert [p.name for p in built] == list(OBJECTS)
    for path in built:
        assert path.read_bytes()[:4] == b"\x7fELF"
