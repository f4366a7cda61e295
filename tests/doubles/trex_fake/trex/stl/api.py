"""FakeTrexClient: a test double of ``trex.stl.api``, the TRex STL client's API module.

srperf's TRex worker imports it instead of the real client when the driver's
``client_path`` points at ``tests/doubles/trex_fake``.  It records every call
(JSON lines in ``$SRPERF_FAKE_TREX_LOG``) and plays the scenario in the JSON
file ``$SRPERF_FAKE_TREX_SCENARIO``:

- ``connect_error`` / ``acquire_error``: message of a TRexError raised there;
- ``cap_pps``: the fastest this fake server sends; above it, it still sends
  every packet but takes longer (duration stretching, as a real TRex does);
- ``stop_at_duration``: with ``cap_pps``, stop at the duration instead (too few sent);
- ``loss``: share of sent packets that never reach the rx port;
- ``queue_full``, ``warnings``, ``surplus`` (extra packets sent), ``stray`` (extra
  packets received);
- ``rx_missed``: frames that reach the rx port but that its receiver misses (counted in
  that port's ``ierrors``, not in ``ipackets``, as a real TRex on AF_PACKET ports does);
- ``latency``: the ``latency`` block ``get_stats`` returns for a pg_id.

``start`` takes ``mult`` as a raw multiplier of the streams' rates (as the real
client's ``mult="1.5"``); a stream's field-engine program (``STLScVmRaw``) is
recorded with ``add_streams`` (the real client builds it in
tests/test_trex_driver.py).

As the real client (checked against a TRex 3.08 server): ports stay active (in
``get_active_ports``) while the stream runs; ``wait_on_traffic`` then waits another
100 ms (``rx_delay_ms`` of software ports) when a latency stream ran; warnings are
events that pile up until ``clear_events``; a frame given as bytes leaves its MACs to
the port unless the stream (``mac_src_override_by_pkt``, ``mac_dst_override_mode``)
or the ``PacketBuffer`` (``port_src``, ``port_dst``) says otherwise.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any


def _scenario() -> dict[str, Any]:
    path = os.environ.get("SRPERF_FAKE_TREX_SCENARIO")
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _record(call: str, **args: Any) -> None:
    path = os.environ.get("SRPERF_FAKE_TREX_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"call": call, "args": args}, default=str) + "\n")


class TRexError(Exception):
    """As the real client's exception."""


STLStreamDstMAC_CFG_FILE = 0
STLStreamDstMAC_PKT = 1
RX_DELAY_S = 0.1
"""What wait_on_traffic adds after a latency stream on software ports (rx_delay_ms)."""


class PacketBuffer:
    def __init__(self, buffer: bytes, port_src: bool = False, port_dst: bool = False) -> None:
        self.buffer, self.port_src, self.port_dst = buffer, port_src, port_dst


class STLPktBuilder:
    def __init__(self, pkt_buffer: bytes, vm: Any = None) -> None:
        self.pkt_buffer, self.vm = pkt_buffer, vm


class _Instruction:
    """A field-engine instruction: its class name and arguments, as recorded."""

    def __init__(self, **args: Any) -> None:
        self.args = args

    def describe(self) -> list[Any]:
        return [type(self).__name__, self.args]


class STLVmFlowVar(_Instruction):
    pass


class STLVmWrFlowVar(_Instruction):
    pass


class STLVmFixChecksumHw(_Instruction):
    pass


class CTRexVmInsFixHwCs:
    L4_TYPE_UDP = 11
    L4_TYPE_TCP = 13


class STLScVmRaw:
    def __init__(self, list_of_commands: list[_Instruction]) -> None:
        self.commands = list_of_commands


class STLTXCont:
    def __init__(self, pps: float) -> None:
        self.pps = pps


class STLFlowLatencyStats:
    def __init__(self, pg_id: int) -> None:
        self.pg_id = pg_id


class STLStream:
    def __init__(self, packet: STLPktBuilder, mode: STLTXCont,
                 flow_stats: STLFlowLatencyStats | None = None,
                 mac_src_override_by_pkt: bool | None = None,
                 mac_dst_override_mode: int | None = None) -> None:
        self.packet, self.mode, self.flow_stats = packet, mode, flow_stats
        # bytes count as "default" MACs: the port's replace them unless overridden
        self.keeps_macs = (bool(mac_src_override_by_pkt)
                           and mac_dst_override_mode == STLStreamDstMAC_PKT)


class STLClient:
    def __init__(self, server: str, sync_port: int, async_port: int,
                 verbose_level: str) -> None:
        _record("STLClient", server=server, sync_port=sync_port, async_port=async_port)
        self.sc = _scenario()
        self.streams: dict[int, list[STLStream]] = {}
        self.stats: dict[Any, Any] = {}
        self.warnings: list[str] = []
        self.captured: list[bytes] = []
        self.busy_until = 0.0
        self.active: list[int] = []
        self.latency_ran = False

    def connect(self) -> None:
        _record("connect")
        if "connect_error" in self.sc:
            raise TRexError(self.sc["connect_error"])

    def acquire(self, ports: list[int], force: bool = False) -> None:
        _record("acquire", ports=ports, force=force)
        if "acquire_error" in self.sc and not force:
            raise TRexError(self.sc["acquire_error"])

    def reset(self, ports: list[int]) -> None:
        _record("reset", ports=ports)

    def get_server_version(self) -> dict[str, Any]:
        return {"version": "v3.04-fake", "mode": "STL"}

    def remove_all_streams(self, ports: list[int]) -> None:
        _record("remove_all_streams", ports=ports)
        for p in ports:
            self.streams[p] = []

    def add_streams(self, stream: STLStream, ports: list[int]) -> None:
        _record("add_streams", ports=ports, pps=stream.mode.pps,
                frame=stream.packet.pkt_buffer.hex(),
                pg_id=stream.flow_stats.pg_id if stream.flow_stats else None,
                keeps_macs=stream.keeps_macs,
                **({"vm": [c.describe() for c in stream.packet.vm.commands]}
                   if stream.packet.vm is not None else {}))
        for p in ports:
            self.streams.setdefault(p, []).append(stream)

    def clear_stats(self) -> None:
        _record("clear_stats")

    def start(self, ports: list[int], duration: float, force: bool = False,
              mult: str = "1") -> None:
        _record("start", ports=ports, duration=duration, force=force, mult=mult)
        cap = self.sc.get("cap_pps")
        out: dict[Any, Any] = {}
        sent_total = 0
        took = duration
        lat: dict[str, Any] = {}
        for p in ports:
            for s in self.streams.get(p, []):
                pps = s.mode.pps * float(mult)   # a raw multiplier, as TRex's "1.5"
                n = round(pps * duration)
                if cap and pps > cap:
                    if self.sc.get("stop_at_duration"):
                        n = round(cap * duration)
                    else:
                        took = max(took, n / cap)
                n += int(self.sc.get("surplus", 0))
                sent_total += n
                out[p] = out.get(p, 0) + n
                if s.flow_stats is not None:
                    lat[str(s.flow_stats.pg_id)] = self.sc.get("latency", {})
        keep = 1 - float(self.sc.get("loss", 0.0))
        missed = int(self.sc.get("rx_missed", 0))
        # port 0's packets arrive at port 1 and back (ports 0 and 1 face each other)
        rx = {1: round(out.get(0, 0) * keep) + int(self.sc.get("stray", 0)) - missed,
              0: round(out.get(1, 0) * keep)}
        received = rx[0] + rx[1]
        self.stats = {0: {"opackets": out.get(0, 0), "ipackets": rx[0], "ierrors": 0,
                          "oerrors": 0},
                      1: {"opackets": out.get(1, 0), "ipackets": rx[1], "ierrors": missed,
                          "oerrors": 0},
                      "total": {"opackets": sent_total, "ipackets": received},
                      "global": {"queue_full": int(self.sc.get("queue_full", 0))},
                      "latency": {"global": {"old_flow": 0, "bad_hdr": 0}, **lat},
                      "flow_stats": {}}
        self.warnings.extend(self.sc.get("warnings", []))
        self.active = list(ports)
        self.busy_until = time.monotonic() + took
        self.latency_ran = bool(lat)

    def get_active_ports(self) -> list[int]:
        if time.monotonic() >= self.busy_until:
            self.active = []
        return list(self.active)

    def wait_on_traffic(self, ports: list[int], timeout: float) -> None:
        _record("wait_on_traffic", ports=ports, timeout=timeout)
        time.sleep(max(self.busy_until - time.monotonic(), 0.0))
        self.active = []
        if self.latency_ran:
            time.sleep(RX_DELAY_S)

    def clear_events(self) -> None:
        _record("clear_events")
        self.warnings = []

    def get_stats(self) -> dict[Any, Any]:
        _record("get_stats")
        late = int(self.sc.get("late_frames", 0))
        if late and time.monotonic() < self.busy_until + float(self.sc.get("late_s", 0)):
            # frames still in flight: port 1 has not counted the last ``late`` yet
            stats = {k: dict(v) for k, v in self.stats.items()}
            stats[1]["ipackets"] -= late
            return stats
        return self.stats

    def get_warnings(self) -> list[str]:
        return self.warnings

    def set_service_mode(self, ports: list[int], enabled: bool) -> None:
        _record("set_service_mode", ports=ports, enabled=enabled)

    def start_capture(self, rx_ports: list[int], limit: int) -> dict[str, int]:
        _record("start_capture", rx_ports=rx_ports, limit=limit)
        return {"id": 7}

    def push_packets(self, pkts: list[PacketBuffer], ports: list[int]) -> None:
        _record("push_packets", ports=ports, count=len(pkts),
                keeps_macs=all(isinstance(p, PacketBuffer) and not (p.port_src or p.port_dst)
                               for p in pkts))
        self.captured = [p.buffer if isinstance(p, PacketBuffer) else p for p in pkts]

    def stop_capture(self, capture_id: int, output: list[dict[str, Any]]) -> None:
        _record("stop_capture", capture_id=capture_id)
        output.extend({"binary": p, "index": i} for i, p in enumerate(self.captured))

    def stop(self, ports: list[int]) -> None:
        _record("stop", ports=ports)

    def release(self, ports: list[int]) -> None:
        _record("release", ports=ports)

    def disconnect(self) -> None:
        _record("disconnect")
