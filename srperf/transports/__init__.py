"""Transports to a testbed node: a network namespace of this host (or the host),
SSH or a guest's console, behind :class:`srperf.transports.base.Transport`."""
