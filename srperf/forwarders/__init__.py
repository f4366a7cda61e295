"""SUT forwarders (Linux, VPP, SRNK, eBPF, SRv6Pipes): one module each behind one
interface (:mod:`srperf.forwarders.base`), looked up in :mod:`srperf.forwarders.registry`."""
