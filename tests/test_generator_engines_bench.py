"""bench/generator_engines.py's summary: the paced ceiling, the bisection interval the
refining steps halve, and the comparison with the sink (flood intake from the engine
that offered most, flagged when the sink was not saturated).  Structure only: the
trials are made up, no figure of this host is asserted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("generator_engines", BENCH /
                                                  "generator_engines.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["generator_engines"] = mod     # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def trial(mod: ModuleType, asked: float, offered: float, refused: int = 0,
          received_pps: float | None = None) -> object:
    rx = offered if received_pps is None else received_pps
    return mod.Trial(asked, offered, sent=int(offered) - refused, refused=refused,
                     received=int(rx), elapsed_s=1.0)


def test_ceiling_and_refine_bounds() -> None:
    m = bench()
    s = m.Series("end", "xdp")
    for asked, off in ((1e6, 1e6), (2e6, 1.995e6), (3e6, 2.9e6), (4e6, 3.0e6)):
        s.add(trial(m, asked, off))
    s.add(trial(m, 2e6, 1.96e6))          # a second round that slipped 2 %
    assert s.paced_ceiling() == 1e6       # within 1 % in every round, not in one
    assert s.refine_bounds() == (1e6, 2e6)
    top = m.Series("ipv6", "xdp")
    top.add(trial(m, 1e6, 1e6))
    assert top.refine_bounds() is None    # nothing above it failed: nothing to halve


def test_limits_against_the_sink_and_lost_counted() -> None:
    m = bench()
    xdp, ring = m.Series("end", "xdp"), m.Series("end", "ring")
    xdp.add(trial(m, 0.0, 5e6, refused=1000, received_pps=4.8e6))
    xdp.add(trial(m, 4e6, 4e6))
    ring.add(trial(m, 0.0, 1.5e6, received_pps=1.5e6))
    ring.add(trial(m, 1e6, 1e6))
    lim = m.limits("end", {"xdp": xdp, "ring": ring})
    assert (lim.xdp_ceiling, lim.ring_ceiling) == (4e6, 1e6)
    assert lim.flood_intake == 4.8e6 and lim.flood_saturated   # from xdp, which offered most
    text = "\n".join(lim.lines())
    assert "4.00x" in text and "0.83" in text and "saturated)" in text
    assert xdp.lost() == 5_000_000 - 1000 - 4_800_000
    unsat = m.Series("end", "xdp")
    unsat.add(trial(m, 0.0, 5e6))         # the ring never refused: sender-limited
    assert not unsat.flood_saturated()
    assert "lower bound" in "\n".join(m.limits("end", {"xdp": unsat}).lines())
