// SPDX-License-Identifier: Apache-2.0
/*
 * srperf's SRv6 fast path: the dispatcher and the step programs (layout and
 * design in xdp_fp.h).  One object, so every program shares the maps; xdp.sh
 * loads it with bpftool, fills fp_progs with the step programs (slot = program
 * id), fp_routes with the chains, and attaches fp_dispatch to the SUT's in-port.
 *
 * Steps:
 *   nop   nothing (the chain-depth experiment)
 *   end   SRv6 End (RFC 8986 4.1): SL - 1, DA = Segment List[SL]; no SRH right after
 *         the IPv6 header, SL = 0 or SL > Last Entry + 1 is dropped, as the kernel's
 *         End drops it (no upper-layer processing here; an extension header before
 *         the SRH is not parsed: a documented deviation)
 *   enc   H.Encaps (RFC 8986 5.1): outer IPv6 (source fp_conf.enc_src, hop limit and
 *         traffic class/flow label as Linux: inner hop limit, 0, 0) + SRH holding the
 *         first <operand> SIDs of fp_sids (travel order); DA = the first
 *   mon   pm_count_packet() (testbed/dataplanes/pm): per-flow counters by SID list
 *         and colour; operand 1: also mark the colour of pm_state
 *   fw    forward: hop limit - 1 and out, operand FP_FW_STATIC / FP_FW_FIB /
 *         FP_FW_KERNEL; hop limit <= 1 is passed to the kernel (its ICMP)
 *   pass  redirect unchanged out of the out-port (the upper bound)
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/seg6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "../ebpf/srh.h"
#include "../pm/pm_count.h"
#include "xdp_fp.h"

#define AF_INET6 10

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FP_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fp_route_key);
	__type(value, struct fp_chain);
} fp_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, FP_MAX_PROGS);
	__type(key, __u32);
	__type(value, __u32);
} fp_progs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fp_ctx);
} fp_ctx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FP_MAX_SIDS);
	__type(key, __u32);
	__type(value, struct in6_addr);
} fp_sids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fp_conf);
} fp_conf SEC(".maps");

/* fw static and pass: slot 0 = the out-port. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fp_tx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FP_N_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} fp_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FP_MAX_PROGS + 1);
	__type(key, __u32);
	__type(value, struct fp_step_stat);
} fp_steps SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&fp_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline struct fp_ctx *ctx_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&fp_ctx, &zero);
}

/* Per-step statistics of the step running now (c->next), when the chain asks for
 * them (fp_chain.flags); off, one load and a branch. */
static __always_inline void step_done(struct fp_ctx *c)
{
	__u32 flags = c->chain.flags, i = c->next, slot;
	struct fp_step_stat *s;
	__u64 now;

	if (!flags || i >= FP_MAX_STEPS)
		return;
	slot = c->chain.steps[i].prog;
	if (slot >= FP_MAX_PROGS)
		return;
	s = bpf_map_lookup_elem(&fp_steps, &slot);
	if (!s)
		return;
	s->runs += 1;
	if (flags & FP_F_TIME) {
		now = bpf_ktime_get_ns();
		s->ns += now - c->t_last;
		c->t_last = now;
	}
}

/* A step's verdict (its statistics first): every step program returns through it. */
static __always_inline int step_return(int verdict)
{
	struct fp_ctx *c = ctx_get();

	if (c)
		step_done(c);
	return verdict;
}

/* The next step of the chain, or the end of the chain (the kernel's). */
static __always_inline int next_step(struct xdp_md *xdp)
{
	struct fp_ctx *c = ctx_get();
	__u32 i, prog;

	if (!c)
		return XDP_ABORTED;
	i = c->next + 1;
	if (i >= c->chain.len || i >= FP_MAX_STEPS) {
		count(FP_C_chain_end);
		return XDP_PASS;
	}
	step_done(c);
	c->next = i;
	c->tail_calls++;
	prog = c->chain.steps[i].prog;
	bpf_tail_call(xdp, &fp_progs, prog);
	c->next = FP_MAX_STEPS; /* counted already: step_return must not count it again */
	count(FP_C_tail_call_failed);
	return XDP_DROP;
}

static __always_inline __u32 operand(void)
{
	struct fp_ctx *c = ctx_get();

	if (!c || c->next >= FP_MAX_STEPS)
		return 0;
	return c->chain.steps[c->next].operand;
}

/* The IPv6 header of an Ethernet/IPv6 frame, or NULL. */
static __always_inline struct ipv6hdr *ip6_of(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = (void *)(eth + 1);

	if ((void *)(ip6 + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IPV6))
		return NULL;
	return ip6;
}

SEC("xdp")
int fp_dispatch(struct xdp_md *xdp)
{
	struct fp_route_key key = {.prefixlen = 128};
	struct ipv6_sr_hdr *srh;
	struct fp_chain *chain;
	struct ipv6hdr *ip6;
	struct fp_ctx *c;
	void *data_end;

	count(FP_C_rx);
	ip6 = ip6_of(xdp);
	if (!ip6) {
		count(FP_C_miss);
		return XDP_PASS;
	}
	data_end = (void *)(long)xdp->data_end;
	__builtin_memcpy(&key.addr, &ip6->daddr, sizeof(key.addr));
	chain = bpf_map_lookup_elem(&fp_routes, &key);
	c = ctx_get();
	if (!chain || !c || chain->len == 0) {
		count(FP_C_miss);
		return XDP_PASS;
	}
	/* An SRH whose Segment List does not fit its length (RFC 8754 4.3.1.1) or is
	 * truncated: dropped, as the kernel's SRv6 drops it. */
	if (ip6->nexthdr == IPPROTO_SRH) {
		srh = (void *)(ip6 + 1);
		if ((void *)(srh + 1) > data_end || !srh_valid(srh)) {
			count(FP_C_bad_srh);
			return XDP_DROP;
		}
	}
	__builtin_memcpy(&c->chain, chain, sizeof(c->chain));
	c->next = 0;
	c->tail_calls = 1;
	if (c->chain.flags) {
		__u32 slot = FP_SLOT_DISPATCH;
		struct fp_step_stat *s = bpf_map_lookup_elem(&fp_steps, &slot);

		if (s)
			s->runs += 1;
		if (c->chain.flags & FP_F_TIME)
			c->t_last = bpf_ktime_get_ns();
	}
	bpf_tail_call(xdp, &fp_progs, c->chain.steps[0].prog);
	count(FP_C_tail_call_failed);
	return XDP_DROP;
}

static __always_inline int nop_body(struct xdp_md *xdp)
{
	return next_step(xdp);
}

static __always_inline int end_body(struct xdp_md *xdp)
{
	void *data_end = (void *)(long)xdp->data_end;
	struct ipv6_sr_hdr *srh;
	struct ipv6hdr *ip6;
	__u32 sl;

	ip6 = ip6_of(xdp);
	if (!ip6 || ip6->nexthdr != IPPROTO_SRH) {
		count(FP_C_end_no_srh);
		return XDP_DROP;
	}
	srh = (void *)(ip6 + 1);
	if ((void *)(srh + 1) > data_end || !srh_valid(srh)) {
		count(FP_C_end_no_srh);
		return XDP_DROP;
	}
	sl = srh->segments_left;
	/* SL = 0: the kernel's End drops it (no upper-layer processing). */
	if (sl == 0) {
		count(FP_C_end_sl0);
		return XDP_DROP;
	}
	/* SL beyond Last Entry + 1: a malformed SRH (RFC 8754 4.3.1.1). */
	if (sl > (__u32)srh->first_segment + 1) {
		count(FP_C_bad_srh);
		return XDP_DROP;
	}
	sl -= 1;
	if (sl >= 128) /* the verifier's bound; srh_valid caps the list anyway */
		return XDP_DROP;
	{
		struct in6_addr *sid = &srh->segments[0];

		sid += sl;
		if ((void *)(sid + 1) > data_end) {
			count(FP_C_end_no_srh);
			return XDP_DROP;
		}
		srh->segments_left = (__u8)sl;
		__builtin_memcpy(&ip6->daddr, sid, sizeof(*sid));
	}
	count(FP_C_end_done);
	return next_step(xdp);
}

static __always_inline int enc_body(struct xdp_md *xdp)
{
	__u32 n = operand(), zero = 0, i, inner_len, nh;
	struct ethhdr eth_copy, *eth;
	struct ipv6_sr_hdr *srh;
	struct fp_conf *conf;
	struct ipv6hdr *outer;
	void *data, *data_end;
	__u8 inner_hlim;
	int grow;

	conf = bpf_map_lookup_elem(&fp_conf, &zero);
	if (!conf || n < 1 || n > FP_MAX_SIDS) {
		count(FP_C_enc_failed);
		return XDP_DROP;
	}
	data = (void *)(long)xdp->data;
	data_end = (void *)(long)xdp->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		goto fail;
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *in6 = (void *)(eth + 1);

		if ((void *)(in6 + 1) > data_end)
			goto fail;
		inner_len = sizeof(*in6) + bpf_ntohs(in6->payload_len);
		inner_hlim = in6->hop_limit;
		nh = IPPROTO_IPV6;
	} else if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *in4 = (void *)(eth + 1);

		if ((void *)(in4 + 1) > data_end)
			goto fail;
		inner_len = bpf_ntohs(in4->tot_len);
		inner_hlim = 64; /* Linux: the default hop limit for an IPv4 inner */
		nh = IPPROTO_IPIP;
	} else {
		goto fail;
	}
	__builtin_memcpy(&eth_copy, eth, sizeof(eth_copy));
	grow = (int)(sizeof(struct ipv6hdr) + SRH_FIXED + 16 * n);
	if (bpf_xdp_adjust_head(xdp, -grow))
		goto fail;
	data = (void *)(long)xdp->data;
	data_end = (void *)(long)xdp->data_end;
	eth = data;
	outer = (void *)(eth + 1);
	srh = (void *)(outer + 1);
	if ((void *)(srh + 1) > data_end)
		goto fail;
	__builtin_memcpy(eth, &eth_copy, sizeof(*eth));
	eth->h_proto = bpf_htons(ETH_P_IPV6);
	*(__u32 *)outer = bpf_htonl(0x60000000); /* version 6, traffic class 0, flow label 0 */
	outer->payload_len = bpf_htons((__u16)(grow - sizeof(struct ipv6hdr) + inner_len));
	outer->nexthdr = IPPROTO_SRH;
	outer->hop_limit = inner_hlim;
	__builtin_memcpy(&outer->saddr, &conf->enc_src, sizeof(outer->saddr));
	srh->nexthdr = (__u8)nh;
	srh->hdrlen = (__u8)(2 * n);
	srh->type = SRH_TYPE_SEG6;
	srh->segments_left = (__u8)(n - 1);
	srh->first_segment = (__u8)(n - 1);
	srh->flags = 0;
	srh->tag = 0;
	for (i = 0; i < FP_MAX_SIDS; i++) {
		struct in6_addr *sid, *slot;
		__u32 k = i;

		if (i >= n)
			break;
		sid = bpf_map_lookup_elem(&fp_sids, &k);
		slot = &srh->segments[0];
		slot += n - 1 - i; /* Segment List[n-1] is the first SID */
		if (!sid || (void *)(slot + 1) > data_end)
			goto fail;
		__builtin_memcpy(slot, sid, sizeof(*slot));
		if (i == 0)
			__builtin_memcpy(&outer->daddr, sid, sizeof(outer->daddr));
	}
	count(FP_C_enc_done);
	return next_step(xdp);
fail:
	count(FP_C_enc_failed);
	return XDP_DROP;
}

static __always_inline int mon_body(struct xdp_md *xdp)
{
	void *data_end = (void *)(long)xdp->data_end;
	struct ipv6hdr *ip6 = ip6_of(xdp);

	if (ip6 && pm_count_packet(ip6, data_end, operand() & 1))
		count(FP_C_mon_counted);
	else
		count(FP_C_mon_not_counted);
	return next_step(xdp);
}

static __always_inline int fw_body(struct xdp_md *xdp)
{
	struct bpf_fib_lookup fib = {};
	__u32 how = operand(), zero = 0;
	struct fp_conf *conf;
	struct ipv6hdr *ip6;
	struct ethhdr *eth;
	long rc;

	if (how == FP_FW_KERNEL) {
		count(FP_C_fw_kernel);
		return XDP_PASS;
	}
	ip6 = ip6_of(xdp);
	if (!ip6) {
		count(FP_C_fw_fib_miss);
		return XDP_PASS;
	}
	if (ip6->hop_limit <= 1) {
		count(FP_C_fw_hop_limit);
		return XDP_PASS;
	}
	eth = (void *)(long)xdp->data;
	if (how == FP_FW_FIB) {
		fib.family = AF_INET6;
		fib.ifindex = xdp->ingress_ifindex;
		fib.tot_len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
		fib.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff);
		__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
		rc = bpf_fib_lookup(xdp, &fib, sizeof(fib), 0);
		if (rc != BPF_FIB_LKUP_RET_SUCCESS) {
			count(FP_C_fw_fib_miss);
			return XDP_PASS;
		}
		ip6->hop_limit--;
		__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
		count(FP_C_fw_redirect);
		return bpf_redirect(fib.ifindex, 0);
	}
	conf = bpf_map_lookup_elem(&fp_conf, &zero);
	if (!conf)
		return XDP_ABORTED;
	ip6->hop_limit--;
	__builtin_memcpy(eth->h_dest, conf->nh_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, conf->out_mac, ETH_ALEN);
	count(FP_C_fw_redirect);
	return bpf_redirect_map(&fp_tx, 0, XDP_DROP);
}

static __always_inline int pass_body(struct xdp_md *xdp)
{
	(void)xdp;
	count(FP_C_pass_redirect);
	return bpf_redirect_map(&fp_tx, 0, XDP_DROP);
}

SEC("xdp")
int fp_nop(struct xdp_md *xdp)
{
	return step_return(nop_body(xdp));
}

SEC("xdp")
int fp_end(struct xdp_md *xdp)
{
	return step_return(end_body(xdp));
}

SEC("xdp")
int fp_enc(struct xdp_md *xdp)
{
	return step_return(enc_body(xdp));
}

SEC("xdp")
int fp_mon(struct xdp_md *xdp)
{
	return step_return(mon_body(xdp));
}

SEC("xdp")
int fp_fw(struct xdp_md *xdp)
{
	return step_return(fw_body(xdp));
}

SEC("xdp")
int fp_pass(struct xdp_md *xdp)
{
	return step_return(pass_body(xdp));
}
