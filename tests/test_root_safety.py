"""srperf runs as root: what another local user or a hostile file must not achieve (issue 25).

Each test plants what an attacker would and checks that root does not follow:
a symlink planted under the results directory (a run's end removed
``runs/ID/tmp`` through it), a nightly suite name with ``../`` (reports written
outside the reports directory), a newline in an SSH host (``testbed trust``
wrote a known_hosts line for ``*``), a secret in ``proxy_command`` (stored in a
run's reason and printed after a lost connection), ``--resume %`` (run ids
matched with LIKE), and the results database readable by everyone.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Iterator

import paramiko
import pytest
import yaml

from srperf.cli import main
from srperf.errors import SrperfError
from srperf.results.store import ResultStore
from srperf.run_record import run_tmpdir

EXPERIMENT = {"name": "s25", "behaviors": ["ipv6", "end"],
              "search": {"algorithm": "bisect", "trial_duration_s": 0.2}}


def _call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _victim(tmp_path: Path, run_id: str) -> Path:
    """A directory of someone else's, shaped like ``runs/RUN_ID/tmp``, with a file."""
    precious = tmp_path / "victim" / run_id / "tmp" / "precious"
    precious.parent.mkdir(parents=True)
    precious.write_text("keep me")
    return precious


# -- a symlink planted under the results directory ---------------------------------------------
def test_runs_swapped_for_a_symlink_during_a_run_is_not_followed(tmp_path: Path) -> None:
    """While a run measures, ``runs`` is renamed and replaced by a symlink to another
    directory: the run's end removes its own tmp, never the one the symlink leads to."""
    results = tmp_path / "res"
    results.mkdir()
    precious = _victim(tmp_path, "RUN1")
    with run_tmpdir(results / "runs" / "RUN1" / "tmp") as tmp:
        (Path(tmp) / "generator.bin").write_text("x")
        os.rename(results / "runs", results / "runs.moved")
        os.symlink(tmp_path / "victim", results / "runs")
    assert precious.read_text() == "keep me"


def test_a_run_dir_planted_as_a_symlink_is_refused(tmp_path: Path) -> None:
    """``runs/RUN_ID`` planted beforehand as a symlink: refused, nothing made or removed
    where it leads."""
    results = tmp_path / "res"
    (results / "runs").mkdir(parents=True)
    precious = _victim(tmp_path, "RUN2")
    os.symlink(tmp_path / "victim" / "RUN2", results / "runs" / "RUN2")
    with pytest.raises(SrperfError, match="symlink"):
        with run_tmpdir(results / "runs" / "RUN2" / "tmp"):
            pass
    assert precious.read_text() == "keep me"


@pytest.mark.parametrize("mode", [0o777, 0o770])
def test_a_results_dir_others_can_write_is_refused(tmp_path: Path, mode: int,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "shared"
    results.mkdir()
    os.chmod(results, mode)
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    code, _, err = _call(["run", str(exp), "--testbed", "simulated", "--results",
                          str(results)], capsys)
    assert code == 2 and "--results" in err and "without the sticky bit" in err, err
    assert list(results.iterdir()) == []
    code, _, err = _call(["runs", "--db", str(results / "srperf.sqlite")], capsys)
    assert code == 2 and "writable by" in err, err


# -- a nightly suite's name with ../ -------------------------------------------------------------
def test_a_suite_name_with_dotdot_writes_nothing_outside_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reports = tmp_path / "a" / "b" / "reports"
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "x/../../../escaped", "testbed": "simulated",
                                     "experiments": [str(exp)], "results": str(tmp_path / "r"),
                                     "reports": str(reports)}))
    code, out, err = _call(["nightly", str(suite)], capsys)
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and reports not in p.parents
               and p.parent not in (tmp_path, tmp_path / "r")]
    assert not outside, f"written outside {reports}: {outside}"
    assert code == 2 and "suite.yaml" in err and "name" in err and "escaped" in err, err


def test_report_names_stay_inside_even_for_a_suite_made_in_code(tmp_path: Path) -> None:
    """A Suite built without the loader (an API user): file names are made safe."""
    from srperf.nightly import Suite, run_nightly

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({**EXPERIMENT, "name": "..exp"}))
    reports = tmp_path / "a" / "reports"
    suite = Suite(name="x/../../../escaped", testbed="simulated", experiments=(str(exp),),
                  source="<code>", results=str(tmp_path / "r"), reports=str(reports))
    out = run_nightly(suite)
    assert out.junit_path is not None and out.junit_path.parent == reports
    assert all(r.report is None or r.report.parent == reports for r in out.results)
    assert not [p for p in (tmp_path / "a").iterdir() if p != reports]


# -- a newline in an SSH host name and `srperf testbed trust` ------------------------------------
def test_trust_refuses_a_host_with_a_newline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from srperf.transports import ssh_trust

    key = paramiko.Ed25519Key.from_private_key_file(_new_key(tmp_path))
    # test double at the network boundary: the node's handshake (a real sshd is used by
    # tests/test_ssh_config.py); everything after it runs for real
    monkeypatch.setattr(ssh_trust, "fetch_host_key", lambda cfg: key)
    monkeypatch.setattr("builtins.input", lambda prompt="": "yes")
    known = tmp_path / "known_hosts"
    known.write_text("")
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump({"name": "s25", "kind": "ssh", "prefix": "s25tr",
                                  "sut": {"transport": {"ssh": {
                                      "host": "sut.example\n*", "known_hosts": str(known)}}}}))
    code, out, err = _call(["testbed", "trust", str(tb)], capsys)
    assert "*" not in known.read_text().split(), known.read_text()
    assert code == 2 and "sut.transport.ssh.host" in err, (out, err)
    from srperf.config.model import SshConfig
    from srperf.errors import ConfigError

    with pytest.raises(ConfigError, match="not a host name"):
        ssh_trust.add_known_host(SshConfig(host="sut.example\n*", known_hosts=str(known)), key)
    assert known.read_text() == ""


def _new_key(folder: Path) -> str:
    import subprocess

    path = folder / "host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return str(path)


# -- run ids matched with LIKE ------------------------------------------------------------------
def test_resume_percent_picks_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ResultStore(tmp_path / "res" / "srperf.sqlite") as store:
        run_id = store.begin_run("s25", "simulated", "linux", {})
        assert store.run_ids("%") == [] and store.run_ids("_") == []
        assert store.run_ids(run_id[:8]) == [run_id]
    code, _, err = _call(["run", "--resume", "%", "--results", str(tmp_path / "res")], capsys)
    assert code == 2 and "'%'" in err and "no such run" in err, err
    code, _, err = _call(["report", "2%", "--results", str(tmp_path / "res")], capsys)
    assert code == 2 and "no such run" in err, err


# -- modes of what srperf writes ----------------------------------------------------------------
def test_results_database_is_private(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "res" / "srperf.sqlite") as store:
        store.begin_run("s25", "simulated", "linux", {"secret": "no"})
    assert stat.S_IMODE(os.stat(tmp_path / "res" / "srperf.sqlite").st_mode) == 0o600
    old = tmp_path / "old.sqlite"   # a store an older srperf made world-readable
    ResultStore(old).close()
    os.chmod(old, 0o644)
    ResultStore(old).close()
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o600


def test_a_symlink_as_the_database_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    (tmp_path / "res").mkdir()
    os.symlink(target, tmp_path / "res" / "srperf.sqlite")
    with pytest.raises(SrperfError, match="symlink"):
        ResultStore(tmp_path / "res" / "srperf.sqlite")


# -- a secret in proxy_command ------------------------------------------------------------------
SECRET = "s25-Secret-Token-7f3a"


@pytest.fixture(scope="module")
def sshd() -> Iterator[object]:
    if not os.path.exists("/usr/sbin/sshd") or not os.path.exists("/usr/bin/nc"):
        pytest.skip("needs OpenSSH's sshd and netcat-openbsd (scripts/install.sh)")
    from sshd import sshd_in_new_namespaces

    with sshd_in_new_namespaces(f"s25-{os.getpid()}-s", f"s25-{os.getpid()}-c", tag=25) as node:
        yield node


@pytest.mark.netns
def test_a_secret_in_proxy_command_is_nowhere(sshd: object, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A lost connection, a failed reconnect, a stored failed run, ``srperf testbed
    status`` and ``srperf runs``: the proxy command's secret is in none of them."""
    from srperf.config.loader import load_testbed
    from srperf.errors import TransportError
    from srperf.run_record import describe_error
    from srperf.transports.ssh import SshTransport

    node = sshd
    caplog.set_level(logging.DEBUG)
    ssh = node.ssh_config(proxy_command=f"{node.proxy_command} # {SECRET}",  # type: ignore
                          keepalive_s=1)
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump({"name": "s25", "kind": "ssh", "prefix": "s25px",
                                  "sut": {"transport": {"kind": "ssh", "ssh": ssh}}}))
    config = load_testbed(tb)
    assert config.sut.transport.ssh is not None
    transport = SshTransport(config.sut.transport.ssh)
    messages: list[str] = []
    try:
        assert transport.run(["true"]).ok
        node.stop()          # type: ignore[attr-defined]
        node.drop_sessions()  # type: ignore[attr-defined]
        with pytest.raises(TransportError) as lost:
            for _ in range(50):
                transport.run(["sleep", "0.1"])
        messages.append(str(lost.value))
        with pytest.raises(TransportError) as again:
            transport.reconnect()
        messages.append(str(again.value))
        assert "proxy_command" in messages[-1]   # the failure still says it went through it
    finally:
        transport._workdir = None   # the node is gone: nothing to clean
        transport.close()
    results = tmp_path / "res"
    with ResultStore(results / "srperf.sqlite") as store:
        run_id = store.begin_run("s25", "s25", "linux", {"proxy": ssh["proxy_command"]})
        store.add_outcome(run_id, "ipv6", "linux", 64, "error", describe_error(again.value))
        store.end_run(run_id, "failed", describe_error(again.value))
    code, out, err = _call(["testbed", "status", str(tb)], capsys)
    assert code == 1 and "redacted" in err, err
    messages += [out, err]
    code, out, err = _call(["runs", "--results", str(results)], capsys)
    assert code == 0 and run_id in out
    messages += [out, err, caplog.text]
    for text in messages:
        assert SECRET not in text, text
    for path in results.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path
    node.start()  # type: ignore[attr-defined]
