"""A module imported on first use of one of its names (:class:`importlib.util.LazyLoader`).

For a module whose import is costly (it pulls in scapy, say) but whose names a
caller only needs when it really does the work, not when a command just lists or
validates: ``P = lazy_module("srperf.traffic.packets")`` then ``P.udp6(...)`` imports it.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name``, imported already or made to import on its first attribute access."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


__all__ = ["lazy_module"]
