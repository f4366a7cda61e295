"""Opt-in: a short search against a real TRex server (``SRPERF_TREX_SERVER=host[:port]``)
whose ports 0 and 1 are connected back to back (or through a forwarding SUT)."""

from __future__ import annotations

import os

import pytest

from srperf.drivers.trex import TrexGenerator, TrexOptions
from srperf.search import create as create_search
from srperf.search.base import SearchSettings

SERVER = os.environ.get("SRPERF_TREX_SERVER")
pytestmark = pytest.mark.skipif(not SERVER, reason="set SRPERF_TREX_SERVER=host[:port]")


def test_short_search_on_a_real_server() -> None:
    pytest.importorskip("lbr_trex_client")
    host, _, port = (SERVER or "").partition(":")
    from srperf.config.model import TestbedConfig
    from srperf.packets import to_sut, udp6

    tb = TestbedConfig(name="trex-real")

    gen = TrexGenerator(TrexOptions(server=host, sync_port=int(port or 4501)))
    try:
        gen.prepare(bytes(to_sut(tb, udp6(tb, 64))))
        first = gen.trial(10_000, 1.0)
        assert first.sent == first.intended == 10_000
        settings = SearchSettings(min_rate_pps=10_000, max_rate_pps=1_000_000,
                                  thresholds_pct=(0.5,), trial_duration_s=1.0)
        result = create_search("bisect", settings).run(gen.trial)
        print(result.goals)
        assert result.goals[0].status in ("ok", "at_max", "generator_limited")
    finally:
        gen.close()
