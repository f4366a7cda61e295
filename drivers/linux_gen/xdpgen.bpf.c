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
 * after userspace set stop, are dropped without being offered.  Before the
 * counter, shape_frame() picks and writes the packet's frame (flows, IMIX,
 * latency probes; see below).
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
 * userspace filled xdpgen_frame, the program writes the whole base frame again
 * before each send, and shape_frame() then writes the packet's variant's head and
 * tail regions over it (a frame's bytes beyond the head are restored too, which
 * the regions alone would not do).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_COUNTER_OFF 4096
#define SPIN_ROUNDS 16          /* bpf_loop calls of SPIN_ITERS each, at most */
#define SPIN_ITERS (1 << 20)
#define LOOPBACK_IFINDEX 1      /* the loopback device of every namespace */
#define MAX_FRAME 3500          /* as xdpgen.c */
/* Unpaced, the clock (7-9 % of the sender's samples when read per packet) is read
 * only for every UNPACED_CLOCK_EVERY-th packet and the trial's last one, which
 * gives last_ns, the end of the trial's elapsed time (a power of two). */
#define UNPACED_CLOCK_EVERY 64

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
	__u64 last_ns;      /* time of the latest offer (unpaced: latest clock read) */
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

	(void)i;
	return bpf_ktime_get_ns() >= *due;
}

/* Set by xdpgen's watcher thread (-L): offer no more this trial. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdpgen_stop SEC(".maps");


/* -- frame selection and probe stamping (flows, IMIX, latency probes) --------
 *
 * xdpgen.c prepares several variants of the frame: the flows' frames (srgen's
 * -k: packet i is flow i % flows), an IMIX's frames of several sizes (packet i
 * is variant pattern[i % plen], a smooth weighted round robin of the weights),
 * and the latency probe frame.  The page pool holds the longest variant (the
 * base); a page keeps whatever was last written into it, by this program or by
 * the SUT (which forwards this very page: hop limits, SRH, addresses change in
 * place), so every packet rewrites two regions in full: the head (the first
 * head_len bytes: every header) and the tail (where the variants' ends differ,
 * e.g. the probe's trailer), with the variant's own bytes, then shortens the
 * frame to the variant's length (bpf_xdp_adjust_tail; the kernel restores the
 * length for the page's next use).  Bytes outside the regions are the same in
 * every variant.  A probe replaces the packet whose index crosses the next
 * multiple of the probe ratio (srgen's is_probe, in 32.32 fixed point), and
 * gets its trial number, probe number and transmit time (CLOCK_REALTIME, from
 * bpf_ktime_get_tai_ns minus TAI's offset) in its trailer's slots.
 */
#define MAX_REGION 256
#define PROBE_TRAILER 40

struct xdpgen_var {
	__u32 len;
	__u32 pad;
	__u8 head[MAX_REGION];
	__u8 tail[MAX_REGION];
};

struct xdpgen_shape {
	__u32 active;       /* 0: one frame, nothing to do */
	__u32 plen;         /* entries of the pattern */
	__u32 base_len;     /* length of the frame in the page */
	__u32 head_len;     /* the head region: bytes 0..head_len-1 */
	__u32 tail_off, tail_len;
	__u32 probe_var;    /* the probe's variant */
	__u32 trial_no;     /* written into each probe */
	__u64 probe_q32;    /* probes per packet << 32 (0: none this trial) */
	__u64 probe_acc;    /* fraction of a probe so far << 32 */
	__u64 probes;       /* probes offered this trial */
	__u64 tai_off_ns;   /* CLOCK_TAI - CLOCK_REALTIME */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpgen_shape);
} xdpgen_shape SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);         /* set by xdpgen.c before loading */
	__type(key, __u32);
	__type(value, struct xdpgen_var);
} xdpgen_var SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);         /* set by xdpgen.c before loading */
	__type(key, __u32);
	__type(value, __u32);
} xdpgen_pat SEC(".maps");

static __always_inline void put_slot(__u8 *p, __u32 c)
{
	p[0] = (__u8)(c >> 24);
	p[1] = (__u8)(c >> 16);
	p[2] = (__u8)~p[0];
	p[3] = (__u8)~p[1];
	p[4] = (__u8)(c >> 8);
	p[5] = (__u8)c;
	p[6] = (__u8)~p[4];
	p[7] = (__u8)~p[5];
}

/* Write variant v's regions into the frame and cut it to v's length. */
static __always_inline int put_variant(struct xdp_md *ctx, const struct xdpgen_shape *sh,
				       __u32 v)
{
	struct xdpgen_var *var = bpf_map_lookup_elem(&xdpgen_var, &v);
	__u32 hl = sh->head_len, tl = sh->tail_len;

	if (!var)
		return -1;
	if (hl) {
		if (hl > MAX_REGION || bpf_xdp_store_bytes(ctx, 0, var->head, hl))
			return -1;
	}
	if (tl) {
		if (tl > MAX_REGION || bpf_xdp_store_bytes(ctx, sh->tail_off, var->tail, tl))
			return -1;
	}
	if (var->len < sh->base_len &&
	    bpf_xdp_adjust_tail(ctx, (int)var->len - (int)sh->base_len))
		return -1;
	return 0;
}

/* Stamp probe number no of the trial, sent now, into the trailer's slots. */
static __always_inline int stamp_probe(struct xdp_md *ctx, const struct xdpgen_shape *sh,
				       __u32 len, __u32 no)
{
	__u8 slots[32];
	__u64 ts = bpf_ktime_get_tai_ns() - sh->tai_off_ns;

	if (len < PROBE_TRAILER)
		return -1;
	put_slot(slots, sh->trial_no);
	put_slot(slots + 8, no);
	put_slot(slots + 16, (__u32)(ts >> 32));
	put_slot(slots + 24, (__u32)ts);
	return bpf_xdp_store_bytes(ctx, len - PROBE_TRAILER, slots, sizeof(slots)) ? -1 : 0;
}

/* Shape the frame of packet seq: 1 when it is a probe (no counter then), 0 for a
 * test frame, -1 on error. */
static __always_inline int shape_frame(struct xdp_md *ctx, __u64 seq)
{
	struct xdpgen_shape *sh;
	struct xdpgen_var *pv;
	__u32 key = 0, v, *pat;

	sh = bpf_map_lookup_elem(&xdpgen_shape, &key);
	if (!sh)
		return -1;
	if (!sh->active)
		return 0;
	if (sh->probe_q32) {
		sh->probe_acc += sh->probe_q32;
		if (sh->probe_acc >= (1ull << 32)) {
			__u32 no = (__u32)sh->probes;

			sh->probe_acc -= 1ull << 32;
			sh->probes++;
			v = sh->probe_var;
			pv = bpf_map_lookup_elem(&xdpgen_var, &v);
			if (!pv || put_variant(ctx, sh, v))
				return -1;
			return stamp_probe(ctx, sh, pv->len, no) ? -1 : 1;
		}
	}
	key = sh->plen ? (__u32)(seq % sh->plen) : 0;
	pat = bpf_map_lookup_elem(&xdpgen_pat, &key);
	if (!pat)
		return -1;
	return put_variant(ctx, sh, *pat) ? -1 : 0;
}

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
	int r, probe;

	if (ctx->ingress_ifindex == LOOPBACK_IFINDEX)
		return XDP_PASS;        /* the dispatcher hold, not a run */
	cfg = bpf_map_lookup_elem(&xdpgen_cfg, &key);
	if (!cfg)
		return XDP_ABORTED;
	stop = bpf_map_lookup_elem(&xdpgen_stop, &key);
	if (!stop || *stop || cfg->stop || cfg->offered >= cfg->count)
		return XDP_DROP;
	if (cfg->npp_q8 || !(cfg->offered & (UNPACED_CLOCK_EVERY - 1)) ||
	    cfg->offered + 1 == cfg->count)
		now = bpf_ktime_get_ns();
	else
		now = 0;        /* unpaced: the clock is read every so many packets */
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
	probe = shape_frame(ctx, cfg->seq);
	if (probe < 0)
		return XDP_ABORTED;
	data = (unsigned char *)(long)ctx->data;
	end = (unsigned char *)(long)ctx->data_end;
	off = cfg->counter_off;
	if (off && !probe) {
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
	if (now)
		cfg->last_ns = now;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
