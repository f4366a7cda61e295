"""The one numeric gate: every number srperf reads (files, ``--set``, flags) is
finite, within its bounds, and a message about a bound names its unit.

- Files and ``--set`` values: :func:`refuse_non_finite` (called by the YAML reader
  and the ``--set`` parser) refuses ``.nan``/``.inf`` anywhere; the schema's bounds
  are then checked by jsonschema, whose messages name :func:`unit_of` the key.
- Flags: the argparse types :func:`flag_float` / :func:`flag_int` refuse NaN,
  infinities and text at parse time (exit 2, the flag named); a flag checked
  against a file key (``check_value``) passes :func:`refuse_non_finite` too, since
  jsonschema's bounds let NaN through (``nan > 1000`` is false).

A unit is the schema's ``"unit"`` when it has one (every setting declared with a
unit has it: :mod:`srperf.config.settings`), else the first parenthesized group of
its description that starts with a unit (``"delay (ms) per direction ... (netem,
else the user-space delay line)"`` -> ``ms``, never the later aside).
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from srperf.config.coerce import key_path
from srperf.errors import ConfigError

UNITS = ("s", "ms", "us", "µs", "ns", "%", "pps", "kpps", "Mpps", "bytes", "B", "KB", "MB",
         "GB", "kB", "bit", "Mb/s", "Gb/s", "Mbit/s", "Gbit/s", "b/s", "packets", "frames",
         "streams", "flows", "connections", "trials", "CPUs", "cores", "seconds", "Hz",
         "entries", "characters", "repetitions", "nodes", "MHz", "kpps/s", "percent", "x",
         "ratio", "count", "pages", "segments", "ports", "MiB", "KiB", "bytes/s")
"""What a parenthesized word of a description must be to be taken as the unit."""

_PAREN = re.compile(r"\(([^()]{1,24})\)")


KEY_UNITS: dict[str, str] = {
    "packet_sizes": "bytes", "object_sizes": "bytes", "link_mtu": "bytes",
    "rate": "pps or % of line rate",
    "repetitions": "repetitions", "segments": "segments", "chains": "chains",
    "streams": "streams", "port": "(a TCP port)", "cpu": "(a CPU number)",
    "irq_cpu": "(a CPU number)", "table": "(a routing table number)",
    "napi_fifo_priority": "(a SCHED_FIFO priority)",
    "napi_defer_hard_irqs": "(NAPI polls)", "csid_lblen": "bits", "csid_nflen": "bits",
    "link_prefix_len6": "bits", "link_prefix_len4": "bits",
    "csid_sut": "(a C-SID value)", "csid_next": "(a C-SID value)",
    "vnf_target": "(a VNF index)", "exceed_ratio": "(a share of trial time)",
    "relative_width": "(a share of the rate)", "confidence": "(a probability)",
    "fraction": "(a share of the PDR)", "fractions": "(shares of the PDR)",
    "line_rate_pps": "pps", "rx_queues": "queues", "accuracy": "pps", "min_rate": "pps",
    "max_rate": "pps", "mrr_rate": "pps", "table_base": "(a routing table number)",
    "tolerance": "(a share of the intended rate)", "retries": "retries",
    "fifo_priority": "(a SCHED_FIFO priority)", "sync_port": "(a TCP port)",
    "async_port": "(a TCP port)", "tx_port": "(a TRex port index)",
    "rx_port": "(a TRex port index)", "cores": "cores",
}
"""Units of numeric keys whose schema states none, by key name."""
_SUFFIX_UNITS = (("_pct", "%"), ("_ms", "ms"), ("_us", "µs"), ("_ns", "ns"), ("_s", "s"),
                 ("_pps", "pps"), ("_mbit", "Mb/s"), ("_hz", "Hz"), ("_bytes", "bytes"))


def unit_of(schema: dict[str, Any], key: str = "") -> str:
    """The unit of a numeric key (``"ms"``), or '' when neither its schema nor its name
    (:data:`KEY_UNITS`, a suffix such as ``_s`` or ``_pct``) states one."""
    explicit = schema.get("unit")
    if isinstance(explicit, str) and explicit:
        return explicit
    doc = str(schema.get("description", ""))
    for m in _PAREN.finditer(doc):
        text = m.group(1).strip()
        words = text.split()
        if words and words[0].rstrip(",;") in UNITS:
            return text if "," not in text and ";" not in text else words[0].rstrip(",;")
    if key in KEY_UNITS:
        return KEY_UNITS[key]
    for suffix, unit in _SUFFIX_UNITS:
        if key.endswith(suffix):
            return unit
    return ""


def refuse_non_finite(file: str, data: Any, path: list[Any] | None = None) -> None:
    """Raise ConfigError at the first NaN or infinity anywhere in ``data``."""
    path = path or []
    if isinstance(data, float) and not math.isfinite(data):
        raise ConfigError(file, key_path(path), data, "must be a finite number")
    if isinstance(data, dict):
        for key, value in data.items():
            refuse_non_finite(file, value, path + [key])
    elif isinstance(data, list):
        for i, value in enumerate(data):
            refuse_non_finite(file, value, path + [i])


def finite(text: str) -> float:
    """``text`` as a finite float; ValueError naming why not."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, not {text!r}")
    return value


def flag_float(text: str) -> float:
    """argparse type of a numeric flag: a finite number."""
    try:
        return finite(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def flag_int(text: str) -> int:
    """argparse type of a whole-number flag: ``5``, or ``1e3``/``5.0`` when whole."""
    value = flag_float(text)
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}")
    return int(value)


def check(where: str, key: str, value: Any, low: float | None = None,
          high: float | None = None, unit: str = "") -> float:
    """``value`` as a finite number within [low, high]; ConfigError naming ``key``,
    the bound and ``unit`` otherwise (for numbers no schema declares)."""
    suffix = f" {unit}" if unit else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = finite(str(value))
        except ValueError as exc:
            raise ConfigError(where, key, value, str(exc)) from None
    if not math.isfinite(value):
        raise ConfigError(where, key, value, "must be a finite number")
    if low is not None and value < low:
        raise ConfigError(where, key, value, f"below the limit of {low:g}{suffix}")
    if high is not None and value > high:
        raise ConfigError(where, key, value, f"above the limit of {high:g}{suffix}")
    return value


__all__ = ["KEY_UNITS", "UNITS", "check", "finite", "flag_float", "flag_int", "refuse_non_finite", "unit_of"]
