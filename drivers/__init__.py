"""Traffic generator drivers (import name ``srperf.drivers``)."""
