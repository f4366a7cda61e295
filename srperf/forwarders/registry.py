"""The forwarder registry: one module per forwarder, each a :class:`Forwarder`.

The config schema, the compatibility checks, ``srperf behaviors`` and the
measurement session all derive from :data:`REGISTRY`.
"""

from __future__ import annotations

from srperf.forwarders.ebpf import forwarder as ebpf
from srperf.forwarders import linux, pipes, srnk, vpp
from srperf.forwarders.xdp import forwarder as xdp
from srperf.forwarders.base import Forwarder, Prepared

REGISTRY: dict[str, Forwarder] = {f.name: f for f in (linux.FORWARDER, ebpf.FORWARDER,
                                                    vpp.FORWARDER, srnk.FORWARDER,
                                                    pipes.FORWARDER, xdp.FORWARDER)}


def names() -> list[str]:
    """Names of the forwarders srperf can drive."""
    return list(REGISTRY)


def get(name: str) -> Forwarder:
    """The forwarder called ``name``; KeyError lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown forwarder {name!r}; known forwarders: "
                       f"{', '.join(REGISTRY)}") from None


def offering(behavior: str) -> list[str]:
    """Names of the forwarders that offer ``behavior``."""
    return [f.name for f in REGISTRY.values() if f.offers(behavior)]


def not_offering(behavior: str) -> dict[str, str]:
    """Forwarder name -> why it does not offer ``behavior``, for the per-packet forwarders
    that do not (pipes, whose behaviors are bytestream functions, is not listed)."""
    return {f.name: f.why_not(behavior) for f in REGISTRY.values()
            if not f.offers(behavior) and not f.functions}


__all__ = ["Forwarder", "Prepared", "REGISTRY", "names", "get", "offering", "not_offering"]
