"""Issue 35: a fresh SRv6Pipes chain forwards as soon as it is up (prefix s35p).

A veth set up drops every frame until the kernel's link watch marks it operationally up
(up to about 1 s later): the first SYN through a fresh chain was lost and sent again a
second later.  PipesChain.up() now returns only once every link end is up.
"""

from __future__ import annotations

import pytest

from srperf.util.netns import run
from srperf.stateful.pipes_chain import PipesChain

pytestmark = pytest.mark.netns


def test_every_link_is_up_when_the_chain_is():
    chain = PipesChain("s35p", ["router", "router"])
    try:
        chain.up()
        states = {}
        for link in range(len(chain.roles) + 1):
            for ns, dev in chain.link_devs(link):
                states[f"{ns}/{dev}"] = run(["cat", f"/sys/class/net/{dev}/operstate"],
                                            ns=ns).stdout.strip()
        assert set(states.values()) == {"up"}, states
    finally:
        chain.down()
    assert not [n for n in chain.names if run(["ip", "netns", "pids", n], check=False).ok]
