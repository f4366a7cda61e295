"""The fast path's per-packet cost and per-step statistics without a SUT: the costs
table (stored, read back per behavior, dropped with an unended search, shown in the
run's output, the report and compare), the fp_steps dump parsed, the options refused
naming their key, and the session measuring a cost once per behavior and size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from refusals import assert_experiment_refused
from srperf.forwarders.xdp import steps as S
from srperf.forwarders.xdp.forwarder import FORWARDER, STEP_MODES, XdpOptions, chain_env
from srperf.config.model import TestbedConfig
from srperf.results.costs import (CostRow, PacketCost, StepCost, compare_costs, cost_rows,
                                  format_cost_changes, format_costs, percentile)
from srperf.results.store import ResultStore, TrialKey

HEAD = "name: x4b\nforwarder: xdp\npacket_sizes: [64]\nbehaviors: [xdp_fw]\n"
TB = TestbedConfig(name="x4bu", prefix="x4bu")


def cost(ns: float, steps: tuple[StepCost, ...] = (), **kw: Any) -> PacketCost:
    return PacketCost("bpf_prog_run", "ok", runs=100, verdict="XDP_REDIRECT",
                      ns_per_packet=ns, ns_min=ns / 2, ns_p90=ns * 1.5, programs=2,
                      tail_calls=1, frame_bytes=78, steps=steps, **kw)


@pytest.fixture()
def store(tmp_path: Path):
    with ResultStore(str(tmp_path / "srperf.sqlite")) as s:
        yield s


def test_costs_are_stored_and_read_back_per_behavior(store: ResultStore) -> None:
    run = store.begin_run("x4b", "tb", "xdp", {})
    timed = (StepCost("fp_fw", 100, 5000),)
    store.add_cost(run, TrialKey("xdp_fw", "xdp", 64, 1, 1), cost(400, timed, step_stats="time"))
    store.add_cost(run, TrialKey("xdp_fw", "xdp", 64, 2, 3), cost(600, timed, step_stats="time"))
    store.add_cost(run, TrialKey("xdp_nop1_fw", "xdp", 64, 1, 2),
                   PacketCost("bpf_prog_run", "failed", note="no fast path attached"))
    rows = cost_rows(store, run)
    assert [(r.behavior, r.n, r.ns_per_packet, r.programs) for r in rows] == [
        ("xdp_fw", 2, 500.0, 2), ("xdp_nop1_fw", 0, None, 0)]
    assert rows[0].steps == {"fp_fw": 50.0} and rows[0].step_stats == "time"
    assert rows[1].notes == ["no fast path attached"]
    text = format_costs(rows)
    assert "xdp_fw" in text and " 500 " in text and "fp_fw 50" in text
    assert "not measured: no fast path attached" in text


def test_a_cost_of_an_unended_search_is_dropped_with_it(store: ResultStore) -> None:
    run = store.begin_run("x4b", "tb", "xdp", {})
    store.add_cost(run, TrialKey("xdp_fw", "xdp", 64, 1, 1), cost(400))
    store.add_outcome(run, "xdp_fw", "xdp", 64, "measured", repetition=1, search_seq=1)
    store.add_cost(run, TrialKey("xdp_pass", "xdp", 64, 1, 2), cost(300))
    assert store.drop_unended(run)["costs"] == 1
    assert [r.behavior for r in cost_rows(store, run)] == ["xdp_fw"]


def test_compare_sets_costs_side_by_side_where_both_runs_have_them(store: ResultStore) -> None:
    from srperf.results.compare import compare_runs, format_markdown

    base = store.begin_run("x4b", "tb", "xdp", {})
    cur = store.begin_run("x4b", "tb", "xdp", {})
    store.add_cost(base, TrialKey("xdp_fw", "xdp", 64, 1, 1), cost(400))
    store.add_cost(cur, TrialKey("xdp_fw", "xdp", 64, 1, 1), cost(500))
    store.add_cost(cur, TrialKey("xdp_pass", "xdp", 64, 1, 2), cost(300))
    result = compare_runs(store, base, cur)
    assert [(c.behavior, c.baseline_ns, c.current_ns) for c in result.costs] == [
        ("xdp_fw", 400.0, 500.0)]
    assert result.costs[0].ratio == pytest.approx(1.25)
    assert "| xdp_fw | 64 | 400 | 500 | 1.25 | 200 -> 250 |" in format_markdown(result)
    from srperf.results.report import collect, render_html

    html = render_html(collect(store, [base, cur], comparison=result, plots_per_search=False))
    assert "Per-packet cost without a generator" in html and "1.25" in html
    assert compare_costs(cost_rows(store, base), []) == []
    assert format_cost_changes([]) == []


def test_the_report_shows_a_run_s_costs(store: ResultStore) -> None:
    from srperf.results.report import collect, render_html, render_markdown

    run = store.begin_run("x4b", "tb", "xdp", {})
    store.add_cost(run, TrialKey("xdp_enc_fw", "xdp", 64, 1, 1), cost(640))
    data = collect(store, [run])
    assert [r.behavior for p in data.costs for r in p["rows"]] == ["xdp_enc_fw"]
    md = render_markdown(data)
    assert "Per-packet cost without a generator" in md and "| xdp_enc_fw | 64 | 1 | 640 |" in md
    assert "id=\"costs\"" in render_html(data)


def test_describe_says_what_was_measured_or_why_not() -> None:
    text = cost(400, (StepCost("fp_fw", 10, 500),)).describe()
    assert "400 ns/packet (median of 100 BPF_PROG_RUNs" in text and "fp_fw 50 ns" in text
    assert "step runs fp_nop 30" in cost(400, (StepCost("fp_nop", 30, None),)).describe()
    assert PacketCost("bpf_prog_run", "failed", note="boom").describe() == \
        "cost not measured: boom"
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.9) == 5.0


def _dump(values: dict[int, list[tuple[int, int]]], formatted: bool = True) -> str:
    out = []
    for key in range(9):
        per_cpu = values.get(key, [(0, 0), (0, 0)])
        if formatted:
            out.append({"key": [], "values": [], "formatted": {"key": key, "values": [
                {"cpu": i, "value": {"runs": r, "ns": n}} for i, (r, n) in enumerate(per_cpu)]}})
        else:
            out.append({"key": [f"{b:#04x}" for b in key.to_bytes(4, "little")], "values": [
                {"cpu": i, "value": [f"{b:#04x}" for b in
                                     r.to_bytes(8, "little") + n.to_bytes(8, "little")]}
                for i, (r, n) in enumerate(per_cpu)]})
    return json.dumps(out)


@pytest.mark.parametrize("formatted", [True, False])
def test_fp_steps_dump_is_summed_over_cpus_by_program(formatted: bool) -> None:
    text = _dump({0: [(3, 90), (3, 60)], 4: [(1, 40), (1, 60)], 8: [(2, 0), (0, 0)]},
                 formatted)
    stats = S.parse_steps(text)
    assert stats == {"fp_nop": (6, 150), "fp_fw": (2, 100), "fp_dispatch": (2, 0)}
    assert S.parse_steps("") == {}
    before = {"fp_nop": (1, 10)}
    assert S.delta(before, stats) == {"fp_nop": (5, 140), "fp_fw": (2, 100),
                                      "fp_dispatch": (2, 0)}
    assert S.step_costs(stats, "time") == (StepCost("fp_nop", 6, 150), StepCost("fp_fw", 2, 100))
    assert S.step_costs(stats, "count") == (StepCost("fp_nop", 6, None),
                                            StepCost("fp_fw", 2, None))


def test_runs_in_a_slot_no_program_has_are_an_error() -> None:
    from srperf.forwarders.stats_map import CountersError

    with pytest.raises(CountersError, match="key 7"):
        S.parse_steps(_dump({7: [(1, 0), (0, 0)]}))


def test_the_step_modes_match_the_header_flags() -> None:
    from srperf.resources import xdp_dir

    header = (xdp_dir() / "xdp_fp.h").read_text()
    assert "#define FP_F_COUNT 1" in header and "#define FP_F_TIME 2" in header
    assert STEP_MODES == S.MODES == {"off": 0, "count": 1, "time": 1 | 2}
    assert f"#define FP_MAX_PROGS {S.SLOT_DISPATCH}" in header
    env = FORWARDER.env(TB, XdpOptions(step_stats="time"), __import__(
        "srperf.forwarders.base", fromlist=["Prepared"]).Prepared())
    assert env["SRPERF_XDP_STEP_STATS"] == "3"
    assert "SRPERF_XDP_STEP_STATS" not in chain_env(TB, XdpOptions(), "xdp_fw")


@pytest.mark.parametrize("option, key, value", [
    ("step_stats: always", "options.step_stats", "always"),
    ("cost_runs: 5", "options.cost_runs", "5"),
    ("cost_runs: 20001", "options.cost_runs", "20001"),
    ("cost: maybe", "options.cost", "maybe"),
])
def test_invalid_cost_options_are_refused(tmp_path: Path, capsys, option: str, key: str,
                                          value: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + f"options: {{{option}}}\n")
    assert_experiment_refused(path, key, value, capsys)


class _Sut:
    """The session's SUT handle, doubled at its boundary: counts cost requests."""

    def __init__(self, result: PacketCost | None) -> None:
        self.result, self.asked = result, []

    def packet_cost(self, behavior: Any, frame: bytes) -> PacketCost | None:
        self.asked.append((behavior.name, len(frame)))
        return self.result


@pytest.mark.parametrize("result", [cost(400), None])
def test_the_session_measures_a_cost_once_per_behavior_and_size(store: ResultStore,
                                                                 result) -> None:
    from srperf.behaviors import catalogue
    from srperf.forwarders import registry
    from srperf.measure.session import MeasurementSession
    from srperf.testbeds.simulated import SimulatedTestbed

    run = store.begin_run("x4b", "tb", "xdp", {})
    session = MeasurementSession(SimulatedTestbed(TestbedConfig(name="x4bs", kind="simulated",
                                                                prefix="x4bs")),
                                 registry.get("xdp"), store=store, run_id=run)
    double = _Sut(result)
    session._sut = double  # type: ignore[assignment]
    beh = catalogue.get("xdp_fw")
    for seq, size in enumerate((64, 64, 128), 1):
        session.packet_cost(beh, TrialKey("xdp_fw", "xdp", size, 1, seq))
    assert [n for n, _ in double.asked] == ["xdp_fw", "xdp_fw"]
    assert double.asked[0][1] < double.asked[1][1]   # the frame of each size
    stored = store.frame("costs", run)
    assert list(stored["packet_size"]) == ([64, 128] if result else [])


def test_the_forwarder_measures_no_cost_when_switched_off() -> None:
    assert FORWARDER.packet_cost(None, "xdp.sh", {}, XdpOptions(cost=False),  # type: ignore
                                 "xdp_fw", b"") is None


def test_cost_rows_of_a_run_without_costs_are_empty(store: ResultStore) -> None:
    run = store.begin_run("x4b", "tb", "linux", {})
    assert cost_rows(store, run) == []
    assert isinstance(CostRow("a", 64, 0, None, None, 0, 0, "", "off"), CostRow)


def test_export_carries_the_costs(store: ResultStore) -> None:
    from srperf.results.export import tables

    run = store.begin_run("x4b", "tb", "xdp", {})
    assert "costs" not in tables(store, [run])
    store.add_cost(run, TrialKey("xdp_fw", "xdp", 64, 1, 1), cost(400))
    assert list(tables(store, [run])["costs"]["ns_per_packet"]) == [400.0]
