"""Stateful experiments: real TCP connections through the behavior under test.

An experiment's ``kind`` (``pdr`` by default) says what it measures.  The stateful
kinds (``goodput``: parallel iperf3 process pairs, ``http``: wrk against a static
HTTP server) enter the way a forwarder does: one runner module per kind behind the
small interface of :mod:`srperf.stateful.base`, registered in :data:`KINDS`, used by
the same orchestrator, store, report, compare and nightly as the PDR search.

Modules, one job each:

* :mod:`~srperf.stateful.base`: the runner interface, endpoints and samples;
* :mod:`~srperf.config.stateful`: the ``goodput:`` and ``http:`` experiment blocks;
* :mod:`~srperf.stateful.endpoints`: client and server nodes on either side of the SUT;
* :mod:`~srperf.stateful.steering`: SRv6 steering of TCP through the behavior, both ways;
* :mod:`~srperf.stateful.goodput`: the iperf3 runner;
* :mod:`~srperf.stateful.stats`: mean, CV and the 95 % interval over repetitions;
* :mod:`~srperf.stateful.counters`: the SUT's CPU busy share and proxy counters;
* :mod:`~srperf.stateful.http_load`: the wrk/HTTP-server runner.
"""

from __future__ import annotations

import importlib
from typing import Any

KINDS: dict[str, str] = {
    "goodput": "srperf.stateful.goodput:GoodputRunner",
    "http": "srperf.stateful.http_load:HttpRunner",
}
"""Stateful experiment kinds and the runner class implementing each (module:class)."""

EXPERIMENT_KINDS = ("pdr", *KINDS)
"""Every value of an experiment's ``kind`` key (``pdr``: the packet-rate search)."""


def runner(kind: str) -> Any:
    """A new runner of the stateful ``kind`` (a :class:`~srperf.stateful.base.StatefulRunner`).

    Raises KeyError for an unknown kind, ImportError when its module is missing.
    """
    module, _, cls = KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), cls)()


__all__ = ["KINDS", "EXPERIMENT_KINDS", "runner"]
