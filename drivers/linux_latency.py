"""Latency trials of the local generator: srgen's probes (srgen.c ``-p``).

A latency trial is an ordinary trial of the linux driver at ``rate_pps`` of which
``stream_pps`` are probe frames (:mod:`srperf.traffic.latency_probe`): srgen spreads them
evenly inside the offered load, so they count in ``sent``, ``received`` and the
loss like every other frame.  Each probe carries its trial and probe number and
its transmit time; srgen's packet socket on the rx port takes the kernel's receive
time stamp and reports each probe's one-way latency against the same host clock
(both ports are on the tester, so the generator and receiver share it).

Receive time stamps: the kernel's (``SO_TIMESTAMPNS``), not srgen's own clock read
and not a ``PACKET_RX_RING``.  The stamp is taken when the frame enters the rx
port's receive path, before any socket or thread is involved, so srgen's
scheduling (it busy-waits on the sender's CPU and reads the probes only after the
drain) never shows as latency.  The packet ring's ``tp_sec``/``tp_nsec`` are the
same skb stamp, so a ring would be no more exact; it would only save a system call
per probe, which at latency-stream rates (thousands of probes per second, read
once per trial) costs nothing, while a plain socket with a 64 MB buffer holds a
whole trial's probes without sizing a ring per trial.

The XDP sink on the rx port passes probe frames up (they end with the probe magic)
and drops the rest; a tc ingress program (``probe_drop.c``) drops the probes after
the packet socket saw them, so the tester's stack never answers one.

What the figures include: the generator's own part (stamp before ``sendmmsg``, the
tester's tx veth, the receive path up to the stamp) as well as the SUT's; a
calibration over a plain veth pair (:mod:`srperf.traffic.latency_calibration`) measures the
generator's part alone.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from srperf.drivers.base import LatencyUnsupported, TrialResult
from srperf.drivers.latency import from_probes
from srperf.errors import GeneratorError
from srperf.traffic.latency_probe import probe_frame

if TYPE_CHECKING:
    from srperf.drivers.linux import LinuxGenerator

log = logging.getLogger(__name__)


def latency_trial(gen: "LinuxGenerator", rate_pps: float, duration_s: float,
                  stream_pps: float) -> TrialResult:
    """Run one latency trial on ``gen``; the figures go in ``extra["latency"]``
    (:class:`srperf.drivers.latency.LatencyStats` as a dict, us)."""
    if gen.mode != "mmsg":
        raise LatencyUnsupported(f"the linux driver sends latency probes only with mode "
                                 f"'mmsg', not {gen.mode!r}")
    base = gen.base_frame
    if base is None:
        raise GeneratorError("latency trial before prepare(): no frame loaded")
    if not 0 < stream_pps <= rate_pps:
        raise GeneratorError(f"latency stream {stream_pps:.0f} pps must lie within the load "
                             f"{rate_pps:.0f} pps")
    try:
        probe = probe_frame(base)
    except ValueError as exc:
        raise LatencyUnsupported(f"no latency probe from this frame: {exc}") from exc
    gen.use_probes(probe)
    gen.probe_pps = stream_pps
    try:
        trial = gen.trial(rate_pps, duration_s)
    finally:
        gen.probe_pps = 0.0
    extra = dict(trial.extra)
    probes = extra.pop("probes", None)
    notes = [trial.note] if trial.note else []
    if probes is None:
        notes.append("srgen reported no probes")
        return dataclasses.replace(trial, extra=extra, note="; ".join(notes))
    stats = from_probes(probes)
    if stats.note:
        notes.append(f"latency: {stats.note}")
    extra.update(latency=stats.as_dict(), latency_stream_pps=stream_pps,
                 probe_frame_len=int(probes.get("frame_len", len(probe))))
    log.info("latency at %.0f pps: %d of %d probes, p50 %s us", rate_pps, stats.packets,
             stats.sent or 0, stats.p50_us)
    return dataclasses.replace(trial, extra=extra, note="; ".join(notes))


__all__ = ["latency_trial"]
