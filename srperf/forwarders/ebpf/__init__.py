"""The eBPF forwarder: srperf's own SR proxies (C built with clang), its settings
and counters; the forwarder itself in :mod:`srperf.forwarders.ebpf.forwarder`."""
