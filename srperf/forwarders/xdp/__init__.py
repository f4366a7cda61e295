"""The XDP fast path (HIKe-v0 class): chains of XDP programs tail-called by a dispatcher;
the forwarder in :mod:`srperf.forwarders.xdp.forwarder`, the chains in
:mod:`srperf.forwarders.xdp.chains`."""
