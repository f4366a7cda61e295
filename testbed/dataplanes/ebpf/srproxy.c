// SPDX-License-Identifier: Apache-2.0
/*
 * srperf eBPF dataplane: SRv6 proxies (draft-ietf-spring-sr-service-programming)
 * for SR-unaware VNFs, as two tc (clsact, direct-action) programs sharing maps:
 *
 *   srp_inbound  on the SUT in-port ingress.  Packets whose IPv6 DA is a proxy
 *                SID (srp_sid) with an SRH (after hop-by-hop / destination
 *                options, if any) and 0 < SL <= Last Entry + 1:
 *                End.AD / End.AS / caching: SL-1, DA = SRH[SL] in a copy of the
 *                outer IPv6 + extension headers; the copy is stored (End.AD:
 *                per VNF and inner family, rewritten at most once per `age`;
 *                caching: one entry per packet in an LRU hash keyed by inner
 *                fields; End.AS: not stored, configured); the outer header
 *                removed; the inner IPv6/IPv4 packet is redirected to the VNF
 *                interface (inner Ethernet: dropped, counted).
 *                End.AM: SL-1, DA = SRH[0], SRH kept, redirected to the VNF.
 *                Any other packet is left to the kernel (TC_ACT_OK).
 *   srp_from_vnf on the ingress of every SUT-side VNF interface.  Packets
 *                from the VNF are forwarded as by a router (inner hop limit/
 *                TTL - 1), get the stored outer header back (End.AD/AS/
 *                caching) or their DA restored to SRH[SL] (End.AM) and are
 *                forwarded: bpf_fib_lookup + redirect, else the kernel stack.
 *                Every drop is counted once, under the counter saying why.
 *
 * Layouts and counters: srproxy.h.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/seg6.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "srh.h"
#include "srproxy.h"

/* Kernel >= 6.3 (not in the Debian 12 uapi header): set skb->protocol to the
 * inner family when bpf_skb_adjust_room() removes an outer header. */
#define SRP_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#define SRP_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)

#define SRP_AF_INET6 10
#define OFF_IP6_HOPLIMIT (ETH_HLEN + 7)
#define SRP_EEXIST 17 /* errno EEXIST: bpf_map_update_elem(BPF_NOEXIST) */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SRP_MAX_SIDS);
	__type(key, struct in6_addr);
	__type(value, __u32);
} srp_sid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SRP_MAX_VNFS);
	__type(key, __u32);
	__type(value, __u32);
} srp_iface SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SRP_MAX_VNFS);
	__type(key, __u32);
	__type(value, struct srp_vnf);
} srp_vnf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * SRP_MAX_VNFS);
	__type(key, __u32);
	__type(value, struct srp_hdr);
} srp_hdr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SRP_CACHE_ENTRIES);
	__type(key, struct srp_cache_key);
	__type(value, struct srp_cache_val);
} srp_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct srp_cache_val);
} srp_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} srp_inside SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SRP_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} srp_stats SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&srp_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline int drop(__u32 idx)
{
	count(idx);
	return TC_ACT_SHOT;
}

static __always_inline struct srp_cache_val *scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&srp_scratch, &zero);
}

/* FNV-1a of `h` continued over the `len` bytes of `buf` (`len` a constant). */
static __always_inline __u32 fnv1a(const __u8 *buf, int len, __u32 h)
{
#pragma clang loop unroll(full)
	for (int i = 0; i < len; i++) {
		h ^= buf[i];
		h *= 16777619u;
	}
	return h;
}

/* FNV-1a over the first (at most 16) payload bytes and their count. */
static __always_inline __u32 payload_hash(struct __sk_buff *skb, __u32 off)
{
	__u8 buf[16] = {};
	__u32 n = 0;

	if (off < skb->len) {
		n = skb->len - off;
		if (n > sizeof(buf))
			n = sizeof(buf);
		if (n > 0 && bpf_skb_load_bytes(skb, off, buf, n))
			n = 0;
	}
	return fnv1a(buf, sizeof(buf), 2166136261u) ^ n;
}

/* FNV-1a of `h` continued over the TCP options at `off` (`n` bytes, at most 40):
 * two duplicate ACKs differ only there (SACK blocks, timestamp). */
static __always_inline __u32 options_hash(struct __sk_buff *skb, __u32 off, __u32 n,
					  __u32 h)
{
	__u8 buf[40] = {};

	if (n > sizeof(buf))
		n = sizeof(buf);
	if (n > 0 && bpf_skb_load_bytes(skb, off, buf, n))
		n = 0;
	return fnv1a(buf, sizeof(buf), h) ^ (n << 8);
}

/* The side of a source-NAT VNF a packet is on (SRP_F_NAT_KEY). */
#define SRP_NAT_INSIDE 0  /* from the clients: the VNF rewrites its source */
#define SRP_NAT_OUTSIDE 1 /* an answer: the VNF rewrites its destination back */

/* Leave out of key `k` what a source-NAT VNF rewrites on a packet of `side`. */
static __always_inline void nat_key(struct srp_cache_key *k, int side)
{
	if (side == SRP_NAT_OUTSIDE) {
		__builtin_memset(k->dst, 0, sizeof(k->dst));
		k->dport = 0;
	} else {
		__builtin_memset(k->src, 0, sizeof(k->src));
		k->sport = 0;
	}
}

/*
 * Caching proxy key of the IPv6/IPv4 packet at `off` (see struct srp_cache_key),
 * every field in (the caller applies nat_key() under SRP_F_NAT_KEY).
 * Returns 0, or -1 when the packet cannot be parsed.
 */
static __always_inline int cache_key(struct __sk_buff *skb, __u32 off, int fam4,
				     __u32 vidx, struct srp_cache_key *k)
{
	__u32 l4off, payload_off, opt_len = 0;
	__u8 proto;
	int l4 = 1;

	__builtin_memset(k, 0, sizeof(*k));
	k->vnf = vidx;
	if (fam4) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, off, &ip, sizeof(ip)))
			return -1;
		if (ip.version != 4 || ip.ihl < 5)
			return -1;
		k->family = 4;
		proto = ip.protocol;
		k->len = bpf_ntohs(ip.tot_len);
		k->ident = ip.id;
		__builtin_memcpy(k->src, &ip.saddr, 4);
		__builtin_memcpy(k->dst, &ip.daddr, 4);
		l4off = off + ip.ihl * 4;
		if (ip.frag_off & bpf_htons(0x1fff))
			l4 = 0; /* not the first fragment: no L4 header */
	} else {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, off, &ip6, sizeof(ip6)))
			return -1;
		if (ip6.version != 6)
			return -1;
		k->family = 6;
		proto = ip6.nexthdr;
		k->len = bpf_ntohs(ip6.payload_len);
		k->ident = ((__u32)(ip6.flow_lbl[0] & 0x0f) << 16) |
			   ((__u32)ip6.flow_lbl[1] << 8) | ip6.flow_lbl[2];
		__builtin_memcpy(k->src, &ip6.saddr, 16);
		__builtin_memcpy(k->dst, &ip6.daddr, 16);
		l4off = off + IPV6_HLEN;
	}
	k->proto = proto;
	payload_off = l4off;
	if (l4 && proto == IPPROTO_TCP) {
		struct tcphdr th;

		if (bpf_skb_load_bytes(skb, l4off, &th, sizeof(th)))
			return -1;
		if (th.doff < 5)
			return -1;
		k->sport = th.source;
		k->dport = th.dest;
		k->l4seq = th.seq;
		k->l4ack = th.ack_seq;
		/* data offset + flags: the 16 bits after the ack number */
		k->tcp_flags = *(__u16 *)((__u8 *)&th + 12);
		k->tcp_win = th.window;
		payload_off = l4off + th.doff * 4;
		opt_len = th.doff * 4 - sizeof(th);
	} else if (l4 && (proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE)) {
		__u16 ports[2];

		if (bpf_skb_load_bytes(skb, l4off, ports, sizeof(ports)))
			return -1;
		k->sport = ports[0];
		k->dport = ports[1];
		payload_off = l4off + 8;
	} else if (l4 && (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6)) {
		__u32 idseq;

		if (bpf_skb_load_bytes(skb, l4off + 4, &idseq, sizeof(idseq)))
			return -1;
		k->l4seq = idseq;
		payload_off = l4off + 8;
	}
	k->payload = payload_hash(skb, payload_off);
	if (opt_len) /* the options too: duplicate ACKs differ only there */
		k->payload = options_hash(skb, l4off + sizeof(struct tcphdr), opt_len,
					  k->payload);
	return 0;
}

/* The outer IPv6 header's extension headers, as parse_outer() found them. */
struct srp_outer {
	__u32 srh_off; /* SRH, bytes from the start of the IPv6 header */
	__u32 hlen;    /* IPv6 header + every extension header (the inner
	                * packet starts here) */
	__u8 sl;       /* Segments Left, as received */
	__u8 last;     /* Last Entry */
	__u8 enh;      /* next header after the extension headers */
};

static __always_inline int is_ext_header(__u8 nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_DSTOPTS || nh == IPPROTO_SRH ||
	       nh == IPPROTO_FRAGMENT || nh == IPPROTO_AH;
}

/*
 * Walk the extension headers after the IPv6 header at ETH_HLEN (next header
 * `nh`): hop-by-hop (first only), destination options, exactly one SRH
 * (routing type 4), at most SRP_MAX_EXT of them.  Returns 0, or the counter to
 * drop with.  The SRH is checked as RFC 8754 4.3.1.1 / RFC 8986 4.1 S09 say:
 * Last Entry within Hdr Ext Len and Segments Left <= Last Entry + 1 (a reduced
 * SRH, whose first SID is only in the DA, has SL = Last Entry + 1).
 */
static __always_inline int parse_outer(struct __sk_buff *skb, __u8 nh,
				       struct srp_outer *o)
{
	__u32 off = IPV6_HLEN;
	int have_srh = 0;

	o->srh_off = 0;
	o->sl = 0;
	o->last = 0;
	for (int i = 0; i < SRP_MAX_EXT; i++) {
		struct ipv6_sr_hdr h;

		if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_DSTOPTS && nh != IPPROTO_SRH)
			break;
		if (nh == IPPROTO_HOPOPTS && i != 0)
			return SRP_in_ext_unsupported;
		if (off > SRP_MAX_HDR + IPV6_HLEN)
			return SRP_in_too_long;
		/* 8 bytes: the common next header + length, and for an SRH its
		 * type, SL and Last Entry */
		if (bpf_skb_load_bytes(skb, ETH_HLEN + off, &h, sizeof(h)))
			return SRP_in_bad;
		if (nh == IPPROTO_SRH) {
			if (have_srh || !srh_valid(&h))
				return SRP_in_bad;
			have_srh = 1;
			o->srh_off = off;
			o->sl = h.segments_left;
			o->last = h.first_segment;
		}
		off += ((__u32)h.hdrlen + 1) << 3;
		nh = h.nexthdr;
	}
	if (is_ext_header(nh))
		return SRP_in_ext_unsupported;
	if (!have_srh)
		return SRP_in_bad;
	if (o->sl == 0 || o->sl > (__u32)o->last + 1)
		return SRP_in_bad;
	o->hlen = off;
	o->enh = nh;
	return 0;
}

/* In the copy of the outer header s->data: SL = sl (already decremented),
 * DA = SRH[sl]; the SRH at srh_off. */
static __always_inline int advance(struct srp_cache_val *s, __u32 srh_off, __u8 sl)
{
	__u32 soff = srh_off;
	__u32 off;

	barrier_var(soff);
	if (soff > SRP_MAX_HDR - SRH_FIXED)
		return -1;
	s->data[soff + 3] = sl;
	off = soff + SRH_FIXED + 16 * (__u32)sl;
	barrier_var(off);
	if (off > SRP_MAX_HDR - 16)
		return -1;
	__builtin_memcpy(&s->data[24], &s->data[off], 16);
	return 0;
}

/* The outer IPv6 header and its extension headers (o->hlen bytes) in the
 * scratch buffer, already advanced to segment sl; NULL with the counter to
 * drop with in *why. */
static __always_inline struct srp_cache_val *load_outer(struct __sk_buff *skb,
							struct srp_outer *o, __u8 sl,
							__u32 *why)
{
	struct srp_cache_val *s = scratch();
	__u32 hlen = o->hlen;

	*why = SRP_err;
	barrier_var(hlen);
	if (hlen > SRP_MAX_HDR || hlen < IPV6_HLEN + SRH_FIXED) {
		*why = SRP_in_too_long;
		return NULL;
	}
	if (!s || bpf_skb_load_bytes(skb, ETH_HLEN, s->data, hlen))
		return NULL;
	if (advance(s, o->srh_off, sl)) {
		*why = SRP_in_bad;
		return NULL;
	}
	return s;
}

/* Rewrite Ethernet and hand the packet to the VNF. */
static __always_inline int to_vnf(struct __sk_buff *skb, struct srp_vnf *vnf,
				  __u16 proto)
{
	struct ethhdr eth;

	__builtin_memcpy(eth.h_dest, vnf->vnf_mac, ETH_ALEN);
	__builtin_memcpy(eth.h_source, vnf->sut_mac, ETH_ALEN);
	eth.h_proto = bpf_htons(proto);
	if (bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0))
		return drop(SRP_err);
	return bpf_redirect(vnf->ifindex, 0);
}

/* Forward an IPv6 packet (Ethernet at 0): FIB lookup + redirect, else the
 * kernel stack (which also handles hop limit 1, missing neighbours, MTU).
 * Either way the outer hop limit is decremented once: End's decrement at the
 * proxy SID (RFC 8986 4.1 S12), made when the outer header is forwarded. */
static __always_inline int forward(struct __sk_buff *skb, struct srp_vnf *vnf)
{
	struct bpf_fib_lookup p = {};
	struct ipv6hdr ip6;
	struct ethhdr eth;
	__u8 hl;
	long rc;

	if (vnf->flags & SRP_F_NO_FIB)
		goto stack;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)))
		goto stack;
	if (ip6.hop_limit <= 1)
		goto stack;
	p.family = SRP_AF_INET6;
	p.flowinfo = *(__be32 *)&ip6 & bpf_htonl(0x0fffffff);
	p.l4_protocol = ip6.nexthdr;
	p.tot_len = bpf_ntohs(ip6.payload_len) + IPV6_HLEN;
	p.ifindex = skb->ingress_ifindex;
	__builtin_memcpy(p.ipv6_src, &ip6.saddr, 16);
	__builtin_memcpy(p.ipv6_dst, &ip6.daddr, 16);
	rc = bpf_fib_lookup(skb, &p, sizeof(p), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		goto stack;
	hl = ip6.hop_limit - 1;
	if (bpf_skb_store_bytes(skb, OFF_IP6_HOPLIMIT, &hl, 1, BPF_F_RECOMPUTE_CSUM))
		return drop(SRP_err);
	__builtin_memcpy(eth.h_dest, p.dmac, ETH_ALEN);
	__builtin_memcpy(eth.h_source, p.smac, ETH_ALEN);
	eth.h_proto = bpf_htons(ETH_P_IPV6);
	if (bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0))
		return drop(SRP_err);
	count(SRP_fib_redirect);
	return bpf_redirect(p.ifindex, 0);
stack:
	count(SRP_fib_fallback);
	return TC_ACT_OK;
}

/* Nothing to restore: the VNF's miss policy decides. */
static __always_inline int miss(struct srp_vnf *vnf)
{
	if (vnf->flags & SRP_F_MISS_PASS) {
		count(SRP_miss_pass);
		return TC_ACT_OK;
	}
	return drop(SRP_miss_drop);
}

/*
 * The proxy forwards the inner packet from the VNF as a router (proxy draft,
 * static proxy, packets from IFACE-IN: "Decrement TTL and update checksum" /
 * "Decrement Hop Limit"): hop limit/TTL - 1, the IPv4 header checksum updated
 * incrementally.  Returns 0, 1 when it would expire (<= 1), -1 on an error.
 */
static __always_inline int inner_hop(struct __sk_buff *skb, int fam4)
{
	if (fam4) {
		__u8 tp[2]; /* TTL, protocol: one 16-bit word of the checksum */
		__u16 old, new;

		if (bpf_skb_load_bytes(skb, ETH_HLEN + 8, tp, sizeof(tp)))
			return -1;
		if (tp[0] <= 1)
			return 1;
		__builtin_memcpy(&old, tp, sizeof(old));
		tp[0] -= 1;
		__builtin_memcpy(&new, tp, sizeof(new));
		if (bpf_skb_store_bytes(skb, ETH_HLEN + 8, tp, 1, 0) ||
		    bpf_l3_csum_replace(skb, ETH_HLEN + 10, old, new, sizeof(new)))
			return -1;
	} else {
		__u8 hl;

		if (bpf_skb_load_bytes(skb, OFF_IP6_HOPLIMIT, &hl, 1))
			return -1;
		if (hl <= 1)
			return 1;
		hl -= 1;
		if (bpf_skb_store_bytes(skb, OFF_IP6_HOPLIMIT, &hl, 1, BPF_F_RECOMPUTE_CSUM))
			return -1;
	}
	return 0;
}

/* Forward the inner packet from the VNF (inner_hop), put the outer header
 * s->data[0..len) back in front of it, count `restored` (none: SRP_NSTATS)
 * and forward the whole. */
static __always_inline int restore(struct __sk_buff *skb, struct srp_vnf *vnf,
				   struct srp_cache_val *s, __u32 len, int fam4,
				   __u32 restored)
{
	__u16 plen;
	__u16 proto = bpf_htons(ETH_P_IPV6);
	int rc;

	barrier_var(len);
	if (len < IPV6_HLEN + SRH_FIXED || len > SRP_MAX_HDR)
		return drop(SRP_err);
	rc = inner_hop(skb, fam4);
	if (rc > 0)
		return drop(SRP_from_hop_limit);
	if (rc < 0)
		return drop(SRP_err);
	plen = bpf_htons((__u16)(len - IPV6_HLEN + skb->len - ETH_HLEN));
	__builtin_memcpy(&s->data[4], &plen, sizeof(plen));
	/* ENCAP_L3_IPV6 for both inner families: skb->protocol becomes IPv6 (an
	 * IPv4 inner), and a GSO packet from the VNF is marked as encapsulated
	 * (SKB_GSO_IPXIP6, inner headers set) so it can still be segmented; a
	 * TCP one gets its MSS lowered by len.  UDP GSO (gso_size delineates the
	 * datagrams) is refused unless gso_size stays fixed: then again so.
	 * An skb still marked encapsulated (an SRv6 packet this proxy decapsulated
	 * on its way in keeps skb->encapsulation, its inner header offsets and,
	 * when GRO merged it, its SKB_GSO_IPXIP6: the kernel refuses to
	 * encapsulate it again, -EALREADY) is grown without the encapsulation
	 * flag: the restored header has the length of the removed one, so the
	 * inner offsets and GSO type it kept are right again, and gso_size,
	 * raised by len when the header was removed, is lowered by len back to
	 * the inner MSS. */
	if (bpf_skb_adjust_room(skb, len, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_ENCAP_L3_IPV6) &&
	    (!skb->gso_size ||
	     bpf_skb_adjust_room(skb, len, BPF_ADJ_ROOM_MAC,
				 BPF_F_ADJ_ROOM_ENCAP_L3_IPV6 | BPF_F_ADJ_ROOM_FIXED_GSO)) &&
	    bpf_skb_adjust_room(skb, len, BPF_ADJ_ROOM_MAC, 0))
		return drop(SRP_err);
	if (bpf_skb_store_bytes(skb, ETH_HLEN, s->data, len, 0))
		return drop(SRP_err);
	if (fam4 && bpf_skb_store_bytes(skb, __builtin_offsetof(struct ethhdr, h_proto),
					&proto, sizeof(proto), 0))
		return drop(SRP_err);
	if (restored < SRP_NSTATS)
		count(restored);
	return forward(skb, vnf);
}

SEC("tc")
int srp_inbound(struct __sk_buff *skb)
{
	struct srp_cache_val *s;
	struct srp_outer o;
	struct ipv6hdr *ip6;
	struct srp_vnf *vnf;
	struct in6_addr da;
	void *data, *end;
	__u32 vidx, hlen, why;
	__u32 *pidx;
	__u8 sl, hop_limit, nh;
	int fam4, rc;

	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return TC_ACT_OK;
	count(SRP_in_packets);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	if (data + ETH_HLEN + IPV6_HLEN > end) {
		if (bpf_skb_pull_data(skb, ETH_HLEN + IPV6_HLEN))
			goto not_sid;
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		if (data + ETH_HLEN + IPV6_HLEN > end)
			goto not_sid;
	}
	ip6 = data + ETH_HLEN;
	__builtin_memcpy(&da, &ip6->daddr, sizeof(da));
	hop_limit = ip6->hop_limit;
	nh = ip6->nexthdr;
	pidx = bpf_map_lookup_elem(&srp_sid, &da);
	if (!pidx)
		goto not_sid;
	vidx = *pidx;
	vnf = bpf_map_lookup_elem(&srp_vnf, &vidx);
	if (!vnf || vnf->behavior == SRP_BEH_NONE)
		goto not_sid;

	rc = parse_outer(skb, nh, &o);
	if (rc)
		return drop(rc);
	if (hop_limit <= 1) {
		/* RFC 8986 4.1 S05: the kernel sends ICMPv6 time exceeded */
		count(SRP_in_hop_limit);
		return TC_ACT_OK;
	}
	sl = o.sl - 1;

	if (vnf->behavior == SRP_BEH_AM) {
		/* Masquerade: DA = SRH[0] (the last segment), SRH kept. */
		if (srh_set_sl_da(skb, ETH_HLEN + o.srh_off, sl, 0, BPF_F_RECOMPUTE_CSUM))
			return drop(SRP_err);
		count(SRP_in_am);
		return to_vnf(skb, vnf, ETH_P_IPV6);
	}

	if (o.enh == IPPROTO_ETHERNET)
		return drop(SRP_in_l2_unsupported);
	if (o.enh != IPPROTO_IPV6 && o.enh != IPPROTO_IPIP)
		return drop(SRP_in_bad);
	hlen = o.hlen;
	barrier_var(hlen); /* keep clang from testing the parts instead */
	if (hlen > SRP_MAX_HDR)
		return drop(SRP_in_too_long);
	fam4 = o.enh == IPPROTO_IPIP;

	if (vnf->behavior == SRP_BEH_AD) {
		__u32 slot = 2 * vidx + fam4;
		struct srp_hdr *h = bpf_map_lookup_elem(&srp_hdr, &slot);
		__u64 now = bpf_ktime_get_ns();

		if (!h)
			return drop(SRP_err);
		if (h->len == 0 || now - h->updated_ns >= vnf->age_ns) {
			s = load_outer(skb, &o, sl, &why);
			if (!s)
				return drop(why);
			bpf_spin_lock(&h->lock);
			__builtin_memcpy(h->data, s->data, SRP_MAX_HDR);
			h->len = hlen;
			h->updated_ns = now;
			bpf_spin_unlock(&h->lock);
			count(SRP_ad_learn);
		} else {
			count(SRP_ad_age_skip);
		}
		count(SRP_in_ad);
	} else if (vnf->behavior == SRP_BEH_CACHE) {
		struct srp_cache_key k;
		long err;

		s = load_outer(skb, &o, sl, &why);
		if (!s)
			return drop(why);
		if (cache_key(skb, ETH_HLEN + hlen, fam4, vidx, &k))
			return drop(SRP_in_bad);
		if (vnf->flags & SRP_F_NAT_KEY) {
			__u32 zero = 0;
			__u32 *inside = bpf_map_lookup_elem(&srp_inside, &zero);

			/* no in-port configured: every packet is from the inside */
			nat_key(&k, inside && *inside && *inside != skb->ingress_ifindex ?
					    SRP_NAT_OUTSIDE : SRP_NAT_INSIDE);
		}
		s->len = hlen;
		s->inserted_ns = bpf_ktime_get_ns();
		/* One entry per packet, created atomically: a packet with the same
		 * key inside the VNF already owns it (caching-proxy paper: drop),
		 * unless that entry is stale (its packet was lost in the VNF): then
		 * it is deleted (by one CPU only) and this packet's inserted. */
		err = bpf_map_update_elem(&srp_cache, &k, s, BPF_NOEXIST);
		if (err == -SRP_EEXIST && vnf->age_ns) {
			struct srp_cache_val *old = bpf_map_lookup_elem(&srp_cache, &k);
			__u64 now = bpf_ktime_get_ns();

			if (old && now > old->inserted_ns &&
			    now - old->inserted_ns >= vnf->age_ns &&
			    bpf_map_delete_elem(&srp_cache, &k) == 0) {
				count(SRP_cache_stale);
				err = bpf_map_update_elem(&srp_cache, &k, s, BPF_NOEXIST);
			}
		}
		if (err == -SRP_EEXIST)
			return drop(SRP_cache_dup);
		if (err)
			return drop(SRP_err);
		count(SRP_cache_insert);
		count(SRP_in_cache);
	} else if (vnf->behavior == SRP_BEH_AS) {
		count(SRP_in_as);
	} else {
		goto not_sid;
	}

	if (bpf_skb_adjust_room(skb, -(__s32)hlen, BPF_ADJ_ROOM_MAC,
				fam4 ? SRP_ADJ_ROOM_DECAP_L3_IPV4 : SRP_ADJ_ROOM_DECAP_L3_IPV6))
		return drop(SRP_err);
	return to_vnf(skb, vnf, fam4 ? ETH_P_IP : ETH_P_IPV6);

not_sid:
	count(SRP_in_not_sid);
	return TC_ACT_OK;
}

/* End.AM, a packet from the VNF: DA = SRH[SL]. */
static __always_inline int from_vnf_am(struct __sk_buff *skb, struct srp_vnf *vnf)
{
	struct srp_outer o;
	struct in6_addr da;
	__u8 nh;

	if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &nh, 1) || parse_outer(skb, nh, &o))
		goto ignored;
	/* parse_outer accepts SL = Last Entry + 1; here SL indexes the list */
	if (o.sl > o.last)
		goto ignored;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + o.srh_off + SRH_FIXED + 16 * (__u32)o.sl,
			       &da, sizeof(da)))
		goto ignored;
	if (bpf_skb_store_bytes(skb, OFF_IP6_DA, &da, sizeof(da), BPF_F_RECOMPUTE_CSUM))
		return drop(SRP_err);
	count(SRP_from_am);
	return forward(skb, vnf);
ignored:
	count(SRP_from_ignored);
	return TC_ACT_OK;
}

SEC("tc")
int srp_from_vnf(struct __sk_buff *skb)
{
	struct srp_cache_val *s;
	struct srp_vnf *vnf;
	void *data, *end;
	__u32 ifindex = skb->ifindex;
	__u32 vidx, len;
	__u32 *pidx;
	int fam4;

	pidx = bpf_map_lookup_elem(&srp_iface, &ifindex);
	if (!pidx)
		return TC_ACT_OK;
	vidx = *pidx;
	vnf = bpf_map_lookup_elem(&srp_vnf, &vidx);
	if (!vnf)
		return TC_ACT_OK;
	count(SRP_from_packets);

	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + ETH_HLEN;

		if ((void *)(ip6 + 1) > end) {
			if (bpf_skb_pull_data(skb, ETH_HLEN + IPV6_HLEN))
				goto ignored;
			data = (void *)(long)skb->data;
			end = (void *)(long)skb->data_end;
			ip6 = data + ETH_HLEN;
			if ((void *)(ip6 + 1) > end)
				goto ignored;
		}
		/* link-local (fe80::/10) and multicast: the VNF's own ND/MLD */
		if (ip6->daddr.s6_addr[0] == 0xff ||
		    (ip6->daddr.s6_addr[0] == 0xfe &&
		     (ip6->daddr.s6_addr[1] & 0xc0) == 0x80))
			goto ignored;
		fam4 = 0;
	} else if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + ETH_HLEN;

		if ((void *)(ip + 1) > end) {
			if (bpf_skb_pull_data(skb, ETH_HLEN + sizeof(*ip)))
				goto ignored;
			data = (void *)(long)skb->data;
			end = (void *)(long)skb->data_end;
			ip = data + ETH_HLEN;
			if ((void *)(ip + 1) > end)
				goto ignored;
		}
		/* multicast and limited broadcast */
		if ((ip->daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000) ||
		    ip->daddr == 0xffffffff)
			goto ignored;
		fam4 = 1;
	} else {
		goto ignored;
	}

	if (vnf->behavior == SRP_BEH_AM) {
		if (fam4)
			goto ignored;
		return from_vnf_am(skb, vnf);
	}

	s = scratch();
	if (!s)
		return drop(SRP_err);

	if (vnf->behavior == SRP_BEH_AD || vnf->behavior == SRP_BEH_AS) {
		__u32 slot = 2 * vidx + fam4;
		struct srp_hdr *h = bpf_map_lookup_elem(&srp_hdr, &slot);

		if (!h)
			return drop(SRP_err);
		bpf_spin_lock(&h->lock);
		len = h->len;
		__builtin_memcpy(s->data, h->data, SRP_MAX_HDR);
		bpf_spin_unlock(&h->lock);
		if (len == 0) {
			count(SRP_from_no_state);
			return miss(vnf);
		}
		return restore(skb, vnf, s, len, fam4,
			       vnf->behavior == SRP_BEH_AD ? SRP_from_ad : SRP_from_as);
	}

	if (vnf->behavior == SRP_BEH_CACHE) {
		struct srp_cache_key k, out;
		struct srp_cache_val *v;

		if (cache_key(skb, ETH_HLEN, fam4, vidx, &k)) {
			count(SRP_cache_miss);
			return miss(vnf);
		}
		if (vnf->flags & SRP_F_NAT_KEY) {
			/* the side is not known here: a packet from the inside
			 * (source rewritten) first, else an answer (destination
			 * rewritten back) */
			__builtin_memcpy(&out, &k, sizeof(out));
			nat_key(&k, SRP_NAT_INSIDE);
			v = bpf_map_lookup_elem(&srp_cache, &k);
			if (!v) {
				nat_key(&out, SRP_NAT_OUTSIDE);
				__builtin_memcpy(&k, &out, sizeof(k));
				v = bpf_map_lookup_elem(&srp_cache, &k);
			}
		} else {
			v = bpf_map_lookup_elem(&srp_cache, &k);
		}
		if (!v) {
			count(SRP_cache_miss);
			return miss(vnf);
		}
		len = v->len;
		__builtin_memcpy(s->data, v->data, SRP_MAX_HDR);
		/* The entry belongs to one packet: the one whose delete succeeds.
		 * A duplicate from the VNF on another CPU that lost the race is a
		 * miss (and never restores a header another packet took). */
		if (bpf_map_delete_elem(&srp_cache, &k)) {
			count(SRP_cache_race);
			return miss(vnf);
		}
		count(SRP_cache_hit);
		return restore(skb, vnf, s, len, fam4, SRP_NSTATS);
	}

ignored:
	count(SRP_from_ignored);
	return TC_ACT_OK;
}
