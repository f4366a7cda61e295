"""Send a few frames and capture what comes back: run inside the tester namespace.

    ip netns exec NS python -m srperf.drivers.linux_capture \\
        --tx t0 --rx t1 --frames in.pcap --out out.pcap --timeout 2.0

A scapy sniffer on the rx port is started (and confirmed running) before the
frames are sent once each on the tx port; it stops once as many frames as were
sent have arrived (plus a short grace period for extras) or after the timeout.
Frames travel as pcap files (Ethernet link type).  Used by
:meth:`srperf.drivers.linux.LinuxGenerator.capture` for behavior verification,
never for counting under load (captures lose frames under load; counters do not).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

LINKTYPE_ETHERNET = 1


def capture(tx: str, rx: str, frames: list[bytes], timeout_s: float,
            grace_s: float = 0.1, gap_s: float = 0.0) -> list[bytes]:
    """Send ``frames`` on ``tx`` (``gap_s`` s apart) and return the frames received on
    ``rx``, in order."""
    from scapy.all import AsyncSniffer, Raw, conf, sendp

    got: list[bytes] = []
    lock = threading.Lock()
    started = threading.Event()

    def keep(pkt: object) -> None:
        with lock:
            got.append(bytes(pkt))  # type: ignore[call-overload]

    # L2socket (not the default listen socket) skips frames going out of rx.
    sniffer = AsyncSniffer(iface=rx, prn=keep, store=False, L2socket=conf.L2socket,
                           started_callback=started.set)
    sniffer.start()
    try:
        if not started.wait(10.0):
            raise RuntimeError(f"sniffer on {rx} did not start")
        sendp([Raw(load=f) for f in frames], iface=tx, verbose=False, inter=gap_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with lock:
                if len(got) >= len(frames):
                    break
            time.sleep(0.01)
        else:
            return _stop(sniffer, got, lock)
        time.sleep(grace_s)
    except BaseException:
        _stop(sniffer, got, lock)
        raise
    return _stop(sniffer, got, lock)


def _stop(sniffer: object, got: list[bytes], lock: threading.Lock) -> list[bytes]:
    if getattr(sniffer, "running", False):
        sniffer.stop()  # type: ignore[attr-defined]
    with lock:
        return list(got)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tx", required=True, help="interface to send on")
    parser.add_argument("--rx", required=True, help="interface to capture on")
    parser.add_argument("--frames", required=True, help="pcap file of the frames to send")
    parser.add_argument("--out", required=True, help="pcap file for the received frames")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait at most")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between two sends")
    args = parser.parse_args(argv)

    from scapy.all import Ether, rdpcap, wrpcap

    frames = [bytes(p) for p in rdpcap(args.frames)]
    received = capture(args.tx, args.rx, frames, args.timeout, gap_s=args.gap)
    wrpcap(args.out, [Ether(f) for f in received], linktype=LINKTYPE_ETHERNET)
    print(f"sent {len(frames)} received {len(received)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
