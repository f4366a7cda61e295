"""Raw AF_PACKET sockets in a network namespace, opened from this process.

A socket is created by a short-lived thread that joins the namespace (setns
changes only the calling thread, and the thread ends right after), and it stays
in that namespace for its whole life: no ``ip netns exec`` child, no second
Python interpreter, no scapy import.  Used for behavior verification (a few
frames sent, the answers captured) and by the VNF's frame injection; never for
counting under load (captures lose frames under load, counters do not).

Durations are in seconds.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading
import time

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
"""``sll_pkttype`` of a frame this host sent (an rx socket sees its own port's
outgoing frames too; a capture skips them)."""


def ns_packet_socket(ns: str | None, dev: str) -> socket.socket:
    """An AF_PACKET socket bound to ``dev`` in namespace ``ns`` (all protocols);
    ``ns`` None or empty: this process's own namespace."""
    if not ns:
        return _bound_socket(dev)
    result: dict[str, object] = {}

    def work() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({ns}): {os.strerror(err)}")
            finally:
                os.close(fd)
            result["sock"] = _bound_socket(dev)
        except BaseException as exc:  # handed to the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=work, name=f"setns-{ns}")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["sock"]  # type: ignore[return-value]


def _bound_socket(dev: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        sock.bind((dev, 0))
    except BaseException:
        sock.close()
        raise
    return sock


def receive_frames(sock: socket.socket, timeout_s: float, count: int | None = None
                   ) -> list[bytes]:
    """Frames arriving on ``sock`` (outgoing ones skipped) until ``count`` or the timeout."""
    frames: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while count is None or len(frames) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            data, addr = sock.recvfrom(65535)
        except socket.timeout:
            break
        if addr[2] != PACKET_OUTGOING:
            frames.append(data)
    return frames


GRACE_S = 0.02
"""After the count has arrived, how long a capture keeps listening for extras (a
behavior that duplicates): far beyond a path's latency here (microseconds on veth,
well under a millisecond through a physical SUT)."""


def send_and_capture(ns: str | None, tx: str, rx: str, frames: list[bytes],
                     timeout_s: float, grace_s: float = GRACE_S, gap_s: float = 0.0
                     ) -> list[bytes]:
    """Send each of ``frames`` once on ``tx`` (``gap_s`` apart) and return what arrived
    on ``rx``, in order, both ports in namespace ``ns``.

    The receiving socket is bound before the first send.  It waits until as many
    frames as were sent have arrived or ``timeout_s`` has passed; after a full
    count it keeps ``grace_s`` more for extras (a behavior that duplicates).
    """
    rx_sock = ns_packet_socket(ns, rx)
    try:
        tx_sock = ns_packet_socket(ns, tx)
        try:
            for i, frame in enumerate(frames):
                if i and gap_s > 0:
                    time.sleep(gap_s)
                tx_sock.send(frame)
        finally:
            tx_sock.close()
        got = receive_frames(rx_sock, timeout_s, count=len(frames))
        if len(got) >= len(frames) and grace_s > 0:
            got += receive_frames(rx_sock, grace_s)
        return got
    finally:
        rx_sock.close()
