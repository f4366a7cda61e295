"""``srperf validate`` checks what this host can see: a TRex release without t-rex-64,
a VPP binary that is not one, a CPU this host does not have, and nightly suite files;
each refused with exit 2 naming the file, the key and the value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from srperf.cli.entry import main


def _write(tmp_path: Path, name: str, data: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _virtual(**tester_sut: dict) -> dict:
    return {"name": "s26v", "kind": "virtual", "prefix": "s26v", **tester_sut}


def _release(tmp_path: Path, with_binary: bool) -> Path:
    rel = tmp_path / ("v3.08" if with_binary else "empty")
    rel.mkdir()
    if with_binary:
        (rel / "t-rex-64").write_text("#!/bin/sh\nexit 0\n")
        (rel / "t-rex-64").chmod(0o755)
    return rel


def _validate(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str]:
    code = main(["validate", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("case,key", [
    ("no-release-dir", "tester.options.release"),
    ("release-without-t-rex-64", "tester.options.release"),
    ("no-vpp", "sut.vpp_binary"),
    ("vpp-not-executable", "sut.vpp_binary"),
    ("tester-cpu", "tester.cpu"),
    ("sut-cpu", "sut.cpu"),
])
def test_validate_refuses_what_this_host_lacks(tmp_path: Path, case: str, key: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    missing_cpu = max(os.sched_getaffinity(0)) + 7
    vpp = tmp_path / "vpp"
    vpp.write_text("not a program\n")
    data = {
        "no-release-dir": _virtual(tester={"driver": "trex", "options": {
            "release": str(tmp_path / "no-such"), "low_end": True}}),
        "release-without-t-rex-64": _virtual(tester={"driver": "trex", "options": {
            "release": str(_release(tmp_path, False)), "low_end": True}}),
        "no-vpp": _virtual(sut={"vpp_binary": str(tmp_path / "bin" / "vpp")}),
        "vpp-not-executable": _virtual(sut={"vpp_binary": str(vpp)}),
        "tester-cpu": _virtual(tester={"cpu": missing_cpu}),
        "sut-cpu": _virtual(sut={"cpu": missing_cpu}),
    }[case]
    code, text = _validate(capsys, _write(tmp_path, "tb.yaml", data))
    assert code == 2, text
    assert key in text and "tb.yaml" in text, text


def test_validate_accepts_a_release_and_a_vpp_that_exist(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vpp = tmp_path / "vpp"
    vpp.write_text("#!/bin/sh\nexit 0\n")
    vpp.chmod(0o755)
    data = _virtual(tester={"driver": "trex", "options": {
        "release": str(_release(tmp_path, True)), "low_end": True}},
        sut={"vpp_binary": str(vpp)})
    code, text = _validate(capsys, _write(tmp_path, "tb.yaml", data))
    assert code == 0 and "ok (testbed)" in text, text


def test_an_ssh_testbeds_local_tester_cpu_is_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The tester of an SSH testbed runs here: a CPU this host lacks is refused before
    any connection or verification; the SUT's CPU is the SUT's (testbed status)."""
    known = tmp_path / "known_hosts"
    known.write_text("[127.0.0.1]:2222 ssh-ed25519 "
                     "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    data = {"name": "s26s", "kind": "ssh",
            "tester": {"cpu": max(os.sched_getaffinity(0)) + 7},
            "sut": {"cpu": 99, "transport": {"kind": "ssh", "ssh": {
                "host": "127.0.0.1", "port": 2222, "user": "root",
                "known_hosts": str(known)}}}}
    code, text = _validate(capsys, _write(tmp_path, "ssh.yaml", data))
    assert code == 2 and "tester.cpu" in text, text
    data["tester"]["cpu"] = 0
    code, text = _validate(capsys, _write(tmp_path, "ssh.yaml", data))
    assert code == 0, text


def test_validate_knows_nightly_suites(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path, "suite.yaml", {"name": "n", "testbed": "simulated",
                                           "experiments": ["quick"]})
    code, text = _validate(capsys, good)
    assert code == 0 and "ok (nightly suite, 1 experiment(s)" in text, text
    bad = _write(tmp_path, "bad.yaml", {"name": "n", "testbed": "simulated",
                                        "experiments": ["quick"], "nights": 3})
    code, text = _validate(capsys, bad)
    assert code == 2 and "nights" in text, text
    missing = _write(tmp_path, "missing.yaml", {"name": "n", "testbed": "simulated",
                                                "experiments": ["no-such-experiment"]})
    code, text = _validate(capsys, missing)
    assert code == 2 and "no-such-experiment" in text, text
