// SPDX-License-Identifier: Apache-2.0
/*
 * srperf stateful endpoints: carry segments in the SRH without visiting them.
 *
 * tc clsact egress, direct-action, on the client endpoint's port, behind a
 * kernel `seg6 mode encap` route whose segment list is, in path order,
 *     [carried SIDs..., the SIDs to visit...]
 * The kernel sends such a packet to the first SID with Segments Left = Last
 * Entry.  This program makes the carried SIDs segments already visited:
 * Segments Left = visit - 1 and the destination = Segment List[visit - 1]
 * (the first SID to visit), where visit = srh_carry_cfg[0] (0: change
 * nothing).  So a segment list of any length rides through the SUT (the
 * caching-proxy paper's label stack, present but not used for steering) and
 * only the behavior's SID and the server's last SID process it: no End per
 * extra segment on the path.
 *
 * Only IPv6 packets whose next header is the SRH (type 4) and whose Segments
 * Left is still Last Entry (as encapsulated) are changed; srh_carry_stats[0]
 * counts them, [1] the IPv6 packets left alone.  The outer header carries no
 * checksum and the inner packet is untouched.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/seg6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "srh.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} srh_carry_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} srh_carry_stats SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *n = bpf_map_lookup_elem(&srh_carry_stats, &idx);

	if (n)
		*n += 1;
}

SEC("tc")
int srh_carry(struct __sk_buff *skb)
{
	struct ipv6_sr_hdr srh;
	__u32 zero = 0;
	__u32 *visit;
	__u8 nh, sl;

	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return TC_ACT_OK;
	visit = bpf_map_lookup_elem(&srh_carry_cfg, &zero);
	if (!visit || *visit == 0 || *visit > 255)
		goto alone;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &nh, 1) || nh != IPPROTO_SRH)
		goto alone;
	if (bpf_skb_load_bytes(skb, OFF_SRH, &srh, sizeof(srh)))
		goto alone;
	if (!srh_valid(&srh) || srh.segments_left != srh.first_segment ||
	    (__u32)srh.first_segment + 1 <= *visit)
		goto alone;
	sl = (__u8)(*visit - 1);
	if (srh_set_sl_da(skb, OFF_SRH, sl, sl, 0))
		goto alone;
	count(0);
	return TC_ACT_OK;
alone:
	count(1);
	return TC_ACT_OK;
}
