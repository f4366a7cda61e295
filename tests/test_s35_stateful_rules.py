"""Issue 35: the rules of the shipped stateful experiments that need no namespaces.

- End.AD/End.AS through a source-NATing VNF are refused before the SUT is touched
  (the NAT's answers must pass the VNF, whose one interface a static proxy maps to the
  forward header only).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from srperf.config.loader import load_experiment, load_testbed
from srperf.stateful.plan import Configuration, StatefulPlan
from srperf.stateful.steering import refusal

ROOT = Path(__file__).parent.parent


class _Store:
    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def add_stateful_sample(self, run_id, kind, behavior, forwarder, variant, rep, sample,
                            **kw) -> None:
        self.rows.append((behavior, variant.label, rep, sample.status, sample.reason))


class _Session:
    """Records what the plan asked of the SUT."""

    def __init__(self, tb: Any, options: Any) -> None:
        self.testbed = SimpleNamespace(config=tb, keep_claim=lambda: None)
        self.options, self.calls = options, []

    def use_options(self, options: Any) -> None:
        self.options = options

    def configure(self, beh: Any) -> None:
        self.calls.append(("configure", beh.name))

    def unconfigure(self, beh: Any) -> None:
        self.calls.append(("unconfigure", beh.name))


@pytest.mark.parametrize("behavior", ["end_ad", "end_as"])
def test_static_proxies_refuse_a_snat_vnf_before_configuring(behavior):
    exp = load_experiment(ROOT / "experiments" / "caching_proxy_goodput.yaml")
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    from srperf.forwarders import registry as forwarders

    session = _Session(tb, forwarders.get("ebpf").parse_options({}))
    store = _Store()
    plan = StatefulPlan(exp, session, store, "run", lambda _msg: None)
    ok = plan._configuration(SimpleNamespace(), Configuration(behavior, "snat", 2, 1), 1)
    assert ok is False and session.calls == []   # the SUT was never touched
    assert len(store.rows) == 1
    _, _, rep, status, reason = store.rows[0]
    assert (rep, status) == (0, "unsupported")
    assert "de-NATed" in reason and "one interface" in reason


def test_refusal_rules():
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    assert refusal("end_cache", tb, 8, 2, "snat") == ""
    assert refusal("end_ad", tb, 4, 1, "drop") == ""
    assert "snat" in refusal("end_ad", tb, 2, 1, "snat")
    assert "static header has 2" in refusal("end_as", tb, 4, 1, "forward")
    assert "2 chains" in refusal("end_ad", tb, 2, 2, "forward")


# --- goodput intervals: never below zero, "n too small" below 3, everywhere ---------------

def _plant_run(store, values):
    from srperf.stateful.base import StatefulSample, Variant

    run = store.begin_run("s35_ci", "virtual", "ebpf", {})
    for rep, value in enumerate(values, 1):
        store.add_stateful_sample(
            run, "goodput", "end_cache", "ebpf",
            Variant("vnf forward, 2 segs; 10 streams", {"streams": 10}), rep,
            StatefulSample({"goodput_mbps": value}), duration_s=2.0,
            primary_metric="goodput_mbps")
    store.end_run(run, "finished")
    return run


def test_goodput_interval_never_negative_nor_from_two_values(tmp_path):
    """Two repetitions 300 and 20000 Mb/s gave "-10535.6-20370.9" (Student t, t = 12.7):
    the run's summary, the report's rows (so nightly's) and compare now agree on one
    rule: no interval below 3 values, and one above zero from 3 on."""
    from srperf.results import frames
    from srperf.results.compare import compare_runs
    from srperf.results.report import collect
    from srperf.results.store import ResultStore
    from srperf.stateful.table import format_table, summarize

    rows = [dict(configuration="end_cache, vnf snat, 2 segs", variant="10 streams",
                 status="ok", metric="goodput_mbps", value=v) for v in (300.0, 20000.0)]
    text = format_table(summarize(rows))
    assert "n too small (< 3)" in text and "-10535" not in text
    three = [dict(r, value=v) for r, v in zip(rows * 2, (300.0, 20000.0, 900.0))]
    entry = summarize(three)[0]["spread"]
    assert entry.low is not None and 0 < entry.low < entry.mean < entry.high

    with ResultStore(tmp_path / "r.sqlite") as store:
        two, wide, base = (_plant_run(store, [300.0, 20000.0]),
                           _plant_run(store, [300.0, 20000.0, 900.0]),
                           _plant_run(store, [9000.0, 9100.0, 8900.0]))
        summ = frames.stateful_summary(frames.stateful_samples(store, [two, wide]))
        by_run = {r.run_id: r for r in summ.itertuples()}
        assert by_run[two].ci_note == "n too small (< 3)"
        assert by_run[wide].ci_low > 0
        data = collect(store, [two, wide], "t", None, plots_per_search=False)
        cells = [r["interval"] for t in data.stateful for r in t.rows]
        assert "n too small (< 3)" in cells and not any(c.startswith("-") for c in cells)
        small = compare_runs(store, base, two)
        assert small.stateful[0].verdict == "inconclusive"
        assert "n too small" in small.stateful[0].reason
        spread_out = compare_runs(store, base, wide)
        assert spread_out.stateful[0].diff.low_pct > -100.0   # goodput never below zero


def test_table_i_adds_up_and_says_what_does_not():
    """Ingress successes = egress successes + stale + entries left in the cache."""
    from srperf.stateful.counters import table_i
    from srperf.stateful.table import format_table, lost_in_vnf, summarize

    delta = {"in_cache": 1000, "cache_hit": 985, "cache_stale": 5, "cache_dup": 7}
    t = table_i(delta, left_in_cache=10)
    assert (t["left_in_cache"], t["unaccounted"]) == (10, 0)
    assert lost_in_vnf(t) == "15"
    assert lost_in_vnf(table_i(delta, left_in_cache=4)) == "9 (6 unaccounted)"
    assert "left_in_cache" not in table_i(delta)     # not the caching proxy: no column
    row = dict(configuration="end_cache, vnf drop, 2 segs", variant="", status="ok",
               metric="goodput_mbps", value=100.0, counters={"table_i": t})
    assert "1000 / 985 (0.9850) / 0 / 7 / 15" in format_table(summarize([row]))


def test_http_summary_shows_what_wrk_measured():
    """An http run's summary: requests/s with its interval, transfer rate, wrk's latency
    percentiles and errors; not the goodput columns (retransmits, SUT CPU, Table I)."""
    from srperf.stateful.table import format_table, summarize

    rows = [dict(configuration="relay_router", variant="1MB", status="ok",
                 metric="requests_per_s", value=v,
                 metrics={"requests_per_s": v, "transfer_mbps": v * 8.4,
                          "latency_p50_ms": 2.0 + i, "latency_p99_ms": 9.0,
                          "socket_errors": 1.0, "non_2xx": 0.0})
            for i, v in enumerate((100.0, 110.0, 120.0))]
    rows.append(dict(configuration="xor:16_router", variant="1MB", status="failed",
                     metric="requests_per_s", value=None, reason="wrk completed no request"))
    text = format_table(summarize(rows))
    head = text.splitlines()[0]
    assert "p50 ms" in head and "p99 ms" in head and "Mb/s" in head and "errors" in head
    assert "Table I" not in text and "retr" not in head and "SUT cpu" not in head
    line = next(x for x in text.splitlines() if x.startswith("relay_router"))
    assert " 924.0 " in line and " 3.00 " in line and " 9.00 " in line
    assert line.split()[-1] == "3"             # socket errors summed over 3 repetitions
    assert "wrk completed no request" in text


def test_a_configuration_that_leaves_the_rounds_leaves_the_plan(monkeypatch) -> None:
    """Issue 49 item 8: a goodput run planned every configuration's repetitions, but a
    refused configuration stores one row: 'srperf runs' then read 80/108 samples at the
    end of a run that ran everything it could.  The plan now shrinks by what it drops."""
    import srperf.stateful.plan as plan_mod
    from srperf.forwarders import registry as forwarders
    from srperf.stateful.base import StatefulSample, Variant

    exp = load_experiment(ROOT / "experiments" / "caching_proxy_goodput.yaml", [
        "behaviors=[end_ad, end_cache]", "goodput.chains=[1, 2]", "goodput.segments=[2]",
        "goodput.vnf_modes=[forward]", "goodput.repetitions=3", "goodput.streams=1"])
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    assert plan_mod.planned_samples(exp) == 4 * 3
    handle = SimpleNamespace(up=lambda: SimpleNamespace(), down=lambda: None)
    monkeypatch.setattr(plan_mod, "make_endpoints", lambda testbed: handle)

    class _Steering:
        def __init__(self, *a: Any) -> None:
            self.addresses: dict = {}

        def __enter__(self) -> "_Steering":
            return self

        def __exit__(self, *a: Any) -> None:
            return None

        def describe(self) -> str:
            return "steered"

    runner = SimpleNamespace(start=lambda e, c: None, stop=lambda e: None,
                             primary_metric="goodput_mbps")
    monkeypatch.setattr(plan_mod, "Steering", _Steering)
    monkeypatch.setattr(plan_mod, "make_runner", lambda kind: runner)
    session = _Session(tb, forwarders.get("ebpf").parse_options({}))
    store, done, replanned = _Store(), [], []
    plan = StatefulPlan(exp, session, store, "run", lambda _msg: None,
                        lambda: done.append(1), replanned.append)

    def one(endpoints, conf, runner_, steering, rep):   # every repetition measured
        plan._store("goodput", conf, Variant("1 streams", {"streams": 1}), rep,
                    StatefulSample({"goodput_mbps": 1.0}), {}, "goodput_mbps")
        return True

    monkeypatch.setattr(plan, "_repetition", one)
    plan.run()
    # end_ad with 2 chains through one VNF is refused (one row); the others 3 each
    assert len(store.rows) == len(done) == 3 * 3 + 1
    assert replanned == [len(done)]
