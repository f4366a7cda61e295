"""srperf.profile without traffic: the parsers on recorded output (tests/data/profile),
the VPP runtime source through the FakeVppctl double (tests/doubles/vppctl), the stored
profile round trip, the per-behavior summary and the first suspects of a regression."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from srperf.profile import cpustat, perf
from srperf.profile.bpf import attached, prog_stats
from srperf.profile.model import FunctionShare, NodeCost, Profile, ProgramCost
from srperf.profile.vpp import VppRuntime, busy_nodes, parse_runtime
from srperf.results.profiles import agreements, format_profiles, summarize_profiles
from srperf.results.suspects import suspects
from srperf.transports.netns import NetnsTransport

DATA = Path(__file__).parent / "data" / "profile"
DOUBLES = Path(__file__).parent / "doubles"


def test_perf_report_recorded_on_the_virtual_testbed_is_parsed() -> None:
    """Real `perf report --stdio --no-children --sort sym -n --comms napi/s0-N` output of
    a 2 s End.X profile trial on this VM (tests/data/profile, recorded on the virtual
    testbed with srperf's own ProfileTrial)."""
    text = (DATA / "perf_report_end_x.txt").read_text()
    sampled = perf.parse_report(text)
    rows = [line for line in text.splitlines() if "%" in line and "[" in line
            and not line.startswith("#")]
    assert sampled.samples == sum(int(r.split()[1]) for r in rows) > 100
    assert len(sampled.functions) == len(rows)
    assert sum(f.share for f in sampled.functions) == pytest.approx(1.0)
    top = sampled.functions[0]
    assert top.samples == max(int(r.split()[1]) for r in rows)
    # perf's percentages are of every sample on the CPU (other tasks' too); the shares
    # are of the forwarding thread's samples, so they keep perf's proportions
    first, second = rows[0].split(), rows[1].split()
    assert top.share == pytest.approx(top.samples / sampled.samples)
    assert top.share / sampled.functions[1].share == pytest.approx(
        float(first[0].rstrip("%")) / float(second[0].rstrip("%")), rel=0.02)
    names = {f.symbol for f in sampled.functions}
    assert any(n.startswith(("fib6_", "ip6_pol_route", "ip6_route")) for n in names)
    assert all(f.kernel for f in sampled.functions[:5])
    assert [f.symbol for f in sampled.top(3)] == [f.symbol for f in sampled.functions[:3]]


def test_perf_report_rows_user_and_kernel() -> None:
    text = ("# Samples: 4  of event 'cpu-clock'\n#\n"
            "    50.00%             2  [k] fib6_table_lookup\n"
            "    25.00%             1  [.] main\n"
            "    25.00%             1  [k] nft_do_chain\n")
    s = perf.parse_report(text)
    assert s.samples == 4
    assert [(f.symbol, f.samples, f.kernel) for f in s.functions] == [
        ("fib6_table_lookup", 2, True), ("main", 1, False), ("nft_do_chain", 1, True)]
    assert perf.parse_report("# nothing\n").samples == 0


def test_perf_stat_without_pmu_recorded_here_and_with_one() -> None:
    """This VM's real answer (no PMU: <not supported>) gives no count, never a zero; the
    second text is perf's -x, layout as a PMU host prints it (not recorded here)."""
    no_pmu = perf.parse_stat((DATA / "perf_stat_no_pmu.txt").read_text())
    assert no_pmu == {"cycles": None, "instructions": None}
    with_pmu = perf.parse_stat("5123456789,,cycles,2000000000,100.00,,\n"
                               "7345678901,,instructions,2000000000,100.00,1.43,insn per cycle\n")
    assert with_pmu == {"cycles": 5123456789, "instructions": 7345678901}


def test_proc_stat_ps_and_task_stat_recorded_here() -> None:
    text = (DATA / "proc_stat.txt").read_text()
    cpu1 = cpustat.parse_proc_stat(text, 1)
    line = next(x for x in text.splitlines() if x.startswith("cpu1 ")).split()
    assert cpu1.busy_ticks() == int(line[3]) + int(line[6]) + int(line[7])
    with pytest.raises(cpustat.CpuStatError, match="cpu99"):
        cpustat.parse_proc_stat(text, 99)
    threads = cpustat.parse_ps((DATA / "ps_threads.txt").read_text())
    assert any(t.comm.startswith("napi/s0-") and t.cpu == 1 for t in threads)
    stat = (DATA / "proc_pid_stat_napi.txt").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    assert cpustat.parse_task_ticks(stat) == int(fields[11]) + int(fields[12]) > 0


def test_bpftool_json() -> None:
    """bpftool's JSON layouts: `net show` (tc entries name their program "id" in
    bpftool 7.1, "prog_id" in later ones; xdp "id") and `prog show id N`."""
    net = json.dumps([{"xdp": [{"devname": "t1", "ifindex": 7, "mode": "driver", "id": 41,
                                "name": "sink"}],
                       "tc": [{"devname": "s0", "ifindex": 5, "kind": "clsact/ingress",
                               "name": "srproxy.o:[tc]", "id": 42},
                              {"devname": "s1", "ifindex": 6, "kind": "clsact/ingress",
                               "name": "srp_ad", "prog_id": 43}],
                       "flow_dissector": []}])
    assert attached(net) == {41: "sink", 42: "srproxy.o", 43: "srp_ad"}
    assert prog_stats(json.dumps({"id": 42, "name": "srp_end_ad", "run_time_ns": 900,
                                  "run_cnt": 10})) == ("srp_end_ad", 10, 900)
    assert ProgramCost("p", 1, 10, 900).ns_per_run == 90.0
    assert ProgramCost("p", 1, 0, 0).ns_per_run is None


def test_vpp_show_runtime_parsed() -> None:
    nodes = parse_runtime((DATA / "vpp_show_runtime_sample.txt").read_text())
    by = {(n.thread, n.node): n for n in nodes}
    assert len(nodes) == 12
    merged = by[("vpp_main", "acl-plugin-fa-worker-cleaner-p")]
    assert merged.state == "interrupt wa" and merged.calls == 7
    sr = by[("vpp_wk_0", "sr-localsid")]
    assert (sr.calls, sr.vectors, sr.clocks, sr.vectors_per_call) == (
        112871, 3604023, 41.2, 31.93)
    assert sr.clocks_per_packet == 41.2
    assert by[("vpp_main", "unix-epoll-input")].clocks_per_packet is None
    busy = busy_nodes(nodes)
    assert busy[0].node == "ip6-drop" and all(n.vectors for n in busy)


@pytest.mark.parametrize("behavior,node", [("end", "sr-localsid"),
                                           ("end_ad", "srv6-ad-localsid")])
def test_vpp_show_runtime_recorded_from_a_real_vpp_is_parsed(behavior: str, node: str) -> None:
    """Real `show runtime` of VPP v26.06 after a profile trial on the virtual testbed
    (tests/data/profile, recorded by srperf's own VppRuntime): every node row of the
    text is parsed, the behavior's own node handled vectors at a cost per packet."""
    text = (DATA / f"vpp_show_runtime_v26.06_{behavior}.txt").read_text()
    nodes = parse_runtime(text)
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if "Vectors/Call" in line)
    rows = [line for line in lines[header + 1:] if line.strip()]
    assert len(nodes) == len(rows) > 5
    by = {n.node: n for n in nodes}
    own = by[node]
    assert own.vectors > 0 and own.clocks > 0 and own.vectors_per_call >= 1.0
    assert own.clocks_per_packet == own.clocks
    assert own in busy_nodes(nodes) and by["af-packet-input"].vectors >= own.vectors
    assert all(n.state for n in nodes), [n for n in nodes if not n.state]


def test_vpp_runtime_source_clears_then_reads_through_vppctl(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command sequence at the vppctl boundary, with FakeVppctl (a recording test
    double: no VPP here): clear runtime before, show runtime after, on the socket."""
    answers = tmp_path / "answers"
    answers.mkdir()
    shutil.copy(DATA / "vpp_show_runtime_sample.txt", answers / "show_runtime")
    log = tmp_path / "vppctl.log"
    monkeypatch.setenv("FAKE_VPPCTL_LOG", str(log))
    monkeypatch.setenv("FAKE_VPPCTL_ANSWERS", str(answers))
    with NetnsTransport(None) as node:
        src = VppRuntime(node, str(DOUBLES / "vppctl"), "/run/vpp/cli.sock")
        prof = Profile(0.9, 1000.0, 1.0, 1)
        src.start()
        src.stop(prof)
        assert log.read_text().splitlines() == ["clear runtime", "show runtime"]
        assert prof.nodes[0].node == "ip6-drop" and prof.notes[0].startswith("VPP polls")
        # vppctl exits 0 on a failed command: its words are the reason
        monkeypatch.setenv("FAKE_VPPCTL_FAIL", "clear runtime")
        prof = Profile(0.9, 1000.0, 1.0, 1)
        src.start()
        src.stop(prof)
        assert prof.nodes == [] and "not cleared" in prof.notes[0]


def _profile(ns: float, shares: dict[str, float], packets: int = 1_000_000) -> Profile:
    total = 1000
    return Profile(0.9, 500e3, 2.0, 1, packets=packets, busy_ns=int(ns * packets),
                   functions=[FunctionShare(s, v, int(v * total)) for s, v in shares.items()],
                   samples=total, pmu_note="no hardware PMU: ...")


def _frames(run: str, data: dict[str, tuple[float, dict[str, float], float]]
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    prof, srch = [], []
    for beh, (ns, shares, pdr) in data.items():
        for rep in (1, 2):
            p = _profile(ns, shares)
            prof.append({"run_id": run, "behavior": beh, "packet_size": 64, "repetition": rep,
                         "detail": json.dumps(p.to_dict())})
            srch.append({"run_id": run, "behavior": beh, "packet_size": 64, "repetition": rep,
                         "threshold_pct": 0.5, "status": "ok", "lower_pps": pdr})
    return pd.DataFrame(prof), pd.DataFrame(srch)


def test_profile_round_trip_summary_and_agreement() -> None:
    p = _profile(1000.0, {"fib6_table_lookup": 0.2, "ip6_forward": 0.1})
    p.programs.append(ProgramCost("srp_ad", 3, 100, 5000))
    p.nodes.append(NodeCost("vpp_wk_0", "sr-localsid", "active", 1, 32, 0, 41.2, 32.0))
    back = Profile.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back == p and back.ns_per_packet == 1000.0
    assert back.function_ns() == [("fib6_table_lookup", 200.0), ("ip6_forward", 100.0)]
    profiles, searches = _frames("r", {"end": (1000.0, {"ip6_forward": 0.3}, 800e3),
                                       "end_x": (1500.0, {"fib6_table_lookup": 0.3}, 500e3)})
    rows = summarize_profiles(profiles, searches)
    assert [(r.behavior, r.n, r.ns_per_packet, r.pdr_kpps) for r in rows] == [
        ("end", 2, 1000.0, 800.0), ("end_x", 2, 1500.0, 500.0)]
    assert "no hardware PMU: ..." in rows[0].notes
    (a,) = agreements(rows)
    assert (a.behavior, a.reference, a.ns_ratio, a.pdr_ratio) == ("end_x", "end", 1.5, 1.6)
    assert a.disagreement_pct == pytest.approx(-6.25)
    text = format_profiles(rows)
    assert "fib6_table_lookup 30.0 %" in text and "ns x1.50  PDR x1.60" in text
    assert "end_x            fib6_table_lookup +450 ns" in text
    assert "IPv6 route lookup functions" in text and "end 0, end_x 450" in text


def test_first_suspect_is_the_function_that_grew() -> None:
    base, _ = _frames("b", {"end": (1000.0, {"ip6_forward": 0.3, "fib6_table_lookup": 0.1},
                                    800e3)})
    cur, _ = _frames("c", {"end": (1600.0, {"nft_do_chain": 0.35, "ip6_forward": 0.19,
                                            "fib6_table_lookup": 0.06}, 500e3)})
    (b,), (c,) = summarize_profiles(base), summarize_profiles(cur)
    found = suspects(b, c)
    assert found[0].symbol == "nft_do_chain" and found[0].new
    assert found[0].delta_ns == pytest.approx(560.0)
    assert "nft_do_chain (new) 0.0 % -> 35.0 %" in found[0].describe()
    assert [s.symbol for s in found] == ["nft_do_chain", "ip6_forward"]  # 300 -> 304 ns


def _stored_run(store: "ResultStore", pdrs: list[float],
                shares: dict[str, float], ns: float) -> str:
    """A run of End with SYNTHETIC searches and profiles (made up here, no traffic)."""
    from srperf.results.store import TrialKey
    from srperf.search.base import GoalResult, SearchResult

    run = store.begin_run("exp", "tb", "linux", {"synthetic": True})
    for rep, pdr in enumerate(pdrs, 1):
        key = TrialKey("end", "linux", 64, rep, rep)
        store.add_search(run, key, SearchResult("bisect", [GoalResult(0.5, pdr, pdr * 1.01,
                                                                      "ok")]))
        store.add_profile(run, key, _profile(ns, shares))
        store.add_outcome(run, "end", "linux", 64, "measured", repetition=rep,
                          search_seq=rep)
    store.end_run(run, "finished")
    return run


def test_compare_and_report_name_the_suspect_from_the_store(tmp_path: Path) -> None:
    from srperf.results.compare import compare_runs, format_markdown
    from srperf.results.report import render_html, write_report
    from srperf.results.store import ResultStore

    with ResultStore(tmp_path / "srperf.sqlite") as store:
        base = _stored_run(store, [800e3, 810e3, 790e3], {"ip6_forward": 0.3}, 1000.0)
        cur = _stored_run(store, [500e3, 510e3, 490e3],
                          {"nft_do_chain": 0.4, "ip6_forward": 0.18}, 1650.0)
        same = _stored_run(store, [800e3, 805e3, 795e3], {"ip6_forward": 0.3}, 1000.0)
        c = compare_runs(store, base, cur)
        (change,) = c.changes
        assert change.verdict == "regression" and change.suspects[0].symbol == "nft_do_chain"
        text = format_markdown(c)
        assert "First suspects" in text and "nft_do_chain (new) 0.0 % -> 40.0 %" in text
        assert not compare_runs(store, base, same).changes[0].suspects  # no regression
        data = write_report(store, [base, cur], tmp_path / "r.html", comparison=c)
        html = render_html(data)
    assert [p["rows"][0].ns_per_packet for p in data.profiles] == [1000.0, 1650.0]
    assert "Where the time goes" in html and "First suspects for end" in html
    assert html.count('alt="ns per packet by function"') == 2


def test_report_shows_ebpf_program_cost_and_vpp_node_cost_of_two_runs(
        tmp_path: Path) -> None:
    """A store with an eBPF run (per-program run time) and a VPP run (per-node clocks,
    parsed from a real ``show runtime``): one report, each in its own section, with
    the VPP nodes' clocks per packet and vectors per call."""
    from srperf.results.report import render_html, write_report
    from srperf.results.store import ResultStore, TrialKey

    real = parse_runtime((DATA / "vpp_show_runtime_v26.06_end.txt").read_text())
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        runs = []
        for fwd, beh in (("ebpf", "end_ad"), ("vpp", "end")):
            run = store.begin_run("exp", "tb", fwd, {"synthetic": True})
            key = TrialKey(beh, fwd, 64, 1, 1)
            p = _profile(1000.0, {"ip6_forward": 0.3})
            if fwd == "ebpf":
                p.programs.append(ProgramCost("srp_inbound", 3, 1000, 95000))
            else:
                p.nodes.extend(busy_nodes(real))
            store.add_profile(run, key, p)
            store.end_run(run, "finished")
            runs.append(run)
        data = write_report(store, runs, tmp_path / "r.html")
        html = render_html(data)
    assert "eBPF programs: run time per run" in html and "srp_inbound" in html
    assert "VPP graph nodes: clocks per packet and vectors per call" in html
    sr = next(n for n in real if n.node == "sr-localsid" and n.vectors)
    assert f"<td class=\"l\">sr-localsid</td><td>{sr.clocks:.1f}</td>" in html.replace(
        "\n", "")


def test_a_model_sut_has_no_cpu_to_profile(tmp_path: Path) -> None:
    from srperf.config.model import Experiment, ProfileConfig, SearchConfig, TestbedConfig
    from srperf.orchestrator import Orchestrator

    sim = TestbedConfig(name="sim", kind="simulated",
                        simulated={"capacity_pps": {"default": 1_000_000}})
    exp = Experiment(name="p", behaviors=("ipv6",),
                     search=SearchConfig(algorithm="bisect", thresholds_pct=(0.5,)),
                     profile=ProfileConfig(enabled=True))
    (_, result), = Orchestrator(exp, sim, tmp_path).run().searches
    prof = result.profile
    assert prof.ns_per_packet is None and prof.functions == []
    assert prof.busy_note == "the SUT is a model: there is no CPU to profile"


def test_generator_limited_rates_are_judged_on_time_per_packet(tmp_path: Path) -> None:
    """SYNTHETIC store data: rates generator-limited on both sides (no number), profile
    trials slower by about 2.5x: the comparison judges the time per packet."""
    from srperf.results.compare import compare_runs
    from srperf.results.store import ResultStore, TrialKey
    from srperf.search.base import GoalResult, SearchResult

    def run(store: ResultStore, ns: list[float], shares: dict[str, float]) -> str:
        rid = store.begin_run("exp", "tb", "linux", {"synthetic": True})
        for rep, v in enumerate(ns, 1):
            key = TrialKey("end", "linux", 64, rep, rep)
            store.add_search(rid, key, SearchResult("bisect", [GoalResult(
                0.5, 300e3, 310e3, "generator_limited")]))
            store.add_profile(rid, key, _profile(v, shares))
            store.add_outcome(rid, "end", "linux", 64, "measured", repetition=rep,
                              search_seq=rep)
        return rid

    with ResultStore(tmp_path / "s.sqlite") as store:
        base = run(store, [2900.0, 2800.0, 3000.0], {"veth_poll": 0.05})
        cur = run(store, [7400.0, 8300.0, 7000.0], {"nft_do_chain": 0.41, "veth_poll": 0.02})
        (c,) = compare_runs(store, base, cur).changes
        assert c.verdict == "regression" and c.suspects[0].symbol == "nft_do_chain"
        assert "judged on the forwarding's time per packet" in c.reason
        assert "2900 -> 7400 ns" in c.reason
        (same,) = compare_runs(store, base, run(store, [2950.0, 2850.0, 2900.0],
                                                {"veth_poll": 0.05})).changes
        assert same.verdict in ("no_change", "inconclusive") and not same.suspects
