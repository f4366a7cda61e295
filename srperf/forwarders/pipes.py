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

This forwarder serves the stateful kinds (``http``, ``goodput``): a bytestream function
has no per-packet frame to verify, so it offers no catalogue behavior to the PDR search
and is not in :data:`srperf.forwarders.REGISTRY`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from srperf.build import ensure_built
from srperf.config.settings import Settings, setting
from srperf.resources import testbed_dir
from srperf.transports.base import Transport

FUNCTIONS = ("relay", "xor:N", "xormask")
"""The bytestream functions of pipes_relay (N: 1-1024, the passes are 2N)."""
_FUNC = re.compile(r"^(relay|xormask|xor:([1-9][0-9]{0,3}))$")

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


def clean(node_t: Transport, env: dict[str, str]) -> None:
    """Undo :func:`configure` on the node (stops the relay)."""
    node_t.check(["bash", env["_PIPES_SCRIPT"], "clean"],
                 env={k: v for k, v in env.items() if k.startswith("SRPERF_")})


__all__ = ["FUNCTIONS", "BEHAVIOR_FUNCTIONS", "PipesOptions", "PipesNode", "check_function", "build_relay",
           "node_env", "configure", "counters", "clean", "relay_source"]
