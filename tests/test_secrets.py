"""Secrets never reach the screen, a log, an error file or a stored row (issue 33).

Each case plants a password of its own (so that a secret registered by an earlier
test cannot hide a leak in a later one) in a database URL (``--db``,
``SRPERF_DB``, a nightly suite's ``database`` misspelt or written as a list) or in a
proxy command (misspelt as OpenSSH's ``ProxyCommand``, written as a list, with the
password attached to its option), runs the command in this process as a user
would, and greps every channel the command writes (stdout, stderr, the
internal-error log directory) for it.  The last test makes a whole simulated run
against a real PostgreSQL store whose URL holds a password and greps stdout, stderr,
the error logs, every stored row, the HTML and Markdown reports and the exports.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from busy_host import BUSY_HOST_OPTIONS
from cli_call import call_main as _call

sys.path.insert(0, str(Path(__file__).parent))


def _secret() -> str:
    return "Pw" + uuid.uuid4().hex[:12]



def _logs(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


@pytest.fixture()
def log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "errors"
    monkeypatch.setenv("SRPERF_LOG_DIR", str(folder))
    monkeypatch.delenv("SRPERF_DB", raising=False)
    return folder


def _clean(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text, f"the planted password {secret} leaked: {text[:600]}"


def _suite(folder: Path, extra: dict[str, Any]) -> Path:
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump({"name": "q3b", "testbed": "simulated",
                                    "experiments": ["quick"], **extra}))
    return path


def _ssh_tb(folder: Path, ssh_extra: dict[str, Any]) -> Path:
    path = folder / "tb.yaml"
    path.write_text(yaml.safe_dump({
        "name": "q3b", "kind": "ssh", "prefix": "q3b", "tester": {"line_rate_pps": 300000},
        "sut": {"transport": {"kind": "ssh", "ssh": {"host": "sut.invalid", "user": "root",
                                                     **ssh_extra}}}}))
    return path


# -- database URLs -------------------------------------------------------------------
def test_db_url_password_hidden_when_the_driver_is_missing(
        log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pw = _secret()
    code, out, err = _call(["runs", "--db", f"mysql://bob:{pw}@db.invalid/x",
                            "--results", str(tmp_path / "r")], capsys)
    assert code != 0 and "bob:***@db.invalid" in err, err
    _clean(pw, out, err, _logs(log_dir))


def test_srperf_db_password_hidden(log_dir: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    pw = _secret()
    monkeypatch.setenv("SRPERF_DB", f"mysql://bob:{pw}@db.invalid/x")
    code, out, err = _call(["runs", "--results", str(tmp_path / "r")], capsys)
    assert code != 0, err
    _clean(pw, out, err, _logs(log_dir))


def test_suite_database_misspelt_hides_its_password(
        log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pw = _secret()
    suite = _suite(tmp_path, {"databse": f"postgresql://bob:{pw}@db.invalid/x"})
    code, out, err = _call(["validate", str(suite)], capsys)
    assert code == 2 and "databse" in err and "did you mean 'database'" in err, err
    _clean(pw, out, err)


def test_suite_database_as_a_list_hides_its_password(
        log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pw = _secret()
    suite = _suite(tmp_path, {"database": [f"postgresql://bob:{pw}@db.invalid/x"]})
    code, out, err = _call(["validate", str(suite)], capsys)
    assert code == 2 and "database" in err, err
    _clean(pw, out, err)


def test_short_url_password_hidden_inside_its_url(
        log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path, {"databse": "postgresql://bob:q7@db.invalid/x"})
    code, out, err = _call(["validate", str(suite)], capsys)
    assert code == 2 and "bob:***@db.invalid" in err and "bob:q7@" not in err, err


def test_internal_error_log_holds_no_password(
        log_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The error log stores the command line and the traceback: the --db password in
    both (the exception's text quotes the URL, as drivers' errors do) is hidden."""
    from srperf.cli import entry as cli

    pw = _secret()
    url = f"postgresql://bob:{pw}@db.invalid/x"

    def broken(args: Any) -> int:
        raise RuntimeError(f"could not talk to {args.db}")

    monkeypatch.setitem(cli.COMMANDS, "runs", broken)
    code, out, err = _call(["runs", "--db", url, "--results", str(tmp_path / "r")], capsys)
    assert code == 1 and "internal error" in err, err
    logs = _logs(log_dir)
    assert "srperf runs --db postgresql://bob:***@db.invalid/x" in logs, logs
    assert "RuntimeError" in logs, logs
    _clean(pw, out, err, logs)


# -- proxy commands ----------------------------------------------------------------
@pytest.mark.parametrize(("key", "value"), [
    ("ProxyCommand", "sshpass -p {pw} ssh -W %h:%p jump.invalid"),
    ("proxy_comand", "sshpass -p{pw} ssh -W %h:%p jump.invalid"),
    ("proxy_command", ["sshpass", "-p", "{pw}", "ssh", "-W", "%h:%p", "jump.invalid"]),
    ("ProxyCommand", ["sshpass", "-p", "{pw}", "ssh", "-W", "%h:%p", "jump.invalid"]),
], ids=["openssh-spelling", "typo-attached-option", "list", "openssh-spelling-list"])
def test_proxy_command_secret_hidden_however_written(
        key: str, value: Any, log_dir: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    pw = _secret()
    filled = value.format(pw=pw) if isinstance(value, str) else \
        [v.format(pw=pw) for v in value]
    tb = _ssh_tb(tmp_path, {key: filled})
    code, out, err = _call(["validate", str(tb)], capsys)
    assert code == 2 and key in err and "sshpass" in err, err
    _clean(pw, out, err, _logs(log_dir))


def test_proxy_secret_hidden_in_a_cut_value(log_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A long proxy command is cut in the message: the password is hidden before the
    cut, so no prefix of it is left either."""
    pw = _secret()
    command = "sshpass " + "-o X=1 " * 14 + "-p " + pw + " ssh -W %h:%p jump.invalid"
    assert command.index(pw) < 117 < command.index(pw) + len(pw)   # the cut splits it
    tb = _ssh_tb(tmp_path, {"ProxyCommand": command})
    code, out, err = _call(["validate", str(tb)], capsys)
    assert code == 2 and "ProxyCommand" in err, err
    _clean(pw[:6], out, err)


def test_log_records_are_redacted(log_dir: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A library module logging a secret it was handed (a warning quoting the URL)
    goes through the CLI's logging handler: hidden there too."""
    from srperf.cli import entry as cli

    pw = _secret()
    url = f"postgresql://bob:{pw}@db.invalid/x"

    def chatty(args: Any) -> int:
        logging.getLogger("srperf.q3b").warning("store %s is slow", args.db)
        return 0

    monkeypatch.setitem(cli.COMMANDS, "runs", chatty)
    root = logging.getLogger()
    handlers = list(root.handlers)
    try:
        for h in handlers:
            root.removeHandler(h)
        code, out, err = _call(["runs", "--db", url, "--results", str(tmp_path / "r")], capsys)
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
    assert code == 0 and "is slow" in err, err
    _clean(pw, out, err)


# -- every channel of a whole run ---------------------------------------------------
def test_a_run_leaks_the_store_password_nowhere(
        log_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A simulated run into a PostgreSQL store whose URL holds a password (the server
    trusts the socket, so the password is carried but not needed), then runs, report,
    compare and export, the URL in SRPERF_DB as nightly jobs set it: the password is
    in no stdout, stderr, error log, stored row (every column of every table), report
    or export file."""
    import pg_server
    import sqlalchemy as sa

    why = pg_server.unavailable()
    if why:
        pytest.skip(why)
    pw = _secret()
    server = pg_server.start()
    try:
        url = server.url.replace("postgresql://srperf@", f"postgresql://srperf:{pw}@")
        monkeypatch.setenv("SRPERF_DB", url)
        res = tmp_path / "res"
        texts: list[str] = []
        code, out, err = _call(["pdr", "-b", "end", "-t", "simulated", "--results", str(res),
                                "--algorithm", "bisect", "--trial-duration", "0.01",
                                "--max-rate", "20kpps", "--min-rate", "1kpps",
                                "--accuracy", "5000"], capsys)
        assert code == 0, err
        texts += [out, err]
        for argv in (["runs"], ["report", "last", "-o", str(tmp_path / "rep.html"),
                                "--markdown", str(tmp_path / "rep.md")],
                     ["compare", "last", "last"],
                     ["export", "last", "-f", "json", "-o", str(tmp_path / "exp.json")],
                     ["export", "last", "-f", "csv", "-o", str(tmp_path / "csv")]):
            code, out, err = _call(argv + ["--results", str(res)], capsys)
            assert code == 0, (argv, err)
            texts += [out, err]
        files = [p for p in [tmp_path / "rep.html", tmp_path / "rep.md",
                             tmp_path / "exp.json"] if p.exists()]
        files += list((tmp_path / "csv").rglob("*")) + list(res.rglob("*"))
        assert (tmp_path / "rep.html").exists() and (tmp_path / "exp.json").exists()
        texts += [p.read_text(errors="replace") for p in files if p.is_file()]
        texts.append(_logs(log_dir))
        engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        try:
            meta = sa.MetaData()
            meta.reflect(engine)
            with engine.connect() as conn:
                rows = [repr(list(r)) for t in meta.sorted_tables
                        for r in conn.execute(sa.select(t))]
        finally:
            engine.dispose()
        assert len(rows) > 10, "the run stored too little to be a test"
        texts += rows
        _clean(pw, *texts)
    finally:
        server.stop()


def test_set_override_of_a_proxy_key_is_hidden(log_dir: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``--set ...ProxyCommand=...`` on the command line: the value is hidden in the
    refusal of the key (experiments have no such key)."""
    pw = _secret()
    code, out, err = _call(["run", "quick", "-t", "simulated", "--results",
                            str(tmp_path / "r"), "--set",
                            f"ProxyCommand=sshpass -p {pw} ssh -W %h:%p j.invalid"], capsys)
    assert code == 2 and "ProxyCommand" in err, err
    _clean(pw, out, err, _logs(log_dir))


def test_shipped_files_hold_no_secret() -> None:
    """The redactor is driven by values, not guesses: reading every shipped experiment,
    testbed and the proxy options of end_ad (a ``proxy:`` block, not a command)
    registers nothing, so nothing ordinary is ever hidden."""
    from srperf.safety import redact
    from srperf.config.yamlfile import read_mapping

    repo = Path(__file__).resolve().parent.parent
    redact.reset()
    for path in sorted((repo / "experiments").glob("*.yaml")) + \
            sorted((repo / "testbed").glob("*.yaml")):
        read_mapping(path)
    assert redact._secrets == {}
    assert redact.is_secret_key("ProxyCommand") and redact.is_secret_key("proxy-cmd")
    assert redact.is_secret_key("proxy_comand") and redact.is_secret_key("db_password")
    assert not redact.is_secret_key("proxy") and not redact.is_secret_key("database")


@pytest.mark.netns
def test_a_virtual_run_leaks_the_password_nowhere(
        log_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """One real run on a virtual testbed (prefix q3b, namespaces made and removed by
    the run) into a PostgreSQL URL carrying a password: stdout, stderr, error logs,
    results files and every stored row are free of it."""
    import pg_server
    import sqlalchemy as sa

    why = pg_server.unavailable()
    if why:
        pytest.skip(why)
    pw = _secret()
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump({"name": "q3b", "kind": "virtual", "prefix": "q3b",
                                  "tester": {"line_rate_pps": 300000,
                                             "options": BUSY_HOST_OPTIONS}}))
    server = pg_server.start()
    try:
        url = server.url.replace("postgresql://srperf@", f"postgresql://srperf:{pw}@")
        res = tmp_path / "res"
        code, out, err = _call(["pdr", "-b", "end", "-t", str(tb), "--results", str(res),
                                "--db", url, "--algorithm", "bisect",
                                "--trial-duration", "0.2", "--max-rate", "50kpps",
                                "--min-rate", "5kpps", "--accuracy", "20000"], capsys)
        assert code == 0, err
        texts = [out, err, _logs(log_dir)]
        texts += [p.read_text(errors="replace") for p in res.rglob("*") if p.is_file()
                  and p.suffix in (".csv", ".json", ".log", ".txt", ".html", ".md")]
        engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        try:
            meta = sa.MetaData()
            meta.reflect(engine)
            with engine.connect() as conn:
                rows = [repr(list(r)) for t in meta.sorted_tables
                        for r in conn.execute(sa.select(t))]
        finally:
            engine.dispose()
        assert rows
        _clean(pw, *texts, *rows)
    finally:
        server.stop()
