// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * XDP sink for the tester's receive port: count every frame, then drop it.
 *
 * Dropping at XDP keeps the tester's stack from answering test traffic
 * (ICMPv6 errors would load the SUT).  The count (per-CPU array, key 0) is a
 * cross-check: on veth, rx_packets also counts frames dropped by XDP.
 *
 * Built with -DSRPERF_PROBE_PASS (sink_probe.o, attached by the linux driver for
 * latency trials; the slow variant always), a frame that ends with srgen's latency
 * probe magic ("SRPLAT01", see srgen.c
 * -p) is counted too but passed up the stack, where srgen's packet socket takes
 * it with its receive time stamp and the tc program of probe_drop.c drops it
 * (so the tester's stack never answers it).  The check reads the frame's last
 * 8 bytes: headers are only added or removed at the front, so every SRv6
 * behavior leaves the probe's trailer there.
 *
 * Built with -DSRPERF_SLOW_SINK it also burns CPU on every frame (bpf_loop),
 * a deliberately slow consumer that tests use to overflow a veth ring.
 *
 *   clang -O2 -g -Wall -target bpf -I/usr/include/x86_64-linux-gnu -c sink.c
 *   ip -n NS link set dev DEV xdpdrv obj sink.o sec xdp
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define PROBE_MAGIC 0x5352504c41543031ULL /* srgen.c PROBE_MAGIC */
#define PROBE_MIN_LEN 54                  /* Ethernet header + the 40-byte trailer */
#define MAX_FRAME 16384

#if defined(SRPERF_PROBE_PASS) || defined(SRPERF_SLOW_SINK)
#define PASS_PROBES 1
/* 1 when the frame ends with the probe magic. */
static __always_inline int is_probe(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 len = (__u64)(end - data);
	__u8 *tail;
	__u64 magic;

	if (len < PROBE_MIN_LEN || len > MAX_FRAME)
		return 0;
	len -= 8;
	/* Hide that tail + 8 is data_end: the verifier must see the check on tail. */
	asm volatile("" : "+r"(len));
	tail = (__u8 *)data + len;
	if ((void *)(tail + 8) > end)
		return 0;
	__builtin_memcpy(&magic, tail, 8);
	return magic == bpf_cpu_to_be64(PROBE_MAGIC);
}
#endif

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

#ifdef SRPERF_SLOW_SINK
	bpf_loop(SRPERF_SLOW_SPINS, spin, 0, 0);
#endif
	if (count)
		*count += 1;
#ifdef PASS_PROBES
	if (is_probe(ctx))
		return XDP_PASS;
#else
	(void)ctx;
#endif
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
