"""The settings of a paired A/B comparison (``srperf ab``): an A/B file, or the ``ab:``
block of an experiment file, and the command's options; checked before anything runs.

A side (``a``, ``b``) is a behavior name, or a mapping ``{behavior, forwarder, options,
sut_change}``: two behaviors, two forwarders, two settings of one forwarder (``options``
per side, over the experiment's), or one behavior with and without a SUT change
(:mod:`srperf.measure.sut_change`).  A bad key or value is a ConfigError naming the file,
the key and the value (exit 2).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from srperf.config.settings import Settings, setting
from srperf.errors import ConfigError

SIDE_KEYS = ("behavior", "forwarder", "options", "sut_change")
_SIDE_SCHEMA = {"description": "a behavior name, or a mapping with keys "
                               + ", ".join(SIDE_KEYS),
                "oneOf": [{"type": "string"}, {"type": "object"}]}
_POS = {"type": "number", "exclusiveMinimum": 0}


@dataclass(frozen=True)
class AbBlock(Settings):
    """The ``ab:`` block of an experiment file: what ``srperf ab FILE`` compares (the
    experiment's forwarder, options, search and testbed apply to both sides unless a
    side names its own)."""

    a: Any = setting(None, "side A, the reference: a behavior, or {behavior, forwarder, "
                     "options, sut_change}", schema=_SIDE_SCHEMA)
    b: Any = setting(None, "side B, compared with A (the same forms; B = A is the A/A "
                     "calibration)", schema=_SIDE_SCHEMA)
    packet_size: int = setting(64, "frame size", unit="B",
                               schema={"type": "integer", "minimum": 48, "maximum": 9000})
    load_pps: Any = setting(None, "common offered load; none: load_factor x the larger "
                            "figure load_from finds", unit="pps",
                            schema={"oneOf": [{"type": "null"}, _POS]})
    load_factor: float = setting(1.1, "the common load over the larger side's figure",
                                 schema=_POS)
    load_from: str = setting("probe", "probe: one trial a side at probe_pps, its received "
                             "rate; search: one search a side, its PDR",
                             schema={"enum": ["probe", "search"]})
    probe_pps: Any = setting(None, "rate of the probe trials; none: the search's maximum "
                             "rate", unit="pps", schema={"oneOf": [{"type": "null"}, _POS]})
    trial_s: float = setting(1.0, "duration of one trial", unit="s", schema=_POS)
    width_pct: float = setting(1.0, "stop when the 95 % interval is within +- this",
                               unit="%", schema=_POS)
    budget_s: float = setting(600.0, "stop before a block would end past this", unit="s",
                              schema=_POS)
    min_blocks: int = setting(8, "blocks before the width may stop it",
                              schema={"type": "integer", "minimum": 3})
    max_blocks: int = setting(1000, "at most this many blocks",
                              schema={"type": "integer", "minimum": 3})
    seed: int = setting(0, "seed of the random block orders",
                        schema={"type": "integer", "minimum": 0})


AB_FILE_KEYS = tuple(AbBlock.json_schema()["properties"]) + ("forwarder", "testbed", "set")
"""Keys of a stand-alone A/B file: the block's, plus the experiment's forwarder, the
testbed and ``set`` (KEY=VALUE as for ``srperf run --set``)."""


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(
            out.get(k), dict) else copy.deepcopy(v)
    return out


@dataclass(frozen=True)
class SideSpec:
    """One side as written, before its behavior and forwarder are looked up."""

    behavior: str
    forwarder: str
    options: dict[str, Any]
    sut_change: Any


def side_spec(source: str, key: str, value: Any, forwarder: str,
              options: Mapping[str, Any], sets: Sequence[str] = (),
              sut_change: Any = None) -> SideSpec:
    """Side ``key`` ("a"/"b") from its file form ``value``, the experiment's ``forwarder``
    and ``options``, the side's ``--a-set``/``--b-set`` items (``options.*`` only) and its
    ``--a-sut-change``/``--b-sut-change``."""
    from srperf.config.reader import apply_overrides

    if isinstance(value, str):
        value = {"behavior": value}
    if value is None:
        raise ConfigError(source, key, value, "a side is required (--a / --b, or the file's "
                          "a: and b:)")
    if not isinstance(value, dict):
        raise ConfigError(source, key, value, "must be a behavior name or a mapping of "
                          + ", ".join(SIDE_KEYS))
    for k in value:
        if k not in SIDE_KEYS:
            raise ConfigError(source, f"{key}.{k}", value[k], "unknown key; known: "
                              + ", ".join(SIDE_KEYS))
    if not isinstance(value.get("behavior"), str) or not value["behavior"]:
        raise ConfigError(source, f"{key}.behavior", value.get("behavior"),
                          "a behavior name is required")
    fw = value.get("forwarder", forwarder)
    if not isinstance(fw, str):
        raise ConfigError(source, f"{key}.forwarder", fw, "must be a forwarder name")
    own = value.get("options") or {}
    if not isinstance(own, dict):
        raise ConfigError(source, f"{key}.options", own, "must be a mapping")
    side_data: dict[str, Any] = {"options": _merge(dict(options) if fw == forwarder else {},
                                                   own)}
    flag = f"--{key}-set"
    for item in sets:
        k = item.partition("=")[0]
        if not k.startswith("options."):
            raise ConfigError(source, flag, item, "a side's own settings are the forwarder's "
                              "options: use options.KEY=VALUE (settings of both sides: --set)")
    apply_overrides(side_data, list(sets), f"{source} ({flag})")
    change = sut_change if sut_change is not None else value.get("sut_change")
    return SideSpec(value["behavior"], fw, side_data["options"], change)


def check_side(source: str, key: str, spec: SideSpec) -> Any:
    """The :class:`srperf.measure.ab.AbSide` of ``spec``: its behavior offered by its
    forwarder, its options valid, its SUT change known (ConfigError otherwise)."""
    from srperf.behaviors import catalogue
    from srperf.config.experiment import check_options
    from srperf.forwarders import registry as forwarders
    from srperf.measure import sut_change as sc
    from srperf.measure.ab import AbSide

    try:
        catalogue.get(spec.behavior)
    except KeyError:
        raise ConfigError(source, f"{key}.behavior" if key else key, spec.behavior,
                          "no such behavior (srperf behaviors)") from None
    try:
        forwarders.get(spec.forwarder)
    except KeyError as exc:
        raise ConfigError(source, f"{key}.forwarder", spec.forwarder, str(exc.args[0])) \
            from None
    offering = forwarders.offering(spec.behavior)
    if spec.forwarder not in offering:
        raise ConfigError(source, f"{key}.behavior", spec.behavior,
                          f"forwarder {spec.forwarder!r} does not offer it (offered by: "
                          f"{', '.join(offering) or 'none'})")
    check_options(f"{source} (side {key})", spec.forwarder, dict(spec.options))
    change = sc.parse(spec.sut_change, source, f"{key}.sut_change")
    return AbSide(spec.behavior, spec.forwarder, dict(spec.options), change)


__all__ = ["AB_FILE_KEYS", "AbBlock", "SIDE_KEYS", "SideSpec", "check_side", "side_spec"]
