"""Every option of every srperf command has a help line; choices and defaults are shown.

Walks the real parser (every subcommand, recursively), so an option added
without help, or a default the help hides, fails here.
"""

from __future__ import annotations

import argparse

import pytest

from srperf.cli import guard as cli_guard, helptext
from srperf.cli.entry import build_parser, main

PARSERS = cli_guard.subparsers(build_parser())


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]


def test_every_command_is_walked() -> None:
    names = {prog.split(" ", 1)[-1] for prog, _ in PARSERS}
    assert {"run", "pdr", "runs", "validate", "testbed", "report", "compare", "export",
            "nightly", "provision", "behaviors", "build"} <= names


@pytest.mark.parametrize(("prog", "parser"), PARSERS, ids=[p for p, _ in PARSERS])
def test_every_option_has_help_and_shows_choices_and_default(
        prog: str, parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    formatter = parser._get_formatter()
    for action in _options(parser):
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"{prog} {name}: no help line"
        for choice in action.choices or ():
            assert str(choice) in text, f"{prog} {name}: choice {choice!r} not shown"
        meaningful = action.default not in (None, False, [], "", argparse.SUPPRESS)
        if meaningful and (action.option_strings or action.nargs == "?"):
            shown = formatter._get_help_string(action) % {"default": action.default}
            assert "default" in shown.lower(), f"{prog} {name}: default {action.default!r} " \
                                               "not shown"
    for line in text.splitlines():
        assert len(line) <= 100, f"{prog}: help line too long: {line!r}"


def test_validate_documents_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["validate", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "exit status" in out
    for code in ("0", "1", "2"):
        assert any(line.strip().startswith(code + " ") for line in out.splitlines()), out


def test_run_help_names_the_run_states_and_resume(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    for word in ("--resume", "interrupted", "failed", "finished", "130", "143"):
        assert word in out


def test_an_option_without_help_is_caught() -> None:
    """The walk itself can fail: a parser with a help-less option is reported."""
    p = argparse.ArgumentParser(prog="x", formatter_class=cli_guard.HelpFormatter)
    p.add_argument("--bare", default=3)
    bare = [a for a in _options(p) if not a.help]
    assert [a.dest for a in bare] == ["bare"]
    assert "(default: 3)" in cli_guard.HelpFormatter("x")._get_help_string(
        argparse.Action(["--n"], "n", default=3, help="n")) % {"default": 3}


# Words of a developer's docstring that must never reach a user's --help.
DEVELOPER_WORDS = (":mod:", ":class:", ":func:", ":data:", ":meth:", ":attr:", "``",
                   "Registered", "srperf.cli")


@pytest.mark.parametrize(("prog", "parser"), PARSERS, ids=[p for p, _ in PARSERS])
def test_help_is_written_for_users(prog: str, parser: argparse.ArgumentParser) -> None:
    """No reST/Sphinx markup or developer note in any --help; every command says what it
    does (a description) and how it exits (an 'exit status' section with 0 and 2)."""
    text = parser.format_help()
    for word in DEVELOPER_WORDS:
        assert word not in text, f"{prog} --help shows {word!r}:\n{text}"
    if prog != "srperf":
        assert parser.description and len(parser.description) > 20, f"{prog}: no description"
    assert "exit status:" in text, f"{prog} --help does not give its exit status"
    codes = {line.split()[0] for line in text.split("exit status:", 1)[1].splitlines()
             if line.strip()}
    assert {"0", "1"} <= codes, f"{prog}: exit codes shown: {sorted(codes)}"


def test_help_as_printed_by_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    """The same through main() as a user types it (the parser walk above could miss a
    description set only at parse time)."""
    for args in (["provision", "--help"], ["pdr", "--help"], ["--help"]):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code == 0
        out = capsys.readouterr().out
        assert "exit status:" in out and "Registered" not in out and "``" not in out, out


def test_a_command_without_description_gets_its_help_line_and_exit_status() -> None:
    """A subcommand added with only a help line (as a later command may be) is completed."""
    p = argparse.ArgumentParser(prog="x")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("fresh", help="do a new thing")
    helptext.use_help_formatter(p)
    text = cli_guard.subparsers(p)[1][1].format_help()
    assert "Do a new thing." in text and "exit status:" in text
