"""Experiment and testbed configuration (YAML): dataclasses, settings, schema and
loader.  ("config" is a YAML file and what it loads into; configuring the SUT is
"cfg": the CFG scripts of :mod:`srperf.testbeds.sut`.)"""
