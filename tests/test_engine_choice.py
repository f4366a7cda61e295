"""tester.options.engine of the linux generator (issue 43): the option, auto's choice and
the refusals of ``engine: xdp`` before anything starts (no traffic: fast tier)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from srperf.cli.entry import main
from srperf.drivers.linux import LinuxGenerator, LinuxGeneratorOptions
from srperf.drivers.linux_engine import XDP_MAX_FRAME_BYTES, Traffic, xdp_refusal
from srperf.config.testbed import load_testbed
from srperf.errors import GeneratorError
from srperf.traffic.generators import create_generator
from srperf.util.netns import netns_names
from refusals import assert_refused

PREFIX = "g4cu"
EXP: dict[str, Any] = {"name": "eng", "behaviors": ["ipv6"],
                       "search": {"algorithm": "bisect", "trial_duration_s": 0.2}}


def _tb(options: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": "eng", "kind": "virtual", "prefix": PREFIX,
            "tester": {"line_rate_pps": 300000, "options": options}, **more}


def test_option_declared_with_default_auto() -> None:
    assert LinuxGeneratorOptions().engine == "auto"
    assert "engine" in "\n".join(LinuxGeneratorOptions.describe())


@pytest.mark.parametrize(("options", "engine"), [({}, "auto"), ({"engine": "packet"}, "packet"),
                                                 ({"engine": "xdp"}, "xdp")])
def test_testbed_without_engine_key_runs_auto(tmp_path: Path, options: dict[str, Any],
                                              engine: str) -> None:
    """A testbed that names no engine gets the option's default (auto); one that names
    one gets it; a LinuxGenerator made in code (benches, tests) keeps srgen."""
    tb_file = tmp_path / "tb.yaml"
    tb_file.write_text(yaml.safe_dump(_tb(options)))
    gen = create_generator(load_testbed(tb_file), None)
    try:
        assert isinstance(gen, LinuxGenerator) and gen.engine == engine
    finally:
        gen.close()
    assert LinuxGenerator(None, "lo", "lo").engine == "packet"


def test_bad_engine_value_refused() -> None:
    with pytest.raises(ValueError, match="engine"):
        LinuxGenerator(None, "lo", "lo", engine="turbo")


@pytest.mark.parametrize(("traffic", "word"), [
    (Traffic(XDP_MAX_FRAME_BYTES + 1), "larger"),
    (Traffic(XDP_MAX_FRAME_BYTES + 1, mix=True), "larger"),
    (Traffic(60, send_mode="ring"), "ring"),
    (Traffic(60, tx_driver="e1000"), "veth"),
    (Traffic(60, tx_driver=""), "veth"),
])
def test_xdp_refusal_says_why(traffic: Traffic, word: str) -> None:
    why = xdp_refusal(traffic)
    assert why is not None and word in why


def test_xdp_accepts_what_it_can_send() -> None:
    assert xdp_refusal(Traffic(60)) is None
    assert xdp_refusal(Traffic(XDP_MAX_FRAME_BYTES)) is None
    # issue 43: flows, latency probes and IMIX are sent by xdpgen too
    assert xdp_refusal(Traffic(60, latency=True)) is None
    assert xdp_refusal(Traffic(60, flows=4)) is None
    assert xdp_refusal(Traffic(1514, mix=True)) is None


def test_a_mix_goes_to_either_engine() -> None:
    """Both engines send a mix (-I, linux_gen/mix.h): auto chooses as for one frame;
    srgen's ring mode cannot, which prepare_mix says before anything is sent."""
    from srperf.drivers.base import MixUnsupported

    mix = [(_frame(), 7), (_frame() + bytes(100), 1)]
    for engine, driver, chosen in (("packet", "veth", "packet"), ("auto", "veth", "xdp"),
                                   ("auto", "e1000", "packet")):
        gen = LinuxGenerator(None, "lo", "lo", engine=engine)
        try:
            gen._tx_driver = driver          # lo is no veth: as on a virtual testbed, or not
            gen.prepare_mix(mix)
            assert gen.choose_engine() == chosen
            argv = gen._options_argv()
            assert argv[argv.index("-I") + 1] == "60:7,160:1"
        finally:
            gen.close()
    gen = LinuxGenerator(None, "lo", "lo", mode="ring")
    try:
        with pytest.raises(MixUnsupported, match="mmsg"):
            gen.prepare_mix(mix)
    finally:
        gen.close()


def _frame() -> bytes:
    return bytes.fromhex("025e00000102025e0000010186dd") + bytes(46)


def test_auto_falls_back_to_packet_on_a_non_veth_port(caplog: pytest.LogCaptureFixture) -> None:
    """lo is no veth: auto picks srgen and says why once; xdp refuses at the trial."""
    gen = LinuxGenerator(None, "lo", "lo", engine="auto")
    try:
        gen.prepare(_frame())
        with caplog.at_level(logging.INFO, logger="srperf.drivers.linux"):
            assert gen.choose_engine() == "packet"
            assert gen.choose_engine() == "packet"
        said = [r.getMessage() for r in caplog.records if "engine auto" in r.getMessage()]
        assert len(said) == 1 and "veth" in said[0]
    finally:
        gen.close()
    gen = LinuxGenerator(None, "lo", "lo", engine="xdp")
    try:
        gen.prepare(_frame())
        with pytest.raises(GeneratorError, match="tester.options.engine"):
            gen.choose_engine()
    finally:
        gen.close()


def test_packet_never_asks_for_xdp() -> None:
    gen = LinuxGenerator(None, "lo", "lo")
    try:
        gen.prepare(_frame())
        assert gen.choose_engine() == "packet"
    finally:
        gen.close()


@pytest.mark.parametrize(("exp_change", "tb_more", "options", "word"), [
    ({"packet_sizes": [4000]}, {"addressing": {"link_mtu": 9000}}, {}, "larger"),
    ({}, {}, {"mode": "ring"}, "ring"),
    ({"packet_sizes": ["imix"], "imix": ["64:1", "4000:1"]},
     {"addressing": {"link_mtu": 9000}}, {}, "larger"),
], ids=["frame-too-large", "ring-mode", "imix-too-large"])
def test_engine_xdp_refused_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], exp_change: dict[str, Any],
        tb_more: dict[str, Any], options: dict[str, Any], word: str) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({**EXP, **exp_change}))
    tb = tmp_path / "xdp-tb.yaml"
    tb.write_text(yaml.safe_dump(_tb({"engine": "xdp", **options}, **tb_more)))
    try:
        for argv in (["validate", str(exp), "--testbed", str(tb)],
                     ["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")]):
            code = main(argv)
            err = capsys.readouterr().err
            assert_refused(code, err, "xdp-tb.yaml", ("tester.options.engine", word))
        assert not (tmp_path / "r").exists(), "the run started"
    finally:
        assert not [n for n in netns_names() if n.startswith(PREFIX)]


@pytest.mark.parametrize(("engine", "exp_change"), [
    ("auto", {"latency": {"enabled": True}}),
    ("xdp", {"latency": {"enabled": True}}),
    ("xdp", {"traffic": {"flows": {"count": 4}}}),
    ("xdp", {"packet_sizes": ["imix"], "imix": ["64:7", "594:4", "1400:1"]}),
    ("auto", {"packet_sizes": [64, "imix"], "imix": ["64:7", "594:4", "1400:1"]}),
], ids=["auto-latency", "xdp-latency", "xdp-flows", "xdp-imix", "auto-imix"])
def test_what_xdpgen_sends_is_not_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          engine: str, exp_change: dict[str, Any]) -> None:
    """Latency, flows and IMIX (issue 43): validate accepts them with engine xdp or auto."""
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({**EXP, **exp_change}))
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump(_tb({"engine": engine})))
    assert main(["validate", str(exp), "--testbed", str(tb)]) == 0, capsys.readouterr().err


def test_unknown_engine_in_testbed_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    tb = tmp_path / "bad-tb.yaml"
    tb.write_text(yaml.safe_dump(_tb({"engine": "turbo"})))
    code = main(["validate", str(tb)])
    assert_refused(code, capsys.readouterr().err, "bad-tb.yaml",
                   ("tester.options.engine", "turbo"))


@pytest.mark.parametrize(("engine", "quantum_s", "q", "b"), [
    ("packet", 0.0, "0", "16"), ("xdp", 0.0, None, None), ("xdp", 0.0001, "100", None)])
def test_quantum_passed_only_where_it_means_something(engine: str, quantum_s: float,
                                                     q: str | None, b: str | None) -> None:
    """srgen's -q 0 means "each packet at once"; xdpgen always sends in quanta (its own
    default, 20 us) and refuses -q 0, so the xdp engine gets -q only when one is set.
    srgen's -b is its sendmmsg batch; xdpgen's is the kernel batch of an unpaced call,
    whose page pool holds that many pages: srgen's 16 would starve its recycling, so
    xdpgen keeps its own (256)."""
    gen = LinuxGenerator(None, "lo", "lo", quantum_s=quantum_s, batch=16)
    try:
        gen.prepare(_frame())
        gen._engine_now = engine
        argv = gen._options_argv()
        assert (argv[argv.index("-q") + 1] if "-q" in argv else None) == q
        assert (argv[argv.index("-b") + 1] if "-b" in argv else None) == b
    finally:
        gen.close()


def test_default_testbed_runs_auto_at_fifo_50() -> None:
    """testbed/virtual.yaml names no engine (so auto, the option's default) and runs the
    generator at SCHED_FIFO 50, as docs/generator-engines.md gives the reasons for."""
    tb = load_testbed(Path(__file__).resolve().parents[1] / "testbed" / "virtual.yaml")
    assert "engine" not in tb.tester.options
    assert tb.tester.options["fifo_priority"] == 50
    assert LinuxGeneratorOptions(**tb.tester.options).engine == "auto"
