"""Rates as written in config files and on the command line.

A rate is a number (pps), a string with a unit (``"500kpps"``, ``"1.2Mpps"``)
or a share of the tester's line rate (``"50%"``); :class:`RateSpec` keeps it
unresolved until the testbed's line rate is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

RATE_PATTERN = r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(%|pps|kpps|Mpps)\s*$"
"""A rate written as text: a number and a unit (group 1, group 2)."""
RATE_SCHEMA: dict[str, Any] = {
    "description": "not a rate: use pps as a number, or a string like '500kpps', "
                   "'1.2Mpps', '800000pps' or '50%'",
    "oneOf": [
        {"type": "number", "exclusiveMinimum": 0},
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
        return RateSpec(float(value))
    match = re.match(RATE_PATTERN, str(value))
    if not match:
        raise ValueError(f"{value!r} is not a rate (e.g. 500000, 500kpps, 1.2Mpps, 50%)")
    number, unit = float(match.group(1)), match.group(2)
    if number <= 0:
        raise ValueError(f"{value!r}: a rate must be above zero")
    if unit == "%":
        return RateSpec(number, percent=True)
    return RateSpec(number * _UNITS[unit])
