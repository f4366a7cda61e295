"""Experiment and testbed configuration (YAML): dataclasses, settings, schema and loader.

("config" is always a YAML file and what it loads into; configuring the SUT is
"cfg": the CFG scripts of :mod:`srperf.testbeds.sut`.)  The loader is imported
on first use so that the forwarder and testbed modules can import the
dataclasses without an import circle.
"""

from typing import Any

from srperf.config.model import (Addressing, Experiment, PortConfig, SearchConfig, SshConfig,
                                 SutConfig, TestbedConfig, TesterConfig, TransportConfig)

_LAZY = ("load_experiment", "load_testbed", "validate_file")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from srperf.config import loader

        return getattr(loader, name)
    raise AttributeError(name)


__all__ = ["Addressing", "Experiment", "PortConfig", "SearchConfig", "SshConfig",
           "SutConfig", "TestbedConfig", "TesterConfig", "TransportConfig",
           "load_experiment", "load_testbed", "validate_file"]
