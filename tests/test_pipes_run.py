"""``srperf run`` of an http experiment with a ``pipes:`` block: the keys' validation,
and one real SRv6Pipes chain (lighttpd, wrk, pipes_relay) in namespaces, stored."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.config.loader import load_experiment
from refusals import assert_experiment_refused

HEAD = "name: x\nforwarder: pipes\nbehaviors: [relay]\n"


@pytest.mark.parametrize("body, key, value", [
    ("kind: http\npipes: {configurations: [{chain: [router, xor:0]}]}",
     "pipes.configurations[0].chain[1]", "xor:0"),
    ("kind: http\npipes: {configurations: [{chain: [proxy]}]}",
     "pipes.configurations[0].chain[0]", "proxy"),
    ("kind: http\npipes: {configurations: [{chain: [relay]}, {chain: [relay, router]}]}",
     "pipes.configurations[1].chain", "['relay', 'router']"),
    ("kind: http\npipes: {configurations: [{chain: [relay]}, {chain: [relay]}]}",
     "pipes.configurations[1]", "relay"),
    ("kind: http\npipes: {configurations: [{chain: [relay], object_sizes: [1XB]}]}",
     "pipes.configurations[0].object_sizes[0]", "1XB"),
    ("kind: http\npipes: {configurations: [{chain: [relay], loss_pct: 101}]}",
     "pipes.configurations[0].loss_pct", "101"),
    ("kind: http\npipes: {configurations: [{chain: [relay], delay_ms: 10001}]}",
     "pipes.configurations[0].delay_ms", "10001"),
    ("kind: http\npipes: {configurations: [{chain: [relay], delay_ms: -1}]}",
     "pipes.configurations[0].delay_ms", "-1"),
    ("kind: http\npipes: {configurations: [{chain: [relay], jitter: 1}]}",
     "pipes.configurations[0].jitter", "1"),
    ("kind: http\npipes: {configurations: []}", "pipes.configurations", "[]"),
    ("kind: goodput\npipes: {configurations: [{chain: [relay]}]}", "pipes", "relay"),
    ("kind: http\npipes: {configurations: [{chain: [relay], rate_mbit: 0}]}",
     "pipes.configurations[0].rate_mbit", "0"),
    ("kind: http\npipes: {configurations: [{chain: [relay], rate_mbit: 500000}]}",
     "pipes.configurations[0].rate_mbit", "500000"),
    # a congestion control no namespace of this host can take as its default
    ("kind: http\npipes: {configurations: [{chain: [relay], tcp_congestion: nosuchcc}]}",
     "pipes.configurations[0].tcp_congestion", "nosuchcc"),
    ("kind: http\npipes: {configurations: [{chain: [relay], tcp_congestion: ''}]}",
     "pipes.configurations[0].tcp_congestion", ""),
])
def test_validate_refuses_bad_pipes_values(tmp_path, capsys, body, key, value):
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + body + "\n")
    assert_experiment_refused(path, key, value, capsys)


PIPES = "pipes: {configurations: [{chain: [relay, router]}, {chain: [\"xor:4\", router]}]}\n"


@pytest.mark.parametrize("text, key, value", [
    # a pipes: block is not measured on the testbed's SUT (linux, named or by default)
    ("name: x\nforwarder: linux\nbehaviors: [end]\nkind: http\n" + PIPES, "forwarder",
     "linux"),
    ("name: x\nbehaviors: [end]\nkind: http\n" + PIPES, "forwarder", "linux"),
    # forwarder pipes measures chains with wrk only
    ("name: x\nforwarder: pipes\nbehaviors: [relay]\n", "forwarder", "pipes"),
    ("name: x\nforwarder: pipes\nbehaviors: [relay]\nkind: http\n", "forwarder", "pipes"),
    # its behaviors are its functions, each used, every used one listed
    ("name: x\nforwarder: pipes\nbehaviors: [end]\nkind: http\n" + PIPES, "behaviors[0]",
     "end"),
    ("name: x\nforwarder: pipes\nbehaviors: [relay, xor, xormask]\nkind: http\n" + PIPES,
     "behaviors[2]", "xormask"),
    ("name: x\nforwarder: pipes\nbehaviors: [relay]\nkind: http\n" + PIPES,
     "pipes.configurations[1].chain[0]", "xor:4"),
    # a xormask without its inverse would hand the client changed bytes
    ("name: x\nforwarder: pipes\nbehaviors: [xormask]\nkind: http\n"
     "pipes: {configurations: [{chain: [xormask, router]}]}\n",
     "pipes.configurations[0].chain", "['xormask', 'router']"),
    # its options: CPUs of this host, set together, apart
    ("name: x\nforwarder: pipes\nbehaviors: [relay, xor]\nkind: http\n"
     "options: {node_cpu: 4000, endpoint_cpu: 0}\n" + PIPES, "options.node_cpu", "4000"),
    ("name: x\nforwarder: pipes\nbehaviors: [relay, xor]\nkind: http\n"
     "options: {node_cpu: 1}\n" + PIPES, "options.endpoint_cpu", "None"),
    ("name: x\nforwarder: pipes\nbehaviors: [relay, xor]\nkind: http\n"
     "options: {node_cpu: 0, endpoint_cpu: 0}\n" + PIPES, "options.endpoint_cpu", "0"),
    ("name: x\nforwarder: pipes\nbehaviors: [relay, xor]\nkind: http\n"
     "options: {threads: 0}\n" + PIPES, "options.threads", "0"),
])
def test_validate_refuses_wrong_pipes_combinations(tmp_path, capsys, text, key, value):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    assert_experiment_refused(path, key, value, capsys)


def test_pipes_is_a_forwarder_whose_behaviors_are_its_functions(tmp_path):
    from srperf.forwarders import registry as forwarders

    fwd = forwarders.get("pipes")
    assert fwd.script == "pipes.sh" and fwd.behaviors == ()
    assert not fwd.offers("end") and "relay, xor, xormask" in fwd.why_not("end")
    path = tmp_path / "exp.yaml"
    path.write_text("name: x\nforwarder: pipes\nbehaviors: [relay, xor]\nkind: http\n"
                    "options: {threads: 2}\n" + PIPES)
    exp = load_experiment(path)
    assert exp.forwarder == "pipes" and exp.behaviors == ("relay", "xor")
    assert fwd.parse_options(exp.options).threads == 2


def test_shipped_experiment_parses():
    exp = load_experiment(Path(__file__).parent.parent / "experiments" / "srv6pipes.yaml")
    labels = [case.label for case in exp.pipes]
    assert exp.kind == "http" and exp.forwarder == "pipes" and "relay_router" in labels
    assert "xor16_router" in labels and "xormask_xormask" in labels
    assert "relay_router_loss1%_delay5ms_reno" in labels
    assert "router_router_loss1%_delay5ms_reno" in labels
    # with and without the paper's line rates: 10 Gb/s (Fig. 6, 9), 1 Gb/s (Fig. 11)
    assert {"relay_router_10000Mbit", "router_router_10000Mbit", "xor16_router_10000Mbit",
            "xormask_xormask_1000Mbit", "router_router_1000Mbit"} <= set(labels)


@pytest.mark.netns
def test_run_stores_a_pipes_chain(tmp_path, capsys):
    """One relay chain, 1 s, 1 repetition: exit 0 and a stored row with req/s > 0."""
    tb = tmp_path / "tb.yaml"
    tb.write_text("name: s22d\nkind: virtual\nprefix: s22d\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text("name: s22d_pipes\nkind: http\nforwarder: pipes\nbehaviors: [relay]\n"
                   "http: {object_sizes: [1KB], duration_s: 1, repetitions: 1}\n"
                   "pipes: {configurations: [{chain: [relay, router]}]}\n")
    results = tmp_path / "res"
    assert main(["run", str(exp), "--testbed", str(tb), "--results", str(results)]) == 0
    assert "relay_router [1KB]" in capsys.readouterr().out
    db = sqlite3.connect(results / "srperf.sqlite")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM stateful_samples")]
    assert len(rows) == 1
    row = rows[0]
    assert (row["kind"], row["behavior"], row["forwarder"], row["status"]) == \
        ("http", "relay_router", "pipes", "ok")
    assert json.loads(row["metrics"])["requests_per_s"] > 0


def test_a_congestion_control_the_host_refuses_namespaces_is_named(tmp_path, capsys,
                                                                   monkeypatch):
    """Allowed by the kernel but not in the host's list for namespaces: refused, exit 2,
    naming what can be set."""
    from srperf.traffic import tcp_congestion

    allowed = tmp_path / "allowed"
    allowed.write_text("reno bbr\n")
    monkeypatch.setattr(tcp_congestion, "ALLOWED", allowed)
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + "kind: http\npipes: {configurations: [{chain: [relay], "
                    "tcp_congestion: cubic}]}\n")
    assert_experiment_refused(path, "pipes.configurations[0].tcp_congestion", "cubic",
                              capsys)


@pytest.mark.netns
def test_every_namespace_gets_the_case_congestion_control():
    """Two cases on one chain: during the ``reno`` case every namespace's default is reno,
    during the other one it is back to the namespaces' own default; both recorded."""
    from srperf.config.stateful import HttpConfig, PipesCase
    from srperf.stateful.pipes_chain import PipesChain
    from srperf.stateful.pipes_plan import run_cases
    from srperf.traffic import tcp_congestion

    cases = [PipesCase(("relay", "router"), (1000,), tcp_congestion="reno"),
             PipesCase(("relay", "router"), (1000,))]
    names = PipesChain("p8d", ["relay", "router"]).names
    seen: list[tuple[str, dict, list[str]]] = []

    def on_sample(case, variant, rep, sample):
        seen.append((case.label, dict(sample.detail), [tcp_congestion.get(n) for n in names]))

    run_cases("p8d", cases, HttpConfig(object_sizes=(1000,), duration_s=1), 1, on_sample)
    assert [label for label, _, _ in seen] == ["relay_router_reno", "relay_router"]
    (_, reno_detail, reno_ns), (_, dflt_detail, dflt_ns) = seen
    assert reno_ns == ["reno"] * 4 and reno_detail["tcp_congestion"] == "reno"
    default = dflt_ns[0]
    assert dflt_ns == [default] * 4 and dflt_detail["tcp_congestion"] == default
    if default == "reno":
        pytest.skip("the namespaces' default is reno: the two cases cannot differ")
