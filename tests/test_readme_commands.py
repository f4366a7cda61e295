"""Every command line of the shell code blocks of README.md and docs/ works as typed.

README.md and every page under docs/ are read when the tests are collected, so a command
added to them later is covered without touching this file.  Each line of a ``sh``/``bash`` block (joined
over ``\\``, its ``a|b`` alternatives and ``[optional]`` words expanded) must:

* parse: an ``srperf`` line with srperf's own parser (argparse's usage error,
  exit 2, fails the test), a ``make`` line as ``make -n`` (the target exists), a
  ``python`` line by the script or test file it names;
* run, unless it needs something this host does not have (:data:`NEEDS`: TRex, VPP,
  an SSH SUT, PostgreSQL, CloudLab) or takes minutes (:data:`SLOW`), each skipped
  with its reason.  ``srperf`` lines run in a scratch directory that holds two runs
  of ``quick`` (for the RUN, BASELINE... placeholders), on the simulated testbed
  wherever the line names the virtual one or none: the virtual testbed is exercised
  by ``test_pdr_default.py`` and ``test_cli_run.py``.  They must exit 0.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from srperf.cli import entry as cli
from srperf.cli import guard as cli_guard
from srperf.config.loader import DEFAULT_TESTBED

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
"""Where commands are shown: the README and the documentation site's pages."""
SHELL_BLOCKS = {"sh", "bash", "shell", "console"}

NEEDS: list[tuple[str, str]] = [
    (r"(?i)trex", "TRex: needs a TRex server (tests/test_trex_real.py, opt-in)"),
    (r"(?i)\bvpp\b", "VPP: needs VPP on the SUT"),
    (r"\bmy-lab\.yaml\b|\btestbed/ssh\.yaml\b",
     "SSH: needs a real SUT over SSH (tests/test_ssh_testbed.py drives a local sshd)"),
    (r"(?i)postgres|\bnightly\.yaml\b",
     "PostgreSQL: the README's nightly suite copies its runs to a PostgreSQL server"),
    (r"(?i)cloudlab\.yaml|my-cloudlab", "CloudLab: needs the nodes of a CloudLab experiment"),
]
"""Pattern on a README line -> the external server it needs (the line is only parsed)."""

SLOW: list[tuple[str, str]] = [
    (r"^srperf conform\b", "minutes: the conformance matrix needs real frames, the virtual "
                           "testbed (tests/test_conform_virtual.py)"),
    (r"--resume\b", "needs a run whose process died (tests/test_run_states.py resumes one)"),
    (r"^python bench/", "a benchmark, minutes on a quiet machine (tests/test_bench_commands.py "
                        "runs each with --help)"),
    (r"^make (run|test)\b", "the whole set-up and a run or the suite: run as 'make -n'"),
    (r"^srperf run experiments/(caching_proxy_goodput|srv6pipes)\.yaml\b",
     "minutes of real TCP on the virtual testbed (a stateful run; tests/test_stateful.py and "
     "tests/test_pipes_run.py run short ones)"),
]
"""Pattern on a normalized line -> why it is only parsed (or, make, dry-run) here."""

PLACEHOLDERS = {"RUN": 0, "RUN1": 0, "RUN_ID": 0, "BASELINE": 0, "RUN2": 1, "CURRENT": 1}
"""A README placeholder -> which of the scratch directory's two runs stands for it."""

PROGRAMS = {"srperf": "srperf", ".venv/bin/srperf": "srperf", "make": "make",
            "python": "python", "python3": "python", ".venv/bin/python": "python",
            "mkdocs": "mkdocs", ".venv/bin/mkdocs": "mkdocs"}

MKDOCS = {"serve": "a server that runs until stopped",
          "build": "tests/test_docs_site.py builds the site (--strict) into a scratch directory"}
"""The documentation site's own commands: parsed here, not run."""


@dataclass(frozen=True)
class Line:
    """One command of README.md or a docs page, as typed there and as run here (program
    normalized)."""

    file: str
    lineno: int
    text: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    @property
    def program(self) -> str:
        return self.argv[0]

    @property
    def normalized(self) -> str:
        return " ".join(self.argv)

    @property
    def where(self) -> str:
        return f"{self.file} line {self.lineno}"

    def reason_not_run(self) -> str | None:
        if self.program == "mkdocs":
            return MKDOCS.get(self.argv[1] if len(self.argv) > 1 else "", "mkdocs")
        for pattern, reason in NEEDS:
            if re.search(pattern, self.text):
                return reason
        for pattern, reason in SLOW:
            if re.search(pattern, self.normalized):
                return reason
        return None


def shell_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, command) of every shell code block, continuations joined."""
    lang: str | None = None
    pending, start = "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        fence = re.match(r"^\s*```\s*([\w+-]*)\s*$", raw)
        if fence:
            lang = (fence[1] or "text") if lang is None else None
            continue
        if lang not in SHELL_BLOCKS:
            continue
        line = raw.strip()
        if not pending:
            start = no
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        line, pending = pending + line, ""
        if line and not line.startswith("#"):
            yield start, line


def expand(tokens: list[str]) -> list[list[str]]:
    """``up|down`` gives one command per alternative, ``[FILE]`` one with and one without."""
    variants: list[list[str]] = [[]]
    for tok in tokens:
        if len(tok) > 2 and tok.startswith("[") and tok.endswith("]"):
            choices: list[str | None] = [None, *tok[1:-1].split("|")]
        elif "|" in tok and tok != "|":
            choices = list(tok.split("|"))
        else:
            choices = [tok]
        variants = [v + ([c] if c else []) for v in variants for c in choices]
    return variants


def readme_commands(text: str, file: str = "README.md") -> list[Line]:
    out = []
    for no, command in shell_lines(text):
        tokens = shlex.split(command, comments=True)
        env = []
        while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
            name, _, value = tokens.pop(0).partition("=")
            env.append((name, value))
        if tokens[:1] == ["flock"]:
            tokens = tokens[2:]   # flock LOCKFILE COMMAND...
        for argv in expand(tokens):
            program = PROGRAMS.get(argv[0], argv[0])
            out.append(Line(file, no, command, (program, *argv[1:]), tuple(env)))
    return out


def page_commands() -> list[Line]:
    """The commands of every page: README.md, then docs/ in path order."""
    return [c for page in PAGES
            for c in readme_commands(page.read_text(), str(page.relative_to(ROOT)))]


COMMANDS = page_commands()
IDS = [f"{c.file}:L{c.lineno}:{c.normalized}"[:100] for c in COMMANDS]


def check_parses(line: Line) -> None:
    """Fail unless the line would be accepted as typed (no usage error)."""
    if line.program == "srperf":
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                cli.build_parser().parse_args(list(line.argv[1:]))
            except SystemExit as done:
                pytest.fail(f"{line.where}: {line.text!r} is a usage error "
                            f"(exit {done.code}):\n{err.getvalue()}")
    elif line.program == "make":
        proc = subprocess.run(["make", "-n", "-C", str(ROOT), *line.argv[1:]],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"{line.where}: {proc.stderr}"
    elif line.program == "mkdocs":
        assert line.argv[1:2] and line.argv[1] in MKDOCS, \
            f"{line.where}: mkdocs {' '.join(line.argv[1:])}: not one of {sorted(MKDOCS)}"
        assert (ROOT / "mkdocs.yml").is_file(), f"{line.where}: no mkdocs.yml"
    elif line.program == "python":
        args = list(line.argv[1:])
        if args[:2] == ["-m", "pytest"]:
            files = [a for a in args[2:] if a.endswith(".py")]
        else:
            files = args[:1]
        assert files, f"{line.where}: which file does {line.text!r} run?"
        for name in files:
            assert (ROOT / name).is_file(), f"{line.where}: no {name}"
    else:
        pytest.fail(f"{line.where} runs {line.program!r}, which this test "
                    f"does not know how to check: add it to PROGRAMS / check_parses")


def test_the_readme_is_read() -> None:
    """The walk finds the README's commands and the docs' (a broken walk would pass every
    test below): the README's set-up and everyday commands, and in docs/ the pages the
    README's former sections moved to."""
    readme = {c.normalized for c in COMMANDS if c.file == "README.md"}
    assert {"make run", "make test", "srperf pdr --threshold 0.5", "srperf behaviors"} <= readme
    assert len(readme) >= 10
    by_file = {c.file for c in COMMANDS}
    assert {"docs/first-run.md", "docs/reports.md", "docs/trend.md", "docs/stateful.md",
            "docs/testbeds/ssh.md", "docs/benchmarks.md"} <= by_file
    assert len(COMMANDS) >= 60


def test_the_set_up_is_two_commands() -> None:
    """The README's set-up block stays two commands (make run, make test)."""
    text = README.read_text()
    block = text.split("## Set-up", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    assert [c.normalized for c in readme_commands(f"```sh{block}```")] == \
        ["make run", "make test"]


def test_a_usage_error_is_caught() -> None:
    """The check can fail: an unknown option, or the command the issue found broken."""
    bad = readme_commands("```sh\nsrperf pdr --no-such-option   # comment\n```\n")
    assert [c.normalized for c in bad] == ["srperf pdr --no-such-option"]
    with pytest.raises(pytest.fail.Exception, match="usage error"):
        check_parses(bad[0])
    alternatives = readme_commands("```sh\nsrperf testbed up|down [testbed/x.yaml]\n```\n")
    assert [c.normalized for c in alternatives] == [
        "srperf testbed up", "srperf testbed up testbed/x.yaml", "srperf testbed down",
        "srperf testbed down testbed/x.yaml"]


@pytest.mark.parametrize("line", COMMANDS, ids=IDS)
def test_readme_command_parses(line: Line) -> None:
    check_parses(line)


# -- running them ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """A directory like the project's (experiments/, testbed/) with two simulated runs."""
    work = tmp_path_factory.mktemp("readme")
    for name in ("experiments", "testbed"):
        (work / name).symlink_to(ROOT / name)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.delenv("SRPERF_RESULTS", raising=False)
        mp.delenv("SRPERF_DB", raising=False)
        ids = []
        for _ in range(2):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert cli.main(["run", "quick", "--testbed", "simulated"]) == 0
            ids.append(re.search(r"summary of run (\S+)", out.getvalue())[1])
        yield work, ids


TOUCH_NO_TESTBED = {"validate"}
"""Commands whose --testbed is only read (validate checks files against it): kept as typed."""


def _on_simulated(argv: list[str]) -> list[str]:
    """The command with the simulated testbed wherever it names the virtual one or none."""
    args = cli.build_parser().parse_args(argv)
    if not hasattr(args, "testbed") or argv[0] in TOUCH_NO_TESTBED:
        return argv
    virtual = {None, DEFAULT_TESTBED, "testbed/virtual.yaml"}
    for i, tok in enumerate(argv[:-1]):
        if tok in ("--testbed", "-t"):
            return argv[:i + 1] + (["simulated"] if argv[i + 1] in virtual else [argv[i + 1]]) \
                + argv[i + 2:]
    if args.testbed not in virtual:
        return argv
    # the (sub)command's own parser: the one whose path is the longest prefix of argv
    parsers = {tuple(prog.split()[1:]): p for prog, p in cli_guard.subparsers(cli.build_parser())}
    path = max((k for k in parsers if tuple(argv[:len(k)]) == k), key=len)
    positional = any(a.dest == "testbed" and not a.option_strings
                     for a in parsers[path]._actions)
    if not positional:
        return argv + ["--testbed", "simulated"]
    if "testbed/virtual.yaml" in argv:
        return [("simulated" if t == "testbed/virtual.yaml" else t) for t in argv]
    return argv + ["simulated"]


def _filled(line: Line, ids: list[str], work: Path) -> list[str]:
    argv = []
    for tok in line.argv[1:]:
        if re.fullmatch(r"[A-Z][A-Z0-9_]*", tok):
            if tok not in PLACEHOLDERS:
                pytest.fail(f"{line.where}: placeholder {tok}: say in "
                            "PLACEHOLDERS what it stands for")
            argv.append(ids[PLACEHOLDERS[tok]])
        elif any(ch in tok for ch in "*?"):
            argv.extend(sorted(os.path.relpath(p, work) for p in glob.glob(str(work / tok))))
        else:
            argv.append(tok)
    return _on_simulated(argv)


def _allowed_failure(line: Line, rc: int, err: str) -> bool:
    """``validate experiments/*.yaml testbed/*.yaml`` exits 2 on a host without the SSH
    testbed templates' host keys: documented ('exit 2 + file/key/value'), and each
    message names the file, the key (known_hosts) and the fix."""
    errors = [x for x in err.splitlines() if x.startswith("srperf: config error:")]
    return (line.argv[1:2] == ("validate",) and rc == 2 and bool(errors)
            and all("known_hosts" in x and "srperf testbed trust" in x for x in errors))


@pytest.mark.parametrize("line", COMMANDS, ids=IDS)
def test_readme_command_runs(line: Line, scratch: tuple[Path, list[str]],
                             capsys: pytest.CaptureFixture[str]) -> None:
    reason = line.reason_not_run()
    if line.program == "make":
        check_parses(line)   # make -n TARGET: the set-up itself is what the suite runs in
        return
    if reason is not None:
        pytest.skip(f"only parsed: {reason}")
    if line.program != "srperf":
        check_parses(line)
        return
    work, ids = scratch
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.delenv("SRPERF_RESULTS", raising=False)
        for name, value in line.env:
            mp.setenv(name, value)
        argv = _filled(line, ids, work)
        try:
            rc = cli.main(argv)
        except SystemExit as done:   # argparse: a usage error
            rc = done.code if isinstance(done.code, int) else 2
            pytest.fail(f"{line.where}: srperf {' '.join(argv)}: usage "
                        f"error:\n{capsys.readouterr().err}")
    out, err = capsys.readouterr()
    assert "internal error" not in err, err
    assert rc == 0 or _allowed_failure(line, rc, err), \
        f"{line.where}: srperf {' '.join(argv)} exited {rc}:\n{out[-2000:]}{err}"


def test_simulated_substitution() -> None:
    """Where a line names the virtual testbed (or none), the simulated one is used."""
    assert _on_simulated(["run", "quick", "--testbed", "virtual"]) == \
        ["run", "quick", "--testbed", "simulated"]
    assert _on_simulated(["pdr", "--threshold", "0.5"]) == \
        ["pdr", "--threshold", "0.5", "--testbed", "simulated"]
    assert _on_simulated(["testbed", "up", "testbed/virtual.yaml"]) == \
        ["testbed", "up", "simulated"]
    assert _on_simulated(["testbed", "status"]) == ["testbed", "status", "simulated"]
    assert _on_simulated(["run", "q", "-t", "mine.yaml"]) == ["run", "q", "-t", "mine.yaml"]
    assert _on_simulated(["behaviors"]) == ["behaviors"]
    assert _on_simulated(["validate", "testbed/virtual.yaml"]) == \
        ["validate", "testbed/virtual.yaml"]

