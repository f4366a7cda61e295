"""The ``endpoints`` block of an ssh testbed: the client and server hosts of a stateful
experiment, each reached over SSH, neither the other nor the SUT.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from srperf.config.model import EndpointHostConfig, EndpointsConfig, SutConfig
from srperf.errors import ConfigError
from srperf.config.ssh import _transport


def _endpoints(file: str, base: Path, kind: str, data: dict[str, Any],
               sut: SutConfig) -> EndpointsConfig:
    """The ``endpoints`` block: two SSH hosts, neither the other nor the SUT."""
    if kind != "ssh":
        raise ConfigError(file, "endpoints", sorted(data),
                          f"endpoint hosts are for an ssh testbed; this one is {kind!r} "
                          "(a virtual testbed makes its client and server namespaces "
                          "itself; remove the block)")
    hosts: dict[str, EndpointHostConfig] = {}
    seen: dict[tuple[str, int], str] = {}
    if sut.transport.ssh is not None:
        seen[(sut.transport.ssh.host, sut.transport.ssh.port)] = "the SUT (sut.transport.ssh)"
    for side in ("client", "server"):
        d = data[side]
        key = f"endpoints.{side}"
        transport = _transport(file, base, key, d["transport"])
        if transport.kind != "ssh" or transport.ssh is None:
            raise ConfigError(file, f"{key}.transport.kind", transport.kind,
                              "an endpoint host is reached over ssh (give "
                              f"{key}.transport.ssh: host, user, key_file, known_hosts)")
        where = (transport.ssh.host, transport.ssh.port)
        if where in seen:
            raise ConfigError(file, f"{key}.transport.ssh.host", transport.ssh.host,
                              f"port {transport.ssh.port} of this host is already "
                              f"{seen[where]}: client, server and SUT each need a network "
                              "stack of their own, or the TCP would not cross the SUT")
        seen[where] = f"endpoints.{side}"
        hosts[side] = EndpointHostConfig(transport, d["dev"], d.get("cpu"))
    return EndpointsConfig(hosts["client"], hosts["server"], data.get("steering", "host"))
