/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Segment Routing Header (RFC 8754) as srperf's eBPF programs read and
 * change it in a packet: its offsets, the check that its Segment List fits
 * (RFC 8754 4.3.1.1: Last Entry within Hdr Ext Len), and the one rewrite they
 * share, Segments Left = sl and DA = Segment List[idx].  Used by srproxy.c
 * (SR proxies) and srh_carry.c (segments carried, not visited).
 */
#ifndef SRPERF_SRH_H
#define SRPERF_SRH_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in6.h>
#include <linux/seg6.h>
#include <bpf/bpf_helpers.h>

#define IPV6_HLEN 40
#define SRH_FIXED 8 /* next header, Hdr Ext Len, type, SL, Last Entry, flags, tag */
#define IPPROTO_SRH 43 /* IPv6 routing header */
#define SRH_TYPE_SEG6 4
#define OFF_IP6_DA (ETH_HLEN + 24)
#define OFF_SRH (ETH_HLEN + IPV6_HLEN) /* an SRH right after the IPv6 header */

/* A segment routing header (type 4) whose Segment List, Last Entry + 1 SIDs
 * of 16 bytes, fits in its Hdr Ext Len. */
static __always_inline int srh_valid(const struct ipv6_sr_hdr *h)
{
	return h->type == SRH_TYPE_SEG6 &&
	       SRH_FIXED + ((__u32)h->first_segment + 1) * 16 <=
		       (((__u32)h->hdrlen + 1) << 3);
}

/* In the packet: Segments Left = sl and the IPv6 DA = Segment List[idx] of the
 * SRH at byte srh of the frame; `flags` for bpf_skb_store_bytes.  0, or -1 when
 * a helper failed (the packet may then be half changed: drop it). */
static __always_inline int srh_set_sl_da(struct __sk_buff *skb, __u32 srh, __u8 sl,
					 __u32 idx, __u64 flags)
{
	struct in6_addr da;

	if (bpf_skb_load_bytes(skb, srh + SRH_FIXED + 16 * idx, &da, sizeof(da)) ||
	    bpf_skb_store_bytes(skb, srh + 3, &sl, 1, flags) ||
	    bpf_skb_store_bytes(skb, OFF_IP6_DA, &da, sizeof(da), flags))
		return -1;
	return 0;
}

#endif /* SRPERF_SRH_H */
