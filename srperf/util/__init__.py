"""Small utilities with no srperf dependency of their own: lazy imports, process
termination, wording of messages, network-namespace helpers."""
