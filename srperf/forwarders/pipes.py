"""SRv6Pipes' bytestream-function node on a stock kernel (``cfg_scripts/pipes.sh``).

A node on the segment list terminates the client's TCP connection transparently
(seg6local End.DX6 into a veth whose peer is in the same namespace, nft TPROXY,
``pipes_relay``), runs a function over the bytestream and opens the next connection
toward the following segment (H.Encaps).  Functions (:data:`FUNCTIONS`):

* ``relay``: copy unchanged (SRv6Pipes' proxy of Fig. 6);
* ``xor:N``: 2N XOR passes over every buffer: unchanged bytes, N-fold CPU work
  (SRv6Pipes' Fig. 9 microbenchmark);
* ``xormask``: one XOR pass, which changes the bytes; a second ``xormask`` node is its
  inverse (SRv6Pipes' Fig. 10-11 chain).

``pipes_router`` is the baseline: the same SID as a plain End.

:data:`FORWARDER` is the registry's ``pipes`` (``forwarder: pipes``).  It serves the
``http`` kind with a ``pipes:`` block: a bytestream function has no per-packet frame to
verify, so it offers no catalogue behavior to the PDR search; an experiment's
``behaviors`` name its functions (:data:`BEHAVIORS`: ``relay``, ``xor``, ``xormask``)
and the ``pipes:`` chains use them (:func:`check_experiment`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from srperf.build import ensure_built
from srperf.config.model import TestbedConfig
from srperf.config.settings import SettingError, Settings, setting
from srperf.forwarders.base import Forwarder, Prepared
from srperf.forwarders.common_env import addressing_env
from srperf.resources import testbed_dir
from srperf.transports.base import Transport

FUNCTIONS = ("relay", "xor:N", "xormask")
"""The bytestream functions of pipes_relay (N: 1-1024, the passes are 2N)."""
_FUNC = re.compile(r"^(relay|xormask|xor:([1-9][0-9]{0,3}))$")

BEHAVIORS = ("relay", "xor", "xormask")
"""What an experiment on forwarder pipes lists as ``behaviors``: the function families
its chains use (``xor`` stands for every ``xor:N``)."""

BEHAVIOR_FUNCTIONS = ("pipes_router", "pipes_proxy")
"""pipes.sh's configuring functions (a router baseline and the bytestream proxy)."""

RELAY_CFLAGS = ["-O3", "-Wall", "-Wextra", "-pthread"]


def check_function(value: str) -> str:
    """``value`` when it names a function of :data:`FUNCTIONS`, else ValueError."""
    match = _FUNC.match(str(value))
    if not match or (match.group(2) and int(match.group(2)) > 1024):
        raise ValueError(f"{value!r}: a bytestream function is relay, xor:N (N 1-1024) "
                         "or xormask")
    return str(value)


def family(function: str) -> str:
    """The behavior (:data:`BEHAVIORS`) of a function: ``xor:4`` -> ``xor``."""
    return function.split(":", 1)[0]


def relay_source() -> Path:
    """The C source of pipes_relay."""
    return testbed_dir() / "dataplanes" / "pipes" / "pipes_relay.c"


def build_relay() -> Path:
    """Compile pipes_relay (warning-free, ``-Wall -Wextra``) and return its path."""
    src = relay_source()
    return ensure_built("pipes_relay", [src], ["gcc", *RELAY_CFLAGS, "-o", "{out}", str(src)])


@dataclass(frozen=True)
class PipesOptions(Settings):
    """How a bytestream-function node runs."""

    port: int = setting(50080, "TCP port the relay's transparent listener binds (TPROXY "
                        "target)", unit="port",
                        schema={"type": "integer", "minimum": 1024, "maximum": 65535})
    threads: int = setting(1, "relay worker threads (SO_REUSEPORT listeners)",
                           unit="threads", schema={"type": "integer", "minimum": 1,
                                                   "maximum": 16})
    table: int = setting(250, "routing table of the TPROXY local route (the next number "
                         "holds the re-steering route)", unit="table",
                         schema={"type": "integer", "minimum": 1, "maximum": 2000000000})
    node_cpu: int | None = setting(None, "CPU of the middle nodes (virtual testbed): the "
                                   "relays are pinned to it and their links' receive "
                                   "processing is steered to it (RPS), as SRv6Pipes' M1 "
                                   "was a machine of its own; none: not pinned",
                                   unit="CPU", schema={"type": ["integer", "null"],
                                                       "minimum": 0, "maximum": 4095})
    endpoint_cpu: int | None = setting(None, "CPU of the client and the server (wrk, the "
                                       "HTTP server and their links' receive processing) "
                                       "when node_cpu is set; none: not pinned",
                                       unit="CPU", schema={"type": ["integer", "null"],
                                                           "minimum": 0, "maximum": 4095})

    def __post_init__(self) -> None:
        if (self.node_cpu is None) != (self.endpoint_cpu is None):
            key = "endpoint_cpu" if self.endpoint_cpu is None else "node_cpu"
            raise SettingError(key, None, "node_cpu and endpoint_cpu are set together "
                               "(the nodes' CPU and the endpoints' CPU)")
        if self.node_cpu is not None and self.node_cpu == self.endpoint_cpu:
            raise SettingError("endpoint_cpu", self.endpoint_cpu,
                               "is node_cpu too: the endpoints and the nodes get CPUs of "
                               "their own")


@dataclass(frozen=True)
class PipesNode:
    """One node of the chain as its script sees it."""

    sid: str
    """The node's SID (the client's segment for it)."""
    out_if: str
    """Its interface toward the server."""
    out_nh: str
    """Next hop on ``out_if``."""
    next_segs: tuple[str, ...]
    """Segments after this node (re-encapsulated traffic), the last one the server's."""
    dst_prefix: str
    """Destinations whose locally sent traffic is re-steered (the server's prefix)."""
    function: str | None
    """Bytestream function, or None for the router baseline."""


def node_env(node: PipesNode, options: PipesOptions, relay: str, rundir: str
             ) -> dict[str, str]:
    """The ``SRPERF_*`` variables of pipes.sh for ``node``."""
    env = {
        "SRPERF_SID_SUT": node.sid,
        "SRPERF_OUT_IF": node.out_if,
        "SRPERF_PIPES_OUT_NH": node.out_nh,
        "SRPERF_PIPES_NEXT_SEGS": ",".join(node.next_segs),
        "SRPERF_PIPES_DST_PREFIX": node.dst_prefix,
        "SRPERF_PIPES_TABLE": str(options.table),
        "SRPERF_PIPES_RUNDIR": rundir,
        "SRPERF_PIPES_RELAY": relay,
        "SRPERF_PIPES_PORT": str(options.port),
        "SRPERF_PIPES_THREADS": str(options.threads),
    }
    if node.function is not None:
        env["SRPERF_PIPES_FUNC"] = check_function(node.function)
    return env


def configure(node_t: Transport, node: PipesNode, options: PipesOptions, relay_path: Path
              ) -> dict[str, str]:
    """Push pipes.sh (and the relay) to the node and configure ``node``; return its env.

    Raises :class:`srperf.transports.base.NodeCommandFailed` with the script's words.
    """
    from srperf.resources import cfg_contract, cfg_script

    script = node_t.push(cfg_script("pipes"))
    node_t.push(cfg_contract())
    relay = node_t.push(relay_path) if node.function is not None else "/nonexistent"
    rundir = node_t.workdir() + "/pipes-run"
    env = node_env(node, options, relay, rundir)
    env["_PIPES_SCRIPT"] = script
    fn = "pipes_proxy" if node.function is not None else "pipes_router"
    node_t.check(["bash", script, fn], env={k: v for k, v in env.items()
                                            if k.startswith("SRPERF_")}, timeout=60.0)
    return env


def counters(node_t: Transport, env: dict[str, str]) -> dict[str, int]:
    """The relay's counters on a configured proxy node ({} on a router)."""
    import json

    res = node_t.check(["bash", env["_PIPES_SCRIPT"], "counters"],
                       env={k: v for k, v in env.items() if k.startswith("SRPERF_")})
    return {k: int(v) for k, v in json.loads(res.stdout or "{}").items()}


def pin_relay(node_t: Transport, env: dict[str, str], cpu: int) -> None:
    """Pin every thread of the node's running relay to ``cpu`` (nothing on a router)."""
    if not env.get("SRPERF_PIPES_FUNC"):
        return
    pid = node_t.check(["cat", env["SRPERF_PIPES_RUNDIR"] + "/relay.pid"]).stdout.strip()
    node_t.check(["taskset", "-apc", str(cpu), pid])


def clean(node_t: Transport, env: dict[str, str]) -> None:
    """Undo :func:`configure` on the node (stops the relay)."""
    node_t.check(["bash", env["_PIPES_SCRIPT"], "clean"],
                 env={k: v for k, v in env.items() if k.startswith("SRPERF_")})


class PipesForwarder(Forwarder):
    """SRv6Pipes' bytestream-function node (pipes.sh, pipes_relay)."""

    name = "pipes"
    script = "pipes.sh"
    description = ("SRv6Pipes bytestream functions (relay, xor:N, xormask) on a node that "
                   "terminates TCP: nft TPROXY + pipes_relay; kind http with a pipes: block")
    behaviors = ()
    functions = BEHAVIORS
    options = PipesOptions
    runs_in_netns = True
    version_commands = {"nftables": ("nft", "--version")}

    def why_not(self, behavior: str) -> str:
        return ("a bytestream-function node terminates TCP, it has no per-packet behavior "
                f"for a packet-rate search; its behaviors are {', '.join(BEHAVIORS)} "
                "(kind: http with a pipes: block)")

    def prepare(self, sut: Transport, options: Settings) -> Prepared:
        """The relay's run directory on the SUT (pipes.sh keeps its pid and counters
        there); the relay itself is pushed when a node runs a function."""
        return Prepared(env={"SRPERF_PIPES_RUNDIR": sut.workdir() + "/pipes-run"})

    def env(self, tb: TestbedConfig, options: Settings, prepared: Prepared) -> dict[str, str]:
        """The testbed's SUT as a pipes node toward the tester's receive side (what
        ``clean`` needs to find what a node configured)."""
        assert isinstance(options, PipesOptions)
        a = tb.addressing
        node = PipesNode(sid=a.sid_sut, out_if=tb.sut.out_port.name, out_nh=a.tester_rx_ip6,
                         next_segs=(a.sid_next,), dst_prefix=a.dst_prefix6, function=None)
        rundir = prepared.env.get("SRPERF_PIPES_RUNDIR", "/nonexistent")
        return {**addressing_env(tb), **node_env(node, options, "/nonexistent", rundir),
                **prepared.env}


FORWARDER = PipesForwarder()


def check_experiment(forwarder: str, kind: str, behaviors: tuple[str, ...],
                     cases: tuple[object, ...], options: dict[str, object]
                     ) -> tuple[str, object, str] | None:
    """(key, value, reason) of the first thing an experiment gets wrong about forwarder
    pipes and its chains, else None.

    * forwarder pipes measures ``kind: http`` with a ``pipes:`` block, and a ``pipes:``
      block is measured on forwarder pipes (not ``linux``: its nodes are not the
      testbed's SUT);
    * ``behaviors`` are :data:`BEHAVIORS`, each used by a chain, and every function of a
      chain is listed;
    * a chain has as many ``xormask`` nodes as inverses (an even count): an odd one
      would hand the client changed bytes;
    * ``options.node_cpu`` / ``endpoint_cpu`` exist on this host.
    """
    import os

    if forwarder != FORWARDER.name:
        if cases:
            return ("forwarder", forwarder, "a pipes: block is measured on SRv6Pipes "
                    "chains built for the run, not on the testbed's SUT: set forwarder: "
                    "pipes")
        return None
    if kind != "http" or not cases:
        return ("forwarder", forwarder, "forwarder pipes measures SRv6Pipes chains with wrk:"
                " kind: http with a pipes: block (its functions have no per-packet "
                "behavior for a packet-rate search)")
    used: dict[str, tuple[str, str]] = {}   # behavior -> (key, role) of its first use
    for i, case in enumerate(cases):
        chain = list(getattr(case, "chain"))
        for j, role in enumerate(chain):
            if role != "router":
                used.setdefault(family(role), (f"pipes.configurations[{i}].chain[{j}]", role))
        if chain.count("xormask") % 2:
            return (f"pipes.configurations[{i}].chain", chain,
                    f"{chain.count('xormask')} xormask nodes: each xormask needs its inverse "
                    "(a second xormask) on the chain, else the client gets changed bytes")
    for i, name in enumerate(behaviors):
        if name not in BEHAVIORS:
            return (f"behaviors[{i}]", name, f"forwarder pipes' behaviors are "
                    f"{', '.join(BEHAVIORS)} (the functions its chains use)")
        if name not in used:
            return (f"behaviors[{i}]", name, "no pipes: chain uses it")
    for name, (key, role) in used.items():
        if name not in behaviors:
            return (key, role, f"its behavior {name} is not in behaviors "
                    f"[{', '.join(behaviors)}]")
    for key in ("node_cpu", "endpoint_cpu"):
        cpu = options.get(key)
        if isinstance(cpu, int) and cpu >= (os.cpu_count() or 1):
            return (f"options.{key}", cpu, f"this host has CPUs 0-{(os.cpu_count() or 1) - 1}")
    return None


__all__ = ["FORWARDER", "PipesForwarder", "BEHAVIORS", "check_experiment", "family",
           "FUNCTIONS", "BEHAVIOR_FUNCTIONS", "PipesOptions", "PipesNode", "check_function",
           "build_relay", "node_env", "configure", "counters", "clean", "relay_source",
           "pin_relay"]
