"""Package data: CFG scripts, experiments, testbeds (mapped from top-level folders)."""
