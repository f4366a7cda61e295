"""A forwarder's own cost figures taken around a profile trial (BPF stats, VPP runtime).

A forwarder names its sources (:meth:`srperf.forwarders.base.Forwarder.profile_sources`);
the profile trial calls :meth:`ProfileSource.start` before the traffic and
:meth:`ProfileSource.stop` after it, whatever happened in between.
"""

from __future__ import annotations

import abc

from srperf.profile.model import Profile


class ProfileSource(abc.ABC):
    """One forwarder-specific measurement around the profile trial."""

    name: str = "abstract"

    @abc.abstractmethod
    def start(self) -> None:
        """Before the trial: reset or snapshot (and switch on what it needs)."""

    @abc.abstractmethod
    def stop(self, profile: Profile) -> None:
        """After the trial: put the figures (or a note why there are none) in
        ``profile``, and restore whatever :meth:`start` switched on."""


__all__ = ["ProfileSource"]
