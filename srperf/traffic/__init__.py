"""The packet side: the frames srperf builds (packets, sizes, IMIX, flows), the
packet socket, latency probes and calibration, the delay line and the generators' registry."""
