"""Rates as written in config files and on the command line.

A rate is a number (pps), a string with a unit (``"500kpps"``, ``"1.2Mpps"``)
or a share of the tester's line rate (``"50%"``); :class:`RateSpec` keeps it
unresolved until the testbed's line rate is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

RATE_PATTERN = r"^ *([0-9]{1,12}(?:\.[0-9]{1,12})?) *(%|pps|kpps|Mpps) *\Z"
"""A rate written as text: a number and a unit (group 1, group 2)."""
MIN_PPS = 1.0
"""Slowest rate (pps) a rate setting accepts."""
MAX_PPS = 2e9
"""Fastest rate (pps) a rate setting or a line rate accepts: above any port today
(800GbE at 64-byte frames is 1.19 Gpps)."""
MAX_PERCENT = 100.0
"""A rate as a share of the line rate is at most this (%)."""
RATE_SCHEMA: dict[str, Any] = {
    "description": f"not a rate: use pps as a number ({MIN_PPS:g}..{MAX_PPS:g}), or a "
                   "string like '500kpps', '1.2Mpps', '800000pps' or '50%' "
                   f"(at most {MAX_PERCENT:g}% of the line rate)",
    "oneOf": [
        {"type": "number", "minimum": MIN_PPS, "maximum": MAX_PPS},
        {"type": "string", "pattern": RATE_PATTERN},
    ],
}
_UNITS = {"pps": 1.0, "kpps": 1e3, "Mpps": 1e6}


@dataclass(frozen=True)
class RateSpec:
    """A rate as written in a config file: pps, or percent of line rate."""

    value: float
    percent: bool = False

    def resolve(self, line_rate_pps: float) -> float:
        """Rate in pps for a tester whose line rate is ``line_rate_pps``."""
        return self.value * line_rate_pps / 100.0 if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g} pps"


def parse_rate(value: Any) -> RateSpec:
    """A rate (a number of pps, or text such as '500kpps' or '50%') as a :class:`RateSpec`.

    Raises ValueError for anything else.
    """
    if isinstance(value, RateSpec):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return RateSpec(_bounded(value, float(value)))
    match = re.match(RATE_PATTERN, str(value))
    if not match:
        raise ValueError(f"{value!r} is not a rate (e.g. 500000, 500kpps, 1.2Mpps, 50%)")
    number, unit = float(match.group(1)), match.group(2)
    if number <= 0:
        raise ValueError(f"{value!r}: a rate must be above zero")
    if unit == "%":
        if number > MAX_PERCENT:
            raise ValueError(f"{value!r}: above the limit of {MAX_PERCENT:g}% of the line rate")
        return RateSpec(number, percent=True)
    return RateSpec(_bounded(value, number * _UNITS[unit]))


def _bounded(written: Any, pps: float) -> float:
    """``pps`` when within :data:`MIN_PPS`..:data:`MAX_PPS`; ValueError naming the bound."""
    if not MIN_PPS <= pps <= MAX_PPS:
        raise ValueError(f"{written!r} = {pps:g} pps: outside the limits {MIN_PPS:g}.."
                         f"{MAX_PPS:g} pps (MIN_PPS, MAX_PPS)")
    return pps
