"""Emulated is never passed off as native (srperf/results/emulation.py).

Runs on the simulated SUT stand in for measured ones; one of them is then marked
as a kernel target's TCG run would be (``environment.execution.mode: emulated``).
No namespaces: the store and the nightly job only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from store_rows import update_environment
from srperf.cli.entry import main
from srperf.results import emulation
from srperf.results.compare import compare_runs
from srperf.results.report import collect
from srperf.results.store import ResultStore

EMULATED_ENV = {"execution": {"mode": "emulated", "how": "QEMU tcg"}}


def _suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(f"""name: k34-emu
testbed: simulated
experiments: [quick]
repetitions: 2
compare: {{threshold_pct: 5, method: welch}}
results: {tmp_path / 'results'}
reports: {tmp_path / 'reports'}
""")
    return path


def _runs(db: Path) -> list[str]:
    with ResultStore(db) as store:
        return list(store.frame("runs").sort_values("started")["run_id"])


def test_mode_of_an_environment() -> None:
    assert emulation.mode(EMULATED_ENV) == "emulated"
    assert emulation.mode({"execution": {"mode": "native"}}) == "native"
    assert emulation.mode({}) == "native" and emulation.mode(None) == "native"
    assert emulation.label(EMULATED_ENV) == "EMULATED (QEMU tcg)"
    assert emulation.label({}) == ""


def test_a_tcg_figure_never_becomes_the_nightly_baseline_of_a_native_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path)
    db = tmp_path / "results" / "srperf.sqlite"
    assert main(["nightly", str(suite)]) == 0
    (tcg,) = _runs(db)
    update_environment(db, tcg, EMULATED_ENV)   # the first night ran under TCG
    capsys.readouterr()
    # The next (native) night finds no baseline: the only good run is emulated.
    assert main(["nightly", str(suite)]) == 0
    out = capsys.readouterr().out
    assert "no baseline yet" in out and f"baseline {tcg}" not in out
    native = _runs(db)[-1]
    # The night after takes the native run, never the newer-or-older emulated one.
    assert main(["nightly", str(suite)]) == 0
    out = capsys.readouterr().out
    assert f"baseline {native}" in out and f"baseline {tcg}" not in out
    with ResultStore(db) as store:
        comparisons = store.frame("comparisons")
        by_run = dict(zip(comparisons["run_id"], comparisons["baseline_run_id"]))
        assert not isinstance(by_run[native], str) and by_run[_runs(db)[-1]] == native, by_run
        # compare refuses the pair outright, either way round
        for a, b in ((tcg, native), (native, tcg)):
            with pytest.raises(emulation.NotComparable, match="emulated"):
                compare_runs(store, a, b)
        # and the report labels the emulated run
        data = collect(store, [tcg, native], plots_per_search=False)
        labels = {r.run_id: r.label for r in data.runs}
        assert labels[tcg].endswith(" EMULATED") and "EMULATED" not in labels[native]
    assert main(["compare", tcg, native, "--results", str(tmp_path / "results")]) != 0
    err = capsys.readouterr().err
    assert "does not judge an emulated SUT's figures against a native one's" in err
