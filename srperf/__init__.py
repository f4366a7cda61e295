"""srperf: benchmarking framework for IPv6 Segment Routing (SRv6) dataplanes."""

__version__ = "0.1.0"
