"""The ``srperf`` command: one module per subcommand group, the entry point in
:mod:`srperf.cli.entry`.  The only place that prints."""
