"""Load and validate experiment and testbed YAML files.

Every problem raises :class:`srperf.errors.ConfigError` naming the file, the
key path (``search.trial_duration_s``, ``behaviors[2]``) and the bad value.
Loading never touches a SUT.  File values, ``--set`` values and command-line
options take one path: :func:`srperf.config.coerce.coerce` then the schema
(:func:`check_value` for a single option), then the cross-field checks.

Each part lives where it loads: :mod:`~srperf.config.reader` (a YAML file against its
schema, ``--set``, command-line options), :mod:`~srperf.config.experiment`,
:mod:`~srperf.config.testbed`, :mod:`~srperf.config.addressing` (the addressing plan),
:mod:`~srperf.config.ssh` (transports and SSH files), :mod:`~srperf.config.endpoints`.
This module guesses a file's kind, finds a command's testbed and keeps every name
importable from ``srperf.config.loader``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from srperf.config.model import Experiment, TestbedConfig
from srperf.config.schema import EXPERIMENT_SCHEMA, TESTBED_SCHEMA
from srperf.errors import ConfigError
from srperf.resources import DEFAULT_TESTBED

# What each part loads lives in its own module; every name stays importable from here.
from srperf.config.reader import (_key, _number, _subschema, _unit, _validate, apply_overrides,
                                  check_value, read_yaml, suggest, validate)
from srperf.config.experiment import (_check_behaviors, _check_pipes, _stateful_blocks,
                                      check_options, experiment_from_mapping,
                                      load_experiment)
from srperf.config.testbed import (_check_driver_options, _check_port_macs, _check_simulated,
                                   _port, _reject_remote_dir, default_prefix, load_testbed)
from srperf.config.endpoints import _endpoints
from srperf.config.ssh import (_check_host, _check_known_hosts, _existing_file, _ssh,
                               _transport)
from srperf.config.addressing import (_INT_RANGES, _MAC_PREFIX4, _RESERVED_TABLES, _addressing,
                                      _check_ip, _check_plan, _check_vnfs)


def guess_kind(data: dict[str, Any]) -> str:
    """``experiment`` or ``testbed``: the schema whose top-level keys ``data`` matches best
    (a misspelt key counts half), so that a typo is reported against the right schema."""
    def score(schema: dict[str, Any]) -> float:
        props = schema["properties"]
        return sum(1.0 if k in props and k != "name" else 0.5 if suggest(k, props) else 0.0
                   for k in data)

    return "experiment" if score(EXPERIMENT_SCHEMA) >= score(TESTBED_SCHEMA) and \
        score(EXPERIMENT_SCHEMA) > 0 else "testbed"


def testbed_of(exp: Experiment) -> TestbedConfig | None:
    """The testbed the experiment's ``testbed`` key names, loaded (None without the key);
    a name that resolves to no file is an error of the experiment file."""
    if exp.testbed is None:
        return None
    from srperf.resources import find_config

    found = find_config(exp.testbed, "testbed")
    if not found.is_file():
        why = "is a directory" if found.is_dir() else "file not found"
        raise ConfigError(exp.source, "testbed", exp.testbed,
                          f"{why} (neither a path nor a shipped testbed name)")
    return load_testbed(found)


def resolve_testbed(name: str | None, exp: Experiment | None = None) -> TestbedConfig:
    """The testbed a command runs on: ``name`` (a path or a shipped testbed name) when
    given, else the one the experiment's ``testbed`` key names, else the default."""
    named = testbed_of(exp) if exp is not None else None  # a bad testbed key is an error
    if name is None and named is not None:
        return named
    from srperf.resources import find_config

    return load_testbed(find_config(name or DEFAULT_TESTBED, "testbed"))


def validate_file(path: str | Path) -> str:
    """Validate a file as an experiment or a testbed (guessed from its keys).

    Returns ``"experiment"``, ``"testbed"`` or ``"suite"`` (a nightly suite: ``name``
    and ``experiments``, checked by the caller); raises ConfigError.
    """
    path = Path(path)
    data = read_yaml(path)
    if "experiments" in data and "behaviors" not in data:
        return "suite"
    if guess_kind(data) == "experiment":
        testbed_of(load_experiment(path))
        return "experiment"
    load_testbed(path)
    return "testbed"


__all__ = ["DEFAULT_TESTBED", "apply_overrides", "check_options", "check_value", "default_prefix",
           "experiment_from_mapping", "guess_kind", "load_experiment", "load_testbed",
           "read_yaml", "resolve_testbed", "suggest", "testbed_of", "validate", "validate_file",
           # private, kept importable for code written against the single module
           "_INT_RANGES", "_MAC_PREFIX4", "_RESERVED_TABLES", "_addressing", "_check_behaviors",
           "_check_driver_options", "_check_host", "_check_ip", "_check_known_hosts",
           "_check_pipes", "_check_plan", "_check_port_macs", "_check_simulated", "_check_vnfs",
           "_endpoints", "_existing_file", "_key", "_number", "_port", "_reject_remote_dir",
           "_ssh", "_stateful_blocks", "_subschema", "_transport", "_unit", "_validate"]
