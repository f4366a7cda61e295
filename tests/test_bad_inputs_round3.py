"""Bad inputs, round three (issue 33, the input half): the numeric gate, the rules a
schema cannot say, and the commands that answered wrongly.

Each case runs ``srperf`` in this process as a user would and must exit 2 with one
message naming the file (or option), the key and the value, before anything is
started (``validate`` only reads files; the refused ``conform``/``run`` open no run).
Valid controls next to the refusals show each rule refuses only what it should.
Testbeds use the ``q3b`` prefix; nothing here creates a namespace.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from srperf.cli.entry import main
from srperf.results.store import ResultStore
from sshd import trusting_known_hosts

PREFIX = "q3b"
VIRTUAL_TB: dict[str, Any] = {"name": "q3b", "kind": "virtual", "prefix": PREFIX,
                              "tester": {"line_rate_pps": 300000}}
REPO = Path(__file__).resolve().parent.parent


def _call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:   # argparse's own refusal
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _refused(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in: {err}"
    assert len(err.strip().splitlines()) <= 2, err


def _write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def _validate_exp(tmp_path: Path, exp: dict[str, Any],
                  capsys: pytest.CaptureFixture[str],
                  tb: dict[str, Any] | None = None) -> tuple[int, str, str]:
    e = _write(tmp_path / "exp.yaml", {"name": "q3b", **exp})
    t = _write(tmp_path / "tb.yaml", tb or VIRTUAL_TB)
    return _call(["validate", str(e), "--testbed", str(t)], capsys)


# -- the numeric gate --------------------------------------------------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_compare_threshold_must_be_finite(value: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with ResultStore(tmp_path / "res" / "srperf.sqlite") as store:
        run = store.begin_run("q3b", "simulated", "linux", {})
        store.end_run(run, "finished")
    code, out, err = _call(["compare", "last", "last", f"--threshold={value}",
                            "--results", str(tmp_path / "res")], capsys)
    _refused(code, err, "--threshold", "finite")
    assert "regression threshold" not in out, out


def test_bound_message_names_ms_not_an_aside(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """pipes delay_ms above its bound: the message says "10000 ms", not the phrase in
    parentheses at the end of the key's description."""
    data = yaml.safe_load((REPO / "experiments" / "srv6pipes.yaml").read_text())
    data["pipes"]["configurations"][0]["delay_ms"] = 20000
    e = _write(tmp_path / "pipes.yaml", data)
    code, _, err = _call(["validate", str(e)], capsys)
    _refused(code, err, "delay_ms", "20000", "10000 ms")
    assert "netem" not in err and "delay line" not in err, err


def _bounded(schema: Any, path: str = "", key: str = ""):
    if isinstance(schema, dict):
        if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum",
                                     "exclusiveMaximum")):
            yield path, key, schema
        for k, v in schema.items():
            if k == "properties":
                for name, sub in v.items():
                    yield from _bounded(sub, f"{path}.{name}", name)
            elif k == "items":
                yield from _bounded(v, f"{path}[]", key)
            elif k in ("oneOf", "anyOf"):
                for sub in v:
                    yield from _bounded(sub, path, key)


def test_every_bounded_number_names_its_unit() -> None:
    """Every number a file may hold with a bound (experiments, testbeds, suites, every
    forwarder's and driver's options) has a unit for the bound's message, and the
    unit is a unit, not a sentence."""
    from srperf.forwarders import registry as forwarders
    from srperf.config.loader import EXPERIMENT_SCHEMA, TESTBED_SCHEMA
    from srperf.config.numbers import unit_of
    from srperf.traffic.generators import options_class
    from srperf.nightly import SUITE_SCHEMA

    schemas = [("experiment", EXPERIMENT_SCHEMA), ("testbed", TESTBED_SCHEMA),
               ("suite", SUITE_SCHEMA)]
    schemas += [(f"options of {n}", forwarders.get(n).options.json_schema())
                for n in forwarders.names()]
    schemas += [(f"tester.options of {d}", options_class(d).json_schema())
                for d in ("linux", "trex", "simulated") if options_class(d)]
    missing, sentences = [], []
    checked = 0
    for name, schema in schemas:
        for path, key, node in _bounded(schema):
            checked += 1
            unit = unit_of(node, key)
            if not unit:
                missing.append(f"{name}: {path}")
            elif "," in unit or len(unit) > 40:
                sentences.append(f"{name}: {path}: {unit!r}")
    assert checked > 60, checked
    assert not missing, f"bounded numbers without a unit: {missing}"
    assert not sentences, f"units that are phrases: {sentences}"


def test_set_and_flag_numbers_pass_one_gate(capsys: pytest.CaptureFixture[str]) -> None:
    """The gate itself: finite, bounded, the unit named; a flag type refusing NaN."""
    import argparse

    from srperf.config.numbers import check, flag_float, flag_int
    from srperf.errors import ConfigError

    with pytest.raises(ConfigError, match="above the limit of 1000 %"):
        check("<command line>", "--threshold", 1e9, 0, 1000, "%")
    with pytest.raises(ConfigError, match="finite"):
        check("<command line>", "--threshold", math.nan, 0, 1000, "%")
    for bad in ("nan", "inf", "-Infinity", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            flag_float(bad)
    assert flag_int("1e3") == 1000
    with pytest.raises(argparse.ArgumentTypeError, match="whole"):
        flag_int("2.5")


# -- uniqueness --------------------------------------------------------------------------
def test_object_size_twice_in_three_spellings(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _validate_exp(tmp_path, {"kind": "http", "behaviors": ["ipv6"],
                                            "http": {"object_sizes": ["1KB", 1000, "1 KB"]}},
                                 capsys)
    _refused(code, err, "exp.yaml", "http.object_sizes[1]", "1000", "'1KB'")


def test_pipes_object_size_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load((REPO / "experiments" / "srv6pipes.yaml").read_text())
    data["pipes"]["configurations"][0]["object_sizes"] = ["1MB", 1000000]
    e = _write(tmp_path / "pipes.yaml", data)
    code, _, err = _call(["validate", str(e)], capsys)
    _refused(code, err, "pipes.yaml", "pipes.configurations[0].object_sizes[1]")


def test_vnf_mode_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _validate_exp(tmp_path, {"kind": "goodput", "forwarder": "ebpf",
                                            "behaviors": ["end_ad"],
                                            "goodput": {"vnf_modes": ["drop", "forward",
                                                                      "drop"]}}, capsys)
    _refused(code, err, "exp.yaml", "goodput.vnf_modes[2]", "'drop'", "VNF mode")


@pytest.mark.parametrize("second", ["quick", "{quick_path}"], ids=["name", "file"])
def test_suite_lists_an_experiment_twice(second: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    other = second.format(quick_path=REPO / "experiments" / "quick.yaml")
    suite = _write(tmp_path / "suite.yaml", {"name": "q3b", "testbed": "simulated",
                                             "experiments": ["quick", other]})
    code, _, err = _call(["validate", str(suite)], capsys)
    _refused(code, err, "suite.yaml", "experiments[1]", "quick")


# -- keys that mean nothing here ------------------------------------------------------------
def test_vnf_modes_on_a_forwarder_without_vnfs(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Forwarder linux has no VNFs: the run used to bring the testbed up and die with a
    TypeError; validate refuses it."""
    code, _, err = _validate_exp(tmp_path, {"kind": "goodput", "forwarder": "linux",
                                            "behaviors": ["end"],
                                            "goodput": {"vnf_modes": ["drop"]}}, capsys)
    _refused(code, err, "exp.yaml", "goodput.vnf_modes", "linux", "no VNFs")


@pytest.mark.parametrize("search", [{"algorithm": "mlr", "bisect_start": "mrr"},
                                    {"bisect_start": "short"},
                                    {"algorithm": "mrr", "repeat_near_threshold": 5},
                                    {"algorithm": "bisect", "mrr_rate": "50%"}],
                         ids=["mlr", "default-mlr", "repeat-near-mrr", "mrr-rate-bisect"])
def test_search_key_the_algorithm_ignores(search: dict[str, Any], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _validate_exp(tmp_path, {"behaviors": ["ipv6"], "search": search}, capsys)
    key = next(k for k in search if k != "algorithm")
    _refused(code, err, "exp.yaml", f"search.{key}", "ignores it")


def test_search_key_its_algorithm_reads_is_accepted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _validate_exp(tmp_path, {"behaviors": ["ipv6"], "search": {
        "algorithm": "bisect", "bisect_start": "mrr", "repeat_near_threshold": 3}}, capsys)
    assert code == 0 and "ok" in out, err


def test_chains_no_behavior_can_carry(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Two chains through End.AD only: every configuration would be unsupported after
    the testbed came up; validate names the key instead.  With a behavior that can
    (end_cache) the same list is valid (the shipped caching-proxy experiment)."""
    code, _, err = _validate_exp(tmp_path, {"kind": "goodput", "forwarder": "ebpf",
                                            "behaviors": ["end_ad", "end_as"],
                                            "goodput": {"chains": [1, 2]}}, capsys)
    _refused(code, err, "exp.yaml", "goodput.chains[1]", "2 chains", "end_ad")
    code, out, err = _call(["validate", str(REPO / "experiments" /
                                            "caching_proxy_goodput.yaml")], capsys)
    assert code == 0, err


@pytest.mark.parametrize("table", [254, 255, 253, 252], ids=["main", "local", "default",
                                                             "next-is-default"])
def test_reserved_routing_table_refused(table: int, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load((REPO / "experiments" / "srv6pipes.yaml").read_text())
    data.setdefault("options", {})["table"] = table
    e = _write(tmp_path / "pipes.yaml", data)
    code, _, err = _call(["validate", str(e)], capsys)
    _refused(code, err, "pipes.yaml", "options.table", str(table), "the kernel's")


# -- endpoints and TRex server ----------------------------------------------------------------
@pytest.fixture(scope="module")
def known_hosts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # every spelling a test uses is trusted, so that only the rule can refuse it
    hosts = ["sut.example.org", "client.example.org", "server.example.org",
             "2001:db8::5", "fd00:1::2", "fd00:1::1", "SUT.Example.ORG",
             "sut.example.org.", "2001:db8:0:0:0:0:0:5"]
    return trusting_known_hosts(tmp_path_factory.mktemp("q3b-keys"), hosts)


def _ssh(host: str, kh: Path) -> dict[str, Any]:
    return {"kind": "ssh", "ssh": {"host": host, "user": "root", "known_hosts": str(kh)}}


def _endpoint_tb(kh: Path, sut: str, client: str, client_dev: str = "eth1") -> dict[str, Any]:
    return {"name": "q3b", "kind": "ssh", "prefix": PREFIX,
            "tester": {"line_rate_pps": 300000},
            "sut": {"transport": _ssh(sut, kh)},
            "endpoints": {"client": {"transport": _ssh(client, kh), "dev": client_dev},
                          "server": {"transport": _ssh("server.example.org", kh),
                                     "dev": "eth1"}}}


@pytest.mark.parametrize(("sut", "client", "says"), [
    ("sut.example.org", "SUT.Example.ORG", "the SUT itself"),
    ("sut.example.org", "sut.example.org.", "the SUT itself"),
    ("2001:db8::5", "2001:db8:0:0:0:0:0:5", "the SUT itself"),
    ("sut.example.org", "fd00:1::2", "addressing.sut_in_ip6"),
    ("sut.example.org", "fd00:1::1", "addressing.tester_tx_ip6"),
], ids=["case", "trailing-dot", "ipv6-spelling", "sut-test-address", "link-address"])
def test_endpoint_that_is_the_sut(sut: str, client: str, says: str, known_hosts: Path,
                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tb = _write(tmp_path / "tb.yaml", _endpoint_tb(known_hosts, sut, client))
    code, _, err = _call(["validate", str(tb)], capsys)
    _refused(code, err, "tb.yaml", "endpoints.client.transport.ssh.host", says)


def test_endpoint_dev_lo(known_hosts: Path, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    tb = _write(tmp_path / "tb.yaml", _endpoint_tb(known_hosts, "sut.example.org",
                                                   "client.example.org", client_dev="lo"))
    code, _, err = _call(["validate", str(tb)], capsys)
    _refused(code, err, "tb.yaml", "endpoints.client.dev", "'lo'", "loopback")


def test_endpoints_distinct_from_the_sut_pass(known_hosts: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    tb = _write(tmp_path / "tb.yaml", _endpoint_tb(known_hosts, "sut.example.org",
                                                   "client.example.org"))
    code, out, err = _call(["validate", str(tb)], capsys)
    assert code == 0 and "ok" in out, err


@pytest.mark.parametrize("server", ["trex host", "-oProxyCommand=x", "a;b", "http://t:4501"])
def test_trex_server_not_a_host(server: str, known_hosts: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load((REPO / "testbed" / "trex.yaml").read_text())
    data["sut"]["transport"] = _ssh("sut.example.org", known_hosts)
    data["tester"]["options"]["server"] = server
    data["tester"]["options"].pop("release", None)
    data["tester"].pop("transport", None)
    tb = _write(tmp_path / "trex.yaml", data)
    code, _, err = _call(["validate", str(tb)], capsys)
    _refused(code, err, "trex.yaml", "tester.options.server", repr(server))


# -- clean refusals of commands ------------------------------------------------------------
@pytest.mark.parametrize("spec", ["", " ", "*", "2026%", "?"], ids=["empty", "blank", "star",
                                                                   "percent", "question"])
def test_resume_refuses_empty_and_pattern_ids(spec: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``--resume ''`` used to resume the store's only run (an empty prefix)."""
    with ResultStore(tmp_path / "res" / "srperf.sqlite") as store:
        run = store.begin_run("q3b", "simulated", "linux", {"recipe": {}})
        store.end_run(run, "failed", "made by the test")
    code, out, err = _call(["run", "--resume", spec, "--results", str(tmp_path / "res")],
                           capsys)
    _refused(code, err, "--resume")
    with ResultStore(tmp_path / "res" / "srperf.sqlite") as store:
        assert store.run_row(run)["status"] == "failed"


def test_report_refuses_a_pattern(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ResultStore(tmp_path / "res" / "srperf.sqlite") as store:
        store.end_run(store.begin_run("q3b", "simulated", "linux", {}), "finished")
    code, _, err = _call(["report", "*", "--results", str(tmp_path / "res")], capsys)
    _refused(code, err, "run", "'*'", "not a run id")
    assert not list((tmp_path / "res").glob("report-*"))


def test_unprepare_dry_run_prints_the_undo(known_hosts: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    tb = _write(tmp_path / "tb.yaml", {"name": "q3b", "kind": "ssh", "prefix": PREFIX,
                                       "tester": {"line_rate_pps": 300000},
                                       "sut": {"transport": _ssh("sut.example.org",
                                                                 known_hosts)}})
    code, out, err = _call(["testbed", "unprepare", str(tb), "--dry-run"], capsys)
    assert code == 0, err
    assert "addr del fd00:1::2/64" in out and "ip neigh del" in out, out
    assert "rm -f /run/srperf/prepared-q3b.json" in out, out
    assert "addr replace" not in out and "nud permanent" not in out, out
    code, out, err = _call(["testbed", "prepare", str(tb), "--dry-run"], capsys)
    assert code == 0 and "addr replace fd00:1::2/64" in out and "addr del" not in out, out


def test_conform_on_the_simulated_testbed_opens_no_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _call(["conform", "-t", "simulated", "-b", "end",
                          "--results", str(tmp_path / "res")], capsys)
    _refused(code, err, "simulated.yaml", "kind", "'simulated'", "no run was opened")
    assert not (tmp_path / "res" / "srperf.sqlite").exists()


def test_conform_forwarder_pipes_names_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _call(["conform", "--forwarder", "pipes",
                          "--results", str(tmp_path / "res")], capsys)
    _refused(code, err, "--forwarder", "'pipes'", "no packet behavior")
    assert "behaviors = []" not in err, err


@pytest.mark.parametrize("proxy", ["/nonexistent/q3b-proxy -W %h:%p", "false"],
                         ids=["missing", "exits-at-once"])
def test_failing_proxy_is_one_clean_line(proxy: str, known_hosts: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Paramiko's transport thread logged its traceback to the terminal."""
    ssh = _ssh("sut.example.org", known_hosts)
    ssh["ssh"].update(proxy_command=proxy, timeout_s=5)
    tb = _write(tmp_path / "tb.yaml", {"name": "q3b", "kind": "ssh", "prefix": PREFIX,
                                       "tester": {"line_rate_pps": 300000},
                                       "sut": {"transport": ssh}})
    for action in ("status", "trust"):   # a process of its own: the real stderr
        done = subprocess.run([sys.executable, "-m", "srperf.cli", "testbed", action,
                               str(tb)], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        code, err = done.returncode, done.stderr
        assert code == 1, err
        assert "Traceback" not in err and "paramiko" not in err, err
        assert len(err.strip().splitlines()) == 1 and "proxy" in err.lower(), err
