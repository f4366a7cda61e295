"""Issue 44's remaining lower findings of the read-gate probe (each failed before its fix),
with ``nobody`` (uid 65534) playing the other local user as in tests/test_read_gate.py:

1. a root-owned testbed, experiment or suite file in a directory another user owns or
   may write was accepted (the whole-path rule now holds for configs, as StrictModes);
2. a FIFO planted as a kernel testbed's record or as a lock's files hung
   ``srperf testbed status`` (state reads are now non-blocking and kind-checked);
3. a ``kernel.build.source`` tree without ``.config`` or ``scripts/config`` gave a raw
   errno and exit 1 (now exit 2 naming the key);
4. a secret-looking line of a world-readable fragment was quoted whole (quoted lines now
   pass the redaction boundary);
5. an SSH private key of mode 0644 was used (now refused as OpenSSH refuses it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from srperf.kernel import build as kb
from srperf.safety import redact
from srperf.testbeds.lock import LOCK_DIR
from cli_call import call_main as _call
from refusals import assert_refused

NOBODY = 65534
ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user: needs root")


@pytest.fixture(autouse=True)
def _no_sudo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Root trusts root only here (an outer sudo must not make nobody trusted)."""
    monkeypatch.delenv("SUDO_UID", raising=False)


def _run_cli(argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """``srperf ARGV`` in a child, killed (the test fails) when it does not end in time."""
    proc = subprocess.Popen([PY, "-c", "import sys; from srperf.cli.entry import main; "
                             "sys.exit(main(sys.argv[1:]))", *argv], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={k: v for k, v in os.environ.items() if k != "SUDO_UID"},
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"srperf {' '.join(argv)} hung (killed after {timeout:g} s)")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


# -- 1: a config in a directory another user owns or may write ------------------------------
def _configs(folder: Path) -> dict[str, Path]:
    folder.mkdir(mode=0o755)
    tb = folder / "tb.yaml"
    tb.write_text((ROOT / "testbed" / "simulated.yaml").read_text())
    exp = folder / "exp.yaml"
    exp.write_text((ROOT / "experiments" / "quick.yaml").read_text())
    suite = folder / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "c4c-suite", "testbed": "simulated",
                                     "experiments": ["quick"]}))
    for f in (tb, exp, suite):
        os.chmod(f, 0o644)
    return {"testbed": tb, "experiment": exp, "suite": suite}


@pytest.mark.parametrize("kind", ["testbed", "experiment", "suite"])
@pytest.mark.parametrize("how", ["owner", "mode", "deeper"])
def test_a_config_in_a_directory_another_user_controls_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, how: str) -> None:
    """Another user could swap the root-owned file: refused as OpenSSH's StrictModes
    refuses an authorized_keys file in a directory another user may write."""
    folder = tmp_path / "configs"
    path = _configs(folder)[kind]
    code, _, err = _call(["validate", str(path)], capsys)
    assert code == 0, err   # the same file in a private directory is fine
    if how == "owner":
        os.chown(folder, NOBODY, NOBODY)
        reason = f"the directory {folder} is owned by uid 65534 (nobody)"
    elif how == "mode":
        os.chmod(folder, 0o777)
        reason = f"the directory {folder} is writable by others (mode 0777)"
    else:   # not the file's own directory: one further up
        os.chmod(tmp_path, 0o775)
        reason = f"the directory {tmp_path} is writable by its group (mode 0775)"
    code, _, err = _call(["validate", str(path)], capsys)
    assert_refused(code, err, str(path), (reason,))


def test_a_config_below_a_sticky_directory_is_still_accepted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/tmp's rule: a sticky world-writable directory on the way is fine when the next
    entry is a trusted user's (only its owner may rename it)."""
    os.chmod(tmp_path, 0o1777)
    path = _configs(tmp_path / "configs")["testbed"]
    code, out, err = _call(["validate", str(path)], capsys)
    assert code == 0 and "ok (testbed)" in out, err


def test_an_experiments_testbed_in_another_users_directory_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The testbed an experiment names is a config srperf acts on too."""
    theirs = tmp_path / "theirs"
    files = _configs(theirs)
    os.chown(theirs, NOBODY, NOBODY)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    exp = yaml.safe_load(files["experiment"].read_text())
    exp["testbed"] = str(files["testbed"])
    (mine / "exp.yaml").write_text(yaml.safe_dump(exp))
    code, _, err = _call(["validate", str(mine / "exp.yaml")], capsys)
    assert_refused(code, err, str(files["testbed"]), ("owned by uid 65534 (nobody)",))


# -- 2: a FIFO as a state file never hangs `testbed status` ----------------------------------
@pytest.fixture
def kernel_tb(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A kernel testbed of prefix c4c<pid> (nothing of it is up) and its run directory
    under /run/srperf; what the test plants there is removed afterwards."""
    prefix = f"c4c{os.getpid() % 100000}"
    data = yaml.safe_load((ROOT / "testbed" / "kernel-6.1.yaml").read_text())
    data.update(name=f"{prefix}-k", prefix=prefix)
    data["kernel"]["cache_dir"] = str(tmp_path / "cache")
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump(data))
    lock_dir = Path(LOCK_DIR)
    made_lock_dir = not lock_dir.exists()
    lock_dir.mkdir(mode=0o755, exist_ok=True)
    run_dir = lock_dir / f"kernel-{prefix}"
    run_dir.mkdir(mode=0o700)
    try:
        yield path, run_dir
    finally:
        for planted in [*run_dir.iterdir(), *lock_dir.glob(f"kernel-{prefix}.*")]:
            planted.unlink()
        run_dir.rmdir()
        if made_lock_dir and not any(lock_dir.iterdir()):
            lock_dir.rmdir()


@pytest.mark.parametrize("planted", ["record", "record-symlink", "holder", "lock"])
def test_a_fifo_as_a_state_file_does_not_hang_testbed_status(
        kernel_tb: tuple[Path, Path], tmp_path: Path, planted: str) -> None:
    path, run_dir = kernel_tb
    prefix = run_dir.name.removeprefix("kernel-")
    target = {"record": run_dir / "testbed.json", "record-symlink": run_dir / "testbed.json",
              "holder": Path(LOCK_DIR) / f"kernel-{prefix}.json",
              "lock": Path(LOCK_DIR) / f"kernel-{prefix}.lock"}[planted]
    if planted == "record-symlink":
        os.mkfifo(tmp_path / "fifo")
        os.symlink(tmp_path / "fifo", target)
    else:
        os.mkfifo(target)
    res = _run_cli(["testbed", "status", str(path)], timeout=10.0)
    assert res.returncode == 0 and "down" in res.stdout, (res.stdout, res.stderr)
    if planted in ("holder", "lock"):
        assert f"lock unreadable: {target} is not a regular file" in res.stdout, res.stdout
    else:
        assert f"{target}: not a record srperf made" in res.stderr, res.stderr


def test_a_fifo_as_the_lock_refuses_testbed_down_at_once(
        kernel_tb: tuple[Path, Path]) -> None:
    path, run_dir = kernel_tb
    lock = Path(LOCK_DIR) / f"{run_dir.name}.lock"
    os.mkfifo(lock)
    res = _run_cli(["testbed", "down", str(path)], timeout=10.0)
    assert res.returncode == 1 and f"{lock} is not a regular file srperf made" in res.stderr, \
        res.stderr
    assert "Traceback" not in res.stderr


# -- 3: a source tree that lacks what the build runs --------------------------------------------
MAKEFILE = """\
%:
\t@true
"""


def _tree(path: Path, with_config_script: bool) -> Path:
    """A tree whose every make target succeeds but makes nothing (no .config)."""
    (path / "scripts").mkdir(parents=True)
    (path / "Makefile").write_text(MAKEFILE)
    (path / "Kconfig").write_text('mainmenu "Linux"\n')
    if with_config_script:
        (path / "scripts" / "config").write_text("#!/bin/sh\nexit 0\n")
        (path / "scripts" / "config").chmod(0o755)
    return path


@pytest.mark.parametrize("missing", [".config", "scripts/config"])
def test_a_tree_without_a_member_the_build_needs_is_refused_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str) -> None:
    if kb.missing_tools():
        pytest.skip(f"no {kb.missing_tools()} here (scripts/install.sh installs them)")
    tree = _tree(tmp_path / "linux", with_config_script=missing != "scripts/config")
    data = yaml.safe_load((ROOT / "testbed" / "kernel-6.1.yaml").read_text())
    data.update(name="c4c-b", prefix="c4cb")
    data["kernel"] = {"build": {"source": str(tree)}, "cache_dir": str(tmp_path / "cache")}
    tb = tmp_path / "k.yaml"
    tb.write_text(yaml.safe_dump(data))
    code, _, err = _call(["kernel", "build", str(tb)], capsys)
    assert_refused(code, err, str(tb), ("kernel.build.source", str(tree),
                                        f"no {Path(missing).name if missing == '.config' else missing}",
                                        "not a Linux source tree"))
    assert "Errno" not in err
    assert list((tmp_path / "cache" / "build-work").iterdir()) == []


# -- 4: a quoted line of a fragment goes through the redaction boundary -------------------------
@pytest.mark.parametrize("line, secret", [
    ("apt_password=hunter2-very-secret", "hunter2-very-secret"),
    ("DB_TOKEN: 0123abcdefsecret", "0123abcdefsecret"),
    ("root:$6$saltsalt$k9tNvQkx8a1bc2de3fg4hi5jk6lm7no8pq9:19000:0:99999:7:::",
     "$6$saltsalt$k9tNvQkx8a1bc2de3fg4hi5jk6lm7no8pq9"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "OPENSSH PRIVATE KEY"),
    ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
     "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u"),
    ("see https://bob:s3cr3t-pw@mirror.example/debian", "s3cr3t-pw"),
])
def test_a_secret_looking_line_of_a_readable_fragment_is_not_quoted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, secret: str) -> None:
    frag = tmp_path / "srv6.config"
    frag.write_text(f"CONFIG_IPV6=y\n{line}\n")
    os.chmod(frag, 0o644)   # every local user may read it: its lines may be quoted
    data = yaml.safe_load((ROOT / "testbed" / "kernel-6.1.yaml").read_text())
    data["kernel"] = {"build": {"source": "linux-source-6.1", "fragment": [str(frag)]},
                      "cache_dir": str(tmp_path / "cache")}
    tb = tmp_path / "k.yaml"
    tb.write_text(yaml.safe_dump(data))
    code, _, err = _call(["validate", str(tb)], capsys)
    assert_refused(code, err, str(tb), ("kernel.build.fragment[0]", f"{frag}:2",
                                        "not a Kconfig line"))
    assert secret not in err and (redact.HIDDEN in err or redact.URL_HIDDEN in err), err


def test_an_ordinary_bad_line_is_still_quoted() -> None:
    """The boundary hides secrets, not the line: a typo is still shown."""
    from srperf.safety.bounded_read import quote_line

    assert quote_line("IPV6_SEG6_LWTUNNEL=y") == "'IPV6_SEG6_LWTUNNEL=y'"
    assert quote_line("CONFIG_LOCALVERSION=\"-srperf\"") == "'CONFIG_LOCALVERSION=\"-srperf\"'"
    digest = "0123456789abcdef" * 4
    assert digest in quote_line(f"sha256 {digest}")


def test_a_failed_build_steps_output_goes_through_the_boundary(tmp_path: Path) -> None:
    """patch quotes the line of a malformed patch: that output reaches the message only
    redacted."""
    if kb.missing_tools():
        pytest.skip(f"no {kb.missing_tools()} here (scripts/install.sh installs them)")
    tree = _tree(tmp_path / "linux", with_config_script=True)
    patch = tmp_path / "0001.patch"
    patch.write_text("--- a/Makefile\n+++ b/Makefile\n@@ -1,2 +1,2 @@\n"
                     "apt_password=hunter2-very-secret\n")
    os.chmod(patch, 0o644)
    recipe = kb.BuildRecipe.from_mapping(str(tmp_path / "tb.yaml"), {
        "source": str(tree), "patches": [str(patch)]}, str(tmp_path / "cache"))
    with pytest.raises(kb.KernelBuildError) as err:
        kb.build(recipe, lambda line: None)
    assert "apply the patch series" in str(err.value)
    assert "hunter2-very-secret" not in str(err.value), str(err.value)


# -- 5: an SSH private key others may read --------------------------------------------------------
def _ssh_tb(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "keys").mkdir(mode=0o700)
    key = tmp_path / "keys" / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    pub = (tmp_path / "keys" / "id.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"203.0.113.250 {pub[0]} {pub[1]}\n")
    data = {"name": "c4c-lab", "kind": "ssh", "prefix": "c4cl",
            "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": {
                        "host": "203.0.113.250", "key_file": str(key),
                        "known_hosts": str(tmp_path / "known_hosts")}}}}
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path, key


@pytest.mark.parametrize("how", ["0644", "0640", "0604", "owner", "directory"])
def test_an_unprotected_private_key_is_refused_as_openssh_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    tb, key = _ssh_tb(tmp_path)
    code, _, err = _call(["validate", str(tb)], capsys)
    assert code == 0, err   # mode 0600, root's: fine
    if how == "owner":
        os.chown(key, NOBODY, NOBODY)
        needles: tuple[str, ...] = ("owner nobody",)
    elif how == "directory":
        os.chmod(key.parent, 0o777)
        needles = (f"the directory {key.parent} is writable by others",)
    else:
        os.chmod(key, int(how, 8))
        needles = ("UNPROTECTED PRIVATE KEY FILE", f"mode {how}")
    code, _, err = _call(["validate", str(tb)], capsys)
    assert_refused(code, err, str(tb), ("sut.transport.ssh.key_file", str(key), *needles))


@pytest.mark.parametrize("planted", ["fifo", "symlink"])
def test_a_fifo_as_a_nodes_record_or_journal_is_refused_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str) -> None:
    """The base-setup record and the steering journal an SSH node keeps in /run/srperf are
    read by the same kind-checked command (here on this host, through the transport
    srperf uses for it): ``prepare`` refuses before it changes anything, instead of
    blocking on the read and then writing into the FIFO; a journal is not replayed."""
    from srperf.stateful import undo_journal
    from srperf.testbeds import ssh_prepare
    from srperf.transports.netns import NetnsTransport

    path = tmp_path / "prepared-c4c.json"
    if planted == "fifo":
        os.mkfifo(path)
    else:
        (tmp_path / "elsewhere.json").write_text("{}")
        os.symlink(tmp_path / "elsewhere.json", path)
    setup = ssh_prepare.BaseSetup(sysctls={"net.ipv6.conf.all.forwarding": "1"},
                                  ports=("lo",), addresses=(), neighbours=(), tunsrc="::",
                                  mtu=None, record=str(path))
    monkeypatch.setattr(undo_journal, "journal_path", lambda _tb, _role: str(path))
    node = NetnsTransport(None)
    try:
        with pytest.raises(ssh_prepare.PrepareError, match="is not a regular file srperf"):
            ssh_prepare.prepare(node, setup)
        with pytest.raises(ssh_prepare.PrepareError, match="is not a regular file srperf"):
            ssh_prepare.unprepare(node, setup)
        assert undo_journal.replay(node, None, "sut") == []   # type: ignore[arg-type]
    finally:
        node.close()
    assert os.path.lexists(path)   # left for whoever planted it to explain


# -- found on the way: programs root runs that a testbed names ----------------------------------
@pytest.mark.parametrize("what", ["vpp", "trex-binary", "trex-library"])
def test_a_program_of_another_user_that_root_would_run_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str) -> None:
    """``sut.vpp_binary`` and a local ``tester.options.release`` (t-rex-64 and what it
    runs beside it) are run by root: another user's is refused at validate (and by the
    preflight of ``testbed up`` and ``run``), as a kernel source tree is."""
    vpp = tmp_path / "vpp"
    vpp.write_text("#!/bin/sh\nexit 0\n")
    vpp.chmod(0o755)
    release = tmp_path / "v3.08"
    release.mkdir()
    (release / "t-rex-64").write_text("#!/bin/sh\nexec ./_t-rex-64 \"$@\"\n")
    (release / "_t-rex-64").write_text("#!/bin/sh\nexit 0\n")
    for f in ("t-rex-64", "_t-rex-64"):
        (release / f).chmod(0o755)
    data = {"name": "c4cv", "kind": "virtual", "prefix": "c4cv",
            "tester": {"driver": "trex", "options": {"release": str(release),
                                                     "low_end": True}},
            "sut": {"vpp_binary": str(vpp)}}
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump(data))
    code, _, err = _call(["validate", str(tb)], capsys)
    assert code == 0, err
    planted = {"vpp": vpp, "trex-binary": release / "t-rex-64",
               "trex-library": release / "_t-rex-64"}[what]
    os.chown(planted, NOBODY, NOBODY)
    key = "sut.vpp_binary" if what == "vpp" else "tester.options.release"
    code, _, err = _call(["validate", str(tb)], capsys)
    assert_refused(code, err, str(tb), (key, f"{planted} is owned by uid 65534 (nobody)"))
