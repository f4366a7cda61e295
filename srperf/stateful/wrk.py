"""wrk (the HTTP load generator, Debian ``wrk`` 4.1): its command line and its report.

:func:`parse_wrk` reads what ``wrk --latency`` prints into a :class:`WrkReport`; it
raises :class:`WrkParseError` (quoting the text) when a required line is missing,
so a changed output format is an error, never a zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from srperf.stateful.base import StatefulError

PERCENTILES = (50, 75, 90, 99)
"""The latency percentiles ``wrk --latency`` prints (%)."""

_TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
"""wrk's time suffixes -> milliseconds."""
_BINARY_UNITS = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}
"""wrk's byte suffixes (powers of 1024, as wrk's format_binary prints them) -> bytes."""

_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_RE_SUMMARY = re.compile(rf"^\s*([0-9]+) requests in {_NUM}(us|ms|s|m|h), {_NUM}([KMGT]?B) read",
                         re.M)
_RE_RPS = re.compile(rf"^Requests/sec:\s+{_NUM}\s*$", re.M)
_RE_TPS = re.compile(rf"^Transfer/sec:\s+{_NUM}([KMGT]?B)\s*$", re.M)
_RE_LATENCY = re.compile(rf"^\s*Latency\s+{_NUM}(us|ms|s|m|h)\s+{_NUM}(us|ms|s|m|h)\s+"
                         rf"{_NUM}(us|ms|s|m|h)", re.M)
_RE_PCT = re.compile(rf"^\s*(50|75|90|99)%\s+{_NUM}(us|ms|s|m|h)\s*$", re.M)
_RE_SOCKET = re.compile(r"Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), "
                        r"timeout ([0-9]+)")
_RE_NON2XX = re.compile(r"Non-2xx or 3xx responses: ([0-9]+)")


class WrkParseError(StatefulError):
    """wrk's output lacks a line the report needs."""


@dataclass(frozen=True)
class WrkReport:
    """What one wrk run reported (wrk's own figures, converted to the units named)."""

    requests: int
    """Responses completed in the run (count)."""
    duration_s: float
    """How long wrk ran (s, as wrk measured it)."""
    bytes_read: int
    """Bytes read from the server, headers included (bytes; wrk prints 2 decimals of
    KB/MB/GB in powers of 1024, so this is rounded to that precision)."""
    requests_per_s: float
    """Completed responses per second (wrk's ``Requests/sec``)."""
    transfer_bytes_per_s: float
    """Bytes read per second (wrk's ``Transfer/sec``, powers of 1024 resolved)."""
    latency_avg_ms: float
    """Mean response latency (ms)."""
    latency_stdev_ms: float
    """Standard deviation of the response latency (ms)."""
    latency_max_ms: float
    """Largest response latency (ms)."""
    latency_pct_ms: Mapping[int, float] = field(default_factory=dict)
    """Percentile (50, 75, 90, 99) -> latency (ms); empty without ``--latency``."""
    socket_errors: Mapping[str, int] = field(default_factory=dict)
    """connect, read, write, timeout -> count (all 0 when wrk printed no such line)."""
    non_2xx: int = 0
    """Responses with a status outside 2xx/3xx (count)."""

    @property
    def transfer_mbps(self) -> float:
        """The transfer rate in Mb/s (10^6 bits per second)."""
        return self.transfer_bytes_per_s * 8 / 1e6

    @property
    def errors(self) -> int:
        """Socket errors of every kind (count)."""
        return sum(self.socket_errors.values())


def _ms(value: str, unit: str) -> float:
    return float(value) * _TIME_UNITS[unit]


def _need(regex: re.Pattern[str], text: str, what: str) -> re.Match[str]:
    match = regex.search(text)
    if match is None:
        raise WrkParseError(f"wrk output has no {what} line:\n{text.strip()[:2000]}")
    return match


def parse_wrk(text: str) -> WrkReport:
    """The :class:`WrkReport` of wrk's standard output ``text``."""
    summary = _need(_RE_SUMMARY, text, "'N requests in T, B read'")
    rps = _need(_RE_RPS, text, "'Requests/sec:'")
    tps = _need(_RE_TPS, text, "'Transfer/sec:'")
    lat = _need(_RE_LATENCY, text, "'Latency avg stdev max'")
    pct = {int(m.group(1)): _ms(m.group(2), m.group(3)) for m in _RE_PCT.finditer(text)}
    sock = _RE_SOCKET.search(text)
    errors = dict(zip(("connect", "read", "write", "timeout"),
                      (int(g) for g in sock.groups()) if sock else (0, 0, 0, 0)))
    non2xx = _RE_NON2XX.search(text)
    return WrkReport(
        requests=int(summary.group(1)),
        duration_s=_ms(summary.group(2), summary.group(3)) / 1e3,
        bytes_read=round(float(summary.group(4)) * _BINARY_UNITS[summary.group(5)]),
        requests_per_s=float(rps.group(1)),
        transfer_bytes_per_s=float(tps.group(1)) * _BINARY_UNITS[tps.group(2)],
        latency_avg_ms=_ms(lat.group(1), lat.group(2)),
        latency_stdev_ms=_ms(lat.group(3), lat.group(4)),
        latency_max_ms=_ms(lat.group(5), lat.group(6)),
        latency_pct_ms=pct,
        socket_errors=errors,
        non_2xx=int(non2xx.group(1)) if non2xx else 0,
    )


def url(host_ip6: str, port: int, path: str) -> str:
    """``http://[ADDR]:PORT/PATH`` for an IPv6 address."""
    return f"http://[{host_ip6}]:{port}/{path.lstrip('/')}"


def wrk_argv(target: str, *, threads: int, connections: int, duration_s: float,
             timeout_s: float = 2.0, cpu: int | None = None) -> list[str]:
    """wrk's command line (``--latency`` for the percentiles), pinned to ``cpu`` if given."""
    argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{max(1, round(duration_s))}s",
            "--timeout", f"{max(1, round(timeout_s))}s", "--latency", target]
    return (["taskset", "-c", str(cpu)] if cpu is not None else []) + argv


__all__: Sequence[str] = ["WrkReport", "WrkParseError", "parse_wrk", "wrk_argv", "url",
                          "PERCENTILES"]
