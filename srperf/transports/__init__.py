"""Transports to the SUT: a local network namespace or SSH."""

from __future__ import annotations

from srperf.config.model import Testbed
from srperf.transports.base import Transport


def for_testbed(tb: Testbed) -> Transport:
    """The transport the testbed's SUT is reached through."""
    if tb.sut.transport.kind == "ssh":
        from srperf.transports.ssh import SshTransport

        assert tb.sut.transport.ssh is not None
        return SshTransport(tb.sut.transport.ssh)
    from srperf.transports.netns import NetnsTransport

    return NetnsTransport(tb.sut_ns)


__all__ = ["Transport", "for_testbed"]
