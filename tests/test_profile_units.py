"""srperf.profile without traffic: the parsers on recorded output (tests/data/profile),
the VPP runtime source through the FakeVppctl double (tests/doubles/vppctl), the stored
profile round trip, the per-behavior summary and the first suspects of a regression."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from srperf.profile import cpustat, perf
from srperf.profile.bpf import attached, prog_stats
from srperf.profile.stacks import OTHER_PATH, ROUTE_LOOKUP, base_name, chain, parse_script
from srperf.profile.model import FunctionShare, NodeCost, Profile, ProgramCost, StackShare
from srperf.profile.vpp import VppRuntime, busy_nodes, parse_runtime
from srperf.results.profiles import agreements, format_profiles, summarize_profiles
from srperf.results.diagnosis import diagnose, format_diagnosis
from srperf.results.suspects import suspects
from srperf.transports.netns import NetnsTransport

DATA = Path(__file__).parent / "data" / "profile"
DOUBLES = Path(__file__).parent / "doubles"


def _script(name: str) -> str:
    return gzip.decompress((DATA / f"perf_script_{name}.txt.gz").read_bytes()).decode()


def _report_rows(text: str, comm: str) -> dict[str, int]:
    """Function -> samples of task ``comm`` in a `perf report --sort comm,sym -n` text."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[[k.]\]\s+(.+?)\s*$", line)
        if m and m[2] == comm:
            rows[m[3]] = int(m[1])
    return rows


def test_perf_script_recorded_on_the_virtual_testbed_is_parsed() -> None:
    """Real `perf script -F comm,tid,ip,sym,dso` output (the ProfileTrial's command, with
    --comms napi/s0-1892) of `perf record -g -C 1 -e cpu-clock -F 999` during a 2 s End.X
    trial at 300 kpps on the virtual testbed.  Its flat view must equal, sample for
    sample, `perf report --stdio --no-children -g none --sort comm,sym -n` of the same
    perf.data for that task.  (`perf report --comms X --sort sym`, which the flat profile
    used before, is not that: it merges entries by symbol across tasks before it filters,
    and here dropped the thread's 105 finish_task_switch samples while counting other
    tasks' spin-unlock samples.)"""
    stacks_ = parse_script(_script("end_x"))
    report = _report_rows(gzip.decompress((DATA / "perf_report_end_x.txt.gz").read_bytes())
                          .decode(), "napi/s0-1892")
    assert len(stacks_.samples) == sum(report.values()) == 1106
    assert {s.comm for s in stacks_.samples} == {"napi/s0-1892"}
    flat = stacks_.flat()
    assert {f.symbol: f.samples for f in flat} == report
    assert sum(f.share for f in flat) == pytest.approx(1.0)
    assert all(f.kernel for f in flat)
    # call chains, innermost first, down to the kthread's entry
    assert stacks_.depth() >= 10
    assert all(s.frames[-1] == "ret_from_fork_asm" for s in stacks_.samples)
    clone = next(s for s in stacks_.samples if s.frames[0] == "ip6_rt_cache_alloc")
    assert clone.frames[1:4] == ("ip6_pol_route", "fib6_rule_lookup", "seg6_lookup_any_nexthop")
    # the comm filter keeps only the named tasks
    assert parse_script(_script("end_x"), ["napi/s0-9"]).samples == []


def test_route_lookup_inclusive_on_recorded_end_and_end_x() -> None:
    """End.X's lookup with a given next hop allocates a route clone per packet and frees
    it from RCU: recorded End has neither, End.X has both, and its route lookup takes a
    larger share of more samples (same rate, same packets: samples ~ CPU time)."""
    out = {}
    for name in ("end", "end_x"):
        st = parse_script(_script(name))
        shares = {(x.kind, x.name): x for x in st.inclusive() if x.group == "route lookup"}
        out[name] = (len(st.samples), shares)
    (n_end, end), (n_x, x) = out["end"], out["end_x"]
    assert n_x > n_end
    assert x[("total", "route lookup")].samples > 1.5 * end[("total", "route lookup")].samples
    assert x[("function", "ip6_rt_cache_alloc")].samples > 50
    assert ("function", "ip6_rt_cache_alloc") not in end
    release = "route release (dst_release, dst_destroy)"
    assert x[("path", release)].samples > 5 * end[("path", release)].samples
    for shares, n in ((end, n_end), (x, n_x)):
        total = shares[("total", "route lookup")]
        # every sample counted once: the paths split the total exactly
        assert sum(v.samples for (k, _), v in shares.items() if k == "path") == total.samples
        assert all(v.samples <= total.samples for v in shares.values())
        assert total.share == pytest.approx(total.samples / n)
    # the inclusive share is above what the lookup's functions own in self time
    st = parse_script(_script("end_x"))
    self_time = sum(f.samples for f in st.flat() if ROUTE_LOOKUP.matches(f.symbol))
    assert x[("total", "route lookup")].samples > 1.5 * self_time


def _sample(comm: str, *frames: str, dso: str = "[kernel.kallsyms]") -> str:
    lines = [f"{comm}  3110 [001] "]
    base = "ffffffff8" if dso.startswith("[kernel") else "0000558"   # the kernel's half
    lines += [f"\t{base}{i:07x} {f} ({dso})" for i, f in enumerate(frames)]
    return "\n".join(lines) + "\n\n"


def test_inclusive_attribution_rules() -> None:
    """Hand-made chains (innermost first) for each rule of srperf.profile.stacks."""
    text = (
        # nested lookup functions: one sample, counted once, path seg6
        _sample("napi/s0-1", "fib6_node_lookup_1", "fib6_table_lookup", "ip6_pol_route",
                "fib6_rule_lookup", "seg6_lookup_any_nexthop", "input_action_end_x_core",
                "napi_threaded_poll")
        # the receive route (ip6_route_input reaches the same inner functions)
        + _sample("napi/s0-1", "fib6_table_lookup", "ip6_pol_route", "ip6_route_input_lookup",
                  "ip6_route_input", "ip6_rcv_finish")
        # dst_release's tail call: no dst_release frame, call_rcu under __dev_queue_xmit
        + _sample("napi/s0-1", "__call_rcu_common", "__dev_queue_xmit", "ip6_finish_output")
        # call_rcu from elsewhere is not the route's release
        + _sample("napi/s0-1", "__call_rcu_common", "sk_destruct", "napi_threaded_poll")
        # the clone's free from RCU callbacks, compiler suffix stripped
        + _sample("napi/s0-1", "kfree", "ip6_dst_destroy.part.0", "dst_destroy", "rcu_do_batch")
        # an output-route lookup reached another way
        + _sample("napi/s0-1", "fib6_select_path.isra.0", "ip6_route_output_flags",
                  "icmp6_send")
        # not the route lookup: neighbour and the route's MTU
        + _sample("napi/s0-1", "ip6_mtu", "ip6_forward")
        + _sample("napi/s0-1", "___neigh_lookup_noref", "ip6_finish_output2")
        # a user-space sample of another task (left out by the comm filter below)
        + _sample("srgen", "main", dso="/usr/bin/srgen"))
    everything = parse_script(text)
    assert len(everything.samples) == 9 and not everything.samples[-1].kernel
    st = parse_script(text, ["napi/s0-1"])
    assert len(st.samples) == 8
    got = {(x.group, x.kind, x.name): x.samples for x in st.inclusive()}
    assert got[("route lookup", "total", "route lookup")] == 5
    assert got[("route lookup", "path", "seg6 next-hop lookup (seg6_lookup_*)")] == 1
    assert got[("route lookup", "path", "receive route (ip6_route_input)")] == 1
    assert got[("route lookup", "path", "route release (dst_release, dst_destroy)")] == 2
    assert got[("route lookup", "path", OTHER_PATH)] == 1
    assert got[("route lookup", "function", "ip6_pol_route")] == 2
    assert got[("route lookup", "function", "dst_release")] == 1      # the restored frame
    assert got[("route lookup", "function", "ip6_dst_destroy")] == 1
    assert got[("netfilter", "total", "netfilter")] == 0
    assert chain(("__call_rcu_common", "__dev_queue_xmit")) == [
        "__dev_queue_xmit", "dst_release", "__call_rcu_common"]
    assert base_name("slab_update_freelist.isra.0") == "slab_update_freelist"
    assert base_name("fib6_node_lookup_1") == "fib6_node_lookup_1"
    assert parse_script("").samples == [] and parse_script("").inclusive() == []
    # perf without call chains: one frame per sample
    flat_only = parse_script(_sample("napi/s0-1", "fib6_table_lookup"))
    assert flat_only.depth() == 1.0


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


def _profile(ns: float, shares: dict[str, float], packets: int = 1_000_000,
             stacks: dict[tuple[str, str], float] | None = None,
             group: str = "route lookup") -> Profile:
    """SYNTHETIC profile; ``stacks``: (kind, name) -> share, of stack group ``group``."""
    total = 1000
    return Profile(0.9, 500e3, 2.0, 1, packets=packets, busy_ns=int(ns * packets),
                   functions=[FunctionShare(s, v, int(v * total)) for s, v in shares.items()],
                   samples=total, pmu_note="no hardware PMU: ...",
                   stacks=[StackShare(group, k, n, v, int(v * total))
                           for (k, n), v in (stacks or {}).items()])


def _frames(run: str, data: dict[str, tuple[float, dict[str, float], float]],
            stacks: dict[str, dict[tuple[str, str], float]] | None = None
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    prof, srch = [], []
    for beh, (ns, shares, pdr) in data.items():
        for rep in (1, 2):
            p = _profile(ns, shares, stacks=(stacks or {}).get(beh))
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


def test_route_lookup_diagnosis_against_end() -> None:
    """SYNTHETIC inclusive shares: End.X's extra time, the part of it in the route
    lookup, and the time ratio against the inverse PDR ratio (agree within 20 %)."""
    lookup = "route lookup"
    profiles, searches = _frames(
        "r", {"end": (1000.0, {"ip6_forward": 0.3}, 800e3),
              "end_x": (1250.0, {"ip6_rt_cache_alloc": 0.05}, 640e3),
              "end_dx6": (1300.0, {"ip6_forward": 0.3}, 450e3)},
        {"end": {("total", lookup): 0.2, ("function", "fib6_table_lookup"): 0.1},
         "end_x": {("total", lookup): 0.32, ("function", "ip6_rt_cache_alloc"): 0.08,
                   ("function", "fib6_table_lookup"): 0.08, ("function", "ip6_pol_route"): 0.2,
                   ("path", "route release (dst_release, dst_destroy)"): 0.04},
         "end_dx6": {}})
    rows = summarize_profiles(profiles, searches)
    end, end_x, end_dx6 = rows
    assert end.stack_ns(lookup) == pytest.approx(200.0)
    assert end_x.stack_ns(lookup) == pytest.approx(400.0)
    assert end_x.stack_ns(lookup, "function", "ip6_rt_cache_alloc") == pytest.approx(100.0)
    assert end_dx6.stack_ns(lookup) is None            # no call chains: no figure
    d_end, d_x, d_dx6 = diagnose(rows)
    assert (d_end.behavior, d_end.extra_ns, d_end.group_pct) == ("end", 0.0, pytest.approx(20.0))
    assert d_x.extra_ns == pytest.approx(250.0) and d_x.extra_group_ns == pytest.approx(200.0)
    assert d_x.group_part_of_extra_pct == pytest.approx(80.0)
    tiny = dataclasses.replace(d_x, ns_per_packet=1004.0)   # +4 ns: no share of it
    assert tiny.extra_group_ns == pytest.approx(200.0) and tiny.group_part_of_extra_pct is None
    assert d_x.ns_ratio == pytest.approx(1.25) and d_x.pdr_ratio == pytest.approx(1.25)
    assert d_x.agrees is True and d_x.disagreement_pct == pytest.approx(0.0)
    assert d_dx6.extra_group_ns is None and d_dx6.group_part_of_extra_pct is None
    assert d_dx6.pdr_ratio == pytest.approx(800 / 450) and d_dx6.agrees is False  # 1.3 vs 1.78
    table = format_diagnosis([d_end, d_x, d_dx6])
    assert "route lookup against end" in table
    x_line = next(line for line in table.splitlines() if line.strip().startswith("end_x"))
    assert x_line.split() == ["end_x", "64", "1250", "400", "(32.0", "%)", "+250", "+200",
                              "(80", "%)", "x1.25", "x1.25", "yes", "(+0", "%)"]
    dx6_line = next(line for line in table.splitlines() if "end_dx6" in line)
    assert "no (-27 %)" in dx6_line
    text = format_profiles(rows)
    assert table in text
    # the dispatch layer (ip6_pol_route) grew more, but contains the clone: not named
    assert "grown most against end (inclusive): ip6_rt_cache_alloc +100" in text
    assert format_diagnosis([d_end]) == ""


def test_stored_profile_without_call_chains_still_loads() -> None:
    """A profile stored before call chains were recorded (no ``stacks`` keys)."""
    old = _profile(1000.0, {"fib6_table_lookup": 0.2}).to_dict()
    del old["stacks"], old["stacks_note"]
    back = Profile.from_dict(json.loads(json.dumps(old)))
    assert back.stacks == [] and back.stack_share("route lookup") is None
    with_stacks = _profile(1000.0, {}, stacks={("total", "route lookup"): 0.25})
    again = Profile.from_dict(json.loads(json.dumps(with_stacks.to_dict())))
    assert again == with_stacks and again.stack_share("route lookup") == 0.25
    assert again.stack_share("netfilter") == 0.0


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
                shares: dict[str, float], ns: float, netfilter: float = 0.0) -> str:
    """A run of End with SYNTHETIC searches and profiles (made up here, no traffic)."""
    from srperf.results.store import TrialKey
    from srperf.search.base import GoalResult, SearchResult

    run = store.begin_run("exp", "tb", "linux", {"synthetic": True})
    for rep, pdr in enumerate(pdrs, 1):
        key = TrialKey("end", "linux", 64, rep, rep)
        store.add_search(run, key, SearchResult("bisect", [GoalResult(0.5, pdr, pdr * 1.01,
                                                                      "ok")]))
        store.add_profile(run, key, _profile(ns, shares, stacks={
            ("total", "netfilter"): netfilter}, group="netfilter"))
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
                          {"nft_do_chain": 0.4, "ip6_forward": 0.18}, 1650.0, netfilter=0.45)
        same = _stored_run(store, [800e3, 805e3, 795e3], {"ip6_forward": 0.3}, 1000.0)
        c = compare_runs(store, base, cur)
        (change,) = c.changes
        assert change.verdict == "regression" and change.suspects[0].symbol == "nft_do_chain"
        text = format_markdown(c)
        assert "First suspects" in text and "nft_do_chain (new) 0.0 % -> 40.0 %" in text
        # inclusive: the samples whose call chains pass through netfilter
        assert change.stack_suspects[0].group == "netfilter"
        assert "call chains through netfilter 0.0 % -> 45.0 % of samples, 0 -> 742 ns/pkt" \
            in text
        assert not compare_runs(store, base, same).changes[0].suspects  # no regression
        data = write_report(store, [base, cur], tmp_path / "r.html", comparison=c)
        html = render_html(data)
    assert [p["rows"][0].ns_per_packet for p in data.profiles] == [1000.0, 1650.0]
    assert "Where the time goes" in html and "First suspects for end" in html
    assert "call chains through netfilter 0.0 % -&gt; 45.0 %" in html
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
    from srperf.measure.orchestrator import Orchestrator

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


def test_report_shows_the_route_lookup_diagnosis(tmp_path: Path) -> None:
    """SYNTHETIC store data (End and End.X with inclusive route-lookup shares): the HTML
    report's table of the extra time and of the ratios."""
    from srperf.results.report import render_html, write_report
    from srperf.results.store import ResultStore, TrialKey
    from srperf.search.base import GoalResult, SearchResult

    with ResultStore(tmp_path / "srperf.sqlite") as store:
        run = store.begin_run("exp", "tb", "linux", {"synthetic": True})
        for seq, (beh, ns, pdr, lookup) in enumerate(
                [("end", 1000.0, 800e3, 0.2), ("end_x", 1250.0, 640e3, 0.32)], 1):
            key = TrialKey(beh, "linux", 64, 1, seq)
            store.add_search(run, key, SearchResult("bisect", [GoalResult(0.5, pdr, pdr, "ok")]))
            store.add_profile(run, key, _profile(ns, {"ip6_forward": 0.3},
                                                 stacks={("total", "route lookup"): lookup}))
            store.add_outcome(run, beh, "linux", 64, "measured", repetition=1, search_seq=seq)
        store.end_run(run, "finished")
        html = render_html(write_report(store, [run], tmp_path / "r.html"))
    assert "Where the extra time goes against end" in html
    table = html[html.index("Where the extra time goes against end"):]
    row = table[table.index("<td class=\"l\">end_x</td>"):].split("</tr>")[0]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    assert cells[2:] == ["1250", "400", "32.0", "250", "200 (80 %)", "1.25", "1.25", "yes (0 %)"]
