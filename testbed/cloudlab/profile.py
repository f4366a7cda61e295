"""srperf testbed on CloudLab: a tester and a SUT, two direct links back to back.

CloudLab runs this script with its own geni-lib (``geni.portal``) and shows the
parameters below on the instantiate page; ``srperf provision cloudlab -o FILE``
writes it out to paste into a new profile.  The RSpec is built by
:func:`build_request` with ``geni.rspec.pg`` alone, so it can be checked
anywhere (``python3 profile.py --print`` prints it with default parameters).

After instantiation: put the nodes' host names into a copy of
``testbed/cloudlab.yaml`` and run ``srperf provision`` on it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import geni.rspec.pg as pg  # type: ignore[import-untyped]


@dataclass(frozen=True)
class ProfileParams:
    """The profile's parameters (CloudLab shows them with these defaults)."""

    hardware_type: str = "d430"
    """CloudLab node type of both nodes (two 10GbE ports wired to the same switch)."""
    disk_image: str = "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"
    """Disk image URN of both nodes."""
    link_mbps: int = 10_000
    """Capacity of each link, Mbit/s."""


PARAMETERS = (
    ("hardware_type", "Hardware type of both nodes", "string"),
    ("disk_image", "Disk image of both nodes", "image"),
    ("link_mbps", "Link capacity (Mbit/s)", "integer"),
)
"""(name, description, portal type) of each parameter, in the page's order."""

LINKS = (("link-in", "tester:tx", "sut:in"), ("link-out", "sut:out", "tester:rx"))
"""The two data links: tester tx -> SUT in, SUT out -> tester rx."""


def build_request(params: ProfileParams) -> pg.Request:
    """The request RSpec: nodes ``tester`` and ``sut``; links ``link-in``, ``link-out``."""
    request = pg.Request()
    nodes = {}
    for name in ("tester", "sut"):
        node = pg.RawPC(name)
        node.hardware_type = params.hardware_type
        node.disk_image = params.disk_image
        nodes[name] = node
        request.addResource(node)
    for link_name, a, b in LINKS:
        link = pg.Link(link_name)
        for end in (a, b):
            node_name, if_name = end.split(":")
            link.addInterface(nodes[node_name].addInterface(if_name))
        link.bandwidth = params.link_mbps * 1000  # kbit/s
        link.best_effort = False
        link.link_multiplexing = False  # direct links, no shared VLAN
        request.addResource(link)
    return request


def _run_on_portal() -> None:  # pragma: no cover (CloudLab's geni-lib only)
    import geni.portal as portal  # type: ignore[import-untyped]

    ctx = portal.Context()
    defaults = ProfileParams()
    kinds = {"string": portal.ParameterType.STRING, "image": portal.ParameterType.IMAGE,
             "integer": portal.ParameterType.INTEGER}
    for name, description, kind in PARAMETERS:
        ctx.defineParameter(name, description, kinds[kind], getattr(defaults, name))
    bound = ctx.bindParameters()
    params = ProfileParams(**{name: getattr(bound, name) for name, _, _ in PARAMETERS})
    ctx.printRequestRSpec(build_request(params))


if __name__ == "__main__":
    if "--print" in sys.argv[1:]:
        print(build_request(ProfileParams()).toXMLString(pretty_print=True).decode())
    else:
        _run_on_portal()
