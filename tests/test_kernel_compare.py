"""Kernel against kernel in ``srperf compare`` (srperf/results/kernel_compare.py).

Runs on the simulated SUT stand in for two kernel targets' runs: their environments get
the ``kernel_target`` and ``execution`` a TCG guest records (a test double for the guest
only; tests/test_kernel_against_kernel.py compares two real guests).  No namespaces.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from store_rows import update_environment
from srperf.cli.entry import main
from srperf.measure.conform import CaseResult
from srperf.results import kernel_compare
from srperf.results.behavior_profile import BehaviorProfile
from srperf.results.positive import log_ratio
from srperf.results.store import ResultStore
from srperf.results.suspects import function_changes

SHA = {"6.1": "a" * 64, "6.12": "b" * 64}


def _kernel_env(release: str) -> dict:
    return {"kernel_target": {"kernel": {"name": f"linux-image-{release}-cloud", "release":
                                         f"{release}.0-cloud-amd64", "sha256": SHA[release]},
                              "accelerator": "tcg", "uname_r": f"{release}.0-cloud-amd64"},
            "execution": {"mode": "emulated", "how": "QEMU tcg"}}


def _case(behavior: str, case: str, status: str, detail: str = "") -> CaseResult:
    return CaseResult(behavior, case, "segments_left", "forward", status, detail, "RFC 8986")


@pytest.fixture(scope="module")
def two_kernels(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Two runs of quick (ipv6, end; 3 repetitions), as if on 6.1 and on 6.12."""
    results = tmp_path_factory.mktemp("k4acmp") / "results"
    for _ in range(2):
        assert main(["run", "quick", "--testbed", "simulated", "--repetitions", "3",
                     "--results", str(results), "--set", "behaviors=[ipv6, end]"]) == 0
    db = results / "srperf.sqlite"
    with ResultStore(db) as store:
        base, cur = list(store.frame("runs").sort_values("started")["run_id"])
        for run in (base, cur):   # as a kernel without VRF reports it
            store.add_outcome(run, "end_dt46", "linux", 64, "unsupported",
                              "Error: Unknown device type vrf", repetition=1, search_seq=7)
        store.add_conformance(base, "linux", [_case("end", "sl0", "pass"),
                                              _case("end", "hop_limit_1", "pass")])
        store.add_conformance(cur, "linux", [_case("end", "sl0", "pass"),
                                             _case("end", "hop_limit_1", "finding",
                                                   "ICMP time exceeded not sent")])
    update_environment(db, base, _kernel_env("6.1"))
    update_environment(db, cur, _kernel_env("6.12"))
    return results, base, cur


def test_ratio_per_behavior_with_the_positive_interval(two_kernels) -> None:
    results, base, cur = two_kernels
    with ResultStore(results / "srperf.sqlite") as store:
        k = kernel_compare.compare_kernels(store, base, cur)
        searches = store.frame("searches")
    assert (k.baseline.uname_r, k.current.uname_r) == ("6.1.0-cloud-amd64", "6.12.0-cloud-amd64")
    assert k.baseline.sha256 == SHA["6.1"] and k.current.accelerator == "tcg"
    by = {r.behavior: r for r in k.ratios}
    for beh in ("ipv6", "end"):
        b = list(searches[(searches.run_id == base) & (searches.behavior == beh)]["lower_pps"]
                 / 1000)
        c = list(searches[(searches.run_id == cur) & (searches.behavior == beh)]["lower_pps"]
                 / 1000)
        want = log_ratio(b, c)
        assert want is not None and len(b) == len(c) == 3
        r = by[beh]
        assert r.ratio == pytest.approx(1 + want.delta_pct / 100)
        assert (r.low, r.high) == (pytest.approx(1 + want.low_pct / 100),
                                   pytest.approx(1 + want.high_pct / 100))
        assert 0 < r.low <= r.ratio <= r.high
    # a behavior the kernel refuses shows its status and reason, never a ratio
    assert by["end_dt46"].ratio is None and "unsupported: Error: Unknown device type vrf" \
        in by["end_dt46"].note


def test_conformance_findings_on_one_kernel_only(two_kernels) -> None:
    results, base, cur = two_kernels
    with ResultStore(results / "srperf.sqlite") as store:
        k = kernel_compare.compare_kernels(store, base, cur)
    assert [(d.behavior, d.case, d.baseline_status, d.current_status) for d in k.conformance] \
        == [("end", "hop_limit_1", "pass", "finding")]
    assert "ICMP time exceeded" in k.conformance[0].detail
    assert k.conformance_from == (f"run {base} (its own matrix)", f"run {cur} (its own matrix)")


def test_conformance_from_a_conform_run_of_the_same_kernel(tmp_path: Path) -> None:
    db = tmp_path / "srperf.sqlite"
    with ResultStore(db) as store:
        run = store.begin_run("quick", "k4a-6.1", "linux", _kernel_env("6.1"))
        store.end_run(run, "finished")
        other = store.begin_run("conform:conform", "k4a-6.12", "linux", _kernel_env("6.12"),
                                purpose="conform")
        store.add_conformance(other, "linux", [_case("end", "sl0", "fail", "dropped")])
        store.end_run(other, "finished")
        same = store.begin_run("conform:conform", "k4a-6.1", "linux", _kernel_env("6.1"),
                               purpose="conform")
        store.add_conformance(same, "linux", [_case("end", "sl0", "pass")])
        store.end_run(same, "finished")
        name = kernel_compare.KernelName.of(run, store.run_row(run)["environment"])
        frame, where = kernel_compare._conformance_of(store, run, name, "linux")
    assert where == f"conform run {same} (same kernel)"
    assert list(frame["status"]) == ["pass"]


def test_srperf_compare_names_the_kernels(two_kernels,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    results, base, cur = two_kernels
    main(["compare", base, cur, "--results", str(results)])
    out = capsys.readouterr().out
    assert "Kernels compared:" in out
    assert f"run {base}: 6.1.0-cloud-amd64 EMULATED (linux-image-6.1-cloud, sha256 " \
           f"{SHA['6.1'][:16]}, tcg)" in out
    assert "ratio current/baseline" in out and "| ipv6 | 64 | 0.5 |" in out
    assert "- end hop_limit_1: baseline pass, current finding (ICMP time exceeded not sent)" \
        in out


def test_runs_of_the_host_get_no_kernel_section(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    for _ in range(2):
        assert main(["run", "quick", "--testbed", "simulated", "--results", str(results),
                     "--set", "behaviors=[ipv6]"]) == 0
    with ResultStore(results / "srperf.sqlite") as store:
        a, b = list(store.frame("runs").sort_values("started")["run_id"])
    capsys.readouterr()
    main(["compare", a, b, "--results", str(results)])
    assert "Kernels compared" not in capsys.readouterr().out


def test_fewer_than_three_repetitions_give_a_ratio_without_interval() -> None:
    import pandas as pd

    s = lambda run, vals: pd.DataFrame(  # noqa: E731
        [{"behavior": "end", "packet_size": 64, "threshold_pct": 0.5, "status": "ok",
          "lower_pps": v * 1000, "note": ""} for v in vals])
    empty = pd.DataFrame(columns=["behavior", "packet_size", "status", "reason"])
    (r,) = kernel_compare.ratios(s("a", [20.0, 22.0]), s("b", [24.0, 26.0]), empty, empty)
    assert r.ratio == pytest.approx(math.sqrt(24 * 26) / math.sqrt(20 * 22))
    assert r.low is None and "n too small" in r.note


def test_function_changes_largest_either_way_first() -> None:
    base = BehaviorProfile("end", 64, 3, 1000.0, 20.0,
                           shares={"fib6_lookup": 0.30, "seg6_local_input": 0.20,
                                   "memcpy": 0.10})
    cur = BehaviorProfile("end", 64, 3, 800.0, 25.0,
                          shares={"fib6_lookup": 0.10, "seg6_local_input": 0.30,
                                  "new_fn": 0.05})
    changes = function_changes(base, cur)
    # fib6_lookup 300 -> 80 ns (-220); memcpy 100 -> 0 (-100); seg6 200 -> 240 (+40); new 40
    assert [c.symbol for c in changes] == ["fib6_lookup", "memcpy", "seg6_local_input",
                                           "new_fn"]
    assert changes[0].delta_ns == pytest.approx(-220.0)
