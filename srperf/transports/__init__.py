"""Transports to the nodes of a testbed: this host, a local namespace, or SSH."""

from __future__ import annotations

from srperf.config.model import SshConfig, Testbed
from srperf.transports.base import Transport


def ssh_transport(cfg: SshConfig) -> Transport:
    """An SSH transport (imports paramiko only when used)."""
    from srperf.transports.ssh import SshTransport

    return SshTransport(cfg)


def netns_transport(ns: str | None) -> Transport:
    """A transport into network namespace ``ns`` (None: this host)."""
    from srperf.transports.netns import NetnsTransport

    return NetnsTransport(ns)


def for_testbed(tb: Testbed) -> Transport:
    """The transport the testbed's SUT is reached through."""
    if tb.sut.transport.kind == "ssh":
        assert tb.sut.transport.ssh is not None
        return ssh_transport(tb.sut.transport.ssh)
    return netns_transport(tb.sut_ns)


__all__ = ["Transport", "for_testbed", "netns_transport", "ssh_transport"]
