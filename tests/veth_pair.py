"""A namespace holding one veth pair t0 <-> t1, for tests that send frames through it:
the library's own (:func:`srperf.util.netns.veth_pair_namespace`, which the latency
calibration uses), so tests and the product make it one way."""

from srperf.util.netns import veth_pair_namespace

__all__ = ["veth_pair_namespace"]
