"""The measuring core: a run's session and orchestration, the checks before it
(preflight, verification, conformance), its record, environment and progress."""
