"""The ``goodput`` kind: N parallel iperf3 client/server process pairs through the SUT.

iperf3 is single-threaded, so parallel streams are parallel processes (as the
caching-proxy paper ran them), not ``-P``: server i listens on ``port_base + i`` on
the server endpoint (``iperf3 -s -D``), client i connects from the client's address
(``-B``) to the server address of chain ``i mod chains``.  Every client prints
``--json``; a repetition's goodput is the sum of what the servers received
(``end.sum_received.bits_per_second``), its retransmits the sum of the senders'.
"""

from __future__ import annotations

import json
import logging
import posixpath
import shlex
import time
from typing import Any

from srperf.stateful import marked
from srperf.stateful.base import (Endpoints, StatefulError, StatefulSample, Variant)
from srperf.stateful.counters import busy_pct, read_cpu
from srperf.config.stateful import GoodputConfig

log = logging.getLogger(__name__)

MARK = "=== srperf iperf3 stream "
"""Line printed before each client's JSON output."""


def parse_client(text: str) -> dict[str, float]:
    """``{goodput_mbps, retransmits, sent_mbps}`` of one ``iperf3 -c --json`` output;
    StatefulError with iperf3's own error when it failed."""
    try:
        data = json.loads(text)
    except ValueError:
        raise StatefulError(f"iperf3 printed no JSON: {text.strip()[:300]}") from None
    if data.get("error"):
        raise StatefulError(f"iperf3: {data['error']}")
    end = data.get("end") or {}
    try:
        received = float(end["sum_received"]["bits_per_second"])
        sent = end["sum_sent"]
    except (KeyError, TypeError, ValueError):
        raise StatefulError("iperf3 JSON without end.sum_received/sum_sent") from None
    return {"goodput_mbps": received / 1e6, "retransmits": float(sent.get("retransmits", 0)),
            "sent_mbps": float(sent.get("bits_per_second", 0.0)) / 1e6}


def split_outputs(text: str) -> dict[int, str]:
    """The per-stream outputs of the client script, by stream index."""
    out: dict[int, list[str]] = {}
    current: int | None = None
    for line in text.splitlines():
        if line.startswith(MARK):
            current = int(line[len(MARK):].strip())
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


class GoodputRunner:
    """Parallel iperf3 process pairs (:class:`srperf.stateful.base.StatefulRunner`)."""

    kind = "goodput"
    primary_metric = "goodput_mbps"

    def __init__(self) -> None:
        self._servers: list[str] = []     # pid files on the server node
        self._server_node: Any = None

    def variants(self, config: GoodputConfig) -> list[Variant]:
        if not isinstance(config.streams, int):
            raise StatefulError(f"streams = {config.streams!r}: resolve the calibration first")
        return [Variant(f"{config.streams} streams", {"streams": config.streams})]

    def start(self, endpoints: Endpoints, config: GoodputConfig) -> None:
        """One ``iperf3 -s -D`` per stream on the server endpoint, checked listening."""
        if not isinstance(config.streams, int):
            raise StatefulError(f"streams = {config.streams!r}: resolve the calibration first")
        node = endpoints.server.node
        self._server_node = node
        work = node.workdir()
        ports = [config.port_base + i for i in range(config.streams)]
        for port in ports:
            pidfile = posixpath.join(work, f"iperf3-{port}.pid")
            res = node.run(["iperf3", "-s", "-D", "-p", str(port), "-I", pidfile,
                            "--logfile", posixpath.join(work, f"iperf3-{port}.log")],
                           timeout=15.0)
            if not res.ok:
                self.stop(endpoints)
                raise StatefulError(f"{node.where}: iperf3 -s -p {port} failed: "
                                    f"{(res.stderr or res.stdout).strip()}")
            self._servers.append(pidfile)
        deadline = time.monotonic() + 10.0
        while True:
            res = node.run(["ss", "-Htln"], timeout=15.0)
            listening = {int(w.rsplit(":", 1)[1]) for line in res.stdout.splitlines()
                         for w in line.split()[3:4] if ":" in w}
            missing = [p for p in ports if p not in listening]
            if not missing:
                return
            if time.monotonic() > deadline:
                self.stop(endpoints)
                raise StatefulError(f"{node.where}: iperf3 servers not listening on ports "
                                    f"{missing} after 10 s")
            time.sleep(0.1)

    def run(self, endpoints: Endpoints, config: GoodputConfig, duration_s: float,
            variant: Variant) -> StatefulSample:
        streams = int(variant.params.get("streams", config.streams))
        addresses = list(variant.params.get("addresses") or [endpoints.server.ip6])
        client = endpoints.client
        work = client.node.workdir()
        # marked: a killed run's clients are found by their pid files (ssh_endpoints.reap)
        lines = ["set -u", "pids=()", *marked.shell_lines(work)]
        for i in range(streams):
            out = posixpath.join(work, f"stream-{i}.json")
            argv = ["iperf3", "-c", addresses[i % len(addresses)], "-B", client.ip6,
                    "-p", str(config.port_base + i), "-t", f"{duration_s:g}",
                    "--json", "--connect-timeout", "3000"]
            if config.omit_s:
                argv += ["-O", f"{config.omit_s:g}"]
            if client.cpu is not None:
                argv = ["taskset", "-c", str(client.cpu)] + argv
            lines.append(f"{shlex.join(argv)} > {shlex.quote(out)} 2>&1 & pids+=($!); "
                         f"{marked.note_job(work, f'iperf3-client-{i}')}")
        lines.append('for p in "${pids[@]}"; do wait "$p" || true; done')
        for i in range(streams):
            out = posixpath.join(work, f"stream-{i}.json")
            lines.append(f"echo {shlex.quote(MARK + str(i))}; cat {shlex.quote(out)}; echo")
        before = read_cpu(endpoints.sut, endpoints.sut_cpu)
        started = time.monotonic()
        res = client.node.run(["bash", "-c", "\n".join(lines)],
                              timeout=duration_s + config.omit_s + 20.0)
        wall = time.monotonic() - started
        after = read_cpu(endpoints.sut, endpoints.sut_cpu)
        if not res.ok:
            return StatefulSample({}, "failed", f"{client.node.where}: the iperf3 clients "
                                  f"failed: {(res.stderr or res.stdout).strip()[:300]}")
        outputs = split_outputs(res.stdout)
        per_stream: list[dict[str, float]] = []
        errors: list[str] = []
        for i in range(streams):
            try:
                per_stream.append(parse_client(outputs.get(i, "")))
            except StatefulError as exc:
                errors.append(f"stream {i} (port {config.port_base + i}): {exc}")
        detail = {"streams": per_stream, "wall_s": round(wall, 3), "addresses": addresses}
        if errors:
            return StatefulSample({}, "failed", "; ".join(errors[:3]), detail)
        metrics = {
            "goodput_mbps": sum(s["goodput_mbps"] for s in per_stream),
            "retransmits": sum(s["retransmits"] for s in per_stream),
            "streams": float(streams),
            "min_stream_mbps": min(s["goodput_mbps"] for s in per_stream),
        }
        cpu = busy_pct(before, after)
        if cpu is not None:
            metrics["sut_cpu_busy_pct"] = cpu
        return StatefulSample(metrics, detail=detail)

    def stop(self, endpoints: Endpoints) -> None:
        node = self._server_node or endpoints.server.node
        if self._servers:
            files = " ".join(shlex.quote(p) for p in self._servers)
            node.run(["bash", "-c", f"for f in {files}; do [ -s \"$f\" ] && "
                      f"kill \"$(cat \"$f\")\" 2>/dev/null; rm -f \"$f\"; done; true"],
                     timeout=15.0)
        self._servers.clear()


__all__ = ["GoodputRunner", "parse_client", "split_outputs"]
