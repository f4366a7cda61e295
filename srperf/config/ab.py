"""The settings of a paired A/B comparison (``srperf ab``): the ``ab:`` block of an
experiment file and the keys of an A/B file (the sides are read by
:mod:`srperf.config.ab_sides`).

A side (``a``, ``b``) is a behavior name, or a mapping ``{behavior, forwarder, options,
sut_change}``: two behaviors, two forwarders, two settings of one forwarder (``options``
per side, over the experiment's), or one behavior with and without a SUT change
(:mod:`srperf.measure.sut_change`).  A bad key or value is a ConfigError naming the file,
the key and the value (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from srperf.config.settings import Settings, setting

SIDE_KEYS = ("behavior", "forwarder", "options", "sut_change", "testbed")
_SIDE_SCHEMA = {"description": "a behavior name, or a mapping with keys "
                               + ", ".join(SIDE_KEYS),
                "oneOf": [{"type": "string"}, {"type": "object"}]}
_RATE = {"type": "number", "exclusiveMinimum": 0, "maximum": 1e9}
"""An offered rate in pps (at most 1 Gpps: no generator comes near it)."""


def _pos(maximum: float) -> dict[str, Any]:
    return {"type": "number", "exclusiveMinimum": 0, "maximum": maximum}


def _blocks() -> dict[str, Any]:
    return {"type": "integer", "minimum": 3, "maximum": 100000}


@dataclass(frozen=True)
class AbBlock(Settings):
    """The ``ab:`` block of an experiment file: what ``srperf ab FILE`` compares (the
    experiment's forwarder, options, search and testbed apply to both sides unless a
    side names its own)."""

    a: Any = setting(None, "side A, the reference: a behavior, or {behavior, forwarder, "
                     "options, sut_change, testbed}", schema=_SIDE_SCHEMA)
    b: Any = setting(None, "side B, compared with A (the same forms; B = A is the A/A "
                     "calibration)", schema=_SIDE_SCHEMA)
    packet_size: int = setting(64, "frame size", unit="B",
                               schema={"type": "integer", "minimum": 48, "maximum": 9000})
    load_pps: Any = setting(None, "common offered load; none: load_factor x the larger "
                            "figure load_from finds", unit="pps",
                            schema={"oneOf": [{"type": "null"}, _RATE]})
    load_factor: float = setting(1.1, "the common load over the larger side's figure",
                                 unit="x", schema=_pos(10))
    load_from: str = setting("probe", "probe: one trial a side at probe_pps, its received "
                             "rate; search: one search a side, its PDR",
                             schema={"enum": ["probe", "search"]})
    probe_pps: Any = setting(None, "rate of the probe trials; none: the search's maximum "
                             "rate", unit="pps", schema={"oneOf": [{"type": "null"}, _RATE]})
    trial_s: float = setting(1.0, "duration of one trial", unit="s", schema=_pos(3600))
    width_pct: float = setting(1.0, "stop when the 95 % interval is within +- this",
                               unit="%", schema=_pos(100))
    budget_s: float = setting(600.0, "stop before a block would end past this", unit="s",
                              schema=_pos(7 * 86400))
    min_blocks: int = setting(8, "blocks before the width may stop it", unit="blocks",
                              schema=_blocks())
    max_blocks: int = setting(1000, "at most this many blocks", unit="blocks",
                              schema=_blocks())
    seed: int = setting(0, "seed of the random block orders", unit="(a seed)",
                        schema={"type": "integer", "minimum": 0, "maximum": 2**32 - 1})


AB_FILE_KEYS = tuple(AbBlock.json_schema()["properties"]) + ("forwarder", "testbed", "set")
"""Keys of a stand-alone A/B file: the block's, plus the experiment's forwarder, the
testbed and ``set`` (KEY=VALUE as for ``srperf run --set``)."""


__all__ = ["AB_FILE_KEYS", "AbBlock", "SIDE_KEYS"]
