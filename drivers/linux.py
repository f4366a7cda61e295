"""The local Linux traffic generator ("linux" driver): srgen in the tester namespace.

``srgen`` (``linux_gen/srgen.c``) paces one frame out of the tester's tx port
through an AF_PACKET socket and reports its own counts together with the
kernel counters of the tx and rx ports (read before and after, inside the
namespace).  Every packet is offered exactly once: a packet the path refuses
is counted as ``refused`` (lost), never retried, except while it may wait in
the generator's queue (below).

A trial is checked twice before anyone uses it:

- *generator limited*: the rate at which packets were really offered
  (offered / elapsed) must be within ``tolerance`` of the intended rate;
  otherwise the trial is re-run up to ``retries`` times, then flagged
  (it says nothing about the SUT).
- *counters consistent*: ``sent`` must equal the tx port's ``tx_packets``
  delta, every refused send attempt must be one the kernel counted (the
  port's ``tx_dropped`` delta, plus the qdisc's drops in ``qdisc`` queue
  mode), and ``received`` may not
  exceed ``sent`` (a stray frame from the SUT would hide a lost one); a
  mismatch is flagged with a note, never hidden.

``received`` is the rx port's ``rx_packets`` delta (the XDP sink there drops
frames after they are counted).

The generator's queue (``queue_pkts`` > 0) plays the part of a NIC's receive
ring: when the SUT's 256-slot veth ring is full, up to ``queue_pkts`` frames
wait instead of being refused at once, so a vCPU stall of the SUT shorter than
the queue costs no loss.  ``queue_mode`` says where they wait:

- ``"hold"`` (default): in srgen, which retries a refused frame every 2 us
  until the ring takes it; while the ring still refuses, frames older than
  the queue are lost.  Only the sender's CPU does that work.
- ``"qdisc"``: in a pfifo of ``queue_pkts`` on the tx port, which srgen sends
  through.  The kernel restarts that queue from the SUT's NAPI poll, so the
  SUT's CPU pulls the frames, which lowered its max receive rate by 12-21 %
  here (``bench/queue_modes.py``).

The queue is part of what is measured: say its size with every result.

:meth:`LinuxGenerator.prepare_distinct` makes every packet distinct: srgen
(``-V``) writes packet i's counter into the frame's counter slot, in the copy
it hands the kernel, checksum-neutrally (see srgen.c).
:meth:`LinuxGenerator.prepare_flows` sends many flows: packet i is the frame
of flow i % count, each built with its own checksums (:mod:`srperf.traffic.flows`).
:meth:`LinuxGenerator.prepare_mix` sends an IMIX: packet i is the frame of the
mix's smooth weighted round robin (``linux_gen/mix.h``, the same in xdpgen).

*Resident* (``resident``, the default): one srgen process (``srgen -S``) stays
up from one trial to the next, with its socket, TX ring, frames and counter
files, and takes each trial as a line on its stdin; it is restarted only when
the frame or an option changes (once per search).  A trial then costs no new
process: srgen reads the ports' counters itself, through files it opened once.
The drain after the last packet ends as soon as the rx port has counted every
sent packet, or the tx port has counted every sent packet (none waits in the SUT's
ring) and neither counter has moved for ``settle_s`` (``drain_s`` at most); frames
the rx port counts after that, between two trials, are said in the next trial's
``extra["rx_between_trials"]`` and logged (they were counted lost).
``resident: false`` and ``settle_s: 0`` give the former behaviour (one srgen per
trial, a fixed drain), kept for comparison (``bench/trial_gap.py``).

*Rest between trials* (``rest_s``, 40 ms): a trial starts no sooner than ``rest_s``
after the previous one ended.  On the virtual testbed a SUT that was just
overloaded refuses frames for some 10-30 ms after its queues are empty: a 431 kpps
trial 3 ms after a 1.2 Mpps one failed 5 times in 12, 10 ms after it 4 times in
12, 30, 50 and 100 ms after it never (End, two sittings of
bench/rest_after_overload.py; before issue 24 the gap was always over 400 ms).
Without it a bisection whose first trial overloads the SUT finds its second trial
failing and settles near half the PDR.  A trial near capacity right after one
*without* loss suffers too: End at 700 kpps failed 10 times in 10 straight after
another 700 kpps trial, 3 in 10 after 40 ms, 4 and 2 in 10 after 200 and 500 ms
(``--baseline --clean-rests``), so the rest follows every trial, lossy or not.
The time slept is ``extra["rested_s"]``.

Why one file past 500 lines: it is one job, the local generator driving one srgen
process (its build, options, report, tx-port queue, resident process, trials and
latency trials, whose probe frames and figures live in drivers/linux_latency.py);
srgen's build and report and the tx-port queue change together with srgen.c and
are the parts that would move out (drivers/srgen.py) if a second driver used them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import selectors
import statistics
import subprocess
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from srperf.safety import safe_paths
from srperf.build import ensure_built
from srperf.config.settings import Settings, setting
from srperf.drivers.base import MixUnsupported, TrafficGenerator, TrialResult, beyond_generator
from srperf.drivers import linux_engine
from srperf.drivers.linux_engine import (DEFAULT_ENGINE, ENGINES, Traffic, port_driver,
                                         xdp_refusal)
from srperf.errors import GeneratorError
from srperf.traffic.flows import Flows, flow_frames
from srperf.traffic.packet_socket import send_and_capture
from srperf.resources import generator_dir
from srperf.util.wording import count

log = logging.getLogger(__name__)

SRGEN_CFLAGS = ["-O2", "-Wall", "-Wextra"]
MAX_FRAME_BYTES = 16384
"""Largest frame srgen accepts (bytes)."""
MAX_FLOW_BYTES = 64 * 1024 * 1024
"""Most bytes of flow frames srgen holds (MAX_FRAMES_BYTES in srgen.c)."""
SEND_MODES = ("mmsg", "ring")
"""srgen's send paths: sendmmsg batches, or a PACKET_TX_RING."""
QUEUE_MODES = ("hold", "qdisc")
"""Where the generator's queue is: in srgen (retries), or a pfifo on the tx port."""
MAX_QUEUE_PKTS = 1_000_000
"""Largest generator queue (packets)."""
DEFAULT_QUEUE_PKTS = 4096
"""The generator's queue unless configured (packets): about 8 ms at 0.5 Mpps,
longer than the vCPU stalls that made the bare 256-slot ring lose 0.1-2 %
at any rate on the 2-vCPU VM here (bench/search_b2.py --queue-pkts 0 vs 4096)."""


def build_srgen() -> Path:
    """Compile srgen (warning-free, ``gcc -O2 -Wall -Wextra``) and return its path."""
    src = generator_dir() / "srgen.c"
    return ensure_built("srgen", [src, generator_dir() / "probe_rx.h", generator_dir() / "mix.h"],
                        ["gcc", *SRGEN_CFLAGS, "-o", "{out}", str(src)])


@dataclass(frozen=True)
class SrgenReport:
    """What one srgen run printed (packets, nanoseconds)."""

    intended: int
    sent: int
    refused: int
    refused_short: int
    elapsed_ns: int
    max_lag_ns: int
    slipped_ns: int
    calls: int
    tx_packets_delta: int
    tx_dropped_delta: int
    rx_packets_delta: int
    rx_dropped_delta: int
    raw: dict[str, Any]
    attempts_refused: int = 0
    """Send attempts the path refused (with a hold queue, a frame may be refused
    several times before it is sent or lost)."""
    held_max: int = 0
    """Most frames waiting in the hold queue at once."""
    qdisc_dropped_delta: int = 0
    """Drops of the tx port's queue (filled in by the caller, not srgen)."""

    @classmethod
    def parse(cls, text: str) -> "SrgenReport":
        try:
            data = json.loads(text)
            return cls(raw=data, **{k: int(data[k]) for k in (
                "intended", "sent", "refused", "refused_short", "elapsed_ns", "max_lag_ns",
                "slipped_ns", "calls", "tx_packets_delta", "tx_dropped_delta",
                "rx_packets_delta", "rx_dropped_delta", "attempts_refused", "held_max")})
        except (ValueError, KeyError, TypeError) as exc:
            raise GeneratorError(f"srgen printed an unexpected report: {text!r}") from exc

    @property
    def offered(self) -> int:
        return self.sent + self.refused

    @property
    def stopped(self) -> bool:
        """srgen ended the trial early: more than its ``stop_lost`` were refused."""
        return bool(self.raw.get("stopped"))

    @property
    def refusals_counted(self) -> bool:
        """Every refused attempt is a drop the kernel counted (port or qdisc), and
        without a hold queue every refused frame is one refused attempt."""
        counted = self.attempts_refused == self.tx_dropped_delta + self.qdisc_dropped_delta
        held = int(self.raw.get("hold_pkts", 0)) > 0
        return counted and (held or self.refused == self.attempts_refused)


@dataclass(frozen=True)
class LinuxGeneratorOptions(Settings):
    """``tester.options`` of the linux driver (keyword arguments of :class:`LinuxGenerator`)."""

    tolerance: float = setting(0.01, "largest relative gap between offered and intended rate "
                               "of a usable trial", schema={"type": "number",
                                                            "exclusiveMinimum": 0,
                                                            "maximum": 0.5})
    drain_s: float = setting(0.2, "wait after the last packet before reading counters",
                             unit="s", schema={"type": "number", "minimum": 0, "maximum": 10})
    retries: int = setting(1, "re-runs of a generator-limited trial",
                           schema={"type": "integer", "minimum": 0, "maximum": 10})
    batch: int = setting(16, "packets per send call at most", unit="packets",
                         schema={"type": "integer", "minimum": 1, "maximum": 256})
    max_lag_s: float = setting(0.001, "how far srgen catches up after a stall", unit="s",
                               schema={"type": "number", "exclusiveMinimum": 0, "maximum": 1})
    quantum_s: float = setting(0.0, "send what is due every quantum (0: each packet at its "
                               "time)", unit="s", schema={"type": "number", "minimum": 0,
                                                                 "maximum": 1})
    fifo_priority: int = setting(0, "SCHED_FIFO priority of srgen (0: normal scheduling)",
                                 schema={"type": "integer", "minimum": 0, "maximum": 99})
    mode: str = setting("mmsg", "send path: sendmmsg batches or a PACKET_TX_RING",
                        schema={"enum": list(SEND_MODES)})
    queue_pkts: int = setting(DEFAULT_QUEUE_PKTS, "frames queued in front of the SUT (0: "
                              "none)", unit="frames",
                              schema={"type": "integer", "minimum": 0,
                                      "maximum": MAX_QUEUE_PKTS})
    queue_mode: str | None = setting(None, "where the queue is: srgen holds frames, or a "
                                     "pfifo on the tx port", schema={"enum": list(QUEUE_MODES)})
    resident: bool = setting(True, "keep one srgen process up between trials (false: one "
                             "process per trial)", schema={"type": "boolean"})
    settle_s: float = setting(0.02, "end the drain once the rx port has counted every sent "
                              "packet, or the tx port has and neither moved for this long "
                              "(0: always wait drain_s)",
                              unit="s", schema={"type": "number", "minimum": 0,
                                                "maximum": 10})
    rest_s: float = setting(0.04, "a trial starts no sooner than this after the previous one "
                            "ended (the SUT recovers from its load)", unit="s",
                            schema={"type": "number", "minimum": 0, "maximum": 10})
    engine: str = setting(DEFAULT_ENGINE, "send engine: packet (srgen, AF_PACKET), xdp (xdpgen, "
                          "BPF_PROG_RUN live frames: a veth TX port, frames up to 3500 "
                          "bytes; its queue always holds) or auto (xdp where the trial's "
                          "traffic allows it, else packet)",
                          schema={"enum": list(ENGINES)})


class LinuxGenerator(TrafficGenerator):
    """Paced sender on a local Linux host (tester ports in network namespace ``ns``).

    ``cpu`` pins srgen (None: not pinned).  ``tolerance`` is the largest
    relative difference between offered and intended rate a usable trial may
    have; ``drain_s`` the seconds srgen waits after its last packet before it
    reads the counters; ``retries`` how often a generator-limited trial is run
    again before it is returned flagged.

    ``mode`` is srgen's send path: ``"mmsg"`` (sendmmsg batches) or ``"ring"``
    (a PACKET_TX_RING whose slots all hold the frame); both count refusals
    exactly (see srgen.c).

    Pacing knobs (see srgen.c): ``batch`` packets per send call at most;
    ``max_lag_s`` how far (seconds) srgen catches up after a stall before its
    schedule slips; ``quantum_s`` wait until that much traffic is due and send
    it in one call (0: every packet at its own due time); ``fifo_priority``
    runs srgen at SCHED_FIFO (0: normal scheduling), which keeps pacing exact
    when other tasks share its CPU (the kernel's RT throttling still leaves
    them 5 % of each second).

    ``queue_pkts`` > 0 gives the path a queue of that many frames, in
    ``queue_mode`` ``"hold"`` or ``"qdisc"`` (see the module docstring; None:
    ``"hold"``, or ``"qdisc"`` for the ring, which cannot hold); 0 refuses a
    frame at once when the SUT's ring is full.

    ``resident``, ``settle_s`` and ``rest_s``: see the module docstring.
    """

    name = "linux"

    def __init__(self, ns: str | None, tx: str, rx: str, cpu: int | None = 0,
                 tolerance: float = 0.01, drain_s: float = 0.2, retries: int = 1,
                 batch: int = 16, max_lag_s: float = 0.001, quantum_s: float = 0.0,
                 fifo_priority: int = 0, mode: str = "mmsg",
                 queue_pkts: int = DEFAULT_QUEUE_PKTS, queue_mode: str | None = None,
                 resident: bool = True, settle_s: float = 0.02, rest_s: float = 0.04,
                 engine: str = "packet") -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        if mode not in SEND_MODES:
            raise ValueError(f"mode must be one of {SEND_MODES}, not {mode!r}")
        if tolerance <= 0 or drain_s < 0 or retries < 0 or not 1 <= batch <= 256:
            raise ValueError("tolerance > 0, drain_s >= 0, retries >= 0, 1 <= batch <= 256")
        if not 0 <= 2 * quantum_s <= max_lag_s:
            raise ValueError("quantum_s must be in [0, max_lag_s / 2]")
        if not 0 <= queue_pkts <= MAX_QUEUE_PKTS:
            raise ValueError(f"queue_pkts must be in [0, {MAX_QUEUE_PKTS}], not {queue_pkts}")
        if queue_mode is not None and queue_mode not in QUEUE_MODES:
            raise ValueError(f"queue_mode must be one of {QUEUE_MODES}, not {queue_mode!r}")
        if queue_pkts and queue_mode == "hold" and mode != "mmsg":
            raise ValueError("queue_mode 'hold' needs mode 'mmsg'")
        if settle_s < 0 or rest_s < 0:
            raise ValueError(f"settle_s and rest_s must be >= 0, not {settle_s}, {rest_s}")
        self.ns, self.tx, self.rx, self.cpu = ns, tx, rx, cpu
        self._in_ns = ["ip", "netns", "exec", ns] if ns else []
        """Prefix that runs a command where the tester's ports are (None: this host)."""
        self.tolerance, self.drain_s, self.retries = tolerance, drain_s, retries
        self._best_paced_pps = 0.0  # highest rate paced within tolerance so far
        self.batch, self.max_lag_s, self.quantum_s = batch, max_lag_s, quantum_s
        self.fifo_priority = fifo_priority
        self.mode = mode
        self.queue_pkts, self._queue_mode = queue_pkts, queue_mode
        self._binary = build_srgen()
        self.engine = engine
        self._engine_now = "packet"   # the engine of the current (or last) trial
        self._engine_said: set[str] = set()  # auto's choices already logged
        self.engine_reasons: list[str] = []     # why auto kept srgen, each reason once
        self._tx_driver: str | None = None   # the tx port's driver, read once
        self._tmp = safe_paths.make_temp_dir("srperf-linuxgen-")
        # Temp files go even if a caller forgets close() (garbage collection, exit).
        self._cleanup = weakref.finalize(self, safe_paths.remove_tree, self._tmp)
        self._frame_file: Path | None = None
        self._counter_offset: int | None = None
        self._flows: Flows | None = None
        self._flow_count = 1  # frames in the frame file
        self._mix: tuple[tuple[int, int], ...] | None = None  # IMIX: (length, weight)
        self._max_rate_pps: float | None = None
        self.resident, self.settle_s, self.rest_s = resident, settle_s, rest_s
        self._last_end: float | None = None  # when the last trial ended
        self._proc: subprocess.Popen[str] | None = None
        self._proc_argv: list[str] = []
        self._frame_version = 0   # bumped by prepare: a resident srgen with an older frame goes
        self.base_frame: bytes | None = None  # the prepared frame (of flow 0)
        self._probe_file: Path | None = None  # latency probes (drivers/linux_latency.py)
        self.probe_pps = 0.0                  # probes per second of the next trial
        self._probe_drop: bool | None = None  # tc probe drop on rx (True: we added clsact)
        self._probe_sink = False              # the probe-passing XDP sink is on rx

    # -- TrafficGenerator ------------------------------------------------------
    def prepare(self, frame: bytes) -> None:
        """Write ``frame`` (an Ethernet frame without FCS) for later trials."""
        if not 14 <= len(frame) <= MAX_FRAME_BYTES:
            raise GeneratorError(f"frame of {len(frame)} bytes: must be 14..{MAX_FRAME_BYTES}")
        self._write_frames([frame])
        self._counter_offset = None
        self._flows = None
        self._mix = None
        self.base_frame, self._probe_file = bytes(frame), None

    def use_probes(self, probe: bytes) -> None:
        """Let later trials send latency probes built as ``probe`` (see
        drivers/linux_latency.py) and drop them at the rx port once received."""
        path = self._tmp / "probe.bin"
        if self._probe_file is None or path.read_bytes() != probe:
            safe_paths.write_file(path, probe, safe_paths.PRIVATE, make_parent=False)
            self._probe_file = path
            self._frame_version += 1
        from srperf.drivers import linux_sink

        if self._probe_drop is None:
            self._probe_drop = linux_sink.attach_probe_drop(self.ns, self.rx)
        if not self._probe_sink and linux_sink.sink_prog_id(self.ns, self.rx) is not None:
            # the sink variant that passes probes up (sink.c SRPERF_PROBE_PASS)
            linux_sink.attach_sink(self.ns, self.rx, probes=True)
            self._probe_sink = True

    def latency_trial(self, rate_pps: float, duration_s: float,
                      stream_pps: float) -> TrialResult:
        """A trial at ``rate_pps`` of which ``stream_pps`` are latency probes (see
        drivers/linux_latency.py); figures in ``extra["latency"]``."""
        from srperf.drivers.linux_latency import latency_trial

        return latency_trial(self, rate_pps, duration_s, stream_pps)

    def _write_frames(self, frames: list[bytes]) -> None:
        path = self._tmp / "frame.bin"
        safe_paths.write_file(path, b"".join(frames), safe_paths.PRIVATE, make_parent=False)
        self._frame_file = path
        self._flow_count = len(frames)
        self._frame_version += 1

    def prepare_distinct(self, frame: bytes, counter_offset: int) -> None:
        """Like :meth:`prepare`; packet i carries counter i in the 8-byte counter slot at
        byte ``counter_offset`` (srgen checks that the slot is there)."""
        if not 14 <= counter_offset <= len(frame) - 8:
            raise GeneratorError(f"counter offset {counter_offset} is outside the frame "
                                 f"of {len(frame)} bytes")
        self.prepare(frame)
        self._counter_offset = counter_offset

    def prepare_flows(self, frame: bytes, flows: Flows,
                      counter_offset: int | None = None) -> None:
        """Send ``flows.count`` flows: packet i is ``frame`` varied as flow i % count
        (:func:`srperf.traffic.flows.flow_frames`, every checksum right); with
        ``counter_offset``, each packet also carries its own counter (as
        :meth:`prepare_distinct`)."""
        if flows.count * len(frame) > MAX_FLOW_BYTES:
            raise GeneratorError(f"{flows.count} flows of {len(frame)}-byte frames need "
                                 f"{flows.count * len(frame)} bytes: srgen holds at most "
                                 f"{MAX_FLOW_BYTES} (fewer flows or smaller frames)")
        variants = flow_frames(frame, flows)
        if counter_offset is not None:
            self.prepare_distinct(frame, counter_offset)
        else:
            self.prepare(frame)
        self._write_frames(variants)
        self._flows = flows

    def prepare_mix(self, frames: list[tuple[bytes, int]]) -> None:
        """Send a mix of frames (frame, weight), by either engine (``-I``): packet i is
        the frame a smooth weighted round robin of the weights gives (linux_gen/mix.h:
        each frame ``weight`` times in every ``sum(weights)`` packets, spread evenly);
        rates are packets per second of the whole mix.  srgen sends a mix with mode
        ``mmsg`` only."""
        if self.mode != "mmsg" and self.engine != "xdp":
            raise MixUnsupported(f"srgen sends a mix with mode 'mmsg' only, not "
                                 f"{self.mode!r} (tester.options.mode)")
        if not frames or any(w < 1 for _, w in frames):
            raise GeneratorError("a mix needs frames with positive weights")
        for frame, _ in frames:
            if not 14 <= len(frame) <= MAX_FRAME_BYTES:
                raise GeneratorError(f"frame of {len(frame)} bytes in the mix: must be "
                                     f"14..{MAX_FRAME_BYTES}")
        self.prepare(frames[0][0])
        self._write_frames([frame for frame, _ in frames])
        self._flow_count = 1
        self._mix = tuple((len(frame), weight) for frame, weight in frames)

    def trial(self, rate_pps: float, duration_s: float, *,
              stop_lost: int | None = None) -> TrialResult:
        """Offer round(rate_pps * duration_s) frames at ``rate_pps`` (pps) for ``duration_s`` (s);
        srgen stops early once more than ``stop_lost`` were refused (None: never)."""
        if rate_pps <= 0 or duration_s <= 0:
            raise ValueError(f"rate_pps ({rate_pps}) and duration_s ({duration_s}) must be > 0")
        intended = round(rate_pps * duration_s)
        if intended == 0:
            return TrialResult(rate_pps, duration_s, 0, 0, 0, 0, 0.0,
                               note="rate x duration rounds to zero packets: nothing sent")
        attempts: list[TrialResult] = []
        for _ in range(self.retries + 1):
            result = self._one_trial(rate_pps, duration_s, intended, stop_lost)
            attempts.append(result)
            if not result.generator_limited:
                self._best_paced_pps = max(self._best_paced_pps, rate_pps)
                break
            transient = not beyond_generator(result, self._best_paced_pps)
            log.info("generator limited at %.0f pps (offered %.0f pps); %s", rate_pps,
                     result.offered_rate_pps,
                     "retrying" if transient and len(attempts) <= self.retries
                     else "giving up")
            if not transient:
                break  # far beyond what the generator can pace: a retry cannot help
        if len(attempts) == 1:
            return attempts[0]
        last = attempts[-1]
        extra = dict(last.extra, attempts=len(attempts),
                     offered_rates_pps=[round(a.offered_rate_pps, 1) for a in attempts],
                     slipped_ns_per_attempt=[a.extra["slipped_ns"] for a in attempts],
                     elapsed_s_per_attempt=[round(a.elapsed_s, 6) for a in attempts])
        note = last.note
        if last.generator_limited:
            note = f"{note}; still limited after {len(attempts)} attempts"
        return dataclasses.replace(last, extra=extra, note=note.strip("; "))

    def capture(self, frames: list[bytes], timeout_s: float = 2.0,
                gap_s: float = 0.0) -> list[bytes]:
        """Send each frame once on tx and return the frames that arrived at rx.

        The XDP sink on rx (which would drop them before any capture) is
        detached for the capture and re-attached afterwards, whatever happens
        (when rx had no XDP program, none is attached).  ``timeout_s`` is the
        longest wait for the frames, seconds; ``gap_s`` the time between two
        sends.  Captures are for verification only: under load they lose frames,
        counters do not.
        """
        if not frames:
            return []
        with self.rx_without_sink():
            try:
                received = send_and_capture(self.ns, self.tx, self.rx, frames, timeout_s,
                                            gap_s=gap_s)
            except OSError as exc:
                raise GeneratorError(f"capture in {self.ns or 'this namespace'} on "
                                     f"{self.tx}/{self.rx} failed: {exc}") from exc
        log.debug("capture: sent %d frames, received %d", len(frames), len(received))
        return received

    @contextlib.contextmanager
    def rx_without_sink(self) -> Iterator[str]:
        """The rx port without the XDP sink for the ``with`` block (yields its name), so
        that a capture or another XDP program (loss monitoring's egress counter) can
        have it; the plain sink is attached again afterwards, whatever happens (when rx
        had no XDP program, none is).  ``received`` stays rx_packets, which counts the
        frames XDP passes as well as those it drops."""
        from srperf.drivers import linux_sink

        had_sink = linux_sink.sink_prog_id(self.ns, self.rx) is not None
        if had_sink:
            linux_sink.detach_sink(self.ns, self.rx)
        try:
            yield self.rx
        finally:
            if had_sink:
                linux_sink.attach_sink(self.ns, self.rx)
                self._probe_sink = False

    def start(self) -> None:
        """Start the resident sender of the prepared traffic now, not at the first trial
        (as a caller that reads the ports' counters around its trials needs: xdpgen's
        start-up frame, which checks that the TX port takes live frames, is no trial's)."""
        if self._frame_file is None:
            raise GeneratorError("prepare(frame) must be called before start()")
        self._engine_now = self.choose_engine()
        if not self.resident:
            return
        if self._qdisc_queue:
            self._prepare_port()
        self._ensure_resident()

    def max_rate_pps(self) -> float | None:
        """The unpaced maximum measured by :meth:`measure_max_rate` (pps), else None."""
        return self._max_rate_pps

    def close(self) -> None:
        """Stop the resident srgen; remove the generator's temporary files (frame, pcaps)."""
        self._stop_resident()
        if self._probe_drop is not None:
            from srperf.drivers import linux_sink

            linux_sink.detach_probe_drop(self.ns, self.rx, self._probe_drop)
            self._probe_drop = None
        if self._probe_sink:
            from srperf.drivers import linux_sink

            if linux_sink.sink_prog_id(self.ns, self.rx) is not None:
                linux_sink.attach_sink(self.ns, self.rx)   # the plain sink again
            self._probe_sink = False
        self._cleanup()

    # -- extras ----------------------------------------------------------------
    def unpaced(self, count: int) -> SrgenReport:
        """Offer ``count`` frames as fast as srgen can (no pacing); return its report."""
        return self.run_srgen(0.0, count)

    def measure_max_rate(self, count: int = 1_000_000, runs: int = 3) -> float:
        """Median offered rate (pps) of ``runs`` unpaced runs of ``count`` frames.

        It is the most this generator can offer on its CPU right now; pacing at
        that rate is not guaranteed (see bench/generator.py for the error).
        """
        rates = []
        for _ in range(runs):
            rep = self.unpaced(count)
            rates.append(rep.offered / (rep.elapsed_ns / 1e9) if rep.elapsed_ns else 0.0)
        self._max_rate_pps = statistics.median(rates)
        log.info("unpaced offered rates %s pps -> max %.0f pps", [round(r) for r in rates],
                 self._max_rate_pps)
        return self._max_rate_pps

    def _options_argv(self) -> list[str]:
        """srgen's options that hold for every trial of the prepared frame(s)."""
        assert self._frame_file is not None
        argv = ["-f", str(self._frame_file), "-t", self.tx, "-x", self.rx,
                "-l", str(round(self.max_lag_s * 1e6))]
        if self._engine_now != "xdp" or self.quantum_s > 0:
            # xdpgen always sends in quanta (50 us unless one is set): see xdpgen.c
            argv += ["-q", str(round(self.quantum_s * 1e6))]
        if self._engine_now == "xdp":
            from srperf.drivers.xdpgen import xdpgen_object

            argv += ["-o", str(xdpgen_object())]
        else:
            # srgen's sendmmsg batch; xdpgen keeps its own unpaced batch (a page pool of
            # that many pages: srgen's 16 would make it recycle few of them)
            argv += ["-m", self.mode, "-b", str(self.batch)]
        if self.cpu is not None:
            argv += ["-c", str(self.cpu)]
        if self.fifo_priority:
            argv += ["-P", str(self.fifo_priority)]
        if self.queue_pkts and self._engine_now == "xdp":
            argv += ["-H", str(self.queue_pkts)]   # xdpgen's only queue: it holds (no qdisc)
        elif self.queue_pkts:
            argv += ["-H" if self.queue_mode == "hold" else "-Q", str(self.queue_pkts)]
        if self._counter_offset is not None:
            argv += ["-V", str(self._counter_offset)]
        if self._flow_count > 1:
            argv += ["-k", str(self._flow_count)]
        if self._mix is not None:
            argv += ["-I", ",".join(f"{n}:{w}" for n, w in self._mix)]
        if self._probe_file is not None:
            argv += ["-p", str(self._probe_file)]
        return argv

    def run_srgen(self, rate_pps: float, count: int, drain_s: float | None = None,
                  stop_lost: int | None = None) -> SrgenReport:
        """Run one srgen trial in the namespace: ``count`` frames at ``rate_pps`` (0 =
        unpaced), by the resident srgen (started when needed) or a process of its own;
        it stops early once more than ``stop_lost`` frames were refused (None: never)."""
        if self._frame_file is None:
            raise GeneratorError("prepare(frame) must be called before a trial")
        self._engine_now = self.choose_engine()
        drain = self.drain_s if drain_s is None else drain_s
        settle = min(self.settle_s, drain)
        expected_s = count / rate_pps if rate_pps > 0 else count / 1e5
        timeout = 10 * expected_s + drain + 30
        if self.resident:
            if not self._qdisc_queue:
                drops_before = 0
                self._ensure_resident()
            else:  # srgen is the only sender on tx: the queue's drops between two reads are its
                drops_before = self._prepare_port()
                self._ensure_resident()
            text = self._resident_trial(rate_pps, count, drain, settle, timeout, stop_lost)
        else:
            drops_before = self._prepare_port()
            argv = [*self._in_ns, str(self._engine_binary()), *self._options_argv(),
                    "-r", f"{rate_pps:.6f}", "-n", str(count), "-d", str(round(drain * 1000)),
                    "-s", str(round(settle * 1e6))]
            if stop_lost is not None:
                argv += ["-L", str(stop_lost)]
            if self.probe_pps:
                argv += ["-a", f"{self.probe_pps:.6f}"]
            log.debug("run %s", " ".join(argv))
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                raise GeneratorError(f"srgen did not finish: {' '.join(argv)}") from exc
            if proc.returncode != 0:
                raise GeneratorError(f"srgen failed ({proc.returncode}): {proc.stderr.strip()}")
            text = proc.stdout
        report = SrgenReport.parse(text)
        between = int(report.raw.get("rx_between_trials", 0))
        if between:
            log.warning("%d frame(s) reached %s after the previous trial's drain (%.0f ms "
                        "of settling): that trial counted them lost", between, self.rx,
                        1000 * settle)
        if self._qdisc_queue:
            report = dataclasses.replace(report,
                                         qdisc_dropped_delta=self._queue_drops() - drops_before)
        return report

    # -- the resident srgen ------------------------------------------------------
    def _ensure_resident(self) -> None:
        """Start ``srgen -S`` unless one with the same frame and options runs."""
        argv = [*self._in_ns, str(self._engine_binary()), "-S", *self._options_argv()]
        key = [*argv, f"#frame{self._frame_version}"]
        if self._proc is not None and self._proc.poll() is None and self._proc_argv == key:
            return
        self._stop_resident()
        if not self._qdisc_queue:
            self._prepare_port()
        log.debug("start %s", " ".join(argv))
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, bufsize=1)
        self._proc_argv = key
        line = self._read_line(30.0, "start")
        try:
            ready = json.loads(line).get("ready")
        except ValueError:
            ready = False
        if not ready:
            self._fail(f"{self._sender} -S said {line!r} instead of ready")

    def _resident_trial(self, rate_pps: float, count: int, drain_s: float, settle_s: float,
                        timeout_s: float, stop_lost: int | None = None) -> str:
        assert self._proc is not None and self._proc.stdin is not None
        stop = "" if stop_lost is None else f" {stop_lost}"
        if self.probe_pps:  # srgen's NO_STOP is 2^64 - 1
            stop = f" {2**64 - 1 if stop_lost is None else stop_lost} {self.probe_pps:.6f}"
        command = (f"trial {rate_pps:.6f} {count} {round(drain_s * 1e6)} "
                   f"{round(settle_s * 1e6)}{stop}\n")
        try:
            self._proc.stdin.write(command)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._fail(f"{self._sender} -S went away before the trial")
        return self._read_line(timeout_s, "trial")

    def _read_line(self, timeout_s: float, what: str) -> str:
        """One line from the resident srgen within ``timeout_s`` (GeneratorError otherwise,
        with what srgen said on stderr; the process is then stopped)."""
        assert self._proc is not None and self._proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout_s):
                self._fail(f"{self._sender} -S gave no answer to {what} within {timeout_s:.0f} s")
        line = self._proc.stdout.readline()
        if not line:
            self._fail(f"{self._sender} -S ended during {what}")
        return line

    @property
    def _sender(self) -> str:
        """The program that sends the current trial: ``srgen`` or ``xdpgen``."""
        return "xdpgen" if self._engine_now == "xdp" else "srgen"

    def _fail(self, message: str) -> None:
        proc = self._stop_resident(keep_stderr=True)
        stderr = ""
        if proc is not None and proc.stderr is not None:
            try:
                stderr = proc.stderr.read().strip()
                proc.stderr.close()
            except (OSError, ValueError):
                pass
        code = proc.returncode if proc is not None else None
        raise GeneratorError(f"{message} (exit {code}): {stderr}" if stderr else
                             f"{message} (exit {code})")

    def _stop_resident(self, keep_stderr: bool = False) -> "subprocess.Popen[str] | None":
        """Ask the resident srgen to quit (killed if it does not within 5 s); returns the
        process (its stderr still open with ``keep_stderr``)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        try:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.write("quit\n")
                proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, None if keep_stderr else proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass
        return proc

    @property
    def resident_pid(self) -> int | None:
        """PID of the process the resident srgen runs in (``ip netns exec`` execs it), or
        None when none runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _tc(self, *args: str) -> str:
        proc = subprocess.run([*self._in_ns, "tc", *args],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise GeneratorError(f"tc {' '.join(args)} in {self.ns} failed: "
                                 f"{proc.stderr.strip()}")
        return proc.stdout

    @property
    def queue_mode(self) -> str:
        """Where the queue is: as configured, else "hold" (or "qdisc" for the ring)."""
        if self._queue_mode is not None:
            return self._queue_mode
        return "hold" if self.mode == "mmsg" else "qdisc"

    @property
    def _qdisc_queue(self) -> bool:
        return self.queue_pkts > 0 and self.queue_mode == "qdisc" and self._engine_now != "xdp"

    # -- the send engine (drivers/linux_engine.py) ---------------------------------
    def traffic(self) -> Traffic:
        """What the prepared frame(s) and probes need of the send engine."""
        assert self._frame_file is not None
        if self._tx_driver is None:
            self._tx_driver = port_driver(self._in_ns, self.tx)
        size = (max(n for n, _ in self._mix) if self._mix is not None
                else self._frame_file.stat().st_size // max(self._flow_count, 1))
        return Traffic(frame_bytes=size, flows=self._flow_count, mix=self._mix is not None,
                       latency=self._probe_file is not None or self.probe_pps > 0,
                       send_mode=self.mode, tx_driver=self._tx_driver,
                       kernel=linux_engine.kernel_release())

    def choose_engine(self) -> str:
        """The engine of the next trial: ``packet`` or ``xdp`` (``auto``: xdp when
        :func:`xdp_refusal` allows it, each choice and its reason logged once;
        ``xdp`` where it cannot send raises GeneratorError)."""
        traffic = self.traffic()
        if self.engine == "packet":
            return "packet"
        why = xdp_refusal(traffic)
        if self.engine == "xdp":
            if why is not None:
                raise GeneratorError(f"tester.options.engine = 'xdp': {why}")
            return "xdp"
        said = why or "xdp"
        if said not in self._engine_said:
            self._engine_said.add(said)
            if why is None:
                log.info("engine auto: xdpgen (live frames) for this traffic")
            else:   # printed (once per reason): the run is not on the engine one may expect
                self.engine_reasons.append(why)
                log.warning("engine auto: srgen (packet socket), because %s", why)
        return "packet" if why is not None else "xdp"

    def _engine_binary(self) -> Path:
        if self._engine_now == "xdp":
            from srperf.drivers.xdpgen import build_xdpgen

            return build_xdpgen()
        return self._binary

    @property
    def engine_used(self) -> str:
        """The engine of the last trial (``packet`` before any)."""
        return self._engine_now

    def _root_qdiscs(self) -> list[dict[str, Any]]:
        """The tx port's root qdisc(s), as ``tc -s -j`` reports them."""
        try:
            return [q for q in json.loads(self._tc("-s", "-j", "qdisc", "show", "dev", self.tx))
                    if q.get("root")]
        except (ValueError, TypeError, AttributeError) as exc:
            raise GeneratorError(f"cannot read the qdiscs of {self.ns}/{self.tx}") from exc

    def _our_queue_drops(self, root: list[dict[str, Any]]) -> int | None:
        """Drops of the pfifo of ``queue_pkts`` among ``root`` (None: not there)."""
        try:
            for qdisc in root:
                if qdisc.get("kind") == "pfifo" and qdisc["options"]["limit"] == self.queue_pkts:
                    return int(qdisc["drops"])
        except (ValueError, KeyError, TypeError) as exc:
            raise GeneratorError(f"cannot read the queue's drops on {self.ns}/{self.tx}") from exc
        return None

    def _prepare_port(self) -> int:
        """Give the tx port the root qdisc the queue mode needs; return the queue's
        drops so far (0 without a qdisc queue).

        In ``qdisc`` mode a missing queue (or one of another size) is put in
        place: a pfifo of ``queue_pkts``.  Otherwise any root qdisc is removed:
        over veth a qdisc makes a full ring stop the port's queue (rather than
        refuse the frame), and the SUT's CPU then restarts it, the very cost
        the hold mode avoids.
        """
        root = self._root_qdiscs()
        if not self._qdisc_queue:
            if root and root[0].get("kind") != "noqueue":
                self._tc("qdisc", "del", "dev", self.tx, "root")
                log.info("removed the %s qdisc of %s/%s", root[0].get("kind"), self.ns, self.tx)
            return 0
        drops = self._our_queue_drops(root)
        if drops is not None:
            return drops
        self._tc("qdisc", "replace", "dev", self.tx, "root", "pfifo",
                 "limit", str(self.queue_pkts))
        log.info("queue of %d packets on %s/%s", self.queue_pkts, self.ns, self.tx)
        return 0

    def _queue_drops(self) -> int:
        """Packets the tx port's pfifo (``qdisc`` mode) has dropped so far."""
        drops = self._our_queue_drops(self._root_qdiscs())
        if drops is None:
            raise GeneratorError(f"the queue on {self.ns}/{self.tx} (pfifo of "
                                 f"{self.queue_pkts} packets) went away during a trial")
        return drops

    def _rest(self) -> float:
        """Sleep what is left of ``rest_s`` since the last trial ended; seconds slept."""
        if self._last_end is None:
            return 0.0
        left = self._last_end + self.rest_s - time.monotonic()
        self._last_end = None
        if left <= 0:
            return 0.0
        time.sleep(left)
        return left

    def _one_trial(self, rate_pps: float, duration_s: float, intended: int,
                   stop_lost: int | None = None) -> TrialResult:
        rested = self._rest()
        rep = self.run_srgen(rate_pps, intended, stop_lost=stop_lost)
        self._last_end = time.monotonic()
        stopped: dict[str, Any] | None = None
        if rep.stopped:
            # The trial that ran is the part before the stop (see TrialResult).
            stopped = {"planned_s": duration_s, "planned_frames": intended,
                       "stop_lost": stop_lost}
            intended = int(rep.raw.get("offered", -1))
            duration_s = intended / rate_pps
        # elapsed_ns spans the first to the last offer: intended - 1 intervals.
        # One more interval (the last packet's own slot) makes offered / elapsed
        # equal the rate for perfect pacing.
        elapsed_s = rep.elapsed_ns / 1e9 + 1.0 / rate_pps
        notes: list[str] = []
        consistent = True
        if rep.offered != intended:
            consistent = False
            notes.append(f"srgen offered {rep.offered} of {intended} packets")
        if stopped is not None:
            notes.append(f"stopped after {duration_s:.3f} s of {stopped['planned_s']:g} s: "
                         f"{count(rep.refused, 'frame')} refused, more than the "
                         f"{stop_lost} the whole trial may lose")
        if rep.sent != rep.tx_packets_delta:
            consistent = False
            notes.append(f"sent {rep.sent} != tx_packets delta {rep.tx_packets_delta}")
        if not rep.refusals_counted:
            consistent = False
            notes.append(f"refused {rep.refused} (attempts {rep.attempts_refused}) do not match "
                         f"tx_dropped delta {rep.tx_dropped_delta}"
                         + (f" + queue drops {rep.qdisc_dropped_delta}"
                            if self._qdisc_queue else ""))
        if rep.rx_packets_delta > rep.sent:
            # a frame the SUT sent of its own (neighbour discovery, MLD) reached the
            # rx port: it would hide a lost test frame
            consistent = False
            notes.append(f"received {count(rep.rx_packets_delta - rep.sent, 'more frame')} than sent "
                         "(stray frames at the rx port)")
        offered_rate = rep.offered / elapsed_s
        error = offered_rate / rate_pps - 1.0
        limited = abs(error) > self.tolerance
        if limited:
            notes.append(f"generator limited: offered {offered_rate:.0f} pps for "
                         f"{rate_pps:.0f} pps ({error:+.2%}, tolerance {self.tolerance:.2%})")
        extra = {"engine": self._engine_now, "max_lag_ns": rep.max_lag_ns, "slipped_ns": rep.slipped_ns,
                 "refused_short": rep.refused_short, "send_calls": rep.calls,
                 "mode": self.mode if self._engine_now == "packet" else "xdp",
                 "queue_pkts": self.queue_pkts,
                 "queue_mode": self.queue_mode if self._engine_now == "packet" else "hold",
                 "held_max": rep.held_max,
                 "attempts_refused": rep.attempts_refused,
                 "distinct_frames": self._counter_offset is not None,
                 "flows": self._flows.as_dict() if self._flows is not None else None,
                 "mix": [list(m) for m in self._mix] if self._mix is not None else None,
                 "resident": self.resident, "drained_ns": int(rep.raw.get("drained_ns", 0)),
                 "rx_between_trials": int(rep.raw.get("rx_between_trials", 0)),
                 "qdisc_dropped_delta": rep.qdisc_dropped_delta,
                 "tx_packets_delta": rep.tx_packets_delta,
                 "tx_dropped_delta": rep.tx_dropped_delta,
                 "rx_dropped_delta": rep.rx_dropped_delta, "pacing_error": error,
                 "rested_s": round(rested, 6)}
        if stopped is not None:
            extra["stopped"] = stopped
        if "probes" in rep.raw:
            extra["probes"] = rep.raw["probes"]
        for key in ("preempted", "wake_late_max_ns", "read_max_ns"):   # xdpgen's: why a
            # schedule slipped (preempted, woken late, a slow read of the refusals)
            if key in rep.raw:
                extra[key] = int(rep.raw[key])
        return TrialResult(rate_pps=rate_pps, duration_s=duration_s, intended=intended,
                           sent=rep.sent, refused=rep.refused, received=rep.rx_packets_delta,
                           elapsed_s=elapsed_s, generator_limited=limited,
                           counters_consistent=consistent, note="; ".join(notes), extra=extra)


__all__ = ["DEFAULT_QUEUE_PKTS", "QUEUE_MODES", "LinuxGenerator", "SrgenReport", "build_srgen"]
