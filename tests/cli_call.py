"""Run ``srperf`` in the test's process: its exit code and what it printed."""

from __future__ import annotations

import pytest

from srperf.cli.entry import main


def call_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``srperf ARGV``'s exit code (argparse's SystemExit included), stdout and stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
