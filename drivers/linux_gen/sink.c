// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * XDP sink for the tester's receive port: count every frame, then drop it.
 *
 * Dropping at XDP keeps the tester's stack from answering test traffic
 * (ICMPv6 errors would load the SUT).  The count (per-CPU array, key 0) is a
 * cross-check: on veth, rx_packets also counts frames dropped by XDP.
 *
 * Built with -DSRPERF_SLOW_SINK it also burns CPU on every frame (bpf_loop),
 * a deliberately slow consumer that tests use to overflow a veth ring.
 *
 *   clang -O2 -g -Wall -target bpf -I/usr/include/x86_64-linux-gnu -c sink.c
 *   ip -n NS link set dev DEV xdpdrv obj sink.o sec xdp
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sink_count SEC(".maps");

#ifdef SRPERF_SLOW_SINK
#ifndef SRPERF_SLOW_SPINS
#define SRPERF_SLOW_SPINS 20000
#endif
static long spin(__u32 index, void *ctx)
{
	(void)index;
	(void)ctx;
	return 0;
}
#endif

SEC("xdp")
int xdp_sink(struct xdp_md *ctx)
{
	__u32 key = 0;
	__u64 *count = bpf_map_lookup_elem(&sink_count, &key);

	(void)ctx;
#ifdef SRPERF_SLOW_SINK
	bpf_loop(SRPERF_SLOW_SPINS, spin, 0, 0);
#endif
	if (count)
		*count += 1;
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
