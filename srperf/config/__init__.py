"""Experiment and testbed configuration: dataclasses, schema and loader."""

from srperf.config.model import (Addressing, Experiment, PortConfig, SearchConfig,
                                 SshConfig, SutConfig, TesterConfig, Testbed,
                                 TransportConfig)
from srperf.config.loader import load_experiment, load_testbed, validate_file

__all__ = ["Addressing", "Experiment", "PortConfig", "SearchConfig", "SshConfig",
           "SutConfig", "TesterConfig", "Testbed", "TransportConfig",
           "load_experiment", "load_testbed", "validate_file"]
