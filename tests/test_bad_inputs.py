"""Every bad input is refused before anything starts (issue 16's matrix).

Each case is an experiment file, a testbed file or a command line that is wrong
in one way.  It goes through ``srperf validate`` and ``srperf run`` (in this
process, through :func:`srperf.cli.entry.main`); both must exit 2 with a message that
names the file (or option), the key and the value, print no traceback, start
nothing (no namespace of this test's prefix, no results store) and leave nothing.
The testbed's prefix is ``srphd``: were a case wrongly accepted, ``run`` would
bring that testbed up and the case would fail on the namespaces it left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from srperf.cli.entry import main
from srperf.util.netns import netns_names
from refusals import assert_refused

PREFIX = "srphd"
GOOD_EXP: dict[str, Any] = {"name": "hd", "behaviors": ["ipv6"],
                            "search": {"algorithm": "bisect", "trial_duration_s": 0.2}}
GOOD_TB: dict[str, Any] = {"name": "hd", "kind": "virtual", "prefix": PREFIX,
                           "tester": {"line_rate_pps": 300000}}


def _merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _exp(change: dict[str, Any]) -> str:
    return yaml.safe_dump(_merge(GOOD_EXP, change))


def _tb(change: dict[str, Any]) -> str:
    return yaml.safe_dump(_merge(GOOD_TB, change))


def _ssh_tb(ssh: dict[str, Any]) -> str:
    return yaml.safe_dump({"name": "hd", "kind": "ssh", "prefix": PREFIX,
                           "tester": {"line_rate_pps": 300000},
                           "sut": {"transport": {"kind": "ssh",
                                                 "ssh": {"host": "sut.invalid", **ssh}}}})


# (id, text of the bad experiment file, strings its message must hold: key, value)
EXPERIMENTS: list[tuple[str, str | bytes, tuple[str, ...]]] = [
    ("binary-file", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), ("binary",)),
    ("not-utf8", b"name: \xff\xfe\n", ("UTF-8",)),
    ("inf-duration", "name: x\nbehaviors: [ipv6]\nsearch: {trial_duration_s: .inf}\n",
     ("search.trial_duration_s", "inf", "finite")),
    ("nan-duration", "name: x\nbehaviors: [ipv6]\nsearch: {trial_duration_s: .nan}\n",
     ("search.trial_duration_s", "nan", "finite")),
    ("accuracy-0pct", _exp({"search": {"accuracy": "0%"}}), ("search.accuracy", "0%")),
    ("min-above-max-mixed-units", _exp({"search": {"min_rate": "1.4Mpps", "max_rate": "50%"}}),
     ("search.min_rate", "1.4e+06", "50%")),
    ("max-above-line-rate", _exp({"search": {"max_rate": "50Mpps"}}),
     ("search.max_rate", "5e+07", "line rate")),
    ("jumbo-on-1500-link", _exp({"packet_sizes": [9000]}),
     ("packet_sizes[0]", "9000", "MTU")),
    ("encap-over-mtu", _exp({"behaviors": ["h_encaps"], "packet_sizes": [1480]}),
     ("packet_sizes[0]", "1480", "h_encaps", "MTU")),
    ("duplicate-key", "name: x\nbehaviors: [ipv6]\nname: y\n", ("duplicate key 'name'",
                                                                 "line 3")),
    ("duplicate-nested-key", "name: x\nbehaviors: [ipv6]\nsearch:\n  trial_duration_s: 1\n"
     "  trial_duration_s: 2\n", ("duplicate key 'trial_duration_s'",)),
    ("typo-behaviour", "name: x\nbehaviour: [ipv6]\n", ("behaviour", "did you mean 'behaviors'")),
    ("unknown-behavior", _exp({"behaviors": ["end_dx7"]}), ("behaviors[0]", "end_dx7",
                                                             "did you mean")),
    ("unknown-forwarder", _exp({"forwarder": "linx"}), ("forwarder", "linx",
                                                         "did you mean 'linux'")),
    ("typo-search-key", _exp({"search": {"algoritm": "mlr"}}),
     ("search.algoritm", "did you mean 'algorithm'")),
    ("unknown-algorithm", _exp({"search": {"algorithm": "foo"}}), ("search.algorithm", "foo")),
    ("threshold-100", _exp({"search": {"thresholds_pct": [100]}}),
     ("search.thresholds_pct[0]", "100")),
    ("repetitions-0", _exp({"repetitions": 0}), ("repetitions", "0")),
    ("packet-size-20", _exp({"packet_sizes": [20]}), ("packet_sizes[0]", "20")),
    ("packet-size-float", _exp({"packet_sizes": [64.5]}), ("packet_sizes[0]", "64.5")),
    ("behavior-twice", _exp({"behaviors": ["ipv6", "ipv6"]}), ("behaviors[0]", "ipv6", "twice")),
    ("top-level-list", "- name: x\n- behaviors: [ipv6]\n", ("YAML mapping", "list")),
    ("empty-file", "", ("YAML mapping", "empty")),
    ("tab-indent", "name: x\nsearch:\n\ttrial_duration_s: 1\n", ("line 3", "not valid YAML")),
    ("unknown-option", _exp({"options": {"proxy": 1}}), ("options.proxy",)),
    ("rate-not-a-rate", _exp({"search": {"min_rate": "abc"}}), ("search.min_rate", "abc")),
    ("negative-duration", _exp({"search": {"trial_duration_s": -1}}),
     ("search.trial_duration_s", "-1")),
    ("initial-above-final", _exp({"search": {"trial_duration_s": 1,
                                             "initial_trial_duration_s": 2}}),
     ("search.initial_trial_duration_s", "2")),
    ("accuracy-wider-than-range", _exp({"search": {"accuracy": "90%", "max_rate": "50%"}}),
     ("search.accuracy", "90%")),
    ("mrr-above-line-rate", _exp({"search": {"algorithm": "mrr", "mrr_rate": "200%"}}),
     ("search.mrr_rate", "200%")),
    ("verify-as-text", _exp({"verify": "yes"}), ("verify", "yes")),
    ("empty-name", _exp({"name": ""}), ("name", "''")),
    ("whole-unrelated-file", "word " * 400_000, ("YAML mapping", "str")),
    ("testbed-of-unknown-name", _exp({"testbed": "no-such-testbed"}),
     ("no-such-testbed", "file not found")),
]

# (id, text of the bad testbed file, strings its message must hold)
TESTBEDS: list[tuple[str, str, tuple[str, ...]]] = [
    ("ifname-colon", _tb({"sut": {"in": {"name": "s:0"}}}), ("sut.in.name", "s:0")),
    ("ifname-dot", _tb({"sut": {"in": {"name": "s.0"}}}), ("sut.in.name", "s.0")),
    ("ifname-dash", _tb({"sut": {"out": {"name": "-s1"}}}), ("sut.out.name", "-s1")),
    ("ifname-long", _tb({"tester": {"tx": {"name": "a" * 16}}}), ("tester.tx.name", "aaaa")),
    ("same-ports", _tb({"tester": {"tx": {"name": "t0"}, "rx": {"name": "t0"}}}),
     ("tester.rx.name", "t0")),
    ("prefix-len6-200", _tb({"addressing": {"link_prefix_len6": 200}}),
     ("addressing.link_prefix_len6", "200")),
    ("prefix-len4-33", _tb({"addressing": {"link_prefix_len4": 33}}),
     ("addressing.link_prefix_len4", "33")),
    ("csid-out-of-range", _tb({"addressing": {"csid_sut": 100000}}),
     ("addressing.csid_sut", "100000")),
    ("csid-zero", _tb({"addressing": {"csid_next": 0}}), ("addressing.csid_next", "0")),
    ("csid-lblen-30", _tb({"addressing": {"csid_lblen": 30}}), ("addressing.csid_lblen", "30")),
    ("csid-block-bits", _tb({"addressing": {"csid_block": "fcbb:bbbb::1"}}),
     ("addressing.csid_block", "fcbb:bbbb::1")),
    ("vnf-if-prefix", _tb({"addressing": {"vnf_if_prefix": "a-very-long-nm"}}),
     ("addressing.vnf_if_prefix", "a-very-long-nm")),
    ("vnf-if-prefix-dot", _tb({"addressing": {"vnf_if_prefix": "v."}}),
     ("addressing.vnf_if_prefix", "v.")),
    ("vnf-sid-base", _tb({"addressing": {"vnf_sid_base": "zz"}}),
     ("addressing.vnf_sid_base", "zz")),
    ("vnf-target", _tb({"addressing": {"vnf_target": 999}}), ("addressing.vnf_target", "999")),
    ("vnf-mac-prefix", _tb({"addressing": {"vnf_mac_prefix": "02:5e"}}),
     ("addressing.vnf_mac_prefix", "02:5e")),
    ("table-main", _tb({"addressing": {"table": 254}}), ("addressing.table", "254", "main")),
    ("src6-is-v4", _tb({"addressing": {"src6": "192.0.2.9"}}), ("addressing.src6", "192.0.2.9")),
    ("peer-off-link", _tb({"addressing": {"tester_tx_ip6": "fd00:9::1"}}),
     ("addressing.link_prefix_len6", "fd00:9::1")),
    ("mtu-100", _tb({"addressing": {"link_mtu": 100}}), ("addressing.link_mtu", "100")),
    ("bad-mac", _tb({"tester": {"tx": {"name": "t0", "mac": "02:5e:zz:00:01:01"}}}),
     ("tester.tx.mac", "02:5e:zz")),
    ("line-rate-inf", _tb({"tester": {"line_rate_pps": float("inf")}}),
     ("tester.line_rate_pps", "inf")),
    ("prefix-upper", _tb({"prefix": "SRP"}), ("prefix", "SRP")),
    ("kind-typo", _tb({"kind": "virtul"}), ("kind", "virtul", "did you mean 'virtual'")),
    ("tester-key-typo", _tb({"tester": {"optons": {}}}), ("tester.optons", "did you mean")),
    ("cpu-999", _tb({"sut": {"cpu": 999}}), ("sut.cpu", "999")),
    ("napi-prio-100", _tb({"sut": {"napi_fifo_priority": 100}}),
     ("sut.napi_fifo_priority", "100")),
    ("trex-port-0", _tb({"tester": {"driver": "trex", "options": {"sync_port": 0}}}),
     ("tester.options.sync_port", "0")),
    ("trex-same-ports", _tb({"tester": {"driver": "trex",
                                        "options": {"sync_port": 4600, "async_port": 4600}}}),
     ("tester.options.async_port", "4600", "must differ")),
    ("ssh-no-known-hosts-file", _ssh_tb({"known_hosts": "missing_known_hosts"}),
     ("sut.transport.ssh.known_hosts", "missing_known_hosts", "does not exist")),
    ("ssh-no-key-file", _ssh_tb({"key_file": "missing_key"}),
     ("sut.transport.ssh.key_file", "missing_key", "does not exist")),
    ("ssh-known-hosts-dir", _ssh_tb({"known_hosts": "."}),
     ("sut.transport.ssh.known_hosts", "not a regular file")),
    ("ssh-host-unknown", _ssh_tb({"known_hosts": "empty_known_hosts"}),
     ("sut.transport.ssh.host", "sut.invalid", "trust")),
    ("ssh-port-0", _ssh_tb({"port": 0}), ("sut.transport.ssh.port", "0")),
    ("ssh-remote-dir", _ssh_tb({"remote_dir": "/tmp/srperf"}),
     ("sut.transport.ssh.remote_dir", "/tmp/srperf")),
    ("ssh-proxy-token", _ssh_tb({"known_hosts": "empty_known_hosts",
                                 "proxy_command": "nc %x %p"}),
     ("sut.transport.ssh.proxy_command", "%x")),
]

# (id, argv after the program name ({exp}, {tb}, {res} filled in), strings to hold)
COMMANDS: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("run-algorithm-foo", ["run", "quick", "-a", "foo"], ("--algorithm", "foo")),
    ("pdr-packet-size-100000", ["pdr", "-b", "ipv6", "--packet-size", "100000"],
     ("packet_sizes[0]", "100000")),
    ("pdr-unknown-behavior", ["pdr", "-b", "end_dx7"], ("behaviors[0]", "end_dx7")),
    ("pdr-forwarder-foo", ["pdr", "-b", "ipv6", "--forwarder", "foo"], ("--forwarder", "foo")),
    ("pdr-max-rate-0", ["pdr", "-b", "ipv6", "--max-rate", "0"], ("search.max_rate", "0")),
    ("pdr-min-above-max", ["pdr", "-b", "ipv6", "--min-rate", "2Mpps"],
     ("search.min_rate", "2e+06")),
    ("pdr-trial-duration-nan", ["pdr", "-b", "ipv6", "--trial-duration", "nan"],
     ("search.trial_duration_s", "nan")),
    ("run-set-inf", ["run", "{exp}", "--set", "search.trial_duration_s=.inf"],
     ("search.trial_duration_s", "inf")),
    ("run-set-no-equals", ["run", "{exp}", "--set", "garbage"], ("--set", "garbage")),
    ("run-set-unknown-key", ["run", "{exp}", "--set", "search.behaviour=1"],
     ("search.behaviour", "1")),
    ("run-set-jumbo", ["run", "{exp}", "--set", "packet_sizes=[9000]"],
     ("packet_sizes[0]", "9000")),
    ("run-repetitions-0", ["run", "{exp}", "--repetitions", "0"], ("repetitions", "0")),
    ("run-no-such-experiment", ["run", "no-such-experiment"],
     ("no-such-experiment", "file not found")),
    ("run-experiment-is-dir", ["run", "{dir}"], ("is a directory",)),
    ("run-testbed-as-experiment", ["run", "{tb}"], ("kind", "unknown key")),
]


@pytest.fixture
def clean(tmp_path: Path):
    """The case's folder; afterwards nothing of the test's prefix may exist."""
    (tmp_path / "empty_known_hosts").write_text("")
    yield tmp_path
    left = [n for n in netns_names() if n.startswith(PREFIX)]
    assert not left, f"namespaces left: {left}"
    assert not (tmp_path / "res").exists(), "a results store was made: the run started"


def _call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    return code, err


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in EXPERIMENTS],
                         ids=[c[0] for c in EXPERIMENTS])
def test_bad_experiment(clean: Path, text: str | bytes, needles: tuple[str, ...],
                        capsys: pytest.CaptureFixture[str]) -> None:
    exp = _write(clean / "bad-exp.yaml", text)
    tb = _write(clean / "tb.yaml", _tb({}))
    code, err = _call(["validate", str(exp), "--testbed", str(tb)], capsys)
    assert_refused(code, err, "bad-exp.yaml", needles)
    code, err = _call(["run", str(exp), "--testbed", str(tb), "--results",
                       str(clean / "res")], capsys)
    assert_refused(code, err, "bad-exp.yaml", needles)


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in TESTBEDS],
                         ids=[c[0] for c in TESTBEDS])
def test_bad_testbed(clean: Path, text: str, needles: tuple[str, ...],
                     capsys: pytest.CaptureFixture[str]) -> None:
    tb = _write(clean / "bad-tb.yaml", text)
    exp = _write(clean / "exp.yaml", _exp({}))
    code, err = _call(["validate", str(tb)], capsys)
    assert_refused(code, err, "bad-tb.yaml", needles)
    code, err = _call(["run", str(exp), "--testbed", str(tb), "--results",
                       str(clean / "res")], capsys)
    assert_refused(code, err, "bad-tb.yaml", needles)


@pytest.mark.parametrize(("argv", "needles"), [c[1:] for c in COMMANDS],
                         ids=[c[0] for c in COMMANDS])
def test_bad_command_line(clean: Path, argv: list[str], needles: tuple[str, ...],
                          capsys: pytest.CaptureFixture[str]) -> None:
    exp = _write(clean / "exp.yaml", _exp({}))
    tb = _write(clean / "tb.yaml", _tb({}))
    (clean / "adir").mkdir()
    filled = [a.format(exp=exp, tb=tb, dir=clean / "adir") for a in argv]
    if filled[0] in ("run", "pdr") and "--testbed" not in filled:
        filled += ["--testbed", str(tb)]
    filled += ["--results", str(clean / "res")]
    code, err = _call(filled, capsys)
    # a command line has no file: the message names the option or <command line>
    file = next((n for n in ("<command line>", "--", "tb.yaml", "exp.yaml", "no-such",
                             "adir") if n in err), "")
    assert_refused(code, err, file or "<no file named>", needles)


def test_matrix_size() -> None:
    """The issue asks for at least 50 bad inputs."""
    assert len(EXPERIMENTS) + len(TESTBEDS) + len(COMMANDS) >= 50


def test_internal_error_is_one_line_and_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An exception srperf does not expect: one line naming the log, exit 1."""
    from srperf.cli import entry as cli

    monkeypatch.setenv("SRPERF_LOG_DIR", str(tmp_path / "logs"))

    def broken(args: object) -> int:
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(cli.COMMANDS, "behaviors", broken)
    code, err = _call(["behaviors"], capsys)
    assert code == 1
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    logs = list((tmp_path / "logs").glob("srperf-*.log"))
    assert len(logs) == 1 and str(logs[0]) in err
    assert "ZeroDivisionError: boom" in logs[0].read_text()
    assert "Traceback" in logs[0].read_text()
