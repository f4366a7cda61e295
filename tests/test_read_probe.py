"""What an independent probe of the read gate found (stop 54, issue 44), each kept as a test.

The probe (docs/root-safety.md, "Independent probe (stop 54)") played another local user,
``nobody``, against every surface srperf reads as root.  What it found not refused:

* **HIGH** -- a virtual testbed's ``sut.vpp_binary`` (and the ``vppctl`` beside it) and a
  local tester's TRex release (``tester.options.release``: ``./t-rex-64``, its libraries,
  and the pid file whose process group srperf signals) owned by or writable by another
  user were accepted by ``validate`` and run by root;
* **HIGH** -- the SSH ``known_hosts`` and ``key_file`` were checked when the testbed was
  loaded but opened by paramiko by name later, with nothing checked in between;
* **HIGH** (tester/SUT hosts) -- the TRex and srnk archives were unpacked by root with
  ``tar``'s default ``--same-owner``: files owned by whatever uid the archive names;
* **hang / leak** -- ``srperf ab FILE`` read its file with ``Path.read_text``: another
  user's file was taken, a FIFO or ``/dev/zero`` hung it, and a YAML error quoted the
  file's line (a root-only file's content, under sudo).

Each test plays ``nobody`` and removes what it made (tmp_path, and ``finally``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from cli_call import call_main
from srperf.errors import ConfigError

NOBODY = 65534
LEAK = "P4P-LEAKMARK-91c2"


def _nobody(path: Path) -> Path:
    os.lchown(path, NOBODY, NOBODY)
    return path


def _exe(path: Path, body: str = "exit 0") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _virtual(tmp_path: Path, tester: dict | None = None, sut: dict | None = None) -> Path:
    data: dict = {"name": "p4pv", "kind": "virtual", "prefix": "p4pv"}
    if tester:
        data["tester"] = tester
    if sut:
        data["sut"] = sut
    path = tmp_path / "tb.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# -- VPP on a virtual testbed ------------------------------------------------------------
def _vpp_cases(tmp_path: Path, case: str) -> Path:
    if case == "binary-of-nobody":
        return _nobody(_exe(tmp_path / "vpp"))
    if case == "in-a-directory-of-nobody":
        d = tmp_path / "nd"
        d.mkdir()
        _nobody(d)
        return _exe(d / "vpp")
    if case == "vppctl-of-nobody":
        _nobody(_exe(tmp_path / "bin" / "vppctl"))
        return _exe(tmp_path / "bin" / "vpp")
    if case == "world-writable":
        path = _exe(tmp_path / "vpp")
        path.chmod(0o777)
        return path
    raise AssertionError(case)


VPP_CASES = ["binary-of-nobody", "in-a-directory-of-nobody", "vppctl-of-nobody",
             "world-writable"]


@pytest.mark.parametrize("case", VPP_CASES)
def test_validate_refuses_a_vpp_binary_another_user_controls(
        tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    binary = _vpp_cases(tmp_path, case)
    code, out, err = call_main(["validate", str(_virtual(tmp_path, sut={
        "forwarder": "vpp", "vpp_binary": str(binary)}))], capsys)
    assert code == 2, out + err
    assert "sut.vpp_binary" in err and "Traceback" not in err
    assert "nobody" in err or "writable by others" in err


def test_vpp_is_not_started_from_a_binary_of_nobody(tmp_path: Path) -> None:
    """At use too (it may have changed since validate): refused before root runs it."""
    from srperf.testbeds.vpp_sut import VppProcess, VppStartup

    ran = tmp_path / "ran"
    binary = _nobody(_exe(tmp_path / "vpp", f"touch {ran}"))
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    vpp = VppProcess(str(binary), "p4p-none", VppStartup(work), source=str(tmp_path / "tb"))
    with pytest.raises(ConfigError, match="sut.vpp_binary.*nobody"):
        vpp.start()
    assert vpp.proc is None and not ran.exists()


# -- a TRex release on this host ----------------------------------------------------------
def _release(tmp_path: Path, case: str) -> Path:
    rel = tmp_path / "v3.08"
    _exe(rel / "t-rex-64")
    if case == "directory-of-nobody":
        _nobody(rel)
    elif case == "t-rex-64-of-nobody":
        _nobody(rel / "t-rex-64")
    elif case == "world-writable-directory":
        rel.chmod(0o777)
    elif case == "library-of-nobody":
        (rel / "so").mkdir()
        _nobody(_exe(rel / "so" / "libzmq.so"))
    else:
        raise AssertionError(case)
    return rel


RELEASE_CASES = ["directory-of-nobody", "t-rex-64-of-nobody", "world-writable-directory",
                 "library-of-nobody"]


@pytest.mark.parametrize("case", RELEASE_CASES)
def test_validate_refuses_a_local_trex_release_another_user_controls(
        tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    rel = _release(tmp_path, case)
    code, out, err = call_main(["validate", str(_virtual(tmp_path, tester={
        "driver": "trex", "options": {"release": str(rel), "low_end": True}}))], capsys)
    assert code == 2, out + err
    assert "tester.options.release" in err and "Traceback" not in err


def test_trex_server_neither_starts_nor_believes_the_pid_file_of_an_untrusted_release(
        tmp_path: Path) -> None:
    """The release's pid file names the process group srperf TERMs and KILLs: in a
    release another user can write, it is not believed (and nothing is started)."""
    from srperf.drivers.trex import TrexOptions
    from srperf.drivers.trex_server import TrexServer
    from srperf.transports.netns import NetnsTransport

    ran = tmp_path / "ran"
    rel = tmp_path / "v3.08"
    _exe(rel / "t-rex-64", f"touch {ran}")
    victim = subprocess.Popen(["sleep", "60"])
    try:
        server = TrexServer(NetnsTransport(None), TrexOptions(release=str(rel), low_end=True),
                            "p4ptb", ports=("t0", "t1"), kernel_ports=True)
        Path(server.pid_path).write_text(f"{victim.pid}\n")
        assert server.pid() == victim.pid   # a trusted release: its pid file is believed
        _nobody(rel)
        assert server.pid() is None
        with pytest.raises(ConfigError, match="tester.options.release.*nobody"):
            server.start()
        server.stop()   # what `testbed down` does: the victim is not signalled
        assert victim.poll() is None and not ran.exists()
    finally:
        victim.kill()
        victim.wait()


# -- the archives srperf unpacks as root on a tester or SUT --------------------------------
@pytest.mark.parametrize("which", ["trex", "srnk"])
def test_archives_are_unpacked_as_root_s_own(tmp_path: Path, which: str) -> None:
    """GNU tar run by root keeps the owners and modes the archive names: a file of uid
    65534 mode 0666 in a TRex or kernel archive would be that user's to change.  The
    step's own unpack command is run here on such an archive."""
    src = tmp_path / "src" / "top"
    src.mkdir(parents=True)
    planted = src / "t-rex-64"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o666)
    _nobody(planted)
    if which == "trex":
        from srperf.config.provision import TrexInstall
        from srperf.provision.plan import _trex_release

        step = _trex_release(TrexInstall(version="v3.08", url="https://example.org/t.tgz",
                                         sha256="0" * 64, dir=str(tmp_path)))
        archive, out = tmp_path / "trex-v3.08.tar.gz", tmp_path / "top"
    else:
        from srperf.provision.srnk import PinnedSource, _fetch_steps

        commit = "a" * 40
        steps, archive_name, tree = _fetch_steps(
            "linux", PinnedSource("https://example.org/linux", commit, "0" * 64),
            str(tmp_path), ("make",))
        step, archive, out = steps[-1], Path(archive_name), Path(tree)
        out.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="top")
    (cmd,) = [c for c in step.apply if " -xzf " in c]
    subprocess.run(["bash", "-c", cmd], check=True)
    st = os.stat(out / "t-rex-64")
    assert st.st_uid == 0 and not st.st_mode & 0o022


# -- srperf ab FILE -------------------------------------------------------------------------
def _ab(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``srperf ab ...`` in a child (a FIFO would hang this process), bounded in time."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    full.update(env or {})
    try:
        return subprocess.run([sys.executable, "-m", "srperf.cli", "ab", *argv], env=full,
                              capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"srperf ab {argv} hung (30 s)")


def test_ab_file_of_another_user_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ab.yaml"
    path.write_text("a: end\nb: end_x\nunknown_p4p: 1\n")   # parsed: an unknown key error
    _nobody(path)
    res = _ab([str(path)])
    assert res.returncode == 2, res.stderr
    assert "not trusted" in res.stderr and "unknown_p4p" not in res.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_ab_file_that_would_block_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path = tmp_path / "ab.yaml"
        os.mkfifo(path)
        _nobody(path)
    else:
        path = Path("/dev/zero")
    res = _ab([str(path)])
    assert res.returncode == 2, res.stderr
    assert "not a regular file" in res.stderr and "Traceback" not in res.stderr


def test_ab_file_error_quotes_no_line_of_a_root_only_file(tmp_path: Path) -> None:
    """Under sudo, a root-only file named as the A/B file: the YAML error names the
    place, never the line (as every config file's error)."""
    path = tmp_path / "secret.txt"
    path.write_text(f"a: b\n  {LEAK}: [\n")
    path.chmod(0o600)
    res = _ab([str(path)], {"SUDO_UID": str(NOBODY), "SUDO_USER": "nobody"})
    assert res.returncode == 2, res.stderr
    assert LEAK not in res.stdout + res.stderr and "line 2" in res.stderr


# -- SSH key and known_hosts at use --------------------------------------------------------
@pytest.mark.parametrize("which", ["known_hosts", "key_file"])
def test_ssh_files_are_checked_again_when_paramiko_opens_them(tmp_path: Path,
                                                              which: str) -> None:
    """Loaded trusted, then another user's by the time of the connection (here: the
    directory became nobody's): refused before any connection is tried."""
    from srperf.config.model import SshConfig
    from srperf.safety.read_gate import Untrusted
    from srperf.transports.ssh import SshTransport

    d = tmp_path / "keys"
    d.mkdir()
    files = {"known_hosts": d / "known_hosts", "key_file": d / "id_ed25519"}
    for path in files.values():
        path.write_text("x\n")
        path.chmod(0o600)
    cfg = SshConfig(host="192.0.2.1", known_hosts=str(files["known_hosts"]),
                    key_file=str(files["key_file"]), timeout_s=1.0)
    _nobody(d if which == "known_hosts" else files["key_file"])
    if which == "key_file":
        _nobody(d)   # both ways another user gets to choose the file
    transport = SshTransport(cfg)
    try:
        with pytest.raises(Untrusted, match="nobody"):
            transport.run(["true"], timeout=2.0)
    finally:
        transport.close()


# -- the TRex client's Python, imported by root ---------------------------------------------
def _client(tmp_path: Path, ran: Path) -> Path:
    client = tmp_path / "client"
    (client / "trex").mkdir(parents=True)
    (client / "trex" / "__init__.py").write_text(f"open({str(ran)!r}, 'w').close()\n")
    _nobody(client)
    return client


def test_validate_refuses_a_trex_client_path_of_another_user(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client = _client(tmp_path, tmp_path / "ran")
    code, out, err = call_main(["validate", str(_virtual(tmp_path, tester={
        "driver": "trex", "options": {"client_path": str(client), "low_end": True}}))], capsys)
    assert code == 2, out + err
    assert "tester.options.client_path" in err and "nobody" in err


def test_trex_client_of_another_user_is_never_imported(tmp_path: Path) -> None:
    """At use: the client process (whose sys.path starts with client_path) is not
    started, so nobody's ``trex/__init__.py`` never runs as root."""
    from srperf.drivers.trex import TrexWorker

    ran = tmp_path / "ran"
    client = _client(tmp_path, ran)
    with pytest.raises(ConfigError, match="client_path.*nobody"):
        TrexWorker(str(client), timeout_s=5.0)
    assert not ran.exists()


# -- an experiment's vppctl, run by the CFG script in a namespace of this host --------------
def _vppctl_of_nobody(tmp_path: Path) -> Path:
    d = tmp_path / "nd"
    d.mkdir()
    _nobody(d)
    return _nobody(_exe(d / "vppctl"))


def test_validate_refuses_an_experiment_vppctl_of_another_user(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"name": "p4pe", "behaviors": ["end"], "forwarder": "vpp",
                                   "options": {"vppctl": str(_vppctl_of_nobody(tmp_path))}}))
    code, out, err = call_main(["validate", str(exp), "--testbed", str(_virtual(tmp_path))],
                               capsys)
    assert code == 2, out + err
    assert "options.vppctl" in err and "nobody" in err


def test_virtual_sut_refuses_a_vppctl_of_another_user_at_use(tmp_path: Path) -> None:
    from srperf.config.loader import load_testbed
    from srperf.forwarders import registry as forwarders
    from srperf.forwarders.vpp import VppOptions
    from srperf.testbeds import registry as testbeds

    testbed = testbeds.create(load_testbed(_virtual(tmp_path)))
    options = VppOptions(vppctl=str(_vppctl_of_nobody(tmp_path)))
    with pytest.raises(ConfigError, match="options.vppctl.*nobody"):
        testbed.sut(forwarders.get("vpp"), options)


# -- SSH key and known_hosts at validate (whole path) ----------------------------------------
KNOWN = ("127.0.0.1 ssh-ed25519 "
         "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")


@pytest.mark.parametrize("which", ["known_hosts", "key_file"])
def test_validate_refuses_ssh_files_in_a_directory_another_user_may_change(
        tmp_path: Path, which: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Root's own known_hosts or key, in a directory of nobody's (known_hosts) or one
    everyone may write (key_file): that user could swap it before root connects."""
    shared = tmp_path / "shared"
    shared.mkdir()
    if which == "known_hosts":
        _nobody(shared)
    else:
        shared.chmod(0o777)
    files = {"known_hosts": (shared if which == "known_hosts" else tmp_path) / "kh",
             "key_file": (shared if which == "key_file" else tmp_path) / "id"}
    files["known_hosts"].write_text(KNOWN)
    files["key_file"].write_text("x\n")
    files["key_file"].chmod(0o600)
    data = {"name": "p4ps", "kind": "ssh",
            "tester": {"driver": "linux", "tx": {"name": "t0", "mac": "02:5e:00:00:01:01"},
                       "rx": {"name": "t1", "mac": "02:5e:00:00:02:01"},
                       "line_rate_pps": 1000000, "cpu": 0},
            "sut": {"forwarder": "linux", "in": {"name": "s0", "mac": "02:5e:00:00:01:02"},
                    "out": {"name": "s1", "mac": "02:5e:00:00:02:02"},
                    "transport": {"kind": "ssh", "ssh": {
                        "host": "127.0.0.1", "user": "root", "timeout_s": 5,
                        "known_hosts": str(files["known_hosts"]),
                        "key_file": str(files["key_file"])}}}}
    path = tmp_path / "ssh.yaml"
    path.write_text(yaml.safe_dump(data))
    code, out, err = call_main(["validate", str(path)], capsys)
    assert code == 2, out + err
    assert f"sut.transport.ssh.{which}" in err and "Traceback" not in err
