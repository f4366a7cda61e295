"""Where a behavior's time goes on the SUT: a profile trial after each search.

* :mod:`.model`: the results (dataclasses, units in their names and docstrings);
* :mod:`.cpustat`: busy time of one CPU from ``/proc/stat``;
* :mod:`.perf`: ``perf record -g`` (sampled call chains) and ``perf stat`` (cycles and
  instructions where a PMU exists);
* :mod:`.stacks`: ``perf script`` parsed into self time per function and inclusive time
  of the route lookup (and netfilter) by call chain;
* :mod:`.bpf`: each BPF program's run time (the kernel's BPF statistics);
* :mod:`.vpp`: VPP's ``show runtime`` per graph node;
* :mod:`.trial`: the trial itself, on the SUT through its transport;
* :mod:`.suspects`: which functions' cost changed between two runs.
"""
