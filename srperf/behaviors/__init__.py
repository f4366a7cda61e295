"""The SRv6 behaviors srperf benchmarks: forwarder-independent specs (frames
sent, CFG function, checks), the catalogue of them, SID-list policies and the
conformance matrices."""
