"""The TRex traffic generator ("trex" driver): a TRex server's STL API through its client.

The client runs in a child process (:mod:`srperf.drivers.trex_worker`, which
says why); this module speaks to it and applies srperf's rules to TRex's
counters.  A trial is one continuous stream (``STLTXCont``) of the prepared
frame at ``rate_pps`` for ``duration_s`` out of ``tx_port``; ``sent`` is that
port's ``opackets``, ``received`` the ``ipackets`` of ``rx_port``.  The
connection stays up for the generator's life and the streams stay loaded from
one trial to the next: they are loaded at the first trial's rate, and later
trials change only TRex's rate multiplier (``start(mult=...)``) and duration:
a trial is one request to the client process (``run``).  After the stream the
drain ends as soon as the rx port has counted (received or missed) every sent
packet, or its count has not moved for ``settle_s`` (``drain_s`` at most); frames
it counts after that, between two trials, are said in the next trial's
``extra["rx_between_trials"]`` and logged (they were counted lost).
Many flows (:meth:`TrexGenerator.prepare_flows`) are TRex field-engine
variables: one counts the flows, is written into every varied field, and the
checksums are fixed by TRex.

A trial is *generator limited* (it says nothing about the SUT, the search may
not use it) when TRex could not offer the load, by the same rule as the local
generator: the rate TRex really offered (``opackets`` / elapsed) is more than
``tolerance`` away from the intended rate.  TRex falls behind in two ways, both
caught by that rule: it stops at the duration having sent too few packets, or
it sends them all but takes longer ("duration stretching": elapsed is the wall
time from ``start`` until the ports go idle, less ``poll_slack_s``, the client's
polling granularity).  A TX queue that ran full
(``global.queue_full`` grew) limits the trial too, whatever the rate says, and so
do frames the receiving port missed (its ``ierrors``: TRex's receiver fell
behind, so they would count as the SUT's loss); the server's warnings are kept
in the note.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
from typing import Any

from srperf.config.settings import SettingError, Settings, setting
from srperf.drivers.base import FlowsUnsupported, TrafficGenerator, TrialResult
from srperf.drivers.latency import from_trex
from srperf.errors import GeneratorError
from srperf.util.wording import count

log = logging.getLogger(__name__)

WORKER_MODULE = "srperf.drivers.trex_worker"
LATENCY_PG_ID = 7
"""Packet group id of srperf's latency stream."""


@dataclasses.dataclass(frozen=True)
class TrexOptions(Settings):
    """``tester.options`` of the trex driver."""

    server: str = setting("127.0.0.1", "host name or address of the TRex server",
                          schema={"type": "string", "minLength": 1})
    sync_port: int = setting(4501, "TRex RPC (synchronous) port",
                             schema={"type": "integer", "minimum": 1, "maximum": 65535})
    async_port: int = setting(4500, "TRex publisher (asynchronous) port",
                              schema={"type": "integer", "minimum": 1, "maximum": 65535})
    tx_port: int = setting(0, "TRex port that sends towards the SUT",
                           schema={"type": "integer", "minimum": 0, "maximum": 15})
    rx_port: int = setting(1, "TRex port that receives from the SUT",
                           schema={"type": "integer", "minimum": 0, "maximum": 15})
    client_path: str | None = setting(None, "a TRex release's client directory "
                                      "(.../automation/trex_control_plane/interactive); "
                                      "default: the lbr-trex-client package",
                                      schema={"type": ["string", "null"]})
    force_acquire: bool = setting(False, "take the ports even when another user holds them",
                                  schema={"type": "boolean"})
    tolerance: float = setting(0.01, "largest relative gap between offered and intended "
                               "rate of a usable trial",
                               schema={"type": "number", "exclusiveMinimum": 0,
                                       "maximum": 0.5})
    poll_slack_s: float = setting(0.1, "wall time the client may add to a trial's duration "
                                  "(start and polling), not counted as stretching", unit="s",
                                  schema={"type": "number", "minimum": 0, "maximum": 5})
    drain_s: float = setting(0.2, "longest wait after the stream ends before reading "
                             "counters", unit="s", schema={"type": "number", "minimum": 0,
                                                           "maximum": 10})
    settle_s: float = setting(0.02, "end that wait once the rx port has counted every sent "
                              "packet or its count has not moved for this long (0: always "
                              "wait drain_s)", unit="s",
                              schema={"type": "number", "minimum": 0, "maximum": 10})
    timeout_s: float = setting(60.0, "longest wait for the server, beyond a trial's "
                               "duration", unit="s",
                               schema={"type": "number", "exclusiveMinimum": 0,
                                       "maximum": 3600})

    release: str | None = setting(None, "path of a TRex release on the tester host: "
                                  "srperf testbed up writes its trex_cfg.yaml and starts "
                                  "the server there (default: a server someone else runs)",
                                  schema={"type": ["string", "null"], "pattern": "^/"})
    interfaces: list[str] = setting([], "the server's DPDK ports, in TRex port order: PCI "
                                    "addresses, --vdev=net_af_packetN,iface=X or kernel "
                                    "interface names (AF_PACKET) (with release; default: "
                                    "tester tx/rx, by PCI address on an ssh testbed, by "
                                    "name on a virtual one)",
                                    schema={"type": "array",
                                            "items": {"type": "string", "minLength": 1}})
    cores: int = setting(1, "data-plane cores per port pair of the server (with release)",
                         schema={"type": "integer", "minimum": 1, "maximum": 64})
    low_end: bool = setting(False, "server on a host with fewer than 4 cores (with release)",
                            schema={"type": "boolean"})
    bidirectional: bool = setting(False, "send both ways: rx_port sends the behavior's "
                                  "reverse frame (plain ipv6/ipv4 only); rates are the sum "
                                  "of both directions", schema={"type": "boolean"})
    hdrh: bool = setting(False, "start the server with --hdrh (HDR latency histograms)",
                         schema={"type": "boolean"})

    def __post_init__(self) -> None:
        if self.tx_port == self.rx_port:
            raise ValueError(f"tx_port and rx_port are both {self.tx_port}")
        if self.sync_port == self.async_port:
            raise SettingError("async_port", self.async_port,
                               "the same port as sync_port: TRex's RPC and publisher "
                               "ports must differ (its defaults: 4501 and 4500)")
        if self.interfaces:
            from srperf.drivers.trex_cfg import render_trex_cfg

            render_trex_cfg(self.interfaces, cores=self.cores, low_end=self.low_end)


class TrexWorker:
    """The child process that holds the TRex client (one request at a time)."""

    def __init__(self, client_path: str | None, timeout_s: float,
                 netns: str | None = None) -> None:
        env = dict(os.environ)
        env.pop("SRPERF_TREX_CLIENT_PATH", None)
        if client_path:   # root imports its Python: trusted as a whole (again, at use)
            from srperf.safety import programs

            programs.check_trex_client("<testbed>", client_path)
            env["SRPERF_TREX_CLIENT_PATH"] = client_path
        self.timeout_s = timeout_s
        # A server whose RPC ports only listen inside a local namespace (the virtual
        # testbed's tester) is reached by running the client there.
        netns_argv = ["ip", "netns", "exec", netns] if netns else []
        self.proc = subprocess.Popen([*netns_argv, sys.executable, "-m", WORKER_MODULE],
                                     env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.client = self._reply("start")

    def call(self, op: str, **args: Any) -> Any:
        if self.proc.poll() is not None:
            raise GeneratorError(f"TRex client process exited ({self.proc.returncode})")
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
        self.proc.stdin.flush()
        return self._reply(op)

    def _reply(self, op: str) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=5)
            err = (self.proc.stderr.read() if self.proc.stderr else "").strip()
            raise GeneratorError(f"TRex client process died during {op!r}: "
                                 f"{err.splitlines()[-1] if err else 'no message'}")
        reply = json.loads(line)
        if not reply["ok"]:
            raise TrexError(reply["kind"], reply["message"])
        return reply.get("result")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("close")
            except GeneratorError as e:
                log.warning("closing the TRex client: %s", e)
            finally:
                if self.proc.stdin:
                    self.proc.stdin.close()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


class TrexError(GeneratorError):
    """The TRex client refused or failed; ``kind`` as in the worker protocol."""

    HINTS = {
        "unreachable": "is the server running (t-rex-64 -i) and its ports {sync}/{async_} "
                       "reachable from here?",
        "api": "this client's STL API version is not the server's: use a server from 2.94 "
               "on with lbr-trex-client, or the client of the server's own release "
               "(tester.options.client_path)",
        "owned": "another user holds the ports; end their session or set "
                 "tester.options.force_acquire: true",
        "client": "",
        "error": "",
    }

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class TrexGenerator(TrafficGenerator):
    """TRex as srperf's generator (see the module docstring for the trial rules)."""

    name = "trex"

    def __init__(self, options: TrexOptions, line_rate_pps: float | None = None,
                 netns: str | None = None) -> None:
        self.opt = options
        self.line_rate_pps = line_rate_pps
        self.frames: list[tuple[bytes, int]] = []
        self.reverse: bytes | None = None
        self.flows: dict[str, Any] | None = None
        """The field-engine description of many flows (prepare_flows), None: one flow."""
        self._loaded: tuple[str, float] | None = None
        """What the server holds: the streams (as JSON) and the rate they were loaded at."""
        self.bidirectional = options.bidirectional
        self.worker = TrexWorker(options.client_path, options.timeout_s, netns)
        try:
            info = self.worker.call("connect", server=options.server,
                                    sync_port=options.sync_port,
                                    async_port=options.async_port,
                                    ports=[options.tx_port, options.rx_port],
                                    force=options.force_acquire)
        except TrexError as e:
            self.worker.close()
            hint = TrexError.HINTS.get(e.kind, "").format(sync=options.sync_port,
                                                          async_=options.async_port)
            raise TrexError(e.kind, f"TRex server {options.server}:{options.sync_port}: "
                                    f"{e}" + (f" ({hint})" if hint else "")) from None
        self.server_version = info.get("server_version")
        log.info("TRex server %s:%d (%s) through %s", options.server, options.sync_port,
                 self.server_version, self.worker.client)

    def prepare(self, frame: bytes) -> None:
        self.frames = [(frame, 1)]
        self.flows = None

    def prepare_flows(self, frame: bytes, flows: Any,
                      counter_offset: int | None = None) -> None:
        """Many flows by TRex's field engine (the worker's ``flow_vm``): one variable
        0 .. count - 1 written into every varied field (:func:`srperf.traffic.flows.flow_fields`),
        then the UDP checksum (and an IPv4 header's) fixed by TRex."""
        from srperf.traffic.flows import flow_fields, udp_place

        if counter_offset is not None:
            raise FlowsUnsupported("the trex driver does not write per-packet counters "
                                   "(distinct frames)")
        try:
            fields = flow_fields(frame, flows)
        except ValueError as exc:
            raise FlowsUnsupported(str(exc)) from None
        place = udp_place(frame)
        if place is not None and place.l4_offset - place.l3_offset != (20 if place.ipv4
                                                                        else 40):
            raise FlowsUnsupported(
                "the frame's UDP follows an IPv6 extension header (SRH): TRex's checksum "
                "fix takes the pseudo-header's destination from the IPv6 header, not from "
                "the SRH's final segment")
        self.frames = [(frame, 1)]
        self.flows = {"count": flows.count,
                      "fields": [{"name": f.name, "offset": f.offset, "base": f.base}
                                 for f in fields],
                      "udp": None if place is None else {"l3_offset": place.l3_offset,
                                                         "l4_offset": place.l4_offset}}

    def prepare_mix(self, frames: list[tuple[bytes, int]]) -> None:
        if not frames or any(w < 1 for _, w in frames):
            raise GeneratorError("a mix needs frames with positive weights")
        self.frames = list(frames)
        self.flows = None

    def prepare_reverse(self, frame: bytes) -> None:
        if not self.bidirectional:
            raise GeneratorError("prepare_reverse without tester.options.bidirectional")
        self.reverse = frame

    @property
    def _ports(self) -> list[int]:
        """The ports that send: tx, and rx too when bidirectional."""
        if self.bidirectional:
            return [self.opt.tx_port, self.opt.rx_port]
        return [self.opt.tx_port]

    @property
    def _rx_ports(self) -> list[int]:
        """The ports that receive what ``_ports`` send."""
        if self.bidirectional:
            return [self.opt.rx_port, self.opt.tx_port]
        return [self.opt.rx_port]

    def _run(self, duration_s: float, mult: str = "1") -> dict[str, Any]:
        """One ``run`` of what the server holds: one request to the client process."""
        out = self.worker.call("run", ports=self._ports, duration_s=duration_s,
                               timeout_s=duration_s + self.opt.timeout_s,
                               drain_s=self.opt.drain_s, mult=mult,
                               settle_s=self.opt.settle_s, rx_ports=self._rx_ports)
        return dict(out)

    def _streams(self, rate_pps: float) -> list[dict[str, Any]]:
        """One continuous stream per frame of the mix, sharing ``rate_pps`` by weight;
        bidirectional: half of it each way, the reverse frame from the rx port."""
        if self.bidirectional:
            if self.reverse is None:
                raise GeneratorError("bidirectional trial without a reverse frame")
            rate_pps /= 2
        total = sum(w for _, w in self.frames)
        streams = [{"port": self.opt.tx_port, "frame": f.hex(), "pps": rate_pps * w / total,
                    **({"flows": self.flows} if self.flows else {})}
                   for f, w in self.frames]
        if self.bidirectional and self.reverse is not None:
            streams.append({"port": self.opt.rx_port, "frame": self.reverse.hex(),
                            "pps": rate_pps})
        return streams

    def trial(self, rate_pps: float, duration_s: float, *,
              stop_lost: int | None = None) -> TrialResult:
        """One trial on the TRex server.  ``stop_lost`` is ignored: TRex's losses are
        inside the SUT (or frames still in flight) until the trial's end, never a
        certain count during it, so every trial runs whole."""
        if not self.frames:
            raise GeneratorError("trial before prepare(): no frame loaded")
        intended = round(rate_pps * duration_s)
        if intended == 0:
            return TrialResult(rate_pps, duration_s, 0, 0, 0, 0, 0.0,
                               note="rate x duration rounds to zero packets: nothing sent")
        out = self._run(duration_s, self._load_for(rate_pps))
        return self.judge(rate_pps, duration_s, intended, out)

    def _load_for(self, rate_pps: float) -> str:
        """Make the server hold the prepared streams (loaded once, at the first rate they
        are run at: later trials change only TRex's rate multiplier); returns the
        multiplier for ``rate_pps``."""
        streams = self._streams(rate_pps)
        key = json.dumps([{k: v for k, v in s.items() if k != "pps"} for s in streams],
                         sort_keys=True)
        if self._loaded is None or self._loaded[0] != key:
            self._loaded = None
            self.worker.call("load", streams=streams)
            self._loaded = (key, rate_pps)
        return f"{rate_pps / self._loaded[1]:.12g}"

    def latency_trial(self, rate_pps: float, duration_s: float,
                      stream_pps: float) -> TrialResult:
        if not self.frames:
            raise GeneratorError("latency trial before prepare(): no frame loaded")
        if stream_pps > rate_pps:
            raise GeneratorError(f"latency stream {stream_pps:.0f} pps exceeds the load "
                                 f"{rate_pps:.0f} pps")
        tx = self.opt.tx_port
        streams = self._streams(rate_pps - stream_pps) if rate_pps > stream_pps else []
        streams.append({"port": tx, "frame": self.frames[0][0].hex(), "pps": stream_pps,
                        "pg_id": LATENCY_PG_ID})
        self._loaded = None   # the next trial loads its own streams again
        self.worker.call("load", streams=streams)
        out = self._run(duration_s)
        trial = self.judge(rate_pps, duration_s, round(rate_pps * duration_s), out)
        block = (out["stats"].get("latency", {}).get(str(LATENCY_PG_ID)) or {}).get("latency")
        if not block:
            return dataclasses.replace(trial, note="; ".join(
                filter(None, [trial.note, "TRex returned no latency figures"])))
        stats = from_trex(block)
        return dataclasses.replace(trial, extra={**trial.extra, "latency": stats.as_dict(),
                                                 "latency_stream_pps": stream_pps})

    def judge(self, rate_pps: float, duration_s: float, intended: int,
              out: dict[str, Any]) -> TrialResult:
        """The :class:`TrialResult` of one ``run`` reply (counters and wall times)."""
        stats = out["stats"]
        tx, rx = str(self.opt.tx_port), str(self.opt.rx_port)
        sent = int(stats[tx]["opackets"])
        received = int(stats[rx]["ipackets"])
        if self.bidirectional:  # the reverse direction: rx port sends, tx port receives
            sent += int(stats[rx]["opackets"])
            received += int(stats[tx]["ipackets"])
        queue_full = int(stats.get("global", {}).get("queue_full", 0))
        # ierrors of a receiving port: frames that reached TRex's port but that its
        # receiver missed (DPDK imissed + ierrors + rx_nombuf; on AF_PACKET ports the
        # socket's ring overflowing).  The SUT forwarded them: counted as loss they would
        # make the SUT look worse, so the trial says nothing about the SUT.
        missed = int(stats[rx].get("ierrors", 0))
        if self.bidirectional:
            missed += int(stats[tx].get("ierrors", 0))
        elapsed_s = max(out["elapsed_s"] - self.opt.poll_slack_s, duration_s)
        notes: list[str] = []
        consistent = True
        if received > sent:
            consistent = False
            notes.append(f"received {count(received - sent, 'more frame')} than sent "
                         "(stray frames at the rx port)")
        total = stats.get("total", {}).get("opackets")
        if total is not None and int(total) != sent:
            consistent = False
            notes.append(f"total opackets {total} != tx port opackets {sent}")
        offered_rate = sent / elapsed_s
        error = offered_rate / rate_pps - 1.0
        limited = abs(error) > self.opt.tolerance
        limited_by: list[str] = []   # why, for the search's words (search.common)
        if limited:
            limited_by.append("offer")
            notes.append(f"generator limited: offered {offered_rate:.0f} pps for "
                         f"{rate_pps:.0f} pps ({error:+.2%}, tolerance "
                         f"{self.opt.tolerance:.2%})")
        if queue_full:
            limited = True
            limited_by.append("queue")
            notes.append(f"generator limited: TRex TX queue full {count(queue_full, 'time')}")
        if missed:
            limited = True
            limited_by.append("receiver")
            notes.append(f"generator limited: TRex's receiving port missed "
                         f"{count(missed, 'frame')} (ierrors): the tester, not the SUT, "
                         "dropped them")
        if sent > intended:
            notes.append(f"TRex sent {count(sent - intended, 'packet')} more than intended")
        warnings = list(out.get("warnings") or [])
        notes.extend(f"TRex warning: {w}" for w in warnings)
        extra: dict[str, Any] = {"queue_full": queue_full, "rx_missed": missed,
                                 "limited_by": limited_by,
                                 "trex_warnings": warnings,
                                 "wall_s": out["elapsed_s"], "pacing_error": error,
                                 "tx_port": self.opt.tx_port, "rx_port": self.opt.rx_port}
        if out.get("drain_s") is not None:
            extra["drain_s"] = out["drain_s"]
        between = out.get("rx_between")
        if between:   # late frames of the previous trial, which counted them lost
            extra["rx_between_trials"] = between
            log.info("TRex's rx port counted %s between two trials (after the previous "
                     "trial's counters were read: counted lost there)",
                     count(between, "frame"))
        if self.line_rate_pps:
            extra["line_rate_percent"] = 100.0 * rate_pps / self.line_rate_pps
        extra_sent = max(sent - intended, 0)
        return TrialResult(rate_pps=rate_pps, duration_s=duration_s, intended=intended,
                           # the real count is stored; the surplus packets count against
                           # what arrived, so a lost packet is never hidden by one TRex
                           # sent in excess
                           sent=sent, refused=0,
                           received=max(received - extra_sent, 0),
                           elapsed_s=elapsed_s, generator_limited=limited,
                           counters_consistent=consistent, note="; ".join(notes),
                           extra=extra)

    def capture(self, frames: list[bytes], timeout_s: float = 2.0,
                gap_s: float = 0.0) -> list[bytes]:
        # frames ``gap_s`` apart: one capture per frame, each waiting at most its share
        groups = [frames] if gap_s <= 0 else [[f] for f in frames]
        got: list[str] = []
        for group in groups:
            got += self.worker.call("capture", tx=self.opt.tx_port, rx=self.opt.rx_port,
                                    frames=[f.hex() for f in group],
                                    timeout_s=timeout_s if gap_s <= 0 else max(gap_s, 0.1))
        return [bytes.fromhex(h) for h in got]

    def max_rate_pps(self) -> float | None:
        return self.line_rate_pps

    def close(self) -> None:
        self.worker.close()


__all__ = ["TrexError", "TrexGenerator", "TrexOptions", "TrexWorker"]
