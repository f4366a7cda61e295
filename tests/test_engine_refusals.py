"""``tester.options.engine: xdp`` refused where xdpgen cannot send (issue 43): a kernel
without BPF_PROG_RUN live frames, a TX device without ndo_xdp_xmit (a bridge), a TX veth
whose peer takes no live frames (no NAPI), before anything is sent.  (A frame larger than a
page allows, srgen's ring mode and an IMIX size above it: tests/test_engine_choice.py.)

The kernel's release is the boundary the live-frames check reads
(``linux_engine.kernel_release``); the tests put :func:`kernel_4_19_test_double` there and
keep the real path up to it (the CLI, preflight, ``xdp_refusal``).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from srperf.cli.entry import main
from srperf.config.loader import load_experiment, load_testbed
from srperf.drivers import linux_engine
from srperf.drivers.linux import LinuxGenerator
from srperf.drivers.linux_engine import live_frames_refusal
from srperf.errors import ConfigError, GeneratorError
from srperf.measure import preflight
from srperf.util.netns import link_stats, netns_names, run
from refusals import assert_refused

PREFIX = "t5e"
EXP: dict[str, Any] = {"name": "t5e-refuse", "behaviors": ["ipv6"],
                       "search": {"algorithm": "bisect", "trial_duration_s": 0.2}}


def kernel_4_19_test_double() -> str:
    """TEST DOUBLE (not srperf's): the release of a kernel older than live frames (5.18)."""
    return "4.19.0-test-double"


def _frame() -> bytes:
    return bytes.fromhex("025e00000102025e0000010186dd") + bytes(46)


@pytest.mark.parametrize(("release", "refused"), [
    ("4.19.0-test-double", True), ("5.17.15", True), ("5.18.0", False),
    ("6.18.0-1-amd64", False), ("not-a-release", True)])
def test_live_frames_by_kernel_release(release: str, refused: bool) -> None:
    why = live_frames_refusal(release)
    assert (why is not None) == refused
    if why is not None:
        assert release in why


def test_xdp_refused_on_a_kernel_without_live_frames(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """validate and run exit 2 naming the testbed file, the key and the kernel; the run
    never starts (no results, no namespace); ``auto`` there falls back to srgen."""
    monkeypatch.setattr(linux_engine, "kernel_release", kernel_4_19_test_double)
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXP))
    prefix = f"{PREFIX}k{uuid.uuid4().hex[:4]}"
    tb = tmp_path / "old-kernel-tb.yaml"
    tb.write_text(yaml.safe_dump({"name": "t5e", "kind": "virtual", "prefix": prefix,
                                  "tester": {"options": {"engine": "xdp"}}}))
    for argv in (["validate", str(exp), "--testbed", str(tb)],
                 ["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")]):
        code = main(argv)
        assert_refused(code, capsys.readouterr().err, "old-kernel-tb.yaml",
                       ("tester.options.engine", "4.19.0-test-double", "live frames", "5.18"))
    assert not (tmp_path / "r").exists(), "the run started"
    assert not [n for n in netns_names() if n.startswith(prefix)]
    tb.write_text(yaml.safe_dump({"name": "t5e", "kind": "virtual", "prefix": prefix,
                                  "tester": {"options": {"engine": "auto"}}}))
    assert main(["validate", str(exp), "--testbed", str(tb)]) == 0, capsys.readouterr().err
    gen = LinuxGenerator(None, "lo", "lo", engine="auto")
    try:
        gen.prepare(_frame())
        gen._tx_driver = "veth"      # as on a virtual testbed: only the kernel says no
        assert gen.choose_engine() == "packet"
    finally:
        gen.close()


@pytest.fixture
def ns() -> Iterator[str]:
    """A namespace of this test's own (prefix t5e), removed afterwards."""
    name = f"{PREFIX}-{uuid.uuid4().hex[:6]}"
    run(["ip", "netns", "add", name])
    try:
        run(["ip", "link", "set", "lo", "up"], ns=name)
        yield name
    finally:
        run(["ip", "netns", "del", name], check=False)


@pytest.mark.netns
def test_xdp_refused_on_a_bridge_tx_port(ns: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A bridge device has no ndo_xdp_xmit: an ssh testbed whose local tester (tester.netns)
    has one as its TX port is refused before the run (ConfigError: file, key, driver);
    the generator refuses it at the trial with nothing sent, and ``auto`` uses srgen."""
    for dev in ("t0", "t1"):
        run(["ip", "link", "add", dev, "type", "bridge"], ns=ns)   # (no dummy here)
        run(["ip", "link", "set", dev, "up"], ns=ns)
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXP))
    tb = tmp_path / "bridge-tb.yaml"
    tb.write_text(yaml.safe_dump({
        "name": "t5e-ssh", "kind": "ssh",
        "tester": {"driver": "linux", "netns": ns, "tx": {"name": "t0"}, "rx": {"name": "t1"},
                   "options": {"engine": "xdp"}},
        "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                "transport": {"kind": "ssh", "ssh": {"host": "192.0.2.1"}}}}))
    with pytest.raises(ConfigError) as err:
        preflight.check_engine(load_experiment(exp), load_testbed(tb))
    said = str(err.value)
    for needle in ("bridge-tb.yaml", "tester.options.engine", "'bridge'", "not veth"):
        assert needle in said, said
    before = link_stats(ns, "t0")["tx_packets"]
    with LinuxGenerator(ns, "t0", "t1", engine="xdp") as gen:
        gen.prepare(_frame())
        with pytest.raises(GeneratorError, match="tester.options.engine.*bridge"):
            gen.trial(1000, 0.01)
    assert link_stats(ns, "t0")["tx_packets"] == before
    with LinuxGenerator(ns, "t0", "t1", engine="auto") as gen:
        gen.prepare(_frame())
        assert gen.choose_engine() == "packet"


@pytest.mark.netns
def test_xdp_refused_on_a_veth_whose_peer_has_no_napi(ns: str) -> None:
    """A veth's peer with neither an XDP program nor GRO drops every live frame and
    counts none: xdpgen refuses the port at start (exit 1, the reason said) instead of
    trials that sent nothing, all of it "refused" with no counter to show it."""
    peer = f"{ns}-p"
    run(["ip", "netns", "add", peer])
    try:
        run(["ip", "link", "add", "t0", "netns", ns, "type", "veth", "peer", "name", "s0",
             "netns", peer])
        run(["ip", "link", "set", "t0", "up"], ns=ns)
        run(["ip", "link", "set", "s0", "up"], ns=peer)
        with LinuxGenerator(ns, "t0", "t0", engine="xdp") as gen:
            gen.prepare(_frame())
            with pytest.raises(GeneratorError, match="needs NAPI"):
                gen.trial(1000, 0.01)
            assert gen.resident_pid is None
    finally:
        run(["ip", "netns", "del", peer], check=False)
