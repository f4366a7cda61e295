"""The sides of a paired A/B comparison (``srperf ab``) as written in an A/B file, an
``ab:`` block or on the command line, checked before anything runs: a behavior its
forwarder offers, valid options, a known SUT change.  A bad key or value is a
ConfigError naming the file, the key and the value (exit 2).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from srperf.config.ab import SIDE_KEYS
from srperf.errors import ConfigError


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
    testbed: str | None = None
    """This side's own testbed (file or name), e.g. another kernel target; None: the
    comparison's."""


def side_spec(source: str, key: str, value: Any, forwarder: str,
              options: Mapping[str, Any], sets: Sequence[str] = (),
              sut_change: Any = None, testbed: str | None = None) -> SideSpec:
    """Side ``key`` ("a"/"b") from its file form ``value``, the experiment's ``forwarder``
    and ``options``, the side's ``--a-set``/``--b-set`` items (``options.*`` only), its
    ``--a-sut-change``/``--b-sut-change`` and its ``--a-testbed``/``--b-testbed``."""
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
    tb = testbed if testbed is not None else value.get("testbed")
    if tb is not None and (not isinstance(tb, str) or not tb):
        raise ConfigError(source, f"{key}.testbed", tb, "must be a testbed file or name")
    return SideSpec(value["behavior"], fw, side_data["options"], change, tb)


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
    return AbSide(spec.behavior, spec.forwarder, dict(spec.options), change, spec.testbed)


__all__ = ["SideSpec", "check_side", "side_spec"]
