"""What a forwarder is, in one place: :class:`Forwarder`.

A forwarder (linux, ebpf; vpp and srnk next) is the software on the SUT that
implements SRv6 behaviors.  srperf drives it only through its CFG script
(``cfg_scripts/<script>``, the contract in ``cfg_scripts/README.md``); this
class says everything else srperf must know about it:

* ``script``: the file name of its CFG script;
* ``behaviors``: the catalogue entries (:mod:`srperf.behaviors`) it offers;
* :meth:`env`: the ``SRPERF_*`` variables its script reads, from the testbed
  description, the experiment's ``options`` and what :meth:`prepare` installed;
  :meth:`behavior_env` adds those of one behavior;
* ``options``: the dataclass of its experiment ``options`` (schema derived);
* :meth:`prepare`: its build step on the SUT (objects pushed or built there);
* :meth:`counters`: its own packet counters, read on the SUT (or None);
* :meth:`profile_sources`: its own cost figures around a profile trial;
* :meth:`why_not`: why it does not offer a behavior (``srperf behaviors``);
* :meth:`versions`: the versions of its tools on the SUT, for the run's
  environment;
* ``deviations``: where its frames differ from the catalogue's, declared with
  the specification text that allows it (:mod:`srperf.forwarders.deviations`);
* ``runs_in_netns``: True when it can run in a network namespace of this host
  (the virtual testbed).

Adding a forwarder is one module in this package plus its script.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.forwarders.common_env import addressing_env
from srperf.forwarders.deviations import Deviation
from srperf.transports.base import Transport


@dataclass(frozen=True)
class NoOptions(Settings):
    """A forwarder without experiment options."""


@dataclass
class Prepared:
    """What :meth:`Forwarder.prepare` left on the SUT: extra ``SRPERF_*`` variables."""

    env: dict[str, str] = dataclasses.field(default_factory=dict)


class Forwarder:
    """Base class of the forwarder modules (one instance per forwarder)."""

    name: ClassVar[str] = "abstract"
    script: ClassVar[str] = ""
    behaviors: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    options: ClassVar[type[Settings]] = NoOptions
    runs_in_netns: ClassVar[bool] = True
    version_commands: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """Environment key -> command whose first output line is that tool's version."""
    drop_counters: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """Conformance drop reason (srperf.behaviors.conformance.model.DROP_REASONS) -> the counters
    of :meth:`counters` of which one must count such a drop."""
    deviations: ClassVar[tuple[Deviation, ...]] = ()
    """Documented differences from the catalogue's expected frames (verification)."""
    functions: ClassVar[tuple[str, ...]] = ()
    """A forwarder that is no per-packet dataplane (pipes): the behaviors an experiment
    names instead of catalogue entries (its bytestream functions); empty for the others."""

    def offers(self, behavior: str) -> bool:
        """True when this forwarder implements catalogue entry ``behavior``."""
        return behavior in self.behaviors

    def why_not(self, behavior: str) -> str:
        """Why this forwarder does not offer catalogue entry ``behavior`` ("" if it does)."""
        if self.offers(behavior):
            return ""
        return f"{self.script} has no function for it"

    def deviations_of(self, behavior: str) -> tuple[Deviation, ...]:
        """The declared deviations of catalogue entry ``behavior``."""
        return tuple(d for d in self.deviations if d.behavior == behavior)

    def declared_deviations(self) -> dict[str, list[str]]:
        """Behavior -> its declared deviations in words (the run's environment)."""
        out: dict[str, list[str]] = {}
        for dev in self.deviations:
            out.setdefault(dev.behavior, []).append(dev.describe())
        return out

    def parse_options(self, data: Mapping[str, Any] | None) -> Settings:
        """The experiment's ``options`` mapping as this forwarder's options dataclass."""
        return self.options.from_mapping(data or {})

    def env(self, tb: TestbedConfig, options: Settings, prepared: Prepared) -> dict[str, str]:
        """Every ``SRPERF_*`` variable the script reads (see cfg_scripts/README.md)."""
        return {**addressing_env(tb), **prepared.env}

    def behavior_env(self, tb: TestbedConfig, options: Settings,
                     behavior: str) -> dict[str, str]:
        """``SRPERF_*`` variables of one behavior, added to :meth:`env` when its CFG
        function runs (a fast-path chain's programs; nothing here)."""
        return {}

    def vnfs(self, options: Settings) -> tuple[int, str]:
        """(count, mode) of the legacy VNFs a proxy behavior gets (see VnfSet)."""
        return 1, "forward"

    def conformance_options(self, options: Settings) -> Settings:
        """``options`` as the conformance matrix runs with them (here: unchanged)."""
        return options

    def prepare(self, sut: Transport, options: Settings) -> Prepared:
        """Install what the script needs on the SUT besides itself (nothing here)."""
        return Prepared()

    def counters(self, sut: Transport, script: str,
                 env: Mapping[str, str]) -> dict[str, int] | None:
        """This forwarder's packet counters on the SUT, or None if it has none."""
        return None

    def packet_cost(self, sut: Transport, script: str, env: Mapping[str, str],
                    options: Settings, behavior: str, frame: bytes) -> Any:
        """The configured ``behavior``'s per-packet cost measured on the SUT without a
        generator, over its test ``frame``
        (:class:`srperf.results.costs.PacketCost`); None: this forwarder has no such
        measurement, or its options switch it off (here: none)."""
        return None

    def profile_sources(self, sut: Transport, env: Mapping[str, str]) -> list[Any]:
        """This forwarder's own cost figures around a profile trial
        (:class:`srperf.profile.sources.ProfileSource`: BPF statistics, VPP runtime);
        none here."""
        return []

    def versions(self, sut: Transport) -> dict[str, str]:
        """Versions of the forwarder's tools on the SUT, read through ``sut``."""
        out: dict[str, str] = {}
        for key, argv in self.version_commands.items():
            res = sut.run(list(argv), timeout=10.0)
            text = (res.stdout or res.stderr).strip().splitlines()
            out[key] = text[0].strip() if res.ok and text else "not installed"
        return out

    def __repr__(self) -> str:
        return f"<forwarder {self.name}>"

