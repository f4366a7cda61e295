"""Sampled call chains (``perf record -g`` + ``perf script``): flat and inclusive time.

A flat profile charges each sample to the function it landed in (self time).  That
hides a cost spread over helpers: the per-packet route clone of End.X and End.DX6
shows up as a little ``kmem_cache_alloc``, ``kfree``, ``__call_rcu_common`` and
``__list_del_entry_valid_or_report``, not as the route lookup that caused it.  Here
each sample's call chain is kept, and a sample counts for a *stack group* when any
frame of its chain is one of the group's functions: the group's inclusive time, each
sample counted once however many of its frames match.  Shares are of the samples
kept (the forwarding threads'); ns per packet of a group = ns per packet x share.

What counts as the IPv6 route lookup (:data:`ROUTE_LOOKUP`), and why:

* ``ip6_route_input``: the receive path's route for the packet's own destination
  address; every behavior pays it (it finds the SID's seg6local route).
* ``seg6_lookup_any_nexthop``, ``seg6_lookup_nexthop``: seg6local's lookup after the
  behavior ran.  End looks up the new destination address; End.X and End.DX6 the
  configured next hop with ``FLOWI_FLAG_KNOWN_NH``, for which ``ip6_pol_route`` does
  not return the cached per-CPU route but allocates an uncached ``RTF_CACHE`` clone
  (``ip6_rt_cache_alloc``) per packet: SRPerf's finding (section IV-D of its paper) in
  today's kernel.  Dropping the packet's previous route and setting the new one is
  done in the same function and counts too.
* ``ip6_route_input_lookup``, ``fib6_rule_lookup``, ``ip6_pol_route*``,
  ``ip6_route_output_flags*``, ``ip6_route_lookup``, ``rt6_lookup``: the lookup proper
  (policy rules, table, route selection), whoever calls it (also the output routes
  of packets the SUT itself sends, such as ICMPv6 errors).
* names starting ``fib6_`` (the FIB tree walk and route selection:
  ``fib6_table_lookup``, ``fib6_node_lookup``, ``fib6_select_path``...), ``rt6_`` (the
  route cache: ``rt6_get_pcpu_route``, ``rt6_uncached_list_add``...), ``ip6_rt_``
  (``ip6_rt_cache_alloc``, ``ip6_rt_copy_init``: building the clone), and
  ``ip6_create_rt_rcu``, ``ip6_hold_safe`` (taking the route's reference).
* ``dst_release``, ``dst_destroy``, ``dst_destroy_rcu``, ``ip6_dst_destroy``: giving
  back the route the lookup handed out.  For a cached route that is one atomic
  decrement; for a per-packet clone it is the last reference, which queues the
  clone's free (``call_rcu``), run later from RCU callbacks (``dst_destroy`` ->
  ``ip6_dst_destroy``, off the lookup's own call chain).  That free exists only
  because the lookup allocated a clone, so it is charged to the lookup.
  ``dst_release`` ends in a tail call to ``call_rcu_hurry``, which leaves no frame of
  its own: a chain that shows ``__call_rcu_common`` straight under a function that
  drops the packet's route inline (``skb_dst_drop`` in ``__dev_queue_xmit``,
  ``skb_release_head_state``, ``skb_scrub_packet``; :data:`DST_DROPPERS`) is that
  release, and its missing ``dst_release`` frame is put back before matching.

Not counted: neighbour resolution (``ip6_finish_output2``, ``neigh_*``), reading the
chosen route's attributes (``ip6_mtu``), the seg6local dispatch itself
(``lwtunnel_input``, ``seg6_local_input*``, the behaviors' header work), and RCU's own
batch handling around the frees (``rcu_do_batch``, ``rcu_core``).

Each group is split into paths by the outermost matching frame (root first): the
receive route, the seg6 next-hop lookup, the release, others.  Function names are
matched without the compiler's suffixes (``.isra.0``, ``.constprop.0``, ``.part.0``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from srperf.profile.model import FunctionShare, StackShare


@dataclass(frozen=True)
class StackGroup:
    """Functions whose inclusive time is summed (names, and name prefixes)."""

    name: str
    functions: frozenset[str]
    prefixes: tuple[str, ...] = ()
    paths: tuple[tuple[str, frozenset[str]], ...] = ()
    """(path name, its entry functions): a sample of the group belongs to the first
    path whose entry is the outermost matching frame; else to ``other``."""
    layers: frozenset[str] = frozenset()
    """Members every sample of a path passes through (entries and dispatch layers):
    not named as functions that grew, since they contain the ones that did."""

    def specific(self, function: str) -> bool:
        """True for a member that is neither a path's entry nor a dispatch layer."""
        return function not in self.layers and \
            not any(function in entries for _, entries in self.paths)

    def matches(self, function: str) -> bool:
        name = base_name(function)
        return name in self.functions or name.startswith(self.prefixes)


_RECEIVE = frozenset({"ip6_route_input"})
_SEG6 = frozenset({"seg6_lookup_any_nexthop", "seg6_lookup_nexthop"})
_RELEASE = frozenset({"dst_release", "dst_destroy", "dst_destroy_rcu", "ip6_dst_destroy"})

_LAYERS = frozenset({"ip6_route_input_lookup", "fib6_rule_lookup", "ip6_pol_route",
                     "ip6_pol_route_input", "ip6_pol_route_output"})
"""The lookup's dispatch layers: every lookup passes through them, so they are not
named where the functions whose cost grew are listed."""

ROUTE_LOOKUP = StackGroup(
    "route lookup",
    _RECEIVE | _SEG6 | _RELEASE | frozenset({
        "ip6_route_input_lookup", "fib6_rule_lookup", "ip6_pol_route",
        "ip6_pol_route_input", "ip6_pol_route_output", "ip6_pol_route_lookup",
        "ip6_route_output_flags", "ip6_route_output_flags_noref", "ip6_route_lookup",
        "rt6_lookup", "ip6_create_rt_rcu", "ip6_hold_safe"}),
    ("fib6_", "rt6_", "ip6_rt_"),
    (("receive route (ip6_route_input)", _RECEIVE),
     ("seg6 next-hop lookup (seg6_lookup_*)", _SEG6),
     ("route release (dst_release, dst_destroy)", _RELEASE)),
    _LAYERS,
)
"""The IPv6 route lookup, with the reasons in this module's docstring."""

NETFILTER = StackGroup(
    "netfilter", frozenset({"nf_hook_slow", "nft_do_chain"}),
    ("nft_", "nf_", "ipt_", "ip6t_"))
"""netfilter hooks and their rules (the planted slowdown of bench/profile_nft.py)."""

GROUPS: tuple[StackGroup, ...] = (ROUTE_LOOKUP, NETFILTER)
"""The stack groups a profile trial measures."""

OTHER_PATH = "other"
"""Path of a group's samples whose outermost matching frame is no path's entry."""

RCU_QUEUE = frozenset({"__call_rcu_common", "call_rcu", "call_rcu_hurry"})
"""Where ``dst_release``'s tail call lands (queueing the route's free)."""

DST_DROPPERS = frozenset({"__dev_queue_xmit", "skb_release_head_state", "skb_scrub_packet",
                          "__dev_forward_skb2", "skb_release_all"})
"""Functions that drop the packet's route inline (``skb_dst_drop``): the only way the
forwarding path reaches :data:`RCU_QUEUE` from them is ``dst_release``."""

_SUFFIX = re.compile(r"\.(isra|constprop|part|cold|llvm)\b.*$")
_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<tid>-?\d+)(?:/\d+)?\s*(?:\[\d+\])?\s*$")
_FRAME = re.compile(r"^\s+(?P<ip>[0-9a-fA-F]+)\s+(?P<sym>.+?)(?:\s+\((?P<dso>[^()]*)\))?\s*$")


def chain(frames: tuple[str, ...]) -> list[str]:
    """Base names of ``frames`` outermost first, with the ``dst_release`` frame a tail
    call removed put back (:data:`DST_DROPPERS` -> :data:`RCU_QUEUE`)."""
    names = [base_name(f) for f in reversed(frames)]
    out: list[str] = []
    for i, name in enumerate(names):
        if name in RCU_QUEUE and i and names[i - 1] in DST_DROPPERS:
            out.append("dst_release")
        out.append(name)
    return out


def base_name(function: str) -> str:
    """``slab_update_freelist.isra.0`` -> ``slab_update_freelist``; ``sym+0x1a`` ->
    ``sym``."""
    name = function.split("+0x", 1)[0]
    return _SUFFIX.sub("", name)


@dataclass(frozen=True)
class Stack:
    """One sample: the task it interrupted and its call chain, innermost frame first."""

    comm: str
    tid: int
    frames: tuple[str, ...]
    kernel: bool = True
    """True when the innermost frame is a kernel function."""


@dataclass
class Stacks:
    """Parsed ``perf script``: the samples kept, in order."""

    samples: list[Stack] = field(default_factory=list)

    def flat(self) -> list[FunctionShare]:
        """Self time: each sample charged to its innermost frame (perf report's
        ``--no-children`` view), largest first."""
        counts: dict[tuple[str, bool], int] = {}
        for s in self.samples:
            if s.frames:
                key = (s.frames[0], s.kernel)
                counts[key] = counts.get(key, 0) + 1
        total = sum(counts.values())
        out = [FunctionShare(sym, n / total, n, kernel) for (sym, kernel), n in counts.items()]
        out.sort(key=lambda f: (-f.samples, f.symbol))
        return out

    def depth(self) -> float:
        """Median frames per sample (1: perf recorded no call chains)."""
        depths = sorted(len(s.frames) for s in self.samples)
        return float(depths[len(depths) // 2]) if depths else 0.0

    def inclusive(self, groups: tuple[StackGroup, ...] = GROUPS,
                  functions: int = 16) -> list[StackShare]:
        """Per group: its total, its paths and its ``functions`` largest member
        functions, each as the samples whose chain passes through it (counted once)."""
        total = len(self.samples)
        out: list[StackShare] = []
        if not total:
            return out
        for group in groups:
            n = 0
            paths: dict[str, int] = {}
            members: dict[str, int] = {}
            for s in self.samples:
                hits = [f for f in chain(s.frames) if group.matches(f)]
                if not hits:
                    continue
                n += 1
                path = next((name for name, entries in group.paths if hits[0] in entries),
                            OTHER_PATH)
                paths[path] = paths.get(path, 0) + 1
                for fn in dict.fromkeys(hits):
                    members[fn] = members.get(fn, 0) + 1
            out.append(StackShare(group.name, "total", group.name, n / total, n))
            order = [name for name, _ in group.paths] + [OTHER_PATH]
            out += [StackShare(group.name, "path", p, paths[p] / total, paths[p])
                    for p in order if p in paths]
            top = sorted(members.items(), key=lambda kv: (-kv[1], kv[0]))[:functions]
            out += [StackShare(group.name, "function", fn, c / total, c) for fn, c in top]
        return out


def parse_script(text: str, comms: list[str] | None = None) -> Stacks:
    """``perf script -F comm,tid,ip,sym,dso`` output (optionally ``cpu`` too): a header
    line per sample (``napi/s0-1892  3110 [001]``), then one line per frame
    (``\\tffffffff820efd89 ip6_rt_cache_alloc ([kernel.kallsyms])``), innermost first,
    then a blank line.  Only the samples of tasks named ``comms`` are kept if given."""
    stacks = Stacks()
    keep = set(comms) if comms else None
    comm: str | None = None
    tid = 0
    frames: list[str] = []
    kernel = True

    def close() -> None:
        if comm is not None and frames and (keep is None or comm in keep):
            stacks.samples.append(Stack(comm, tid, tuple(frames), kernel))

    for line in text.splitlines():
        if not line.strip():
            close()
            comm, frames = None, []
            continue
        if line[0] not in " \t":
            close()
            m = _HEADER.match(line)
            comm, tid, frames = (m["comm"], int(m["tid"]), []) if m else (None, 0, [])
            continue
        if comm is None:
            continue
        f = _FRAME.match(line)
        if f:
            if not frames:
                # kernel text, modules and BPF programs live in the upper half
                kernel = (f["dso"] or "").startswith("[kernel") or int(f["ip"], 16) >= 1 << 63
            frames.append(f["sym"])
    close()
    return stacks


def script_argv(perf: str, data: str, comms: list[str] | None = None) -> list[str]:
    """``perf script`` of ``data`` with each sample's call chain; only the samples of
    tasks named ``comms`` if given (the forwarding threads)."""
    argv = [perf, "script", "-i", data, "-F", "comm,tid,ip,sym,dso"]
    return argv + (["--comms", ",".join(comms)] if comms else [])


__all__ = ["StackGroup", "Stack", "Stacks", "ROUTE_LOOKUP", "NETFILTER", "GROUPS",
           "OTHER_PATH", "RCU_QUEUE", "DST_DROPPERS", "base_name", "chain", "parse_script",
           "script_argv"]
