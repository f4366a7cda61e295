"""The sides of ``srperf ab`` beyond two behaviors: SUT changes, per-side options and
forwarders, an experiment file's ``ab:`` block; their refusals (exit 2, naming key and
value), and the rule that a figure comes only from a trial that saturated the SUT with
the generator on time.  Fast: the simulated SUT and doubles at the transport boundary."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from srperf.cli.entry import main
from srperf.drivers.base import TrialResult
from srperf.errors import ConfigError
from srperf.measure import sut_change as sc
from srperf.measure.ab import saturated_rate, unusable_reason
from srperf.util.netns import CommandResult

ARGS = ["--testbed", "simulated", "--trial-s", "0.2", "--budget", "20", "--max-blocks", "8"]


@dataclass
class FakeNode:
    """A SUT transport double: records commands, answers sysctl reads."""

    fail: str = ""
    ran: list[tuple[tuple[str, ...], str | None]] = field(default_factory=list)

    def run(self, argv: Any, input_text: str | None = None, **_: Any) -> CommandResult:
        argv = tuple(argv)
        self.ran.append((argv, input_text))
        if argv[:2] == ("sysctl", "-n"):
            return CommandResult(argv, 0, "0\n", "")
        bad = bool(self.fail) and self.fail in " ".join(argv)
        return CommandResult(argv, 1 if bad else 0, "", "boom" if bad else "")


def test_nft_change_applies_the_rules_and_removes_its_table() -> None:
    change = sc.parse("nft:5", "f.yaml", "b.sut_change")
    assert change is not None and change.input_text is not None
    assert change.input_text.count("counter") == 5 and sc.NFT_TABLE in change.input_text
    node = FakeNode()
    applied = sc.Applied(change, node)
    applied.remove()
    applied.remove()   # once only
    cmds = [" ".join(a) for a, _ in node.ran]
    assert cmds == ["sh -c nft -f -", f"sh -c nft delete table inet {sc.NFT_TABLE}"]


def test_sysctl_change_restores_the_value_it_read() -> None:
    change = sc.parse("sysctl:net.ipv6.conf.all.seg6_enabled=1", "f", "b.sut_change")
    node = FakeNode()
    sc.Applied(change, node).remove()   # type: ignore[arg-type]
    cmds = [" ".join(a) for a, _ in node.ran]
    assert cmds[0] == "sysctl -n net.ipv6.conf.all.seg6_enabled"
    assert "=1'" in cmds[1] and "=0'" in cmds[2]


def test_a_change_that_fails_to_apply_stops_and_is_undone() -> None:
    change = sc.parse({"apply": "false-cmd", "undo": "true"}, "f", "b.sut_change")
    node = FakeNode(fail="false-cmd")
    with pytest.raises(sc.SutChangeFailed, match="applying it failed"):
        sc.Applied(change, node)   # type: ignore[arg-type]
    assert [a for a, _ in node.ran][-1] == ("sh", "-c", "true")


@pytest.mark.parametrize("spec", ["nft:0", "nft:x", "nft", "sysctl:a", "sysctl:a=$(id)",
                                  "iptables:3", 7, {"apply": "x"}, {"apply": "x", "undo": "y",
                                                                    "when": 1}])
def test_bad_sut_changes_are_refused_naming_the_key(spec: Any) -> None:
    with pytest.raises(ConfigError) as e:
        sc.parse(spec, "f.yaml", "b.sut_change")
    assert e.value.key.startswith("b.sut_change")


def _trial(received: int, offered: int = 1000, elapsed: float = 1.0) -> TrialResult:
    return TrialResult(1000.0, 1.0, offered, offered, 0, received, elapsed)


def test_only_a_saturated_trial_on_time_gives_a_figure() -> None:
    assert saturated_rate(_trial(900)) == pytest.approx(900.0)
    assert saturated_rate(_trial(900, elapsed=1.02)) == pytest.approx(900 / 1.02)
    assert unusable_reason(_trial(995)).startswith("not saturated")   # the generator's rate
    assert unusable_reason(_trial(900, elapsed=1.7)).startswith("the generator fell behind")
    assert not unusable_reason(_trial(900, elapsed=1.3))
    assert unusable_reason(_trial(0)) == "nothing received"


def test_a_sut_change_on_the_model_runs_nothing_and_the_side_is_stored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the simulated testbed a SUT change would run on this host: refused (exit 2)."""
    rc = main(["ab", "--a", "end", "--b", "end", "--b-sut-change", "nft:3", "--results",
               str(tmp_path), *ARGS])
    assert rc == 2
    err = capsys.readouterr().err
    assert "b.sut_change" in err and "nft:3" in err and "model" in err
    assert not (tmp_path / "srperf.sqlite").exists()


def test_per_side_options_and_forwarders_are_stored_with_the_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["ab", "--a", "end_ad", "--b", "end_ad", "--forwarder", "ebpf",
               "--b-set", "options.proxy.age_s=0", "--results", str(tmp_path), *ARGS])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "B = end_ad on ebpf with options.proxy.age_s=0" in out
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    (detail,), = db.execute("SELECT detail FROM comparisons")
    d = json.loads(detail)
    assert d["config"]["b"]["options"]["proxy"]["age_s"] == 0
    assert d["config"]["a"]["options"] == {} and d["config"]["a"]["forwarder"] == "ebpf"
    assert d["sides"]["B"].endswith("options.proxy.age_s=0")


def test_two_forwarders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["ab", "--a", "end", "--b", "xdp_end_fw", "--b-forwarder", "xdp",
               "--results", str(tmp_path), *ARGS])
    out = capsys.readouterr().out
    assert rc == 0, out
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    fws = {r for r in db.execute("SELECT behavior, forwarder FROM trials")}
    assert fws == {("end", "linux"), ("xdp_end_fw", "xdp")}
    (forwarder,), = db.execute("SELECT forwarder FROM runs")
    assert forwarder == "linux+xdp"


def test_an_experiment_file_with_an_ab_block(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "exp.yaml"
    f.write_text("name: aa\nbehaviors: [end]\ntestbed: simulated\n"
                 "ab:\n  a: end\n  b: {behavior: end_x}\n  trial_s: 0.2\n  budget_s: 20\n"
                 "  max_blocks: 8\n  seed: 3\n")
    assert main(["ab", str(f), "--results", str(tmp_path)]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "A = end, B = end_x" in out
    d = json.loads(sqlite3.connect(tmp_path / "srperf.sqlite").execute(
        "SELECT detail FROM comparisons").fetchone()[0])
    assert d["config"]["seed"] == 3 and d["result"]["n_blocks"] == len(d["blocks"])


@pytest.mark.parametrize("argv, key", [
    (["--a", "end", "--b", "end", "--b-set", "search.trial_duration_s=2"], "--b-set"),
    (["--a", "end", "--b", "end", "--b-set", "options.nosuch=1"], "options.nosuch"),
    (["--a", "end", "--b", "xdp_end_fw"], "b.behavior"),
    (["--a", "end", "--b", "end", "--b-forwarder", "nosuch"], "b.forwarder"),
    (["--a", "end", "--b", "end", "--b-sut-change", "nft:-1"], "b.sut_change"),
    (["--a", "end", "--b", "end", "--load-from", "search", "--seed", "-1"], "seed"),
])
def test_refusals_name_key_and_value(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     argv: list[str], key: str) -> None:
    rc = main(["ab", *argv, "--results", str(tmp_path), *ARGS])
    assert rc == 2
    assert key in capsys.readouterr().err
    assert not (tmp_path / "srperf.sqlite").exists()


@pytest.mark.parametrize("content, key", [
    ("name: x\nbehaviors: [end]\nab:\n  a: end\n  b: end\n  colour: red\n", "ab.colour"),
    ("name: x\nbehaviors: [end]\nab:\n  a: end\n  b: {behavior: end, when: now}\n", "b.when"),
    ("name: x\nbehaviors: [end]\nab: [1]\n", "ab"),
])
def test_bad_ab_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                       key: str) -> None:
    f = tmp_path / "exp.yaml"
    f.write_text(content)
    assert main(["ab", str(f), "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and key in err



def test_a_block_whose_generator_fell_behind_is_dropped_and_counted() -> None:
    import random

    from srperf.results import paired

    calls = {"n": 0}
    clock = {"t": 0.0}

    def measure(side: str, block: int, slot: int) -> float:
        calls["n"] += 1
        clock["t"] += 1.0
        if calls["n"] in (2, 9):   # the generator stalled in two blocks
            raise paired.BlockUnusable("stalled")
        return 100.0 + (calls["n"] % 3)

    dropped = paired.Dropped()
    r = paired.run_paired(measure, paired.StopRule(0.001, 1e9, 3, 6), random.Random(0),
                          lambda: clock["t"], dropped=dropped)
    assert dropped.count == 2 and dropped.reasons == ["stalled", "stalled"]
    assert r.n_blocks == 6 and r.stop_reason == paired.BLOCKS_SPENT

    def always(side: str, block: int, slot: int) -> float:
        raise paired.BlockUnusable("stalled")

    r = paired.run_paired(always, paired.StopRule(1, 1e9, 3, 6), random.Random(0),
                          lambda: 0.0)
    assert r.stop_reason == paired.GENERATOR_BEHIND and r.status == paired.NOT_ENOUGH


def test_the_figure_leaves_out_the_time_the_generator_slipped() -> None:
    t = TrialResult(1000.0, 1.0, 1000, 1000, 0, 900, 1.08, extra={"slipped_ns": 80_000_000})
    assert saturated_rate(t) == pytest.approx(900.0)


def test_srperf_run_reads_an_experiment_with_an_ab_block(tmp_path: Path) -> None:
    """The block is the experiment's own (schema-checked); ``srperf run`` ignores it."""
    from srperf.config.experiment import load_experiment

    f = tmp_path / "exp.yaml"
    f.write_text("name: x\nbehaviors: [end]\nab: {a: end, b: end_x, budget_s: 60}\n")
    assert load_experiment(f).behaviors == ("end",)
    f.write_text("name: x\nbehaviors: [end]\nab: {a: end, b: end_x, budget_s: -1}\n")
    with pytest.raises(ConfigError) as e:
        load_experiment(f)
    assert "budget_s" in str(e.value)
