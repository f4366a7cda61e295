"""Transports to a testbed node: a network namespace of this host (or the host) or SSH.

The testbed object (:mod:`srperf.testbeds`) gives each node its transport.
"""

from __future__ import annotations

from srperf.transports.base import Transport

__all__ = ["Transport"]
