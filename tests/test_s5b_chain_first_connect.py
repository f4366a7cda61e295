"""Issue 35: the first connection through a fresh SRv6Pipes chain does not wait (prefix s5b).

The second wait of about 1 s was neighbour discovery on the middle nodes: a node that
forwards a packet whose source is not one of the outgoing link's addresses solicits the
next hop from its link-local address, and sends no solicitation at all while that
address is still tentative (duplicate address detection: a random delay of up to 1 s,
then one probe and 1 s).  The neighbour entry then waits for its next try, 1 s later,
and so did the first SYN.  A chain's links now get no DAD, and PipesChain.up() returns
only when no address of the chain is tentative.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from srperf.util.netns import run
from srperf.stateful.pipes_chain import ROUTER, PipesChain

pytestmark = pytest.mark.netns

PORT = 5901
SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4)
print("listening", flush=True)
c, _ = s.accept()
c.close()
"""
CLIENT = """
import socket, sys, time
t = time.monotonic()
socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
print(f"{time.monotonic() - t:.4f}")
"""


def _tentative(chain: PipesChain) -> dict[str, str]:
    found = {}
    for name in chain.names:
        out = run(["ip", "-6", "addr", "show", "tentative"], ns=name).stdout.strip()
        if out:
            found[name] = out
    return found


def test_first_connection_through_a_fresh_chain_does_not_wait():
    chain = PipesChain("s5b", [ROUTER, ROUTER])
    server = None
    try:
        chain.up()
        assert not _tentative(chain), _tentative(chain)   # what the readiness check waits for
        server = subprocess.Popen(["ip", "netns", "exec", chain.names[-1], sys.executable,
                                   "-c", SERVER, chain.server_ip6, str(PORT)],
                                  stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None and server.stdout.readline().strip() == "listening"
        res = subprocess.run(["ip", "netns", "exec", chain.names[0], sys.executable, "-c",
                              CLIENT, chain.server_ip6, str(PORT)], capture_output=True,
                             text=True, timeout=30)
        assert res.returncode == 0, res.stderr
        # before: 1.0-2.0 s (a SYN or the SYN-ACK waited for a neighbour solicitation)
        assert float(res.stdout) < 0.5, f"the first connect took {res.stdout.strip()} s"
    finally:
        if server is not None:
            server.kill()
            server.wait(timeout=10)
            if server.stdout:
                server.stdout.close()
        chain.down()


def test_the_readiness_check_waits_for_tentative_addresses():
    """An address added with DAD is reported until DAD ends (the check can fail)."""
    chain = PipesChain("s5b", [ROUTER])
    try:
        chain.up()
        ns = chain.names[1]
        run(["sysctl", "-qw", "net.ipv6.conf.r0.accept_dad=1"], ns=ns)
        run(["ip", "-6", "addr", "add", "fd00:0:0:77::1/64", "dev", "r0"], ns=ns)
        assert chain.addresses_tentative() == [f"{ns}/r0"]
        started = time.monotonic()
        chain.wait_links_up()
        assert not chain.addresses_tentative()
        assert time.monotonic() - started > 0.2    # it did wait for DAD to end
    finally:
        chain.down()
