"""Testbed kinds (virtual, SSH, simulated, kernel target): one module each, one
interface (:mod:`srperf.testbeds.base`), created by :mod:`srperf.testbeds.registry`."""
