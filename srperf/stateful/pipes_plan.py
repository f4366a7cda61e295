"""SRv6Pipes configurations measured with wrk: the loop shared by ``srperf run`` (an
``http`` experiment with a ``pipes:`` block) and ``bench/srv6pipes.py``.

One chain of namespaces (:class:`srperf.stateful.pipes_chain.PipesChain`) is built for
the whole run; per repetition, each configuration in turn gives the middle nodes their
roles, impairs the client's and the server's links (:mod:`srperf.stateful.impair`), caps
every link's rate when it asks (:meth:`PipesChain.set_rate`: SRv6Pipes' 10 Gb/s or 1 Gb/s
links; veth alone has no line rate), sets every namespace's default TCP congestion
control (the case's ``tcp_congestion``, else the namespaces' own default, recorded in
each sample's detail), and fetches each of its objects for ``duration_s``
with wrk (:class:`HttpRunner`).  The
configurations are interleaved within a repetition, so a slow spell of a shared machine
hits them all.  The chain and the HTTP server are always removed.

An impairment or a rate cap the kernel cannot make gives samples with status
``unsupported`` and the reason, never a number (a delay without netem is made by the
user-space delay line).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Callable, Sequence

from srperf.config.stateful import HttpConfig, PipesCase, size_label
from srperf.forwarders.pipes import PipesOptions
from srperf.stateful import impair
from srperf.traffic.tcp_congestion import CongestionUnsupported
from srperf.stateful.base import Endpoints, StatefulSample, Variant
from srperf.stateful.http_load import HttpRunner
from srperf.stateful.http_server import object_name
from srperf.stateful.pipes_chain import PipesChain, RateUnsupported
from srperf.stateful.wrk import url

log = logging.getLogger(__name__)

UNSUPPORTED = "unsupported"
"""Status of a sample whose impairment this kernel cannot make."""

OnSample = Callable[[PipesCase, Variant, int, StatefulSample], None]
"""Called with (configuration, object variant, repetition 1.., sample) after each wrk run."""


def variant_of(case: PipesCase, size: int) -> Variant:
    """The stored variant of one object size fetched through ``case``."""
    return Variant(size_label(size), {"object_size_bytes": size, "chain": list(case.chain),
                                      "loss_pct": case.loss_pct, "delay_ms": case.delay_ms,
                                      "rate_mbit": case.rate_mbit,
                                      **({"tcp_congestion": case.tcp_congestion}
                                         if case.tcp_congestion else {})})


WARM_UP_TRIES = 5
"""Fetches tried before a configuration is measured (one second each at most)."""


def warm_up(endpoints: Endpoints, cfg: HttpConfig, size: int) -> bool:
    """Fetch one object through the freshly configured chain (not measured) until it
    arrives: the relays just started, the object not yet in the server's page cache.
    (The one-second waits it used to absorb are gone: the chain's links are up and its
    addresses past DAD when :meth:`PipesChain.up` returns.)  False when no fetch
    succeeded (the measurement then fails on its own, with wrk's words)."""
    target = url(endpoints.server.ip6, cfg.port, object_name(size))
    for _ in range(WARM_UP_TRIES):
        res = endpoints.client.node.run(["curl", "-sS", "-o", "/dev/null", "-m", "1",
                                         target], timeout=5.0)
        if res.ok:
            return True
    log.warning("no fetch of %s succeeded in %d tries", target, WARM_UP_TRIES)
    return False


def impair_links(chain: PipesChain, case: PipesCase) -> list[impair.Applied]:
    """Impair both directions of the first and the last link as ``case`` asks (nothing
    when it asks for none); ImpairmentUnsupported when the kernel cannot."""
    if not case.loss_pct and not case.delay_ms:
        return []
    applied: list[impair.Applied] = []
    try:
        for link in sorted({0, len(case.chain)}):
            applied += impair.apply(chain, impair.Impairment(
                link, "both", loss_pct=case.loss_pct, delay_ms=case.delay_ms))
    except BaseException:
        impair.remove(applied)
        raise
    return applied


def run_cases(prefix: str, cases: Sequence[PipesCase], http: HttpConfig, repetitions: int,
              on_sample: OnSample, options: PipesOptions | None = None,
              relay: Path | None = None) -> set[str]:
    """Measure every case x object size x repetition on a chain of namespaces named
    ``<prefix>-c``, ``<prefix>-m1``...; the impairment methods used (netem, delay-line,
    bpf-drop).
    ``options``: how the relays run; ``relay``: a pipes_relay binary other than the
    built one (benchmarks comparing builds)."""
    if not cases:
        return set()
    sizes = tuple(sorted({s for case in cases for s in case.object_sizes}))
    cfg = dataclasses.replace(http, object_sizes=sizes)
    chain = PipesChain(prefix, list(cases[0].chain), options=options or PipesOptions(),
                       relay=relay)
    runner = HttpRunner()
    methods: set[str] = set()
    endpoints = None
    try:
        endpoints = chain.up()
        default_cc = chain.congestion()
        log.info("namespaces' default TCP congestion control: %s", default_cc)
        runner.start(endpoints, cfg)
        for rep in range(1, repetitions + 1):
            for case in cases:
                chain.reconfigure(case.chain)
                congestion = case.tcp_congestion or default_cc
                try:
                    chain.set_congestion(congestion)
                except CongestionUnsupported as exc:
                    for size in case.object_sizes:
                        on_sample(case, variant_of(case, size), rep,
                                  StatefulSample({}, UNSUPPORTED, str(exc)))
                    continue
                warm_up(endpoints, cfg, case.object_sizes[0])
                try:
                    applied = impair_links(chain, case)
                except impair.ImpairmentUnsupported as exc:
                    for size in case.object_sizes:
                        on_sample(case, variant_of(case, size), rep,
                                  StatefulSample({}, UNSUPPORTED, str(exc)))
                    continue
                methods.update(a.method for a in applied)
                try:
                    chain.set_rate(case.rate_mbit)
                except RateUnsupported as exc:
                    impair.remove(applied)
                    for size in case.object_sizes:
                        on_sample(case, variant_of(case, size), rep,
                                  StatefulSample({}, UNSUPPORTED, str(exc)))
                    continue
                try:
                    for size in case.object_sizes:
                        sample = runner.run(endpoints, cfg, cfg.duration_s,
                                            Variant(size_label(size),
                                                    {"object_size_bytes": size}))
                        sample = dataclasses.replace(
                            sample, detail={**sample.detail, "tcp_congestion": congestion})
                        on_sample(case, variant_of(case, size), rep, sample)
                finally:
                    impair.remove(applied)
    finally:
        if endpoints is not None:
            runner.stop(endpoints)
        chain.down()
    return methods


__all__ = ["run_cases", "variant_of", "impair_links", "OnSample", "UNSUPPORTED"]
