"""Issue 35: the rules of the shipped stateful experiments that need no namespaces.

- End.AD/End.AS through a source-NATing VNF are refused before the SUT is touched
  (the NAT's answers must pass the VNF, whose one interface a static proxy maps to the
  forward header only).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from srperf.config.loader import load_experiment, load_testbed
from srperf.stateful.plan import Configuration, StatefulPlan
from srperf.stateful.steering import refusal

ROOT = Path(__file__).parent.parent


class _Store:
    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def add_stateful_sample(self, run_id, kind, behavior, forwarder, variant, rep, sample,
                            **kw) -> None:
        self.rows.append((behavior, variant.label, rep, sample.status, sample.reason))


class _Session:
    """Records what the plan asked of the SUT."""

    def __init__(self, tb: Any, options: Any) -> None:
        self.testbed = SimpleNamespace(config=tb, keep_claim=lambda: None)
        self.options, self.calls = options, []

    def use_options(self, options: Any) -> None:
        self.options = options

    def configure(self, beh: Any) -> None:
        self.calls.append(("configure", beh.name))

    def unconfigure(self, beh: Any) -> None:
        self.calls.append(("unconfigure", beh.name))


@pytest.mark.parametrize("behavior", ["end_ad", "end_as"])
def test_static_proxies_refuse_a_snat_vnf_before_configuring(behavior):
    exp = load_experiment(ROOT / "experiments" / "caching_proxy_goodput.yaml")
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    from srperf import forwarders

    session = _Session(tb, forwarders.get("ebpf").parse_options({}))
    store = _Store()
    plan = StatefulPlan(exp, session, store, "run", lambda _msg: None)
    ok = plan._configuration(SimpleNamespace(), Configuration(behavior, "snat", 2, 1), 1)
    assert ok is False and session.calls == []   # the SUT was never touched
    assert len(store.rows) == 1
    _, _, rep, status, reason = store.rows[0]
    assert (rep, status) == (0, "unsupported")
    assert "de-NATed" in reason and "one interface" in reason


def test_refusal_rules():
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    assert refusal("end_cache", tb, 8, 2, "snat") == ""
    assert refusal("end_ad", tb, 4, 1, "drop") == ""
    assert "snat" in refusal("end_ad", tb, 2, 1, "snat")
    assert "static header has 2" in refusal("end_as", tb, 4, 1, "forward")
    assert "2 chains" in refusal("end_ad", tb, 2, 2, "forward")
