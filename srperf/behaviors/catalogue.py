"""The catalogue of SRv6 behaviors srperf can benchmark (forwarder-independent specs).

Fast-path chains (:mod:`srperf.behaviors.fastpath`) are named by their steps: a few
are listed, any valid ``xdp_...`` name is an entry (:func:`get`).

Each :class:`Behavior` knows the frame the tester sends for it, the CFG
function that configures it and how to check what the SUT forwarded.  The
entries come from :mod:`srperf.behaviors.srv6` (RFC 8986 behaviors and plain
forwarding) and :mod:`srperf.behaviors.proxies` (SR proxies); which forwarder
offers which is declared by the forwarders (:mod:`srperf.forwarders`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srperf.behaviors.spec import Behavior

_SPEC_NAMES = ("KINDS", "Behavior", "CheckResult", "Expectation")
_CATALOGUE: dict[str, Behavior] = {}
"""Filled on first use: the entries build frames with scapy, which a command that
only reads names and files (``srperf --help``, ``validate``) should not import."""


def _catalogue() -> dict[str, Behavior]:
    if not _CATALOGUE:
        from srperf.behaviors import fastpath, proxies, srv6

        every = (*srv6.BEHAVIORS, *proxies.BEHAVIORS, *fastpath.BEHAVIORS)
        entries = {b.name: b for b in every}
        if len(entries) != len(every):
            raise ImportError("two behaviors of the catalogue share a name")
        _CATALOGUE.update(entries)
    return _CATALOGUE


def __getattr__(name: str) -> Any:
    """The spec types and the entry modules, imported on first use."""
    if name in _SPEC_NAMES:
        from srperf.behaviors import spec

        return getattr(spec, name)
    if name in ("proxies", "srv6", "spec", "fastpath"):
        return importlib.import_module(f"srperf.behaviors.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(name: str) -> Behavior:
    """The behavior called ``name`` (also any fast-path chain ``xdp_...``,
    :mod:`srperf.behaviors.fastpath`); KeyError lists the known names, or says why a
    chain name is no chain."""
    try:
        return _catalogue()[name]
    except KeyError:
        from srperf.behaviors import fastpath

        if fastpath.is_chain_name(name):
            try:
                return fastpath.behavior(name)
            except fastpath.ChainError as exc:
                raise KeyError(f"behavior {name!r}: {exc}") from None
        raise KeyError(f"unknown behavior {name!r}; known behaviors: "
                       f"{', '.join(sorted(_catalogue()))}") from None


def names() -> list[str]:
    """Names of every behavior, in catalogue order."""
    return list(_catalogue())


def all_behaviors() -> list[Behavior]:
    """Every behavior, in catalogue order."""
    return list(_catalogue().values())


__all__ = ["Behavior", "CheckResult", "Expectation", "KINDS", "get", "names", "all_behaviors"]
