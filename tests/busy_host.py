"""Tester options for tests that check a behavior of a run, not a figure.

Such a test must hold on a busy machine: beside one busy loop per CPU
(``scripts/under_load.sh``) a normal-priority srgen cannot offer even a few
thousand packets per second, every search ends generator-limited, the run
measures nothing and exits 3.  srgen at SCHED_FIFO priority 10 offers its
planned rate beside them.
"""

BUSY_HOST_OPTIONS = {"fifo_priority": 10}
