"""Package data shipped with srperf (not code)."""
