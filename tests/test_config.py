"""Experiment and testbed files: good ones load, bad ones name file, key and value."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
import yaml

from srperf import resources
from srperf.cli.entry import main
from srperf.config.loader import load_experiment, load_testbed, validate_file
from srperf.config.model import RateSpec
from srperf.errors import ConfigError

GOOD_EXPERIMENT = {
    "name": "t", "forwarder": "linux", "behaviors": ["ipv6", "end"],
    "packet_sizes": [64], "repetitions": 2,
    "search": {"algorithm": "bisect", "thresholds_pct": [0.5, 0], "trial_duration_s": 1,
               "accuracy": "0.5%", "min_rate": "100kpps", "max_rate": "1.2Mpps"},
}
GOOD_TESTBED = {"name": "tb", "kind": "virtual", "prefix": "srpt",
                "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"},
                           "line_rate_pps": 1000000, "cpu": 0},
                "sut": {"forwarder": "linux", "transport": {"kind": "netns"},
                        "in": {"name": "s0"}, "out": {"name": "s1"}, "cpu": 1}}


def write(tmp_path: Path, data: object, name: str = "f.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_good_experiment_loads(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, GOOD_EXPERIMENT))
    assert exp.behaviors == ("ipv6", "end")
    assert exp.search.thresholds_pct == (0.5, 0.0)
    assert exp.search.min_rate == RateSpec(100_000.0)
    assert exp.search.max_rate == RateSpec(1_200_000.0)
    assert exp.search.accuracy.resolve(1_000_000) == pytest.approx(5000)


def test_good_testbed_loads(tmp_path: Path) -> None:
    tb = load_testbed(write(tmp_path, GOOD_TESTBED))
    assert (tb.tester_ns, tb.sut_ns) == ("srpt-tester", "srpt-sut")
    assert tb.sut.in_port.name == "s0" and tb.sut.in_port.mac == tb.addressing.sut_in_mac


def test_ssh_testbed_loads(tmp_path: Path) -> None:
    (tmp_path / "k").write_text("")
    (tmp_path / "k").chmod(0o600)   # a private key others may read is refused (as OpenSSH)
    (tmp_path / "kh").write_text("")
    data = {"name": "hw", "kind": "ssh",
            "sut": {"forwarder": "ebpf", "in": {"name": "eth1", "mac": "02:00:00:00:00:01"},
                    "transport": {"ssh": {"host": "sut.example", "user": "bench",
                                          "key_file": str(tmp_path / "k"),
                                          "known_hosts": str(tmp_path / "kh")}}}}
    tb = load_testbed(write(tmp_path, data))
    assert tb.sut.transport.kind == "ssh" and tb.sut.transport.ssh.host == "sut.example"


@pytest.mark.parametrize("path", sorted(resources.experiments_dir().glob("*.yaml"))
                         + sorted(resources.testbed_dir().glob("*.yaml")),
                         ids=lambda p: p.name)
def test_shipped_files_validate(path: Path) -> None:
    assert validate_file(path) in ("experiment", "testbed")


def _changed(base: dict, changes: dict[str, object]) -> dict:
    """A deep copy of ``base`` with dotted keys set (or deleted, for value KeyError)."""
    data = yaml.safe_load(yaml.safe_dump(base))
    for key, value in changes.items():
        target = data
        parts = key.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        if value is KeyError:
            del target[parts[-1]]
        else:
            target[parts[-1]] = value
    return data


def _exp(**changes: object) -> dict:
    return _changed(GOOD_EXPERIMENT, changes)


BAD_EXPERIMENTS = [
    # (what, data, key named in the error, value named)
    ("unknown behavior", _exp(behaviors=["ipv6", "end_xyz"]), "behaviors[1]", "end_xyz"),
    ("negative duration", _exp(**{"search.trial_duration_s": -1}),
     "search.trial_duration_s", "-1"),
    ("threshold 100", _exp(**{"search.thresholds_pct": [100]}), "search.thresholds_pct[0]",
     "100"),
    ("bad rate unit", _exp(**{"search.max_rate": "fast"}), "search.max_rate", "fast"),
    ("min above max", _exp(**{"search.min_rate": "2Mpps"}), "search.min_rate", "2Mpps"),
    ("typo key", _exp(**{"search.trial_duraton_s": 1}), "search.trial_duraton_s", "1"),
    ("unknown algorithm", _exp(**{"search.algorithm": "magic"}), "search.algorithm", "magic"),
    ("missing behaviors", _exp(behaviors=KeyError), "behaviors", "None"),
    ("empty behaviors", _exp(behaviors=[]), "behaviors", "[]"),
    ("zero repetitions", _exp(repetitions=0), "repetitions", "0"),
    ("tiny packet", _exp(packet_sizes=[20]), "packet_sizes[0]", "20"),
    ("unknown forwarder", _exp(forwarder="bsd"), "forwarder", "bsd"),
    ("duplicate behavior", _exp(behaviors=["end", "end"]), "behaviors[0]", "end"),
    ("string repetitions", _exp(repetitions="three"), "repetitions", "three"),
    ("bad vnf mode", _exp(options={"vnf_mode": "teleport"}), "options.vnf_mode", "teleport"),
    ("bad proxy knob", _exp(forwarder="ebpf", behaviors=["end_ad"],
                            options={"proxy": {"cache_miss": "maybe"}}),
     "options.proxy.cache_miss", "maybe"),
    ("options of another forwarder", _exp(options={"proxy": {"age_s": 1}}),
     "options.proxy", "takes no options"),
    ("unknown option", _exp(options={"vnfcount": 3}), "options.vnfcount", "3"),
]


def _assert_names_file_key_value(load: Callable[[Path], object], path: Path, key: str,
                                 value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(path)
    msg = str(info.value)
    assert str(path) in msg and key in msg and value in msg, msg
    assert info.value.key == key


@pytest.mark.parametrize("what,data,key,value", BAD_EXPERIMENTS,
                         ids=[b[0] for b in BAD_EXPERIMENTS])
def test_bad_experiment_names_file_key_value(tmp_path: Path, what: str, data: dict, key: str,
                                             value: str) -> None:
    _assert_names_file_key_value(load_experiment, write(tmp_path, data, "exp.yaml"), key, value)


def _tb(**changes: object) -> dict:
    return _changed(GOOD_TESTBED, changes)


BAD_TESTBEDS = [
    ("bad kind", _tb(kind="cloud"), "kind", "cloud"),
    ("long ifname", _tb(**{"sut.in.name": "averyveryverylongname"}), "sut.in.name",
     "averyveryverylongname"),
    ("bad mac", _tb(**{"tester.tx.mac": "zz:00:00:00:00:00"}), "tester.tx.mac", "zz:"),
    ("bad sid", _tb(**{"addressing.sid_sut": "fc00::zz"}), "addressing.sid_sut", "fc00::zz"),
    ("v4 where v6", _tb(**{"addressing.sut_in_ip6": "10.0.0.1"}), "addressing.sut_in_ip6",
     "10.0.0.1"),
    ("unknown addressing key", _tb(**{"addressing.sid_sutt": "fc00::1"}),
     "addressing.sid_sutt", "fc00::1"),
    ("cpu out of range", _tb(**{"sut.cpu": 64}), "sut.cpu", "64"),
    ("zero line rate", _tb(**{"tester.line_rate_pps": 0}), "tester.line_rate_pps", "0"),
    ("ssh without host", _tb(**{"sut.transport": {"kind": "ssh", "ssh": {"user": "x"}}}),
     "sut.transport.ssh.host", "None"),
    ("bad prefix", _tb(prefix="Bad-Prefix"), "prefix", "Bad-Prefix"),
    ("unknown generator option", _tb(**{"tester.options": {"batchsize": 8}}),
     "tester.options.batchsize", "8"),
    ("generator option out of range", _tb(**{"tester.options": {"batch": 1000}}),
     "tester.options.batch", "1000"),
    ("bad send mode", _tb(**{"tester.options": {"mode": "dpdk"}}), "tester.options.mode",
     "dpdk"),
    ("negative queue", _tb(**{"tester.options": {"queue_pkts": -1}}),
     "tester.options.queue_pkts", "-1"),
    ("bad queue mode", _tb(**{"tester.options": {"queue_mode": "nic"}}),
     "tester.options.queue_mode", "nic"),
]


@pytest.mark.parametrize("what,data,key,value", BAD_TESTBEDS, ids=[b[0] for b in BAD_TESTBEDS])
def test_bad_testbed_names_file_key_value(tmp_path: Path, what: str, data: dict, key: str,
                                          value: str) -> None:
    _assert_names_file_key_value(load_testbed, write(tmp_path, data, "tb.yaml"), key, value)


def test_cli_rejects_malformed_rate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pdr", "--behavior", "ipv6", "--max-rate", "1.2.3kpps"]) == 2
    err = capsys.readouterr().err
    assert "search.max_rate" in err and "1.2.3kpps" in err and "not a rate" in err


def test_cli_set_overrides_name_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "quick", "--set", "search.exceed_ratio=2"]) == 2
    err = capsys.readouterr().err
    assert "(with --set)" in err and "search.exceed_ratio = 2" in err
    assert main(["pdr", "-b", "end", "--set", "search.duration_sum_s"]) == 2
    assert "use KEY=VALUE" in capsys.readouterr().err


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "name: [unclosed\nbehaviors: x\n", "broken.yaml")
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert "broken.yaml" in str(info.value) and "line" in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_experiment(tmp_path / "nope.yaml")


def test_cli_validate_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, GOOD_EXPERIMENT, "good.yaml")
    bad = write(tmp_path, _exp(repetitions=0), "bad.yaml")
    assert main(["validate", str(good)]) == 0
    assert main(["validate", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "repetitions" in err


def test_cli_bad_experiment_touches_no_sut(tmp_path: Path) -> None:
    """A bad experiment fails with exit 2 before any namespace is created."""
    bad = write(tmp_path, _exp(**{"search.trial_duration_s": 0}), "bad.yaml")
    tb = write(tmp_path, _tb(prefix="srpcli"), "tb.yaml")
    assert main(["run", str(bad), "--testbed", str(tb), "--results", str(tmp_path)]) == 2
    import subprocess

    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "srpcli-" not in out
