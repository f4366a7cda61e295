"""The ``pm:`` block of a PDR experiment: per-flow loss monitoring on the SUT (PF-PLM).

The SUT is the monitoring **ingress** node (H.Encaps with each flow's SID list, then
count and colour on its out port) or the **egress** node (count per flow and colour on
its in port, then End.DT6 decapsulates).  Each combination of ``implementation``,
``flows`` and ``marking`` is one case of the run, searched like a behavior
(:mod:`srperf.pm.cases`); after each case's search a loss trial runs the monitor for
``loss.blocks`` blocks at a fixed load (:mod:`srperf.pm.step`).

Everything here is checked when the experiment is loaded (exit 2 naming the key,
before anything is configured): :func:`check_pm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from srperf.config.rates import RATE_SCHEMA, RateSpec, parse_rate
from srperf.config.settings import Settings, setting

PM_ROLES = ("ingress", "egress")
NONE = "none"
"""The base case: the same routes and flows, nothing counts."""
MAX_LOSS_BLOCKS = 100


def _names(value: Any) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(str(v) for v in value)
    if len(set(names)) != len(names):
        raise ValueError(f"{list(names)}: an implementation is named twice")
    return names


def _flow_counts(value: Any) -> tuple[int, ...]:
    counts = (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(set(counts)) != len(counts):
        raise ValueError(f"{list(counts)}: a flow count is listed twice")
    return counts


def _markings(value: Any) -> tuple[bool, ...]:
    marks = (bool(value),) if isinstance(value, bool) else tuple(bool(v) for v in value)
    if len(set(marks)) != len(marks):
        raise ValueError(f"{list(marks)}: listed twice")
    return marks


def _one_or_list(item: dict[str, Any]) -> dict[str, Any]:
    return {"oneOf": [item, {"type": "array", "minItems": 1, "maxItems": 16, "items": item}]}


@dataclass(frozen=True)
class LossTrialConfig(Settings):
    """``pm.loss``: the loss trial after each case's search: the monitor runs ``blocks``
    blocks of ``pm.period_s`` at a fixed load; each flow's loss per block is stored beside
    the generator's own sent and received counts of that block."""

    enabled: bool = setting(True, "run the loss trial after each monitored case's search",
                            schema={"type": "boolean"})
    blocks: int = setting(3, "marking blocks of the loss trial (one colour each, "
                          "alternating)", unit="blocks",
                          schema={"type": "integer", "minimum": 1,
                                  "maximum": MAX_LOSS_BLOCKS}, parse=int)
    fraction: float = setting(0.9, "load of the loss trial as a fraction of the case's PDR "
                              "(unless rate is set)",
                              schema={"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                              parse=float)
    rate: RateSpec | None = setting(None, "a fixed load instead of fraction x PDR",
                                    unit="pps or % of line rate", schema=RATE_SCHEMA,
                                    parse=parse_rate)


@dataclass(frozen=True)
class PmConfig(Settings):
    """``pm``: loss monitoring on the SUT as the ingress or the egress node of the
    monitored flows, by implementation, number of flows and marking."""

    implementation: tuple[str, ...] = setting(
        (NONE,), "how the SUT counts: none (the base case) or a registered implementation "
        "(srperf.pm.implementations: ebpf_tc, ebpf_xdp, ...); one name or a list",
        schema=_one_or_list({"type": "string", "pattern": r"^[a-z0-9_]{1,32}\Z"}),
        parse=_names)
    role: str = setting("ingress", "the SUT as the ingress node (H.Encaps per flow, then "
                        "count and colour) or the egress node (count per flow and colour, "
                        "then End.DT6)", schema={"enum": list(PM_ROLES)})
    flows: tuple[int, ...] = setting(
        (1,), "monitored flows (distinct SID lists; the generator sends as many); one "
        "count or a list (0: the program or rules are there and match nothing)",
        unit="flows", schema=_one_or_list({"type": "integer", "minimum": 0,
                                           "maximum": 4096, "unit": "flows"}), parse=_flow_counts)
    marking: tuple[bool, ...] = setting(
        (True,), "colour the packets (true) or count only (false); one value or both",
        schema=_one_or_list({"type": "boolean"}), parse=_markings)
    period_s: float = setting(1.0, "the colour period T: each block of the loss trial "
                              "lasts T", unit="s",
                              schema={"type": "number", "exclusiveMinimum": 0,
                                      "maximum": 3600}, parse=float)
    loss: LossTrialConfig = setting(LossTrialConfig, "the loss trial after each search")


__all__ = ["LossTrialConfig", "MAX_LOSS_BLOCKS", "NONE", "PM_ROLES", "PmConfig"]
