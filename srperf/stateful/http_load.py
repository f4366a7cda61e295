"""The ``http`` experiment kind: wrk on the client endpoint against a static HTTP
server (lighttpd or nginx) on the server endpoint, one configuration per object size.

Metrics of a sample (units in the names): ``requests_per_s``, ``transfer_mbps``
(10^6 bit/s of HTTP bytes read, headers included), ``latency_avg_ms``,
``latency_max_ms``, ``latency_p50_ms`` / ``p75`` / ``p90`` / ``p99``,
``socket_errors`` and ``non_2xx`` (counts).  A run without a single response, or
with any non-2xx/3xx response, is a ``failed`` sample with wrk's words as reason:
its rate would measure errors, not the path.
"""

from __future__ import annotations

import logging
from typing import Any

from srperf.stateful.base import (OK, Endpoints, StatefulError, StatefulSample,
                                  Variant)
from srperf.stateful.http_server import StaticHttpServer, object_name
from srperf.config.stateful import HttpConfig, size_label
from srperf.stateful import marked
from srperf.stateful.wrk import WrkParseError, WrkReport, parse_wrk, url, wrk_argv

log = logging.getLogger(__name__)

FAILED = "failed"
"""Status of a sample wrk could not measure."""


def _http_config(config: Any) -> HttpConfig:
    """The ``http`` block, whether given itself or inside an experiment."""
    cfg = getattr(config, "http", config)
    if not isinstance(cfg, HttpConfig):
        raise StatefulError(f"the http runner needs an http block, not {type(cfg).__name__}")
    return cfg


def report_metrics(report: WrkReport) -> dict[str, float]:
    """A sample's metrics from one wrk report (units in the names)."""
    metrics = {
        "requests_per_s": report.requests_per_s,
        "transfer_mbps": report.transfer_mbps,
        "latency_avg_ms": report.latency_avg_ms,
        "latency_max_ms": report.latency_max_ms,
        "socket_errors": float(report.errors),
        "non_2xx": float(report.non_2xx),
    }
    for pct, value in sorted(report.latency_pct_ms.items()):
        metrics[f"latency_p{pct}_ms"] = value
    return metrics


def sample_of(report: WrkReport) -> StatefulSample:
    """The sample of one wrk report: ``failed`` when it measured errors, not transfers."""
    detail = {"requests": report.requests, "duration_s": report.duration_s,
              "bytes_read": report.bytes_read, "socket_errors": dict(report.socket_errors)}
    if report.requests == 0:
        return StatefulSample({}, status=FAILED, detail=detail,
                              reason=f"wrk completed no request (socket errors: "
                                     f"{dict(report.socket_errors)})")
    if report.non_2xx:
        return StatefulSample({}, status=FAILED, detail=detail,
                              reason=f"{report.non_2xx} of {report.requests} responses were "
                                     "not 2xx/3xx")
    return StatefulSample(report_metrics(report), status=OK, detail=detail)


class HttpRunner:
    """wrk against lighttpd/nginx through the behavior under test."""

    kind = "http"
    primary_metric = "requests_per_s"

    def __init__(self) -> None:
        self._server: StaticHttpServer | None = None

    def variants(self, config: Any) -> list[Variant]:
        """One point per object size."""
        return [Variant(size_label(size), {"object_size_bytes": size})
                for size in _http_config(config).object_sizes]

    def start(self, endpoints: Endpoints, config: Any) -> None:
        cfg = _http_config(config)
        server = endpoints.server
        self._server = StaticHttpServer(server.node, server.ip6, cfg.port, cfg.object_sizes,
                                        cfg.server, cpu=server.cpu)
        self._server.start()

    def run(self, endpoints: Endpoints, config: Any, duration_s: float,
            variant: Variant) -> StatefulSample:
        cfg = _http_config(config)
        size = int(variant.params["object_size_bytes"])
        target = url(endpoints.server.ip6, cfg.port, object_name(size))
        argv = wrk_argv(target, threads=cfg.threads, connections=cfg.connections,
                        duration_s=duration_s, cpu=endpoints.client.cpu)
        node = endpoints.client.node   # marked: a killed run's wrk is found by its pid file
        res = node.run(marked.argv(node.workdir(), "wrk", argv), timeout=duration_s + 30.0)
        if not res.ok:
            return StatefulSample({}, status=FAILED,
                                  reason=f"wrk exited {res.returncode}: "
                                         f"{(res.stderr or res.stdout).strip()[-500:]}")
        try:
            report = parse_wrk(res.stdout)
        except WrkParseError as exc:
            return StatefulSample({}, status=FAILED, reason=str(exc))
        log.info("wrk %s: %.0f req/s, %.1f Mb/s", variant.label, report.requests_per_s,
                 report.transfer_mbps)
        return sample_of(report)

    def stop(self, endpoints: Endpoints) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    @property
    def server(self) -> StaticHttpServer | None:
        """The running HTTP server (for checks such as the served objects' hashes)."""
        return self._server


__all__ = ["HttpRunner", "report_metrics", "sample_of", "FAILED"]
