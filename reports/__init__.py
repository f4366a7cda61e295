"""Jinja2 templates of srperf reports (shipped as srperf.data.reports)."""
