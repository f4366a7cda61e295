"""Documented differences of a forwarder from a specification (mainline Linux so far).

A :class:`Finding` names the forwarder, the behaviors and cases it concerns, the
section of the specification and what the forwarder does instead, as an
alternative outcome.  A case that fails its specification gets the status
``finding`` only when what arrived matches that alternative exactly: a finding is
observed, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from scapy.layers.l2 import Ether

from srperf.behaviors.conformance import wire as W
from srperf.behaviors.conformance.model import Case, Forward, Outcome
from srperf.checks import Expectation
from srperf.config.model import TestbedConfig

Alternative = Callable[[Case, TestbedConfig], "Outcome | None"]


@dataclass(frozen=True)
class Finding:
    """``forwarder`` does ``observed`` where ``section`` says otherwise."""

    forwarder: str
    behaviors: tuple[str, ...]
    cases: tuple[str, ...] | None
    """Case names it concerns (None: every case of the behaviors)."""
    section: str
    observed: str
    alternative: Alternative
    """The outcome the forwarder is documented to give instead (None: not for this case)."""


def map_frames(fn: Callable[[bytes], bytes]) -> Alternative:
    """The case's forwarded frames, each changed by ``fn`` (drop cases: no alternative)."""
    def alternative(case: Case, tb: TestbedConfig) -> Outcome | None:
        if not isinstance(case.outcome, Forward):
            return None
        return Forward(tuple(Expectation(Ether(fn(bytes(e.frame))), e.description, e.free)
                             for e in case.outcome.frames), case.outcome.at_least)
    return alternative


def inner_hop_limit_kept(frame: bytes) -> bytes:
    """An encapsulated frame whose inner IPv6/IPv4 packet kept its hop limit/TTL."""
    lay = W.walk(frame)
    inner = W.ip_packet(frame, lay.upper)
    return frame[:lay.upper] + W.decrement_ip(inner, -1) + frame[lay.upper + len(inner):]


FINDINGS: tuple[Finding, ...] = ()
"""Every documented finding."""


def applicable(forwarder: str, case: Case) -> list[Finding]:
    """The findings of ``forwarder`` that concern ``case``."""
    return [f for f in FINDINGS if f.forwarder == forwarder and case.behavior in f.behaviors
            and (f.cases is None or case.name in f.cases)]


__all__ = ["Finding", "FINDINGS", "applicable", "map_frames", "inner_hop_limit_kept"]
