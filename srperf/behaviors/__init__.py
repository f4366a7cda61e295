"""The catalogue of SRv6 behaviors srperf can benchmark (forwarder-independent specs).

Each :class:`Behavior` knows the frame the tester sends for it, the CFG
function that configures it and how to check what the SUT forwarded.  The
entries come from :mod:`srperf.behaviors.srv6` (RFC 8986 behaviors and plain
forwarding) and :mod:`srperf.behaviors.proxies` (SR proxies); which forwarder
offers which is declared by the forwarders (:mod:`srperf.forwarders`).
"""

from __future__ import annotations

from srperf.behaviors import proxies, srv6
from srperf.behaviors.policies import b6_segs, encap_segs, insert_segs
from srperf.behaviors.spec import KINDS, Behavior, CheckResult, Expectation

_CATALOGUE: dict[str, Behavior] = {b.name: b for b in (*srv6.BEHAVIORS, *proxies.BEHAVIORS)}
if len(_CATALOGUE) != len(srv6.BEHAVIORS) + len(proxies.BEHAVIORS):
    raise ImportError("two behaviors of the catalogue share a name")


def get(name: str) -> Behavior:
    """The behavior called ``name``; KeyError lists the known names."""
    try:
        return _CATALOGUE[name]
    except KeyError:
        raise KeyError(f"unknown behavior {name!r}; known behaviors: "
                       f"{', '.join(sorted(_CATALOGUE))}") from None


def names() -> list[str]:
    """Names of every behavior, in catalogue order."""
    return list(_CATALOGUE)


def all_behaviors() -> list[Behavior]:
    """Every behavior, in catalogue order."""
    return list(_CATALOGUE.values())


__all__ = ["Behavior", "CheckResult", "Expectation", "KINDS", "get", "names", "all_behaviors",
           "encap_segs", "insert_segs", "b6_segs"]
