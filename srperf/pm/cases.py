"""The cases of a loss-monitoring experiment (``pm:``) and the behaviors they are searched as.

One case is (implementation, number of monitored flows, marking) on the SUT in one role:

- **ingress**: the SUT is the H.Encaps headend.  ``flows: N`` (N >= 1) means N routes,
  flow i's destination ``dst6 + i`` encapsulated with its own SID list
  ``[sid_next + i, sid_last]`` (CFG function ``h_encaps_flows``, env
  ``SRPERF_PM_ROUTES``), and the generator sends N flows varying ``dst_addr``; the
  implementation counts and colours on the SUT's out port.  ``flows: 0``: plain
  ``h_encaps`` (one policy), the implementation attached with no flow to match.
- **egress**: the SUT decapsulates (``end_dt6``, one SID); the generator sends N flows
  varying the SRH's first (already visited) segment, so flow i carries the SID list
  ``[sid_next + i, sid_sut]``; the implementation counts per flow and colour on the
  SUT's in port.

A case is searched as a behavior named ``BASE.IMPL.fN`` (``none``) or
``BASE.IMPL.fN.mark`` / ``.count``, so the store, ``compare`` and the report treat it
like any other behavior; :func:`parse_name` reads the name back.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from srperf.behaviors.spec import Behavior, Expectation
from srperf.config.model import TestbedConfig
from srperf.config.pm import NONE, PmConfig
from srperf.errors import ConfigError
from srperf.pm.model import MIN_PERIOD_S, Flow, c_limits, make_flows
from srperf.traffic.flows import Flows

BASES = {"ingress": "h_encaps", "egress": "end_dt6"}
"""The behavior each role is measured on (the experiment's ``behaviors``)."""
INGRESS_CFG = "h_encaps_flows"
"""linux.sh function of the ingress node with one route per flow."""

_NAME = re.compile(r"^(?P<base>[a-z0-9_]+)\.(?P<impl>[a-z0-9_]+)\.f(?P<flows>\d+)"
                   r"(?:\.(?P<mode>mark|count))?\Z")


@dataclass(frozen=True)
class PmCase:
    """One case: the SUT as ``role`` node counting ``flows`` flows with
    ``implementation`` (``none``: nothing counts), colouring when ``marking``."""

    role: str
    implementation: str
    flows: int
    marking: bool = True
    period_s: float = 1.0
    loss: Any = None
    """The loss trial's settings (:class:`srperf.config.pm.LossTrialConfig`)."""

    @property
    def base(self) -> str:
        return BASES[self.role]

    @property
    def name(self) -> str:
        head = f"{self.base}.{self.implementation}.f{self.flows}"
        return head if self.implementation == NONE else \
            head + (".mark" if self.marking else ".count")

    @property
    def baseline_name(self) -> str:
        """The ``none`` case with the same flows: what this case's cost is measured against."""
        return f"{self.base}.{NONE}.f{self.flows}"

    def generator_flows(self) -> Flows | None:
        """What the generator sends: N flows varying the field that picks the SID list
        (None: one flow)."""
        if self.flows <= 1:
            return None if self.flows == 0 else Flows(1, self._vary())
        return Flows(self.flows, self._vary())

    def _vary(self) -> tuple[str, ...]:
        return ("dst_addr",) if self.role == "ingress" else ("segment",)

    def sid_list(self, tb: TestbedConfig, index: int) -> tuple[str, ...]:
        """Flow ``index``'s SID list, first segment first."""
        a = tb.addressing
        first = str(ipaddress.IPv6Address(a.sid_next) + index)
        return (first, a.sid_last) if self.role == "ingress" else (first, a.sid_sut)

    def monitored(self, tb: TestbedConfig, source: str = "<pm>") -> list[Flow]:
        """The flows the implementation counts (none for ``flows: 0``)."""
        return make_flows([list(self.sid_list(tb, i)) for i in range(self.flows)], source)

    def routes(self, tb: TestbedConfig) -> str:
        """``SRPERF_PM_ROUTES`` of the ingress node: ``DST=SID,SID`` per flow, ``;``
        between flows."""
        dst = ipaddress.IPv6Address(tb.addressing.dst6)
        return ";".join(f"{dst + i}={','.join(self.sid_list(tb, i))}"
                        for i in range(self.flows))


def expand(pm: PmConfig) -> list[PmCase]:
    """Every case of ``pm`` in plan order: per flow count, the base case first, then
    each implementation counting only, then colouring."""
    out = []
    for n in pm.flows:
        out.append(PmCase(pm.role, NONE, n, False, pm.period_s, pm.loss))
        for impl in pm.implementation:
            if impl == NONE:
                continue
            for marking in sorted(pm.marking):
                out.append(PmCase(pm.role, impl, n, marking, pm.period_s, pm.loss))
    return out


def parse_name(name: str) -> PmCase | None:
    """The case a behavior name stands for (None: not a case name)."""
    m = _NAME.match(name)
    if m is None:
        return None
    role = next((r for r, b in BASES.items() if b == m["base"]), None)
    if role is None or (m["impl"] == NONE) != (m["mode"] is None):
        return None
    return PmCase(role, m["impl"], int(m["flows"]), m["mode"] == "mark")


def check_pm(file: str, pm: PmConfig, data: dict[str, Any]) -> None:
    """Refuse (ConfigError, exit 2) what the ``pm`` block cannot do, before anything runs:
    an unknown implementation or one that cannot take the role, more flows than it can
    count, a colour period too short to read the counters, or an experiment the block
    cannot drive."""
    from srperf.pm.implementations import lookup

    if str(data.get("kind", "pdr")) != "pdr":
        raise ConfigError(file, "pm", "...", "loss monitoring runs in PDR experiments "
                          "(kind: pdr), not kind " + str(data.get("kind")))
    forwarder = data.get("forwarder", "linux")
    if forwarder != "linux":
        raise ConfigError(file, "forwarder", forwarder, "the pm block drives the Linux "
                          "kernel's H.Encaps / End.DT6 (forwarder: linux)")
    base = BASES[pm.role]
    if list(data.get("behaviors", [])) != [base]:
        raise ConfigError(file, "behaviors", data.get("behaviors"),
                          f"with pm.role {pm.role} the behavior measured is [{base}]")
    if "traffic" in data and (data["traffic"] or {}).get("flows"):
        raise ConfigError(file, "traffic.flows", data["traffic"]["flows"],
                          "set by the pm block: each case sends as many flows as it monitors")
    if "imix" in [str(s) for s in data.get("packet_sizes", [])]:
        raise ConfigError(file, "packet_sizes", "imix", "the pm cases send one frame size")
    if pm.period_s < MIN_PERIOD_S:
        raise ConfigError(file, "pm.period_s", pm.period_s,
                          f"the colour period must be >= {MIN_PERIOD_S} s: the counters "
                          "are read between blocks, through the SUT's transport")
    limit = c_limits()["PM_MAX_FLOWS"]
    for impl_name in pm.implementation:
        if impl_name == NONE:
            continue
        impl = lookup(impl_name, pm.role, file)
        cap = int(getattr(impl, "max_flows", None) or limit)
        for n in pm.flows:
            if n > cap:
                raise ConfigError(file, "pm.flows", n,
                                  f"{impl_name} counts at most {cap} flows "
                                  f"({'pm_flows map size' if cap == limit else 'its limit'})")
    for n in pm.flows:
        if n > limit:
            raise ConfigError(file, "pm.flows", n, f"at most {limit} monitored flows")


# --- the behaviors the cases are searched as ------------------------------------------


@dataclass(frozen=True)
class PmBehavior(Behavior):
    """A catalogue behavior measured as one loss-monitoring case."""

    case: PmCase | None = None


def _ingress_expect(case: PmCase, base: Behavior):  # type: ignore[no-untyped-def]
    def expect(tb: TestbedConfig, sent: Any) -> Expectation:
        from scapy.layers.inet6 import IPv6

        from srperf.behaviors.srv6 import encap_expect
        from srperf.traffic import packets as P

        inner = sent[IPv6].copy()
        index = int(ipaddress.IPv6Address(inner.dst)) - int(
            ipaddress.IPv6Address(tb.addressing.dst6))
        if not 0 <= index < case.flows:
            return base.expected(tb, sent)
        return encap_expect(tb, list(case.sid_list(tb, index)), inner, P.NH_IPV6, False,
                            f"flow {index}'s inner IPv6")
    return expect


def behavior(case: PmCase) -> PmBehavior:
    """The behavior ``case`` is searched as: its base behavior under the case's name
    (ingress with flows: one route per flow, frames checked against each flow's list)."""
    from srperf.behaviors import catalogue

    base = catalogue.get(case.base)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields.update(name=case.name, case=case,
                  display_name=f"{base.display_name} + {case.implementation} "
                               f"({case.flows} flows"
                               + ("" if case.implementation == NONE else
                                  ", colour" if case.marking else ", count") + ")")
    if case.role == "ingress" and case.flows >= 1:
        fields.update(cfg_function=INGRESS_CFG, expect=_ingress_expect(case, base),
                      checker=None)
    return PmBehavior(**fields)


__all__ = ["BASES", "INGRESS_CFG", "PmBehavior", "PmCase", "behavior", "check_pm", "expand",
           "parse_name"]
