// SPDX-License-Identifier: Apache-2.0
/*
 * xdpgen.bpf.c: the XDP program xdpgen (xdpgen.c) runs with BPF_PROG_RUN in
 * live-frames mode, once per trial with repeat = the trial's packets.  Each
 * run gets the prepared frame in a page-pool page.  The program paces: packet
 * i of the trial is due at t0 + i * ns_per_pkt (bpf_ktime_get_ns, i.e.
 * CLOCK_MONOTONIC); it spins (bpf_loop) until then.  A packet later than
 * max_lag_ns slips the schedule (t0 moves, slipped_ns grows).  It writes the
 * packet's counter into the frame's counter slot (when counter_off is set)
 * and returns XDP_TX, which the kernel turns into a redirect to the ingress
 * device of ctx_in (the TX port): the frame leaves through its ndo_xdp_xmit.
 * The slot is srgen's: two 16-bit words x, ~x then y, ~y, so the UDP checksum
 * stays valid whatever the counter (see srgen.c, -V).  Packets past count, or
 * after userspace set stop, are dropped without being offered.
 *
 * xdpgen also attaches this program to the namespace's loopback device in
 * generic (skb) mode through a bpf_link, only so that it stays in the
 * kernel's XDP dispatcher: a BPF_PROG_RUN with repeat > 1 adds and removes a
 * program that is not there, and each change waits for an RCU grace period
 * (~10-30 ms here).  On the loopback device the program passes every packet
 * (LOOPBACK_IFINDEX) and touches nothing.
 *
 * Live frames recycle their page-pool pages within a run, and the kernel resets
 * only a recycled page's data pointers, not its bytes: a frame that went through
 * a SUT's stack as an skb comes back with the headers the SUT rewrote (MACs, hop
 * limit, DA and SL), and the SUT drops the next one sent from that page.  So when
 * userspace filled xdpgen_frame, the program writes the frame's bytes again
 * before each send.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_COUNTER_OFF 4096
#define SPIN_ROUNDS 16          /* bpf_loop calls of SPIN_ITERS each, at most */
#define SPIN_ITERS (1 << 20)
#define LOOPBACK_IFINDEX 1      /* the loopback device of every namespace */
#define MAX_FRAME 3500          /* as xdpgen.c */

/* The frame as built (len 0: not restored, e.g. an older xdpgen). */
struct xdpgen_frame {
	__u32 len;
	unsigned char data[MAX_FRAME];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpgen_frame);
} xdpgen_frame SEC(".maps");

struct xdpgen_cfg {
	__u64 seq;          /* the next packet's counter */
	__u64 t0_ns;        /* packet 0's due time (moves when the schedule slips) */
	__u64 npp_q8;       /* ns per packet << 8 (0: unpaced) */
	__u64 count;        /* packets of the trial */
	__u64 offered;      /* packets offered so far */
	__u64 max_lag_ns;   /* bound on catch-up */
	__u64 slipped_ns;
	__u64 lag_max_ns;   /* largest lateness seen */
	__u64 last_ns;      /* time of the latest offer */
	__u32 counter_off;  /* byte offset of the counter slot, 0: none */
	__u32 stop;         /* set by userspace: offer no more */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpgen_cfg);
} xdpgen_cfg SEC(".maps");

static long wait_cb(__u64 i, void *ctx)
{
	__u64 *due = ctx;

	return bpf_ktime_get_ns() >= *due;
}

/* Set by xdpgen's watcher thread (-L): offer no more this trial. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdpgen_stop SEC(".maps");

SEC("xdp")
int xdpgen_tx(struct xdp_md *ctx)
{
	unsigned char *data = (unsigned char *)(long)ctx->data;
	unsigned char *end = (unsigned char *)(long)ctx->data_end;
	struct xdpgen_cfg *cfg;
	struct xdpgen_frame *fr;
	__u32 flen;
	__u32 key = 0, off, c, *stop;
	__u64 now, due;
	unsigned char *p;
	int r;

	if (ctx->ingress_ifindex == LOOPBACK_IFINDEX)
		return XDP_PASS;        /* the dispatcher hold, not a run */
	cfg = bpf_map_lookup_elem(&xdpgen_cfg, &key);
	if (!cfg)
		return XDP_ABORTED;
	stop = bpf_map_lookup_elem(&xdpgen_stop, &key);
	if (!stop || *stop || cfg->stop || cfg->offered >= cfg->count)
		return XDP_DROP;
	now = bpf_ktime_get_ns();
	if (cfg->npp_q8) {
		due = cfg->t0_ns + ((cfg->offered * cfg->npp_q8) >> 8);
		if (now < due) {
			for (r = 0; r < SPIN_ROUNDS; r++) {
				bpf_loop(SPIN_ITERS, wait_cb, &due, 0);
				now = bpf_ktime_get_ns();
				if (now >= due)
					break;
			}
		} else {
			__u64 lag = now - due;

			if (lag > cfg->lag_max_ns)
				cfg->lag_max_ns = lag;
			if (lag > cfg->max_lag_ns) {
				cfg->t0_ns += lag - cfg->max_lag_ns;
				cfg->slipped_ns += lag - cfg->max_lag_ns;
			}
		}
	}
	fr = bpf_map_lookup_elem(&xdpgen_frame, &key);
	flen = fr ? fr->len : 0;
	if (flen) {
		if (flen > MAX_FRAME || flen != (__u32)(end - data))
			return XDP_ABORTED;
		if (bpf_xdp_store_bytes(ctx, 0, fr->data, flen))
			return XDP_ABORTED;
		data = (unsigned char *)(long)ctx->data;
		end = (unsigned char *)(long)ctx->data_end;
	}
	c = (__u32)cfg->seq;
	off = cfg->counter_off;
	if (off) {
		if (off > MAX_COUNTER_OFF)
			return XDP_ABORTED;
		p = data + off;
		if (p + 8 > end)
			return XDP_ABORTED;
		p[0] = (unsigned char)(c >> 24);
		p[1] = (unsigned char)(c >> 16);
		p[2] = (unsigned char)~p[0];
		p[3] = (unsigned char)~p[1];
		p[4] = (unsigned char)(c >> 8);
		p[5] = (unsigned char)c;
		p[6] = (unsigned char)~p[4];
		p[7] = (unsigned char)~p[5];
	}
	cfg->seq++;
	cfg->offered++;
	cfg->last_ns = now;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
