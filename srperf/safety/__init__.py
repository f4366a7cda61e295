"""The root-safety boundary: what srperf as root may read, write and print
(safe paths, the write and read gates, redaction of secrets)."""
