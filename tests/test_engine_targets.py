"""tester.options.engine beyond the virtual testbed (issue 43): a kernel target's tap, a
kernel without live frames, a tester host over SSH, and what the run's environment
records of the engine asked and used.  No namespace, no traffic: fast tier (the ssh
testbed's runs through a real sshd are in tests/test_engine_ssh.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from srperf.cli.entry import main
from srperf.config.loader import load_experiment, load_testbed
from srperf.drivers import linux_engine
from srperf.drivers.linux import LinuxGenerator
from srperf.drivers.linux_engine import (TAP_REFUSAL, Traffic, describe,
                                         live_frames_refusal, port_refusal, used, xdp_refusal)
from srperf.errors import ConfigError, GeneratorError
from srperf.measure import preflight
from srperf.util.netns import netns_names
from refusals import assert_refused
from sshd import trusting_known_hosts

PREFIX = "s5h"
ROOT = Path(__file__).resolve().parent.parent
EXP: dict[str, Any] = {"name": "eng", "behaviors": ["ipv6"],
                       "search": {"algorithm": "bisect", "trial_duration_s": 0.2}}


def _frame() -> bytes:
    return bytes.fromhex("025e00000102025e0000010186dd") + bytes(46)


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def _kernel_tb(tmp_path: Path, engine: str) -> Path:
    """testbed/kernel-6.1.yaml with prefix s5h and ``engine``."""
    data = yaml.safe_load((ROOT / "testbed" / "kernel-6.1.yaml").read_text())
    data["prefix"] = PREFIX
    data["tester"]["options"] = {**data["tester"].get("options", {}), "engine": engine}
    return _write(tmp_path / f"kernel-{engine}.yaml", data)


def _no_namespace_made() -> None:
    assert not [n for n in netns_names() if n.startswith(PREFIX)]


# -- the reasons ------------------------------------------------------------------------
@pytest.mark.parametrize(("release", "refused"), [
    ("5.17.15", True), ("4.19.0-27-amd64", True), ("5.18.0", False),
    ("6.1.0-56-cloud-amd64", False), ("6.18.1", False), ("", True), ("weird", True)])
def test_kernel_refusal_by_release(release: str, refused: bool) -> None:
    why = live_frames_refusal(release)
    assert (why is not None) == refused
    if refused:
        assert "5.18" in why and "live frames" in why


def test_port_refusal_names_the_tap_and_other_drivers() -> None:
    assert port_refusal("veth") is None
    assert port_refusal("tun") == TAP_REFUSAL
    assert "tap" in TAP_REFUSAL and "tx_dropped" in TAP_REFUSAL
    assert "'e1000'" in (port_refusal("e1000") or "")
    assert "unknown" in (port_refusal("") or "")
    # the kernel is said first: no driver can give live frames to a kernel without them
    assert "live frames" in (port_refusal("veth", "5.10.0") or "")


def test_xdp_refusal_checks_the_kernel_only_when_told() -> None:
    assert xdp_refusal(Traffic(60)) is None                      # kernel not checked
    assert xdp_refusal(Traffic(60, kernel="6.1.0")) is None
    assert "live frames" in (xdp_refusal(Traffic(60, kernel="5.4.0")) or "")
    assert xdp_refusal(Traffic(60, tx_driver="tun", kernel="6.1.0")) == TAP_REFUSAL


# -- the generator's own choice -----------------------------------------------------------
@pytest.mark.parametrize(("driver", "kernel", "word"), [
    ("tun", "6.18.0", "tap"), ("veth", "5.15.0", "live frames")],
    ids=["tap", "old-kernel"])
def test_generator_auto_keeps_srgen_says_why_once_xdp_refused(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        driver: str, kernel: str, word: str) -> None:
    monkeypatch.setattr(linux_engine, "kernel_release", lambda: kernel)
    gen = LinuxGenerator(None, "lo", "lo", engine="auto")
    try:
        gen._tx_driver = driver          # as ethtool -i says on a kernel target / here
        gen.prepare(_frame())
        with caplog.at_level(logging.WARNING, logger="srperf.drivers.linux"):
            assert gen.choose_engine() == "packet"
            assert gen.choose_engine() == "packet"
        said = [r.getMessage() for r in caplog.records if "engine auto" in r.getMessage()]
        assert len(said) == 1 and word in said[0], said
        assert len(gen.engine_reasons) == 1 and word in gen.engine_reasons[0]
        assert used(gen) == {"engine_reasons": gen.engine_reasons}
    finally:
        gen.close()
    gen = LinuxGenerator(None, "lo", "lo", engine="xdp")
    try:
        gen._tx_driver = driver
        gen.prepare(_frame())
        with pytest.raises(GeneratorError, match=f"tester.options.engine.*{word}"):
            gen.choose_engine()
    finally:
        gen.close()


def test_used_is_none_for_another_generator() -> None:
    assert used(object()) is None
    assert used(None) is None


# -- the run's environment --------------------------------------------------------------
def test_environment_records_engine_asked_port_and_reason() -> None:
    packet = describe({"engine": "packet"})
    assert packet["engine"] == "packet" and "port_refusal" not in packet
    assert describe({}, "veth")["engine"] == "auto"      # no engine key: the default
    tap = describe({"engine": "auto"}, "tun")
    assert tap["engine"] == "auto" and tap["tx_driver"] == "tun"
    assert tap["kernel"] == linux_engine.kernel_release()
    assert tap["port_refusal"] == TAP_REFUSAL
    assert len(tap["xdpgen_sha256"]) == 16
    veth = describe({"engine": "xdp"}, "veth")
    assert veth["engine"] == "xdp" and veth["port_refusal"] is None


# -- kernel targets: refused before anything starts, auto accepted -----------------------
def test_kernel_target_engine_xdp_refused_before_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = _write(tmp_path / "exp.yaml", EXP)
    tb = _kernel_tb(tmp_path, "xdp")
    with pytest.raises(ConfigError) as err:
        preflight.check_engine(load_experiment(exp), load_testbed(tb))
    assert err.value.key == "tester.options.engine" and "tap" in str(err.value)
    try:
        for argv in (["validate", str(exp), "--testbed", str(tb)],
                     ["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")]):
            code = main(argv)
            assert_refused(code, capsys.readouterr().err, "kernel-xdp.yaml",
                           ("tester.options.engine", "'xdp'", "tap", "tun"))
        assert not (tmp_path / "r").exists(), "the run started"
    finally:
        _no_namespace_made()


def test_kernel_target_engine_auto_passes_the_engine_check(tmp_path: Path) -> None:
    """auto is never refused: the generator keeps srgen on the tap at the trial (above)."""
    exp = _write(tmp_path / "exp.yaml", EXP)
    preflight.check_engine(load_experiment(exp), load_testbed(_kernel_tb(tmp_path, "auto")))


def test_engine_xdp_refused_on_a_kernel_without_live_frames(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linux_engine, "kernel_release", lambda: "5.15.0-91-generic")
    exp = _write(tmp_path / "exp.yaml", EXP)
    tb = _write(tmp_path / "old-kernel.yaml",
                {"name": "eng", "kind": "virtual", "prefix": PREFIX,
                 "tester": {"line_rate_pps": 300000, "options": {"engine": "xdp"}}})
    code = main(["validate", str(exp), "--testbed", str(tb)])
    assert_refused(code, capsys.readouterr().err, "old-kernel.yaml",
                   ("tester.options.engine", "5.15.0-91-generic", "live frames", "5.18"))
    _no_namespace_made()


# -- a tester host over SSH: the linux generator never runs there --------------------------
@pytest.fixture(scope="module")
def known_hosts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trusting_known_hosts(tmp_path_factory.mktemp("s5h-keys"),
                                ("sut.example.org", "tester.example.org"))


@pytest.mark.parametrize("engine", ["packet", "auto", "xdp"])
def test_linux_generator_with_a_tester_host_over_ssh_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], known_hosts: Path,
        engine: str) -> None:
    """It would have sent from this host's ports of those names: refused, whatever the
    engine, naming tester.transport, before any connection."""
    def ssh(host: str) -> dict[str, Any]:
        return {"kind": "ssh", "ssh": {"host": host, "user": "root",
                                       "known_hosts": str(known_hosts)}}

    exp = _write(tmp_path / "exp.yaml", EXP)
    tb = _write(tmp_path / "remote-tester.yaml",
                {"name": "rt", "kind": "ssh", "prefix": PREFIX,
                 "tester": {"driver": "linux", "line_rate_pps": 300000,
                            "transport": ssh("tester.example.org"),
                            "options": {"engine": engine}},
                 "sut": {"transport": ssh("sut.example.org")}})
    for argv in (["validate", str(tb)], ["validate", str(exp), "--testbed", str(tb)],
                 ["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")]):
        code = main(argv)
        assert_refused(code, capsys.readouterr().err, "remote-tester.yaml",
                       ("tester.transport", "tester.example.org", "this host", "trex"))
    assert not (tmp_path / "r").exists(), "the run started"
