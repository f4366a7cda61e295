"""Per-flow packet loss monitoring of SRv6 flows with alternate marking (PF-PLM, RFC 9341).

An ingress node counts and colours each monitored flow's packets (eBPF on TC), an egress
node counts them per colour (eBPF on XDP); srperf flips the colour every period T and
reads the inactive colour's counters of both nodes at T/2 after the flip, which gives the
exact loss of each block.  Modules: :mod:`.build` (the objects), :mod:`.model`
(dataclasses), :mod:`.maps` (bpftool over a runner), :mod:`.node` (attach/detach),
:mod:`.counters` (the node seam the monitor drives), :mod:`.impl_spec` (what an
implementation is), :mod:`.implementations` (by name), the kernel-path nodes
:mod:`.ip6tables_node`, :mod:`.nft_node`, :mod:`.ipset_node` (with :mod:`.kernel_base`
and :mod:`.xtables`), :mod:`.monitor` (flip, read, loss).  See docs/loss-monitoring.md.
"""
