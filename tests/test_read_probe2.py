"""Second independent probe of the read gate (issue 44): a local TRex release that is
missing when ``testbed up`` (TrexServer.start) looks, and that another user creates right
after that look, is never run by root; its nearest existing parent must be trusted."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from srperf.drivers.trex import TrexOptions
from srperf.drivers.trex_server import TrexServer
from srperf.errors import GeneratorError
from srperf.safety import programs
from srperf.safety.read_gate import Untrusted
from srperf.transports.netns import NetnsTransport

NOBODY = pwd.getpwnam("nobody")


def _server(release: Path) -> TrexServer:
    opts = TrexOptions(release=str(release), interfaces=["03:00.0", "03:00.1"],
                       sync_port=1, async_port=2)
    return TrexServer(NetnsTransport(None), opts, "q4qprobe", ready_s=2,
                      source="<testbed q4qprobe>")


def test_release_another_user_creates_after_the_check_is_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
    release = theirs / "release"
    marker = tmp_path / "ran-as-root"
    planted: list[Path] = []
    real_pid = TrexServer.pid

    def plant_then_pid(self: TrexServer) -> int | None:
        # The other user wins the race: the release appears just after start() looked.
        if not planted:
            release.mkdir()
            trex = release / "t-rex-64"
            trex.write_text(f"#!/bin/sh\nid -u > {marker}\n")
            trex.chmod(0o755)
            for path in (release, trex):
                os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
            planted.append(release)
        return real_pid(self)

    monkeypatch.setattr(TrexServer, "pid", plant_then_pid)
    with pytest.raises(Untrusted) as err:
        _server(release).start()
    assert "tester.options.release" in str(err.value) and "nobody" in str(err.value)
    assert not marker.exists()


def test_missing_release_in_a_trusted_parent_is_still_reported_as_missing(
        tmp_path: Path) -> None:
    release = tmp_path / "v3.04"
    with pytest.raises(GeneratorError, match="no executable t-rex-64"):
        _server(release).start()
    assert not release.exists()


def test_missing_release_below_a_sticky_shared_directory_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)   # like /tmp: anyone may create the release there
    with pytest.raises(Untrusted, match="tester.options.release"):
        programs.check_trex_release("<testbed>", str(shared / "trex"))


def _lab(parent: Path, name: str, target: str) -> Path:
    """An SSH testbed in ``parent/name`` (nobody's address, its own key) whose provision
    names ``target``."""
    import subprocess

    import yaml

    tmp_path = parent / name
    tmp_path.mkdir()
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True)
    pub = (tmp_path / "key.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"203.0.113.250 {pub[0]} {pub[1]}\n")
    data = {"name": "q4q-lab", "kind": "ssh", "prefix": "q4ql",
            "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": {
                        "host": "203.0.113.250", "key_file": str(key),
                        "known_hosts": str(tmp_path / "known_hosts")}}},
            "provision": {"kernel": {"target": target}}}
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_validate_checks_the_kernel_target_as_provision_takes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate said ok for a provision.kernel.target in a directory another user owns
    (provision refused it only when used); now it refuses it, naming the key."""
    from cli_call import call_main

    shipped = Path(__file__).resolve().parents[1] / "testbed" / "kernel-6.12.yaml"
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    planted = theirs / "kernel.yaml"
    planted.write_text(shipped.read_text())
    os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
    code, _, err = call_main(["validate", str(_lab(tmp_path, "a", str(planted)))], capsys)
    assert code == 2 and str(theirs) in err, err
    code, _, err = call_main(["validate", str(_lab(tmp_path, "b", "missing.yaml"))], capsys)
    assert code == 2 and "provision.kernel.target" in err and "missing.yaml" in err, err
    code, out, err = call_main(["validate", str(_lab(tmp_path, "c", str(shipped)))], capsys)
    assert code == 0 and "ok (testbed)" in out, err


@pytest.mark.parametrize("key", ["results", "reports"])
def test_validate_checks_a_suites_directories_as_nightly_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    """validate said ok for a suite whose results:/reports: directory another user owns
    (nightly refused it only when it ran: the second probe's last 2 validate gaps); now
    validate refuses it, naming the key, and makes no directory of its own."""
    import yaml
    from cli_call import call_main

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
    mine = tmp_path / "mine"
    suite = {"name": "u5s-suite", "testbed": "virtual", "experiments": ["quick"],
             "results": str(mine / "results"), "reports": str(mine / "reports")}
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(suite))
    code, out, err = call_main(["validate", str(good)], capsys)
    assert code == 0 and "nightly suite" in out, err
    assert not mine.exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**suite, key: str(theirs)}))
    code, _, err = call_main(["validate", str(bad)], capsys)
    assert code == 2 and key in err and str(theirs) in err, err
    placed = tmp_path / "a-file"
    placed.write_text("")
    bad.write_text(yaml.safe_dump({**suite, key: str(placed / "below")}))
    code, _, err = call_main(["validate", str(bad)], capsys)
    assert code == 2 and key in err and "not a directory" in err, err
