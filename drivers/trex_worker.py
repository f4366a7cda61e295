"""The TRex client, run in a child process of its own (``python -m srperf.drivers.trex_worker``).

Why a child process: the current STL client (PyPI ``lbr-trex-client``, or a TRex
release's ``automation/trex_control_plane/interactive``) brings a TRex-patched
scapy 2.4.3 and, once imported, puts it in place of the ``scapy`` module of the
whole interpreter.  srperf builds and checks packets with its own scapy, so the
client lives here and only bytes cross the boundary: frames as hex, counters as
JSON.

Protocol: one JSON object per line on stdin, ``{"op": NAME, "args": {...}}``;
one line per request on stdout, ``{"ok": true, "result": ...}`` or ``{"ok":
false, "kind": KIND, "message": TEXT}`` where KIND is ``client`` (no usable
client), ``unreachable``, ``api`` (server refused this client's API version),
``owned`` (ports held by another user) or ``error``.  The first line the worker
writes, before any request, says which client it loaded.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any, Callable

CLIENT_PATH_ENV = "SRPERF_TREX_CLIENT_PATH"
"""A TRex release's client directory (``.../interactive``) to use instead of lbr-trex-client."""

# "taken by": what a TRex 3.08 server says of ports another user acquired
_KINDS = (("owned", re.compile(r"owned|acquire|already taken", re.I)),
          ("api", re.compile(r"\bAPI\b|version mismatch|api_sync", re.I)),
          ("unreachable", re.compile(r"server response|connect|timed? ?out|unreachable", re.I)))


def load_client() -> tuple[Any, str]:
    """Import ``trex.stl.api``; returns the module and a one-line description."""
    path = os.environ.get(CLIENT_PATH_ENV)
    if path:
        sys.path.insert(0, path)
        how = f"TRex client from {path}"
    else:
        try:
            import lbr_trex_client  # noqa: F401  (puts the bundled trex on sys.path)
        except ImportError:
            _old_client_or_none()
        how = "lbr-trex-client"
    try:
        from trex.stl import api
    except ImportError as e:
        _old_client_or_none()
        raise ClientMissing(f"no TRex STL client ({e}); install the extra "
                            "'srperf[trex]' (PyPI lbr-trex-client) or give "
                            "tester.options.client_path") from e
    return api, how


class ClientMissing(Exception):
    """No usable client could be imported."""


def _old_client_or_none() -> None:
    try:
        import trex_stl_lib  # noqa: F401
    except ImportError:
        return
    raise ClientMissing("the installed TRex client is PyPI trex-stl-lib (the 2017 client, "
                        "STL API 4.x), which every TRex server since 2.88 refuses; install "
                        "lbr-trex-client (pip install 'srperf[trex]') or give "
                        "tester.options.client_path")


class Worker:
    """Serves requests with one ``STLClient``."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.client: Any = None
        self.ports: list[int] = []
        self._last_rx: int | None = None
        """What the receiving ports had counted (absolute) at the last run's last read."""

    def connect(self, server: str, sync_port: int, async_port: int, ports: list[int],
                force: bool = False) -> dict[str, Any]:
        self.client = self.api.STLClient(server=server, sync_port=sync_port,
                                         async_port=async_port, verbose_level="error")
        self.client.connect()
        self.ports = list(ports)
        self.client.acquire(ports=self.ports, force=force)
        self.client.reset(ports=self.ports)
        version = self.client.get_server_version()
        return {"server_version": _plain(version)}

    def flow_vm(self, flows: dict[str, Any]) -> Any:
        """The field-engine program of many flows: one variable counting 0 .. count - 1,
        one packet after the other, written (plus each field's value in the frame) into
        the last 16 bits of every varied field, then the checksums fixed (UDP, and the
        IPv4 header when there is one, by TRex's checksum-offload instruction)."""
        api = self.api
        program: list[Any] = [api.STLVmFlowVar(name="flow", min_value=0,
                                               max_value=int(flows["count"]) - 1, size=2,
                                               op="inc")]
        program += [api.STLVmWrFlowVar(fv_name="flow", pkt_offset=int(f["offset"]),
                                       add_val=int(f["base"])) for f in flows["fields"]]
        udp = flows.get("udp")
        if udp is not None:
            program.append(api.STLVmFixChecksumHw(
                l3_offset=int(udp["l3_offset"]), l4_offset=int(udp["l4_offset"]),
                l4_type=api.CTRexVmInsFixHwCs.L4_TYPE_UDP))
        return api.STLScVmRaw(program)

    def load(self, streams: list[dict[str, Any]]) -> None:
        """Replace the streams of the ports named in ``streams``."""
        ports = sorted({s["port"] for s in streams})
        self.client.remove_all_streams(ports=ports)
        for s in streams:
            kwargs: dict[str, Any] = {}
            builder: dict[str, Any] = {}
            if s.get("pg_id") is not None:
                kwargs["flow_stats"] = self.api.STLFlowLatencyStats(pg_id=s["pg_id"])
            if s.get("flows"):
                builder["vm"] = self.flow_vm(s["flows"])
            # A frame given as bytes counts as having "default" MACs, which TRex replaces
            # with its port's (from trex_cfg.yaml, seen on TRex 3.08): the SUT would
            # drop every frame.  srperf's frames carry the SUT's MACs; TRex must keep them.
            stream = self.api.STLStream(
                packet=self.api.STLPktBuilder(pkt_buffer=bytes.fromhex(s["frame"]), **builder),
                mode=self.api.STLTXCont(pps=s["pps"]), mac_src_override_by_pkt=True,
                mac_dst_override_mode=self.api.STLStreamDstMAC_PKT, **kwargs)
            self.client.add_streams(stream, ports=[s["port"]])

    def run(self, ports: list[int], duration_s: float, timeout_s: float,
            drain_s: float, mult: str = "1", settle_s: float = 0.0,
            rx_ports: list[int] | None = None) -> dict[str, Any]:
        """Start the loaded streams for ``duration_s`` at ``mult`` times their rates (a
        number: TRex's raw multiplier), wait, and read every counter.

        The drain after the ports went idle: ``drain_s`` when ``settle_s`` is 0 (or no
        ``rx_ports`` are named); else it ends as soon as ``rx_ports`` have counted
        (received or missed) every packet ``ports`` sent, or neither count has moved for
        ``settle_s``, ``drain_s`` at most (:meth:`_settled`).  ``rx_between`` in the
        reply: what ``rx_ports`` counted after the previous run's last read, before this
        run (frames that arrived late and were counted lost then), None if unknown."""
        c = self.client
        rx_ports = list(rx_ports or [])
        c.clear_stats()
        rx_between = None
        if self._last_rx is not None:
            now = self._absolute_rx(rx_ports, "reference_stats")
            rx_between = None if now is None else now - self._last_rx
        c.clear_events()  # the client keeps every event of the session: this trial's only
        t0 = time.monotonic()
        c.start(ports=ports, mult=mult, duration=duration_s, force=True)
        started = time.monotonic()
        # The traffic's end is when the ports go idle.  wait_on_traffic returns later: with
        # a latency stream it then waits rx_delay_ms (100 ms on software ports) before it
        # removes the RX filters, which would read as duration stretching.
        while set(c.get_active_ports()) & set(ports):
            if time.monotonic() - t0 > timeout_s:
                raise TimeoutError(f"traffic still running after {timeout_s:.0f} s")
            time.sleep(0.005)
        ended = time.monotonic()
        c.wait_on_traffic(ports=ports, timeout=timeout_s)
        stats, reads = self._settled(ports, rx_ports, drain_s, settle_s)
        self._last_rx = self._absolute_rx(rx_ports, "latest_stats")
        return {"start_call_s": started - t0, "elapsed_s": ended - t0,
                "drain_s": time.monotonic() - ended, "stats_reads": reads,
                "rx_between": rx_between,
                "stats": _plain(stats), "warnings": [str(w) for w in c.get_warnings()]}

    def _settled(self, ports: list[int], rx_ports: list[int], drain_s: float,
                 settle_s: float) -> tuple[Any, int]:
        """The counters once the frames in flight have arrived, and how many reads that
        took (see :meth:`run`).  TRex syncs its counters on every read (its
        ``get_port_stats`` and ``get_global_stats`` read the ports then), so a count
        that stopped moving has stopped."""
        c = self.client
        if settle_s <= 0 or not rx_ports:
            time.sleep(drain_s)
            return c.get_stats(), 1
        start = time.monotonic()
        last: tuple[int, int] | None = None
        since, reads = start, 0
        while True:
            stats = c.get_stats()
            reads += 1
            sent = sum(int(stats[p]["opackets"]) for p in ports)
            seen = sum(int(stats[p]["ipackets"]) + int(stats[p].get("ierrors", 0))
                       for p in rx_ports)
            now = time.monotonic()
            if seen >= sent or now - start >= drain_s:
                return stats, reads
            if (sent, seen) != last:
                last, since = (sent, seen), now
            elif now - since >= settle_s:
                return stats, reads
            time.sleep(min(settle_s / 4, 0.005))

    def _absolute_rx(self, rx_ports: list[int], which: str) -> int | None:
        """The packets ``rx_ports`` received since the session began: the client's own
        snapshot ``which`` (``reference_stats``: at the last clear_stats;
        ``latest_stats``: at the last read); None where the client does not keep one."""
        try:
            return sum(int(getattr(self.client.ports[p].get_stats(), which)["ipackets"])
                       for p in rx_ports)
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    def capture(self, tx: int, rx: int, frames: list[str], timeout_s: float) -> list[str]:
        c = self.client
        c.set_service_mode(ports=[tx, rx], enabled=True)
        try:
            cap = c.start_capture(rx_ports=[rx], limit=max(len(frames) * 4, 16))
            # as for streams: keep the frames' own MACs (bytes alone get the port's)
            c.push_packets(pkts=[self.api.PacketBuffer(bytes.fromhex(f), port_src=False,
                                                       port_dst=False) for f in frames],
                           ports=[tx])
            c.wait_on_traffic(ports=[tx], timeout=timeout_s)
            time.sleep(min(timeout_s, 0.5))
            out: list[dict[str, Any]] = []
            c.stop_capture(cap["id"], output=out)
        finally:
            c.set_service_mode(ports=[tx, rx], enabled=False)
        return [bytes(p["binary"]).hex() for p in out]

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.stop(ports=self.ports)
                self.client.release(ports=self.ports)
            finally:
                self.client.disconnect()
                self.client = None


def _plain(value: Any) -> Any:
    """``value`` with keys as strings and no client types, for JSON."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def classify(error: BaseException) -> str:
    """The error KIND of the protocol for an exception raised by the client."""
    text = str(error)
    for kind, pattern in _KINDS:
        if pattern.search(text):
            return kind
    return "error"


def serve(stdin: Any = sys.stdin, stdout: Any = sys.stdout) -> int:
    def say(obj: dict[str, Any]) -> None:
        stdout.write(json.dumps(obj) + "\n")
        stdout.flush()

    try:
        api, how = load_client()
    except ClientMissing as e:
        say({"ok": False, "kind": "client", "message": str(e)})
        return 1
    worker = Worker(api)
    say({"ok": True, "result": how})
    ops: dict[str, Callable[..., Any]] = {"connect": worker.connect, "load": worker.load,
                                          "run": worker.run, "capture": worker.capture,
                                          "close": worker.close}
    for line in stdin:
        req = json.loads(line)
        try:
            result = ops[req["op"]](**req.get("args", {}))
        except Exception as e:  # every client failure goes back to the driver
            say({"ok": False, "kind": classify(e), "message": f"{type(e).__name__}: {e}"})
        else:
            say({"ok": True, "result": result})
        if req["op"] == "close":
            break
    return 0


if __name__ == "__main__":
    sys.exit(serve())
