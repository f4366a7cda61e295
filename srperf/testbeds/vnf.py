"""Legacy (SR-unaware) VNFs behind the SUT, for the SR proxy behaviors.

Each VNF is a network namespace ``<prefix>-vnf<i>`` joined to the SUT by a
veth: ``<vnf_if_prefix><i>`` (default ``vnf<i>``) in the SUT, ``eth0`` in the
VNF.  A VNF forwards plain IPv6 and IPv4 back to the SUT through default
routes to link-local next hops with static neighbours (no address, no ND, no
DAD on the link), so it never sees an SRH it would have to understand.

Every VNF also owns its SID (``Addressing.vnf_sid_base`` + i + 1) as a
``seg6local End`` route: the SR-aware VNF of SRNK's baseline (``end_baseline``).
Proxied traffic never reaches that route (a proxy hands the VNF the inner
packet, or under End.AM a packet whose DA is the last SID).

Modes (the same for every VNF of a set):
    forward  forward everything (default)
    drop     drop a share (``drop_share``, 0..1) of IP packets at ingress,
             with a tc cls_bpf program (``vnf_drop.c``: no tc gact here)
    sink     drop every IP packet (a VNF that keeps what it gets)
    delay    delay every packet by ``delay_ms``: tc netem on the VNF's egress, or,
             on a kernel without netem, the user-space delay line
             (:mod:`srperf.traffic.delay_line`) on its ingress (:attr:`VnfSet.delay_method`)
    snat     source-NAT forwarded packets to ``vnf_snat4``/``vnf_snat6``
             (nftables; UnsupportedBehavior when ``nft`` is not installed)

Counts are packets; delays milliseconds.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from srperf.traffic import delay_line
from srperf.build import ensure_built
from srperf.config.model import (TestbedConfig, sut_vnf_if, sut_vnf_mac,  # noqa: F401
                                 vnf_mac, vnf_sid)
from srperf.errors import SrperfError, UnsupportedBehavior
from srperf.util.netns import CommandFailed, CommandResult
from srperf.traffic.packet_socket import ns_packet_socket
from srperf.transports.base import Transport
from srperf.transports.netns import NetnsTransport
from srperf.resources import ebpf_dir
from srperf.util.wording import count

log = logging.getLogger(__name__)

MODES = ("forward", "drop", "sink", "delay", "snat")
MAX_VNFS = 256
"""The eBPF proxy's limit (SRP_MAX_VNFS in srproxy.h)."""
VNF_IF = "eth0"
"""The VNF's interface, inside its namespace."""
DROP_MAP = "vnf_drop_cfg"
DROP_STATS_MAP = "vnf_drop_stats"
SNAT_TABLE = "srperf_snat"
_BPF_CFLAGS = ["-O2", "-g", "-Wall", "-Wextra", "-target", "bpf", "-mcpu=v3",
               "-I/usr/include/x86_64-linux-gnu"]


class VnfError(SrperfError):
    """The VNF namespaces could not be built or configured."""


# VNF i's addressing lives with the rest of the addressing (srperf.config.model).


# --- the VNFs ------------------------------------------------------------------

@dataclass(frozen=True)
class VnfLink:
    """One VNF: its namespace and both ends of its link."""

    index: int
    ns: str
    sut_if: str
    sut_mac: str
    vnf_mac: str
    sid: str


class VnfSet:
    """``count`` legacy VNFs behind the SUT of ``tb``, all in ``mode``.

    ``up()`` builds them (or only re-applies the mode when exactly these VNFs
    exist already); ``down()`` removes every VNF namespace of the testbed.
    """

    def __init__(self, tb: TestbedConfig, count: int = 1, mode: str = "forward",
                 drop_share: float = 0.01, delay_ms: float = 5.0,
                 host: Transport | None = None) -> None:
        if not 1 <= count <= MAX_VNFS:
            raise ValueError(f"count {count}: must be 1..{MAX_VNFS}")
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: must be one of {', '.join(MODES)}")
        if not 0.0 <= drop_share <= 1.0:
            raise ValueError(f"drop_share {drop_share}: must be in [0, 1]")
        if delay_ms < 0:
            raise ValueError(f"delay_ms {delay_ms}: must be >= 0")
        self.tb, self.count, self.mode = tb, count, mode
        self._own_host = host is None
        self.host = host or NetnsTransport(tb.sut_ns)
        """The SUT node the VNFs hang off (commands without a VNF namespace run there)."""
        self.machine = self.host.machine()
        """The machine the SUT lives on: VNF namespaces are made and entered there."""
        self.drop_share, self.delay_ms = drop_share, delay_ms
        self.delay_method: str | None = None
        """How the delay mode was made: ``netem`` or ``delay-line`` (None: not delay)."""
        self._delay_lines: list[delay_line.DelayLine] = []
        a = tb.addressing
        self.links = [VnfLink(i, tb.vnf_ns(i), sut_vnf_if(a, i), sut_vnf_mac(a, i),
                              vnf_mac(a, i), vnf_sid(a, i)) for i in range(count)]

    def _run(self, argv: Sequence[str], ns: str | None = None, check: bool = True,
             input_text: str | None = None) -> CommandResult:
        """Run ``argv`` on the SUT node, inside VNF namespace ``ns`` when given."""
        if ns:
            result = self.machine.run(["ip", "netns", "exec", ns, *argv], input_text=input_text)
        else:
            result = self.host.run(list(argv), input_text=input_text)
        if check and not result.ok:
            raise CommandFailed(result)
        return result

    def _netns_names(self) -> list[str]:
        out = self.machine.check(["ip", "netns", "list"]).stdout
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    def _has_tool(self, tool: str) -> bool:
        return self._run(["sh", "-c", f"command -v {tool}"], check=False).ok

    # -- queries ---------------------------------------------------------------
    def existing(self) -> list[str]:
        """Namespaces of this testbed's VNFs that exist now (any count)."""
        pattern = re.compile(re.escape(f"{self.tb.prefix}-vnf") + r"\d+")
        return sorted(n for n in self._netns_names() if pattern.fullmatch(n))

    def _sut_vnf_links(self) -> list[str]:
        res = self._run(["ip", "-j", "link", "show"], check=False)
        if not res.ok:
            return []
        pattern = re.compile(re.escape(self.tb.addressing.vnf_if_prefix) + r"\d+")
        out = res.stdout
        return [d["ifname"] for d in json.loads(out) if pattern.fullmatch(d["ifname"])]

    def is_up(self) -> bool:
        """True when exactly these VNFs and their SUT-side links exist."""
        want = sorted(link.ns for link in self.links)
        if self.existing() != want:
            return False
        return sorted(self._sut_vnf_links()) == sorted(link.sut_if for link in self.links)

    # -- up / down -------------------------------------------------------------
    def up(self) -> "VnfSet":
        """Build the VNFs (idempotent) and apply the mode."""
        if not self._run(["true"], check=False).ok:
            raise VnfError(f"the SUT ({self.host.where}) cannot be reached: "
                           "bring the testbed up first")
        try:
            if not self.is_up():
                self.down()
                self._create()
            self._apply_mode()
        except BaseException:
            self.down()   # nothing half-built stays behind (an unsupported mode included)
            raise
        if self._own_host:
            self.host.close()  # the drop program is loaded: its pushed object can go
        log.info("%s up in mode %s", count(self.count, "VNF"), self.mode)
        return self

    def down(self) -> None:
        """Remove every VNF namespace of the testbed (their veths go with them), and
        their delay lines."""
        self._remove_delay_lines()
        for ns in self.existing():
            for stale in delay_line.stale_namespaces(self._netns_names(), ns):
                self.machine.run(["ip", "netns", "del", stale])   # of a killed run
            self.machine.run(["ip", "netns", "del", ns])
        deadline = time.monotonic() + 5.0
        while self._sut_vnf_links():
            if time.monotonic() > deadline:
                for dev in self._sut_vnf_links():
                    self._run(["ip", "link", "del", "dev", dev], check=False)
                break
            time.sleep(0.02)
        if self._own_host:
            self.host.close()

    def __enter__(self) -> "VnfSet":
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- construction ----------------------------------------------------------
    def _create(self) -> None:
        a = self.tb.addressing
        for link in self.links:
            self.machine.check(["ip", "netns", "add", link.ns])
            # defaults first: eth0 is born in the namespace with them
            self._run(["sysctl", "-q", "-w",
                 "net.ipv6.conf.default.accept_dad=0",
                 "net.ipv6.conf.default.addr_gen_mode=1",
                 "net.ipv6.conf.default.accept_ra=0",
                 "net.ipv6.conf.default.router_solicitations=0",
                 "net.ipv6.conf.all.forwarding=1",
                 "net.ipv4.ip_forward=1",
                 "net.ipv6.conf.all.seg6_enabled=1",
                 "net.ipv6.conf.default.seg6_enabled=1",
                 "net.ipv4.conf.all.rp_filter=0",
                 "net.ipv4.conf.default.rp_filter=0",
                 "net.ipv4.conf.all.send_redirects=0",
                 "net.ipv4.conf.default.send_redirects=0"], ns=link.ns)
            self._run(["ip", "link", "add", "name", link.sut_if, "address", link.sut_mac,
                       "type", "veth", "peer", "name", VNF_IF, "netns", link.ns,
                       "address", link.vnf_mac])
            self._run(["ip", "-batch", "-"], ns=link.ns, input_text="\n".join([
                "link set dev lo up",
                f"link set dev {VNF_IF} up",
                f"neigh replace {a.sut_vnf_ip6} lladdr {link.sut_mac} dev {VNF_IF} "
                "nud permanent",
                f"neigh replace {a.sut_vnf_ip4} lladdr {link.sut_mac} dev {VNF_IF} "
                "nud permanent",
                f"route replace default via {a.sut_vnf_ip6} dev {VNF_IF}",
                f"route replace default via {a.sut_vnf_ip4} dev {VNF_IF} onlink",
                f"route replace {link.sid}/128 encap seg6local action End dev {VNF_IF}",
            ]) + "\n")
        self._run(["ip", "-batch", "-"], input_text="".join(
            f"link set dev {link.sut_if} up\n"
            f"neigh replace {a.vnf_ip6} lladdr {link.vnf_mac} dev {link.sut_if} nud permanent\n"
            f"neigh replace {a.vnf_ip4} lladdr {link.vnf_mac} dev {link.sut_if} nud permanent\n"
            for link in self.links))

    # -- modes -------------------------------------------------------------------
    def _apply_mode(self) -> None:
        self._remove_delay_lines()
        for link in self.links:
            self._reset_mode(link)
        if self.mode == "forward":
            return
        if self.mode in ("drop", "sink"):
            share = 1.0 if self.mode == "sink" else self.drop_share
            obj = self.host.push(Path(drop_object()))
            for link in self.links:
                self._attach_drop(link, obj, round(share * 1_000_000))
        elif self.mode == "delay":
            self._apply_delay()
        elif self.mode == "snat":
            if not self._has_tool("nft"):
                raise UnsupportedBehavior("vnf mode snat", "nft (nftables) is not installed "
                                          f"on the SUT ({self.host.where})")
            a = self.tb.addressing
            rules = "".join(
                f"table {family} {SNAT_TABLE} {{\n  chain post {{\n"
                f"    type nat hook postrouting priority 100;\n"
                f"    oifname \"{VNF_IF}\" snat to {addr};\n  }}\n}}\n"
                for family, addr in (("ip", a.vnf_snat4), ("ip6", a.vnf_snat6)))
            for link in self.links:
                res = self._run(["nft", "-f", "-"], ns=link.ns, input_text=rules, check=False)
                if not res.ok:
                    raise UnsupportedBehavior("vnf mode snat", f"nft refused the SNAT rules: "
                                              f"{res.stderr.strip()}")

    def _apply_delay(self) -> None:
        """netem on each VNF's egress where the kernel has it, else a delay line on its
        ingress: either way every packet through the VNF waits ``delay_ms`` once."""
        probe = self._run(["tc", "qdisc", "replace", "dev", VNF_IF, "root", "netem",
                           "delay", f"{self.delay_ms}ms", "limit", "1000000"],
                          ns=self.links[0].ns, check=False)
        if probe.ok:
            for link in self.links[1:]:
                self._run(["tc", "qdisc", "replace", "dev", VNF_IF, "root", "netem", "delay",
                           f"{self.delay_ms}ms", "limit", "1000000"], ns=link.ns)
            self.delay_method = "netem"
            return
        log.info("vnf mode delay: no netem (%s): a user-space delay line per VNF",
                 (probe.stderr or probe.stdout).strip())
        for link in self.links:
            try:
                self._delay_lines.append(delay_line.insert(self.machine, link.ns, VNF_IF,
                                                           self.delay_ms))
            except delay_line.DelayLineError as exc:
                raise UnsupportedBehavior("vnf mode delay", f"no netem, and the delay line "
                                          f"could not be inserted: {exc}") from exc
        self.delay_method = "delay-line"

    def _remove_delay_lines(self) -> None:
        lines, self._delay_lines = self._delay_lines, []
        for line in lines:
            line.remove()
        self.delay_method = None

    def delay_counts(self) -> dict[str, int]:
        """Frames the delay lines of the VNFs held and sent on, summed ({} with netem)."""
        total: dict[str, int] = {}
        for line in self._delay_lines:
            for key, value in line.counters().items():
                total[key] = total.get(key, 0) + value
        return total

    def _reset_mode(self, link: VnfLink) -> None:
        for stale in delay_line.stale_namespaces(self._netns_names(), link.ns):
            self.machine.run(["ip", "netns", "del", stale])   # another VnfSet's delay line
        self._run(["tc", "qdisc", "del", "dev", VNF_IF, "clsact"], ns=link.ns, check=False)
        self._run(["tc", "qdisc", "del", "dev", VNF_IF, "root"], ns=link.ns, check=False)
        if self._has_tool("nft"):
            for family in ("ip", "ip6"):
                self._run(["nft", "delete", "table", family, SNAT_TABLE], ns=link.ns,
                          check=False)

    def _attach_drop(self, link: VnfLink, obj: str, ppm: int) -> None:
        self._run(["tc", "qdisc", "add", "dev", VNF_IF, "clsact"], ns=link.ns)
        self._run(["tc", "filter", "add", "dev", VNF_IF, "ingress", "pref", "1", "handle", "1",
                   "bpf", "direct-action", "object-file", obj, "section", "tc"], ns=link.ns)
        map_id = self._drop_map_id(link.ns, DROP_MAP)
        value = [f"{(ppm >> s) & 0xff:02x}" for s in (0, 8, 16, 24)]
        self._run(["bpftool", "map", "update", "id", str(map_id), "key", "hex", "00", "00",
                   "00", "00", "value", "hex", *value])

    def _drop_map_id(self, ns: str, name: str) -> int:
        filters = json.loads(self._run(["tc", "-j", "filter", "show", "dev", VNF_IF, "ingress"],
                                       ns=ns).stdout or "[]")
        for f in filters:
            prog = f.get("options", {}).get("prog", {})
            if "id" not in prog:
                continue
            info = json.loads(self._run(["bpftool", "-j", "prog", "show", "id",
                                         str(prog["id"])]).stdout)
            for map_id in info.get("map_ids", []):
                minfo = json.loads(self._run(["bpftool", "-j", "map", "show", "id",
                                              str(map_id)]).stdout)
                if minfo.get("name") == name:
                    return int(map_id)
        raise VnfError(f"no {name} map on {ns}/{VNF_IF}: the drop program is not attached")

    # -- observation and injection ----------------------------------------------
    def drop_counts(self) -> dict[str, int]:
        """IP packets the drop program ``passed`` and ``dropped``, summed over the VNFs."""
        total = {"passed": 0, "dropped": 0}
        if self.mode not in ("drop", "sink"):
            return total
        for link in self.links:
            map_id = self._drop_map_id(link.ns, DROP_STATS_MAP)
            dump = json.loads(self._run(["bpftool", "-j", "map", "dump", "id",
                                         str(map_id)]).stdout)
            for entry in dump:
                formatted = entry.get("formatted", entry)
                key = int(formatted["key"])
                n = sum(int(v["value"]) for v in formatted["values"])
                total["passed" if key == 0 else "dropped"] += n
        return total

    def frame_to_sut(self, index: int, ip_packet: bytes) -> bytes:
        """``ip_packet`` (IPv6 or IPv4) in the Ethernet header VNF ``index`` puts on it."""
        link = self.links[index]
        ethertype = b"\x86\xdd" if ip_packet[0] >> 4 == 6 else b"\x08\x00"
        return (bytes.fromhex(link.sut_mac.replace(":", ""))
                + bytes.fromhex(link.vnf_mac.replace(":", "")) + ethertype + ip_packet)

    def inject(self, index: int, frames: Sequence[bytes], gap_s: float = 0.0) -> None:
        """Send ``frames`` out of VNF ``index``'s interface towards the SUT, in order.

        Emulates a VNF that returns packets late, reordered, duplicated or
        invented (``gap_s`` seconds between frames).
        """
        sock = ns_packet_socket(self.links[index].ns, VNF_IF)
        try:
            for frame in frames:
                sock.send(frame)
                if gap_s:
                    time.sleep(gap_s)
        finally:
            sock.close()


def drop_object() -> str:
    """Build (if needed) the VNF drop program; return its object path."""
    src = ebpf_dir() / "vnf_drop.c"
    out = ensure_built("vnf_drop.o", [src],
                       ["clang", *_BPF_CFLAGS, "-c", str(src), "-o", "{out}"])
    return str(out)



__all__ = ["VnfSet", "VnfLink", "VnfError", "MODES", "vnf_sid", "vnf_mac", "sut_vnf_mac",
           "sut_vnf_if", "drop_object"]
