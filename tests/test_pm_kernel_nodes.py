"""The kernel-path loss-monitoring nodes (ip6tables, nftables, ipset).

Fast tests (a fake runner records the commands and answers with listings): the rules
each node generates, the parsing of each tool's listing, that a colour flip is one
commit, that detach removes exactly the node's own objects and is idempotent, the
refusals and the ``unsupported`` probe.  The netns tests (prefix ``m4k``) run a chain

    m4k-in (ingress node: local UDP sockets, a seg6 encap route per flow = H.Encaps,
            the node counting and colouring on i0's way out)
      i0 <-> l0  m4k-lk (a bridge; vnf_drop on l0's tc ingress: the planted loss)  l1 <-> e0
    m4k-eg (egress node counting per colour on e0's way in; a packet socket is the sink)

per implementation, and check the monitor's per-block loss against the truth (what the
sockets sent, what the sink saw), packet for packet, then that detach leaves nothing.
The sender is the ingress node's own stack (not a packet socket, which would pass by
netfilter): what it sends goes through H.Encaps and POSTROUTING as a SUT's would.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from srperf.errors import ConfigError
from srperf.pm import ip6tables_node, ipset_node, nft_node, xtables
from srperf.pm.implementations import IMPLEMENTATIONS, check_flows, lookup
from srperf.pm.kernel_base import PmNodeError, PmUnsupported, node_tag
from srperf.pm.model import BlockLoss, Count, Flow, PmSettings, make_flows
from srperf.pm.monitor import LossMonitor

from pm_chain import plant_drop, runner_in

KERNEL = ("ip6tables", "nftables", "ipset")
FLOWS = make_flows([["fc00:1::1", "fc00:1::2", "fc00:1::3"], ["fc00:2::1"],
                    ["fc00:3::1", "fc00:3::2", "fc00:3::3", "fc00:3::4", "fc00:3::5"]])


class FakeRunner:
    """Records every argv; answers listings from ``answers`` (first word after the tool
    -> text) and fails the commands whose joined argv contains a key of ``fail``."""

    def __init__(self, answers: dict[str, str] | None = None,
                 fail: dict[str, str] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.answers = answers or {}
        self.fail = fail or {}

    def __call__(self, argv: list[str]) -> str:
        self.calls.append(list(argv))
        line = " ".join(argv)
        for key, why in self.fail.items():
            if key in line:
                raise RuntimeError(why)
        for key, text in self.answers.items():
            if line.startswith(key):
                return text
        return ""

    def fed(self, k: int = -1) -> list[str]:
        """The lines handed on stdin by call ``k`` (``sh -c 'printf | tool' sh lines``)."""
        argv = self.calls[k]
        assert argv[:2] == ["sh", "-c"], argv
        return argv[4:]


# --- registry, tags, refusals -------------------------------------------------------

def test_registered_with_both_roles_and_a_probe() -> None:
    for name in KERNEL:
        impl = lookup(name, "ingress", "x.yaml")
        assert impl.roles == ("ingress", "egress") and impl.probe is not None
        assert impl.max_flows == 1024
    assert IMPLEMENTATIONS["ebpf_tc"].probe is None   # the eBPF ones are as they were


def test_node_tag_fits_every_name_and_keeps_nodes_apart() -> None:
    assert node_tag("ingress", "i0") == "ii0" and node_tag("egress", "i0") == "ei0"
    long = node_tag("ingress", "a-very-long-dev")
    assert long.startswith("i") and len("srperf_pm_" + long + "_c0") <= 28
    assert node_tag("egress", "a.b") != node_tag("egress", "a_b")


def test_refusals_name_the_key() -> None:
    too_many = [Flow(i, (f"fc00::{i + 1:x}",)) for i in range(1025)]
    for name in KERNEL:
        with pytest.raises(ConfigError, match=r"pm.flows = 1025: .* at most 1024"):
            check_flows(IMPLEMENTATIONS[name], too_many, "x.yaml")
    same_first = make_flows([["fc00::1", "fc00::2"], ["fc00::1", "fc00::3"]])
    check_flows(IMPLEMENTATIONS["nftables"], same_first, "x.yaml")   # told apart
    with pytest.raises(ConfigError, match=r"pm.flows\[1\] .*flow 0 has fc00::1 too"):
        check_flows(IMPLEMENTATIONS["ipset"], same_first, "x.yaml")
    node = ipset_node.IpsetNode(FakeRunner(), "ingress", "i0")
    with pytest.raises(ConfigError):
        node.set_flows(same_first)
    assert node.runner.calls == []   # refused before anything was configured


# --- ip6tables ------------------------------------------------------------------------

def test_ip6tables_match_is_the_whole_sid_list() -> None:
    assert ip6tables_node.flow_match(FLOWS[1]) == \
        "-m srh --srh-last-entry-eq 0 --srh-lsid fc00:2::1/128"
    m = ip6tables_node.flow_match(FLOWS[0])
    # Segment List[0] = the last SID (lsid); [1] and [2] by u32 at 48 + 16 i
    assert "--srh-last-entry-eq 2 --srh-lsid fc00:1::3/128" in m
    assert '"4&0xff00=0x2b00&&64=0xfc000001&&68=0x0&&72=0x0&&76=0x2&&' in m
    assert "80=0xfc000001&&84=0x0&&88=0x0&&92=0x1\"" in m
    m5 = ip6tables_node.flow_match(FLOWS[2])     # 1 + 16 tests: two u32 matches
    assert m5.count("-m u32") == 2 and "124=0x1" in m5


def test_ip6tables_rules_flip_and_counts() -> None:
    base = "srperf_pm_ii0"
    lines = ip6tables_node.attach_lines("ingress", "i0", base)
    assert lines[-1] == f"-A POSTROUTING -o i0 -m rt --rt-type 4 -j {base}"
    assert f"-A {base} -j {base}_c0" in lines
    eg = ip6tables_node.attach_lines("egress", "e0", "srperf_pm_ee0")
    assert "-A srperf_pm_ee0 -m tos --tos 0x04/0x04 -g srperf_pm_ee0_c1" in eg
    run = FakeRunner()
    node = ip6tables_node.Ip6tablesNode(run, "ingress", "i0")
    node.set_flows(FLOWS)
    fed = run.fed()
    assert fed[0] == "*mangle" and fed[-1] == "COMMIT"
    assert sum(1 for x in fed if x.startswith(f"-A {base}_c1 ")) == 3
    assert f'--comment "{base} f2 c1" -g {base}_m1' in fed[-2]
    run.calls.clear()
    node.set_colour(1, True)
    assert len(run.calls) == 1      # one commit: the flip is atomic
    assert run.fed()[1:-1] == [f"-F {base}", f"-A {base} -j {base}_c1", f"-F {base}_m1",
                               f"-A {base}_m1 -j TOS --set-tos 0x04/0x04"]
    node.set_colour(0, False)
    assert run.fed()[1:-1] == [f"-F {base}", f"-A {base} -j {base}_c0", f"-F {base}_m0"]
    saved = (f'[5:500] -A {base}_c0 -m srh --srh-last-entry-eq 0 -m comment --comment '
             f'"{base} f1 c0" -g {base}_m0\n'
             f'[0:0] -A {base}_c1 -m comment --comment "{base} f1 c1" -g {base}_m1\n'
             f'[7:700] -A other -m comment --comment "{base} f0 c0"\n'
             f'[9:900] -A {base}_c1 -m comment --comment "srperf_pm_ii00 f0 c1"\n')
    assert xtables.parse_counts(saved, base) == {2: Count(5, 500)}
    with pytest.raises(PmNodeError):
        ip6tables_node.Ip6tablesNode(FakeRunner(), "egress", "e0").set_colour(1, True)


SAVED = """*mangle
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:keep_me - [0:0]
:srperf_pm_ii0 - [0:0]
:srperf_pm_ii0_c0 - [0:0]
:srperf_pm_ii00 - [0:0]
-A POSTROUTING -o i0 -m rt --rt-type 4 -j srperf_pm_ii0
-A POSTROUTING -o i0 -j keep_me
-A POSTROUTING -j srperf_pm_ii00
-A srperf_pm_ii0 -j srperf_pm_ii0_c0
-A keep_me -m comment --comment "srperf_pm_ii0 f0 c0" -j ACCEPT
COMMIT
"""


def test_xtables_removal_takes_exactly_the_nodes_own() -> None:
    lines = xtables.removal(SAVED, "srperf_pm_ii0")
    assert lines == ["-D POSTROUTING -o i0 -m rt --rt-type 4 -j srperf_pm_ii0",
                     "-F srperf_pm_ii0", "-F srperf_pm_ii0_c0",
                     "-X srperf_pm_ii0", "-X srperf_pm_ii0_c0"]
    run = FakeRunner({"ip6tables-save": "*mangle\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n"})
    ip6tables_node.Ip6tablesNode(run, "ingress", "i0").detach()   # nothing there: no-op
    assert [c[0] for c in run.calls] == ["ip6tables-save"]


# --- nftables ------------------------------------------------------------------------

def test_nft_match_flip_and_counts() -> None:
    assert nft_node.flow_match(FLOWS[1]) == "srh last-entry 0 srh sid[1] fc00:2::1"
    m = nft_node.flow_match(FLOWS[0])
    assert m.startswith("ip6 nexthdr 43 srh last-entry 2 srh sid[1] fc00:1::3 "
                        "srh sid[2] fc00:1::2 @nh,640,128 0xfc000001")
    run = FakeRunner()
    node = nft_node.NftNode(run, "ingress", "i0")
    node.set_flows(FLOWS[:2])
    node.set_colour(1, True)
    assert len(run.calls) == 2        # one nft command line each: one transaction each
    flip = " ".join(run.calls[-1])
    assert flip == ('nft flush chain ip6 srperf_pm_ii0 post ; add rule ip6 srperf_pm_ii0 post '
                    'oif "i0" rt type 4 jump c1 ; flush chain ip6 srperf_pm_ii0 m1 ; '
                    'add rule ip6 srperf_pm_ii0 m1 @nh,9,1 set 1 ;')
    eg = " ; ".join(nft_node.attach_commands("egress", "e0", "T"))
    assert 'iif "e0" rt type 4 @nh,9,1 1 goto c1 ; add rule ip6 T pre iif "e0" rt type 4 ' \
           'goto c0' in eg
    listing = {"nftables": [{"metainfo": {}}, {"rule": {
        "chain": "c1", "comment": "f1 c1", "expr": [{"match": {}}, {"counter": {
            "packets": 3, "bytes": 360}}, {"return": None}]}}, {"rule": {
                "chain": "c0", "comment": "f0 c0", "expr": [{"counter": {
                    "packets": 0, "bytes": 0}}]}}, {"rule": {"chain": "post", "expr": []}}]}
    assert nft_node.parse_counts(json.dumps(listing)) == {3: Count(3, 360)}


def test_nft_detach_deletes_only_its_table_once() -> None:
    tables = {"nftables": [{"metainfo": {}}, {"table": {"family": "ip6", "name": "mangle"}},
                           {"table": {"family": "ip6", "name": "srperf_pm_ii0"}},
                           {"table": {"family": "inet", "name": "srperf_pm_ii0"}}]}
    run = FakeRunner({"nft -j list tables": json.dumps(tables)})
    nft_node.NftNode(run, "ingress", "i0").detach()
    assert run.calls[-1] == ["nft", "delete", "table", "ip6", "srperf_pm_ii0"]
    run = FakeRunner({"nft -j list tables": json.dumps({"nftables": []})})
    nft_node.NftNode(run, "ingress", "i0").detach()
    assert run.calls == [["nft", "-j", "list", "tables"]]


# --- ipset ----------------------------------------------------------------------------

def test_ipset_sets_swap_flip_and_counts() -> None:
    base = "srperf_pm_ei0"
    lines = ipset_node.flow_lines(base, FLOWS[:2])
    assert lines[0] == f"create {base}_n0 hash:net family inet6 counters maxelem 1024"
    assert f"add {base}_n1 fc00:2::1/128" in lines
    assert lines[-4:] == [f"swap {base}_n0 {base}_c0", f"destroy {base}_n0",
                          f"swap {base}_n1 {base}_c1", f"destroy {base}_n1"]
    eg = ipset_node.attach_lines("egress", "i0", base)
    assert f"-A {base} -m tos --tos 0x04/0x04 -m set --match-set {base}_c1 dst -j RETURN" in eg
    assert ipset_node.colour_lines("srperf_pm_ii0", 0, True)[-1] == \
        "-A srperf_pm_ii0_k0 -m set --match-set srperf_pm_ii0_c0 dst -j TOS --set-tos 0x00/0x04"
    listing = (f"create {base}_c0 hash:net family inet6 hashsize 1024 maxelem 1024 counters\n"
               f"add {base}_c0 fc00:2::1 packets 4 bytes 400\n"
               f"add {base}_c0 fc00:1::1 packets 0 bytes 0\n"
               f"add {base}_c1 fc00:1::1 packets 2 bytes 200\n"
               f"add other fc00:1::1 packets 9 bytes 900\n")
    assert ipset_node.parse_counts(listing, base, FLOWS[:2]) == {2: Count(4, 400),
                                                                 1: Count(2, 200)}


def test_ipset_detach_destroys_only_its_sets() -> None:
    run = FakeRunner({"ip6tables-save": SAVED.replace("ii0", "ei0"),
                      "ipset list -n": "srperf_pm_ei0_c0\nsrperf_pm_ei0_c1\nkeep\n"
                                       "srperf_pm_ei00_c0\n"})
    ipset_node.IpsetNode(run, "egress", "i0").detach()
    assert [c for c in run.calls if c[:2] == ["ipset", "destroy"]] == [
        ["ipset", "destroy", "srperf_pm_ei0_c0"], ["ipset", "destroy", "srperf_pm_ei0_c1"]]


def test_ipset_destroy_waits_only_while_the_set_is_in_use() -> None:
    tries = []

    def runner(argv: list[str]) -> str:
        tries.append(argv)
        if len(tries) < 3:
            raise RuntimeError("ipset v7.17: Set cannot be destroyed: it is in use by a "
                               "kernel component")
        return ""
    ipset_node.destroy(runner, "srperf_pm_ii0_c0", sleep=lambda s: None)
    assert len(tries) == 3
    with pytest.raises(RuntimeError, match="does not exist"):
        ipset_node.destroy(FakeRunner(fail={"destroy": "The set does not exist"}), "x",
                           sleep=lambda s: None)


# --- unsupported ---------------------------------------------------------------------

@pytest.mark.parametrize("name, fail, said", [
    ("ip6tables", {"--srh-lsid": "ip6tables-restore: Couldn't load match `srh'"},
     "Couldn't load match `srh'"),
    ("nftables", {"nft -c": "Error: Could not process rule: Operation not supported"},
     "Operation not supported"),
    ("ipset", {"ipset --version": "[Errno 2] No such file or directory: 'ipset'"},
     "ipset: [Errno 2] No such file"),
])
def test_missing_feature_is_unsupported_before_configuring(name: str, fail: dict[str, str],
                                                           said: str) -> None:
    run = FakeRunner(fail=fail)
    with pytest.raises(PmUnsupported, match=re.escape(said)):
        IMPLEMENTATIONS[name].attach(run, "ingress", "i0", Path("."))
    # nothing but the probe ran: no hook rule, no table, no set of the node's name
    joined = [" ".join(c) for c in run.calls]
    assert not [c for c in joined if "POSTROUTING -o i0" in c or "add table ip6 srperf_pm_ii0 "
                in c.replace(";", " ") and "nft -c" not in c]


# --- the chain, on the real tools (netns) --------------------------------------------

IN, LK, EG = "m4k-in", "m4k-lk", "m4k-eg"
EG_MAC = "02:4b:00:00:00:e0"
GW = "fc00:4b::20"
SID_LISTS = [[f"fc00:4b:{f + 1:x}::1", f"fc00:4b:{f + 1:x}::2", "fc00:4b:ff::d"]
             for f in range(2)] + [["fc00:4b:3::1"],
                                   [f"fc00:4b:4::{k + 1:x}" for k in range(4)] + ["fc00:4b:ff::d"]]
"""Four flows: two of three SIDs sharing the last, one of one SID, one of five (the
ip6tables match needs two u32s for it, nft raw payload for three of its entries)."""
MARK = re.compile(rb"m4k f(\d+) b(\d+) s\d+")
CLONE_NEWNET = 0x40000000


def _run(argv: list[str], ns: str | None = None, check: bool = True):  # type: ignore[no-untyped-def]
    from srperf.util.netns import run
    return run(argv, ns=ns, check=check)


def _udp_socket(ns: str) -> socket.socket:
    """An IPv6 UDP socket created in namespace ``ns`` (setns in a short thread)."""
    out: dict[str, object] = {}

    def work() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns({ns})")
            finally:
                os.close(fd)
            out["sock"] = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        except BaseException as exc:  # handed to the caller
            out["error"] = exc

    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out["sock"]  # type: ignore[return-value]


def _chain_up() -> None:
    for ns in (IN, LK, EG):
        _run(["ip", "netns", "add", ns])
    _run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
          "net.ipv6.conf.default.disable_ipv6=1"], ns=LK)
    for ns in (IN, EG):
        _run(["sysctl", "-q", "-w", "net.ipv6.conf.default.accept_dad=0",
              "net.ipv6.conf.default.autoconf=0", "net.ipv6.conf.default.accept_ra=0"], ns=ns)
    _run(["ip", "-n", IN, "link", "add", "i0", "type", "veth", "peer", "name", "l0",
          "netns", LK])
    _run(["ip", "-n", EG, "link", "add", "e0", "address", EG_MAC, "type", "veth", "peer",
          "name", "l1", "netns", LK])
    _run(["ip", "-n", LK, "link", "add", "br0", "type", "bridge"])
    for dev in ("l0", "l1"):
        _run(["ip", "-n", LK, "link", "set", dev, "master", "br0", "up"])
    _run(["ip", "-n", LK, "link", "set", "br0", "up"])
    for ns, dev, addr in ((IN, "i0", "fc00:4b::10"), (EG, "e0", GW)):
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _run(["ip", "-n", ns, "addr", "add", f"{addr}/64", "dev", dev, "nodad"])
        _run(["ip", "-n", ns, "link", "set", dev, "up"])
    _run(["ip", "-n", IN, "neigh", "replace", GW, "lladdr", EG_MAC, "dev", "i0",
          "nud", "permanent"])
    _run(["ip", "-n", IN, "-6", "route", "add", "fc00:4b::/32", "via", GW, "dev", "i0"])
    for f, sids in enumerate(SID_LISTS):   # H.Encaps: one SR policy per flow
        _run(["ip", "-n", IN, "-6", "route", "add", f"fd00:4b:{f + 1:x}::/64", "encap", "seg6",
              "mode", "encap", "segs", ",".join(sids), "dev", "i0"])


def _chain_down() -> None:
    for ns in (IN, LK, EG):
        _run(["ip", "netns", "del", ns], check=False)


def leftovers() -> list[str]:
    """Every srperf_pm object left in the two nodes' namespaces (rules, tables, sets)."""
    out = []
    for ns in (IN, EG):
        for argv in (["ip6tables-save"], ["nft", "list", "ruleset"], ["ipset", "list", "-n"]):
            text = _run(argv, ns, check=False).stdout
            out += [f"{ns}: {line.strip()}" for line in text.splitlines() if "srperf_pm" in line]
    return out


@dataclass
class Chain:
    ingress: object
    egress: object
    names: tuple[str, str]
    detached: list[object] = field(default_factory=list)


@pytest.fixture
def chain(request: pytest.FixtureRequest) -> Iterator[Chain]:
    ing_name, eg_name = request.param
    from srperf.pm.build import build_pm

    obj_dir = build_pm()[0].parent
    _chain_down()
    nodes: list[object] = []
    try:
        _chain_up()
        ing = IMPLEMENTATIONS[ing_name].attach(runner_in(IN), "ingress", "i0", obj_dir)
        nodes.append(ing)
        eg = IMPLEMENTATIONS[eg_name].attach(runner_in(EG), "egress", "e0", obj_dir)
        nodes.append(eg)
        yield Chain(ing, eg, (ing_name, eg_name))
    finally:
        for node in reversed(nodes):
            try:
                node.detach()  # type: ignore[attr-defined]
            except Exception:  # the namespace's removal below takes it anyway
                pass
        _chain_down()
    assert not [n for n in _run(["ip", "netns", "list"]).stdout.split() if n.startswith("m4k-")]


def _run_blocks(chain: Chain, blocks: int, per_block: int, marking: bool = True
                ) -> tuple[list[BlockLoss], Counter[tuple[int, int]], Counter[tuple[int, int]]]:
    """``blocks`` blocks of ``per_block`` datagrams per flow: the monitor's losses, what
    the sockets sent and what the sink saw, per (flow, block)."""
    from srperf.traffic.packet_socket import ns_packet_socket, receive_frames

    flows = make_flows(SID_LISTS)
    mon = LossMonitor(chain.ingress, chain.egress, flows,  # type: ignore[arg-type]
                      PmSettings(period_s=1.0, marking=marking))
    mon.start()
    tx = _udp_socket(IN)
    sink = ns_packet_socket(EG, "e0")
    sink.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)   # SO_RCVBUFFORCE: a block fits
    sent: Counter[tuple[int, int]] = Counter()
    seen: Counter[tuple[int, int]] = Counter()
    losses: list[BlockLoss] = []
    try:
        for block in range(blocks):
            for seq in range(per_block):
                for f in flows:
                    tx.sendto(f"m4k f{f.index} b{block} s{seq}".encode(),
                              (f"fd00:4b:{f.index + 1:x}::1", 4646))
                    sent[(f.index, block)] += 1
                if seq % 50 == 49:
                    time.sleep(0.002)   # paced: no veth backlog overflows
            ended = mon.flip()
            for frame in receive_frames(sink, timeout_s=0.5):
                match = MARK.search(frame)
                if match:
                    f_, b = int(match.group(1)), int(match.group(2))
                    seen[(f_, b)] += 1
                    tclass = ((frame[14] & 0x0F) << 4) | (frame[15] >> 4)
                    assert (1 if tclass & 0x04 else 0) == (b % 2 if marking else 0), (f_, b)
            losses += mon.read(ended)[1]
    finally:
        tx.close()
        sink.close()
    return losses, sent, seen


CHAINS = [("ip6tables", "ip6tables"), ("nftables", "nftables"), ("ipset", "ipset")]
MIXED = [("ip6tables", "ebpf_xdp"), ("ebpf_tc", "nftables"), ("nftables", "ipset")]


@pytest.mark.netns
@pytest.mark.parametrize("chain", MIXED, indirect=True, ids=lambda p: "-".join(p))
def test_counts_exact_per_flow_and_colour_and_detach_leaves_nothing(chain: Chain) -> None:
    """No drop: every flow and block counted exactly on both nodes, each block in its
    own colour (the kernel nodes' colour bit is the eBPF programs'), 0 lost; the
    inactive colour read after each flip; then detach (twice) leaves no rule, table
    or set."""
    losses, sent, seen = _run_blocks(chain, blocks=2, per_block=50)
    assert len(losses) == len(SID_LISTS) * 2
    for loss in losses:
        key = (loss.flow, loss.block)
        assert loss.colour == loss.block % 2
        assert loss.sent.packets == sent[key] == 50, (chain.names, key)
        assert loss.received.packets == seen[key] == 50, (chain.names, key)
        assert loss.lost_packets == 0 and loss.sent.bytes == loss.received.bytes > 0
    for node in (chain.ingress, chain.egress):
        node.detach()  # type: ignore[attr-defined]
        node.detach()  # type: ignore[attr-defined]   # idempotent, the eBPF nodes too
    assert leftovers() == []


@pytest.mark.netns
@pytest.mark.parametrize("chain", CHAINS, indirect=True, ids=lambda p: "-".join(p))
def test_planted_drop_per_block_loss_equals_the_truth(chain: Chain) -> None:
    """1 % dropped between the nodes: per flow and block the ingress count is what was
    sent, the egress count what the sink saw, so the monitor's loss is the truth."""
    plant_drop(LK, 10_000)
    losses, sent, seen = _run_blocks(chain, blocks=3, per_block=100)
    total = 0
    for loss in losses:
        key = (loss.flow, loss.block)
        assert loss.sent.packets == sent[key], (chain.names, key)
        assert loss.received.packets == seen[key], (chain.names, key)
        assert loss.lost_packets == sent[key] - seen[key], (chain.names, key)
        total += loss.lost_packets
    assert total > 0     # 1 % of 1200 datagrams: nothing dropped at all has p = e^-12


@pytest.mark.netns
@pytest.mark.parametrize("chain", [("nftables", "ip6tables")], indirect=True,
                         ids=lambda p: "-".join(p))
def test_counting_only_leaves_the_colour(chain: Chain) -> None:
    """marking False: the ingress node counts under the colour it is told (the
    CounterNode contract) and writes nothing; the packets arrive as they left the
    stack (colour 0, checked frame by frame), so the egress node counts colour 0 only."""
    losses, _, _ = _run_blocks(chain, blocks=2, per_block=30, marking=False)
    for loss in losses:
        assert loss.sent.packets == 30, (loss.flow, loss.block)
        assert loss.received.packets == (30 if loss.colour == 0 else 0), (loss.flow, loss.block)


@pytest.mark.netns
@pytest.mark.parametrize("chain", CHAINS, indirect=True, ids=lambda p: "-".join(p))
def test_flips_while_traffic_flows_lose_nothing(chain: Chain) -> None:
    """A sender streams every flow while run() flips every 0.4 s and reads at 0.2 s: a
    flip is one commit, so no packet falls between colours: every block of every flow
    loses 0, and the blocks add up to what was sent and what the sink saw."""
    from srperf.traffic.packet_socket import ns_packet_socket, receive_frames

    flows = make_flows(SID_LISTS)
    mon = LossMonitor(chain.ingress, chain.egress, flows,  # type: ignore[arg-type]
                      PmSettings(period_s=0.4))
    tx = _udp_socket(IN)
    sink = ns_packet_socket(EG, "e0")
    sink.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)
    stop = threading.Event()
    sent: Counter[int] = Counter()

    def send() -> None:
        while not stop.is_set():
            for f in flows:
                tx.sendto(f"m4k f{f.index} b0 s0".encode(), (f"fd00:4b:{f.index + 1:x}::1", 4646))
                sent[f.index] += 1
            time.sleep(0.002)

    mon.start()
    sender = threading.Thread(target=send, name="m4k-send")
    sender.start()
    losses: list[BlockLoss] = []
    try:
        for _, block_losses in mon.run(4):
            losses += block_losses
    finally:
        stop.set()
        sender.join()
    try:
        time.sleep(0.2)
        losses += mon.read(mon.flip())[1]   # the block that was marked when sending stopped
        seen: Counter[int] = Counter()
        for frame in receive_frames(sink, timeout_s=0.5):
            match = MARK.search(frame)
            if match:
                seen[int(match.group(1))] += 1
    finally:
        tx.close()
        sink.close()
    assert {x.block for x in losses} == set(range(5))
    for loss in losses:
        assert loss.lost_packets == 0, (chain.names, loss.flow, loss.block)
    for block in range(4):
        assert all(x.sent.packets > 0 for x in losses if x.block == block), block
    for f in sent:
        assert sum(x.sent.packets for x in losses if x.flow == f) == sent[f]
        assert sum(x.received.packets for x in losses if x.flow == f) == seen[f] == sent[f]


@pytest.mark.netns
def test_probes_find_this_kernel_able_and_leave_nothing() -> None:
    """This kernel has the srh, u32, rt, tos, set matches, the TOS target, hash:net
    with counters and nft's srh exthdr: every probe says so, and leaves nothing."""
    from srperf.util.netns import veth_pair_namespace

    with veth_pair_namespace("m4k") as ns:
        run = runner_in(ns)
        for name in KERNEL:
            for role in ("ingress", "egress"):
                assert IMPLEMENTATIONS[name].probe(run, role, "t0") is None, (name, role)
        left = [line for argv in (["ip6tables-save"], ["nft", "list", "ruleset"],
                                  ["ipset", "list", "-n"])
                for line in run(argv).splitlines() if "srperf_pm" in line]
        assert left == []
