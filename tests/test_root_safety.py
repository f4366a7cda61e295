"""srperf runs as root: what another local user or a hostile file must not achieve (issues 25, 33).

Each test plants what an attacker would and checks that root does not follow:
a symlink planted under the results directory (a run's end removed
``runs/ID/tmp`` through it), a nightly suite name with ``../`` (reports written
outside the reports directory), a newline in an SSH host (``testbed trust``
wrote a known_hosts line for ``*``), a secret in ``proxy_command`` (stored in a
run's reason and printed after a lost connection), ``--resume %`` (run ids
matched with LIKE), and the results database readable by everyone.

Issue 33 (the tests after ``# == issue 33``): one module (:mod:`srperf.safety.safe_paths`)
changes the file system, checked by reading the package's source; ``--db`` on a
file that is not a store leaves it unchanged; every spelling of a store path goes
through one guarded open; files of other users are not trusted; reports, JUnit files
and exports are never written through a planted name; store and output errors are
one clean line naming the option.
"""

from __future__ import annotations

import ast
import logging
import os
import sqlite3
import stat
from pathlib import Path
from typing import Iterator

import paramiko
import pytest
import yaml

from srperf.errors import SrperfError
from srperf.results.store import ResultStore
from srperf.measure.run_record import run_tmpdir
from cli_call import call_main as _call

EXPERIMENT = {"name": "s25", "behaviors": ["ipv6", "end"],
              "search": {"algorithm": "bisect", "trial_duration_s": 0.2}}



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
    assert code == 2 and "'%'" in err and "not a run id" in err, err
    code, _, err = _call(["report", "2%", "--results", str(tmp_path / "res")], capsys)
    assert code == 2 and "not a run id" in err, err


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
    from srperf.measure.run_record import describe_error
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


# == issue 33 ====================================================================================
# -- one module writes: the package's source read as a tree ----------------------------------
FORBIDDEN_FUNCTIONS = {
    "os": {"chmod", "fchmod", "lchmod", "chown", "fchown", "lchown", "remove", "unlink",
           "rmdir", "removedirs", "mkdir", "makedirs", "rename", "renames", "replace",
           "symlink", "link", "mkfifo", "mknod", "truncate", "ftruncate", "utime"},
    "shutil": {"rmtree", "copy", "copy2", "copyfile", "copymode", "copystat", "copytree",
               "move", "chown", "make_archive", "unpack_archive"},
    "tempfile": {"mkdtemp", "mkstemp", "mktemp", "NamedTemporaryFile", "TemporaryFile",
                 "TemporaryDirectory", "SpooledTemporaryFile"},
    "sqlite3": {"connect"},
}
"""Functions that create, remove, rename or change the mode of a file, by module."""
FORBIDDEN_METHODS = {"write_text", "write_bytes", "touch", "unlink", "mkdir", "rmdir",
                     "chmod", "lchmod", "symlink_to", "hardlink_to", "link_to"}
"""``Path`` methods that do (any receiver: a false alarm is cheaper than a miss)."""
WRITERS_TO_PATH = {"to_csv", "to_parquet", "to_json", "to_excel", "to_html", "to_pickle",
                   "to_feather", "to_hdf", "to_stata", "savefig"}
"""pandas/matplotlib methods that write a file when given a path."""
WRITE_FLAGS = {"O_CREAT", "O_WRONLY", "O_RDWR", "O_TRUNC", "O_APPEND"}
OPENERS = {"open", "fdopen"}
REMOTE_RECEIVERS = {"sftp"}
"""Receivers whose ``chmod`` acts on a remote node (paramiko's SFTP client)."""
ONE_WRITER = "srperf/safety/safe_paths.py"


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _mode_writes(call: ast.Call, index: int, strict: bool) -> bool:
    """True when the call's mode (argument ``index`` or ``mode=``) writes; a mode
    computed at run time counts as writing when ``strict`` (the builtin ``open``)."""
    mode = call.args[index] if len(call.args) > index else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(set(mode.value) & set("wax+"))
    return strict or any(k.arg == "mode" for k in call.keywords)


def file_writes(source: str, filename: str) -> list[str]:
    """Each place in ``source`` that creates, removes, renames or changes the mode of a
    file or directory itself, as ``file:line: what``."""
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}   # local name -> "module.function" (from-imports)
    modules: dict[str, str] = {}   # local name -> module
    buffers: set[str] = set()      # names bound to io.BytesIO()/StringIO()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                _dotted(node.value.func).split(".")[-1] in ("BytesIO", "StringIO"):
            buffers.update(t.id for t in node.targets if isinstance(t, ast.Name))
    found: list[str] = []

    def hit(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = modules.get(node.value.id)
            if module in FORBIDDEN_FUNCTIONS and node.attr in FORBIDDEN_FUNCTIONS[module]:
                hit(node, f"{module}.{node.attr}")
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            full = aliases.get(node.id, "")
            module, _, name = full.rpartition(".")
            if name in FORBIDDEN_FUNCTIONS.get(module, ()):
                hit(node, full)
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else ""
        dotted = _dotted(func)
        target = aliases.get(name, "") if isinstance(func, ast.Name) else ""
        if dotted in ("os.open",) or target == "os.open":
            flags = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "")
                     for a in node.args[1:2] for n in ast.walk(a)}
            if flags & WRITE_FLAGS or len(node.args) < 2:
                hit(node, "os.open for writing")
            continue
        method = isinstance(func, ast.Attribute) and dotted not in ("io.open", "os.fdopen",
                                                                    "codecs.open")
        if name in OPENERS and _mode_writes(node, 0 if method else 1, strict=not method):
            hit(node, f"{dotted}(..., write mode)")
        elif isinstance(func, ast.Attribute):
            receiver = _dotted(func.value).split(".")[-1]
            positional = len(node.args)
            if name in FORBIDDEN_METHODS and not (name == "chmod"
                                                  and receiver in REMOTE_RECEIVERS):
                hit(node, f".{name}()")
            elif name == "rename" and positional >= 1:
                hit(node, ".rename(target)")
            elif name == "replace" and positional == 1 and not node.keywords \
                    and receiver != "dataclasses":
                hit(node, ".replace(target)")
            elif name in WRITERS_TO_PATH:
                dest = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg in ("path", "path_or_buf",
                                                                 "fname", "excel_writer")),
                    None)
                if dest is not None and not (isinstance(dest, ast.Name)
                                             and dest.id in buffers) \
                        and not (isinstance(dest, ast.Constant) and dest.value is None):
                    hit(node, f".{name}(path)")
    return found


REPO = Path(__file__).resolve().parent.parent


def test_only_safe_paths_changes_the_file_system() -> None:
    """No module of srperf/ or drivers/ but srperf/safety/safe_paths.py creates, removes,
    renames or changes the mode of a file or directory itself."""
    found = []
    for top in ("srperf", "drivers"):
        for path in sorted((REPO / top).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            if rel != ONE_WRITER:
                found += file_writes(path.read_text(), rel)
    assert not found, "write the file through srperf.safety.safe_paths:\n" + "\n".join(found)


PLANTED = [
    'open(path, "w")', 'open(path, mode="a")', 'open(path, "r+b")', 'open(path, flags)',
    'io.open(path, "x")', 'os.fdopen(fd, "wb")', 'path.open("w")',
    'os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)', 'os.chmod(path, 0o600)',
    'os.fchmod(fd, 0o600)', 'os.remove(path)', 'os.unlink(path)', 'os.rmdir(path)',
    'os.mkdir(path)', 'os.makedirs(path)', 'os.rename(a, b)', 'os.replace(a, b)',
    'shutil.rmtree(path)', 'shutil.copyfile(a, b)', 'shutil.copy2(a, b)', 'shutil.move(a, b)',
    'weakref.finalize(self, shutil.rmtree, path)', 'rmtree(path)', 'mkstemp()',
    'tempfile.mkdtemp()', 'tempfile.NamedTemporaryFile()', 'path.write_text("x")',
    'path.write_bytes(b"x")', 'path.touch()', 'path.unlink()', 'path.mkdir()',
    'path.rmdir()', 'path.chmod(0o600)', 'path.rename(other)', 'path.replace(other)',
    'df.to_csv(path)', 'df.to_parquet(path=path)', 'fig.savefig(path)', 'sqlite3.connect(path)',
]
HARMLESS = ['open(path)', 'open(path, "rb")', 'path.open()', 'os.open(path, os.O_RDONLY)',
            '"a.b".replace(".", "_")', 'dataclasses.replace(obj, x=1)', 'df.to_csv(index=False)',
            'df.rename(columns={"a": "b"})', 'buf = io.BytesIO(); fig.savefig(buf)',
            'sftp.chmod(remote, 0o644)', 'df.to_parquet(None)']


@pytest.mark.parametrize("call", PLANTED)
def test_the_source_check_finds_a_planted_write(call: str) -> None:
    """Each kind of write planted in a real module of the package is found (the check
    above cannot pass by missing one)."""
    module = REPO / "srperf" / "results" / "export.py"
    source = module.read_text() + ("\nimport io, os, shutil, sqlite3, tempfile, weakref\n"
                                   "from shutil import rmtree\nfrom tempfile import mkstemp\n"
                                   f"\n\ndef planted(path, a, b, fd, df, fig, flags, other):\n"
                                   f"    {call}\n")
    assert not file_writes(module.read_text(), "export.py")
    found = file_writes(source, "export.py")
    assert found and all(":" in f for f in found), call


@pytest.mark.parametrize("call", HARMLESS)
def test_the_source_check_lets_reading_and_look_alikes_pass(call: str) -> None:
    source = ("import dataclasses, io, os\n\n\n"
              f"def f(path, obj, df, fig, sftp, remote):\n    {call}\n")
    assert file_writes(source, "x.py") == []


# -- helpers ------------------------------------------------------------------------------------
NOBODY = 65534


def _snapshot(path: Path) -> tuple[int, int, int, bytes]:
    st = os.stat(path)
    return st.st_mode, st.st_uid, st.st_mtime_ns, path.read_bytes()


def _victim_file(tmp_path: Path, name: str = "victim.conf") -> Path:
    """A file of root's that a planted link points to (a system file stand-in)."""
    victim = tmp_path / "victim" / name
    victim.parent.mkdir(exist_ok=True)
    victim.write_text("root:x:0:0\n")
    os.chmod(victim, 0o644)
    os.utime(victim, ns=(1_000_000_000, 1_000_000_000))
    return victim


def _sticky(tmp_path: Path, name: str = "shared") -> Path:
    """A directory like /tmp: root's, world-writable, sticky."""
    path = tmp_path / name
    path.mkdir()
    os.chmod(path, 0o1777)
    return path


def _plant_link(target: Path, link: Path) -> Path:
    """A symlink at ``link`` to ``target``, owned by nobody (another local user)."""
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOBODY)
    return link


def _one_run(db: Path) -> str:
    """A store at ``db`` with one finished run that has one search (report/export work)."""
    from srperf.drivers.base import TrialResult
    from srperf.results.store import TrialKey
    from srperf.search.base import GoalResult, SearchResult

    with ResultStore(db) as store:
        run = store.begin_run("q3a", "simulated", "linux", {"kernel": "6.18"})
        key = TrialKey("ipv6", "linux", 64, 1, 1)
        trial = TrialResult(rate_pps=1e5, duration_s=1.0, intended=100000, sent=100000,
                            refused=0, received=100000, elapsed_s=1.0)
        store.add_trial(run, key, trial)
        store.add_search(run, key, SearchResult("bisect", [GoalResult(0.5, 1e5, 1.1e5, "ok")],
                                                [trial]))
        store.add_outcome(run, "ipv6", "linux", 64, "measured")
        store.end_run(run, "finished")
    return run


# -- runs --db on a file that is not a store ----------------------------------------------------
def test_runs_db_on_a_plain_file_leaves_it_unchanged(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A typo points ``--db`` at a system file: refused (exit 2, --db and the file named),
    its mode, owner, bytes and mtime unchanged."""
    victim = _victim_file(tmp_path, "passwd")
    before = _snapshot(victim)
    code, _, err = _call(["runs", "--db", str(victim)], capsys)
    assert _snapshot(victim) == before
    assert code == 2 and "--db" in err and str(victim) in err and "not an srperf" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_runs_db_on_another_programs_sqlite_file_leaves_it_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An SQLite database of something else is not migrated into a store."""
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    os.chmod(other, 0o600)
    before = _snapshot(other)
    code, _, err = _call(["runs", "--db", str(other)], capsys)
    assert _snapshot(other) == before
    assert code == 2 and "--db" in err and "not an srperf results store" in err, err


def test_an_empty_file_srperf_did_not_make_is_not_a_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "nologin"
    empty.touch()
    os.chmod(empty, 0o644)
    before = _snapshot(empty)
    code, _, err = _call(["runs", "--db", str(empty)], capsys)
    assert _snapshot(empty) == before and code == 2 and "--db" in err, err


# -- sqlite:///PATH takes the same guarded open --------------------------------------------------
def test_an_sqlite_url_does_not_follow_a_planted_symlink(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    victim = _victim_file(tmp_path)
    before = _snapshot(victim)
    res = tmp_path / "res"
    res.mkdir()
    _plant_link(victim, res / "srperf.sqlite")
    code, _, err = _call(["runs", "--db", f"sqlite:///{res / 'srperf.sqlite'}"], capsys)
    assert _snapshot(victim) == before
    assert code == 2 and "--db" in err and "symlink" in err, err


def test_an_sqlite_url_makes_a_private_store(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "new.sqlite"
    code, out, err = _call(["runs", "--db", f"sqlite:///{db}"], capsys)
    assert code == 0 and "no runs" in out, err
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600


# -- files of another user are not trusted ------------------------------------------------------
def test_a_store_of_another_user_in_a_sticky_dir_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/tmp-like results directory holding a store nobody planted: refused, unchanged."""
    shared = _sticky(tmp_path)
    _one_run(tmp_path / "made.sqlite")
    planted = shared / "srperf.sqlite"
    os.rename(tmp_path / "made.sqlite", planted)
    os.chown(planted, NOBODY, NOBODY)
    os.chmod(planted, 0o644)
    before = _snapshot(planted)
    code, _, err = _call(["runs", "--results", str(shared)], capsys)
    assert _snapshot(planted) == before
    assert code == 2 and str(planted) in err and "owner nobody" in err and "0644" in err, err


def test_a_store_in_a_directory_others_can_write_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite makes journal files beside the store: a sticky shared directory could get
    them planted, so no store is made there."""
    shared = _sticky(tmp_path)
    code, _, err = _call(["runs", "--db", str(shared / "srperf.sqlite")], capsys)
    assert code == 2 and "--db" in err and "other users" in err, err
    assert list(shared.iterdir()) == []


def test_resume_refuses_a_testbed_file_of_another_user(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A stored run's recipe names a testbed file another user owns (it could hold a
    proxy_command): ``run --resume`` refuses before loading it."""
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump({"name": "q3a", "kind": "simulated"}))
    os.chown(tb, NOBODY, NOBODY)
    res = tmp_path / "res"
    with ResultStore(res / "srperf.sqlite") as store:
        run = store.begin_run("s25", "q3a", "linux", {"recipe": {
            "testbed": str(tb), "experiment": str(exp), "set": [], "repetitions": None,
            "algorithm": None, "keep_testbed": False}})
        store.end_run(run, "interrupted", signal="SIGINT")
    code, _, err = _call(["run", "--resume", run, "--results", str(res)], capsys)
    assert code == 2 and str(tb) in err and "owner nobody" in err, err


@pytest.mark.parametrize("mode", [0o666, 0o664])
def test_an_experiment_file_others_can_write_is_refused(
        tmp_path: Path, mode: int, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    os.chmod(exp, mode)
    code, _, err = _call(["validate", str(exp), "--testbed", "simulated"], capsys)
    assert code == 2 and str(exp) in err and f"mode {mode:04o}" in err, err


def test_a_nightly_suite_of_another_user_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "q3a", "testbed": "simulated",
                                     "experiments": [str(exp)], "results": str(tmp_path / "r"),
                                     "reports": str(tmp_path / "reports")}))
    os.chown(suite, NOBODY, NOBODY)
    code, _, err = _call(["nightly", str(suite)], capsys)
    assert code == 2 and str(suite) in err and "owner nobody" in err, err
    assert not (tmp_path / "r").exists() and not (tmp_path / "reports").exists()


def test_a_config_reached_through_another_users_symlink_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    shared = _sticky(tmp_path)
    link = _plant_link(exp, shared / "exp.yaml")
    code, _, err = _call(["validate", str(link), "--testbed", "simulated"], capsys)
    assert code == 2 and "symlink owned by nobody" in err, err


# -- reports, JUnit files and exports never written through a planted name -----------------------
def test_a_report_is_not_written_through_a_planted_symlink(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "private" / "srperf.sqlite"
    run = _one_run(db)
    shared = _sticky(tmp_path)
    victim = _victim_file(tmp_path)
    before = _snapshot(victim)
    _plant_link(victim, shared / f"report-{run}.html")
    code, _, err = _call(["report", run, "--db", str(db), "--results", str(shared)], capsys)
    assert _snapshot(victim) == before
    assert code == 2 and "symlink" in err and f"report-{run}.html" in err, err
    assert [p.name for p in shared.iterdir()] == [f"report-{run}.html"]   # no temporary left


def test_a_report_replaces_its_own_earlier_file(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The refusal above is of planted names, not of srperf's own earlier report."""
    db = tmp_path / "srperf.sqlite"
    run = _one_run(db)
    out = tmp_path / "r.html"
    out.write_text("old")
    code, _, err = _call(["report", run, "--db", str(db), "-o", str(out)], capsys)
    assert code == 0 and "<html" in out.read_text().lower(), err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644


def test_junit_is_not_written_through_a_planted_symlink(tmp_path: Path) -> None:
    from srperf.results import junit

    shared = _sticky(tmp_path)
    victim = _victim_file(tmp_path)
    before = _snapshot(victim)
    link = _plant_link(victim, shared / "junit-q3a.xml")
    with pytest.raises(SrperfError, match="symlink"):
        junit.write(link, "q3a", [])
    assert _snapshot(victim) == before
    assert os.path.islink(link)


def test_an_export_is_not_written_into_a_planted_symlink_dir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "private" / "srperf.sqlite"
    run = _one_run(db)
    shared = _sticky(tmp_path)
    victim_dir = tmp_path / "etc"
    victim_dir.mkdir()
    _plant_link(victim_dir, shared / f"export-{run}")
    code, _, err = _call(["export", run, "--db", str(db), "--results", str(shared)], capsys)
    assert list(victim_dir.iterdir()) == []
    assert code == 2 and f"export-{run}" in err and "symlink" in err, err


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_exports_are_private(tmp_path: Path, fmt: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    """Exports hold the runs (their environment): 0600 like the store."""
    db = tmp_path / "srperf.sqlite"
    run = _one_run(db)
    code, out, err = _call(["export", run, "--db", str(db), "-f", fmt, "-o",
                            str(tmp_path / "out")], capsys)
    files = [Path(line) for line in out.split()]
    assert code == 0 and files, err
    assert {stat.S_IMODE(os.stat(f).st_mode) for f in files} == {0o600}


def test_results_given_as_another_users_symlink_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shared = _sticky(tmp_path)
    victim_dir = tmp_path / "etc"
    victim_dir.mkdir()
    link = _plant_link(victim_dir, shared / "results")
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    code, _, err = _call(["run", str(exp), "--testbed", "simulated", "--results", str(link)],
                         capsys)
    assert code == 2 and "--results" in err and "symlink owned by nobody" in err, err
    assert list(victim_dir.iterdir()) == []


def test_known_hosts_is_not_written_through_a_symlink(tmp_path: Path) -> None:
    from srperf.config.model import SshConfig
    from srperf.transports import ssh_trust

    victim = _victim_file(tmp_path)
    before = _snapshot(victim)
    known = _plant_link(victim, tmp_path / "known_hosts")
    key = paramiko.Ed25519Key.from_private_key_file(_new_key(tmp_path))
    with pytest.raises(SrperfError, match="symlink"):
        ssh_trust.add_known_host(SshConfig(host="sut.example", known_hosts=str(known)), key)
    assert _snapshot(victim) == before


def test_every_planted_symlink_leaves_its_victim_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In one /tmp-like directory, nobody plants a symlink where srperf would put its
    results directory, its store, a report, a JUnit file, an export and a run's
    temporary directory: each is refused, every victim is unchanged."""
    from srperf.results import junit

    shared = _sticky(tmp_path)
    victims = {name: _victim_file(tmp_path, name) for name in
               ("store", "report", "junit")}
    before = {name: _snapshot(v) for name, v in victims.items()}
    victim_dirs = {name: tmp_path / f"dir-{name}" for name in ("results", "export", "tmp")}
    for d in victim_dirs.values():
        d.mkdir()
    db = tmp_path / "private" / "srperf.sqlite"
    run = _one_run(db)
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    outcomes = []

    link = _plant_link(victim_dirs["results"], shared / "res")
    outcomes.append(_call(["run", str(exp), "--testbed", "simulated", "--results", str(link)],
                          capsys))
    link = _plant_link(victims["store"], shared / "srperf.sqlite")
    outcomes.append(_call(["runs", "--db", str(link)], capsys))
    _plant_link(victims["report"], shared / f"report-{run}.html")
    outcomes.append(_call(["report", run, "--db", str(db), "--results", str(shared)], capsys))
    _plant_link(victim_dirs["export"], shared / f"export-{run}")
    outcomes.append(_call(["export", run, "--db", str(db), "--results", str(shared)], capsys))
    for code, _, err in outcomes:
        assert code == 2 and "symlink" in err, err
    with pytest.raises(SrperfError, match="symlink"):
        junit.write(_plant_link(victims["junit"], shared / "junit-q3a.xml"), "q3a", [])
    _plant_link(victim_dirs["tmp"], shared / "runs")
    with pytest.raises(SrperfError):
        with run_tmpdir(shared / "runs" / run / "tmp"):
            pass
    assert {name: _snapshot(v) for name, v in victims.items()} == before
    assert all(list(d.iterdir()) == [] for d in victim_dirs.values())


# -- clean errors about the store and the outputs -----------------------------------------------
@pytest.mark.parametrize("db, why", [
    ("{tmp}", "a directory"),
    ("mysqlx://u@host/db", "unknown URL scheme"),
    ("postgresql://u:q3aPw@127.0.0.1:port/db", "bad port"),
    ("sqlite:///:memory:", "in-memory"),
])
def test_a_bad_db_is_one_clean_line(tmp_path: Path, db: str, why: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _call(["runs", "--db", db.format(tmp=tmp_path)], capsys)
    assert code == 2 and err.startswith("srperf: config error:") and "--db" in err \
        and why in err, err
    assert len(err.strip().splitlines()) == 1 and "q3aPw" not in err + out, err


def test_an_unreachable_postgres_is_one_clean_line(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    code, out, err = _call(["runs", "--db", "postgresql://u:q3aPw@127.0.0.1:1/db"], capsys)
    assert code == 1 and "internal error" not in err and "--db" in err, err
    assert len(err.strip().splitlines()) == 1 and "q3aPw" not in err + out, err


def test_results_inside_proc_names_the_option(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    code, _, err = _call(["run", str(exp), "--testbed", "simulated", "--results",
                          "/proc/q3a-results"], capsys)
    assert code == 2 and "--results" in err and "/proc/q3a-results" in err, err
    assert "internal error" not in err


def test_report_checks_every_output_before_writing_any(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--markdown`` in /proc: refused naming it, and the HTML report not written."""
    db = tmp_path / "srperf.sqlite"
    run = _one_run(db)
    html = tmp_path / "r.html"
    code, _, err = _call(["report", run, "--db", str(db), "-o", str(html), "--markdown",
                          "/proc/q3a.md"], capsys)
    assert code == 2 and "--markdown" in err and "/proc/q3a.md" in err, err
    assert not html.exists() and list(tmp_path.iterdir()) == [db]


def test_run_on_a_foreign_store_names_results_and_touches_no_testbed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``run --results R`` where R/srperf.sqlite is not a store: exit 2 naming --results
    and the file before the testbed is claimed."""
    res = tmp_path / "res"
    res.mkdir()
    victim = res / "srperf.sqlite"
    victim.write_text("not a database\n")
    before = _snapshot(victim)
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    code, out, err = _call(["run", str(exp), "--testbed", "simulated", "--results", str(res)],
                           capsys)
    assert code == 2 and "--results" in err and str(victim) in err, err
    assert _snapshot(victim) == before and sorted(p.name for p in res.iterdir()) == [
        "srperf.sqlite"]


def test_files_of_the_user_who_ran_sudo_are_trusted(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``sudo srperf run my.yaml`` from one's own clone: the file of the sudo user is
    trusted; the same file is not when another user ran sudo."""
    from srperf.errors import ConfigError
    from srperf.safety.safe_paths import check_trusted_file

    exp = tmp_path / "exp.yaml"
    exp.write_text("name: x\n")
    os.chown(exp, NOBODY, NOBODY)
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    check_trusted_file(exp)
    monkeypatch.setenv("SUDO_UID", "1234")
    with pytest.raises(ConfigError, match="owner nobody"):
        check_trusted_file(exp)


def test_outputs_go_into_the_sudo_users_directory_only(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``sudo srperf report -o ~/r.html``: the home of the user who ran sudo takes the
    report; another user's directory does not."""
    from srperf.errors import ConfigError
    from srperf.safety.safe_paths import write_file

    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    assert write_file(home / "r.html", "x", what="-o").read_text() == "x"
    monkeypatch.delenv("SUDO_UID")
    with pytest.raises(ConfigError, match="owned by nobody"):
        write_file(home / "r2.html", "x", what="-o")
    assert sorted(p.name for p in home.iterdir()) == ["r.html"]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_export_into_proc_names_the_option(tmp_path: Path, fmt: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "srperf.sqlite"
    run = _one_run(db)
    code, _, err = _call(["export", run, "--db", str(db), "-f", fmt, "-o", "/proc/q3a-export"],
                         capsys)
    assert code == 2 and "--output" in err and "/proc/q3a-export" in err, err


@pytest.mark.parametrize("name", ["key_file", "known_hosts"])
@pytest.mark.parametrize("how", ["owner", "mode"])
def test_an_ssh_key_or_known_hosts_file_of_another_user_is_refused(
        tmp_path: Path, name: str, how: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A key or known_hosts file decides whom srperf, as root, trusts as the SUT: one that
    another user owns or may write is refused at load time, naming the key and the file."""
    key = Path(_new_key(tmp_path))
    known = tmp_path / "known_hosts"
    known.write_text("")
    planted = key if name == "key_file" else known
    if how == "owner":
        os.chown(planted, NOBODY, NOBODY)
    else:
        os.chmod(planted, 0o666)
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump({"name": "q3a", "kind": "ssh", "prefix": "q3akh",
                                  "sut": {"transport": {"ssh": {
                                      "host": "sut.example", "key_file": str(key),
                                      "known_hosts": str(known)}}}}))
    code, _, err = _call(["validate", str(tb)], capsys)
    assert code == 2 and f"sut.transport.ssh.{name}" in err and str(planted) in err, err
    assert ("owner nobody" if how == "owner" else "mode 0666") in err, err
