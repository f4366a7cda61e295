"""Shared checks that bad input is refused cleanly (exit 2, file and key named, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.config.loader import load_experiment
from srperf.errors import ConfigError


def assert_refused(code: int, err: str, file: str, needles: tuple[str, ...]) -> None:
    """A command's refusal: exit 2, the file and every needle named, no internal error, and a
    message short enough to read."""
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert file in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in: {err}"
    assert len(err) < 2000, f"message too long ({len(err)} chars)"


def assert_experiment_refused(path: Path, key: str, value: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """The loader refuses the experiment at ``path`` naming ``key`` and the file, and
    ``srperf validate`` exits 2 naming the key and the value."""
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert err.value.key == key and str(path) in str(err.value)
    assert main(["validate", str(path)]) == 2
    message = capsys.readouterr().err
    assert key in message and value in message
