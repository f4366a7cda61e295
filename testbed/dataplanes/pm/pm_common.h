/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-flow packet loss monitoring (SRv6-PM / PF-PLM; alternate marking, RFC 9341):
 * the one counter layout shared by every eBPF counter srperf ships, the fast
 * path's `mon` step (testbed/dataplanes/xdp) and PF-PLM's TC and XDP counters,
 * so that srperf reads them all the same way (`bpftool map dump`).
 *
 * A flow is a SID list.  srperf fills `pm_flows` with the monitored flows'
 * SID lists (key) and a flow index 0..PM_MAX_FLOWS-1 (value); a packet whose
 * SID list is not in the map is not counted.  Counters live in the per-CPU
 * array `pm_counters` at index PM_COUNTER_INDEX(flow, colour): srperf sums the
 * CPUs.  `pm_state[0]` holds the colour an ingress node marks now (srperf
 * flips it over the transport every period T) and whether it marks at all.
 *
 * The colour is one bit of the IPv6 Traffic Class: PM_COLOUR_TC_BIT, the
 * lowest DSCP bit (Traffic Class bit 2), not an ECN bit: ECN (the two low
 * bits) is rewritten on the way by any congested ECN-capable router (ECT ->
 * CE), which would change a packet's colour and so its block.
 */
#ifndef SRPERF_PM_COMMON_H
#define SRPERF_PM_COMMON_H

#include <linux/types.h>
#include <linux/in6.h>
#include <linux/ipv6.h>

#define PM_MAX_SEGS 8      /* SIDs of a flow key; a longer list is not counted */
#define PM_MAX_FLOWS 1024  /* monitored flows per node */
#define PM_COLOUR_TC_BIT 0x04 /* the colour bit in the 8-bit Traffic Class */
#define PM_COUNTER_INDEX(flow, colour) ((flow) * 2 + ((colour) & 1))

/* A flow: the SRH's Segment List[0..nsegs-1] in SRH order (Segment List[0] is
 * the last segment); slots past nsegs are zero. */
struct pm_flow_key {
	__u8 nsegs;
	__u8 pad[7];
	struct in6_addr segs[PM_MAX_SEGS];
};

/* One flow and colour: packets and bytes (the L3 length, IPv6 header included). */
struct pm_count {
	__u64 packets;
	__u64 bytes;
};

/* pm_state[0]: the colour an ingress node writes into every counted packet
 * (0 or 1) and whether it colours at all (0: counting only). */
struct pm_state {
	__u32 colour;
	__u32 marking;
};

/* The colour a packet carries (0 or 1). */
static __always_inline __u32 pm_colour_of(const struct ipv6hdr *ip6)
{
	/* Traffic Class = priority (high 4 bits) : flow_lbl[0] >> 4 (low 4 bits). */
	return (ip6->flow_lbl[0] >> 4) & PM_COLOUR_TC_BIT ? 1 : 0;
}

/* Set the colour bit of a packet's Traffic Class (no checksum covers it). */
static __always_inline void pm_set_colour(struct ipv6hdr *ip6, __u32 colour)
{
	if (colour & 1)
		ip6->flow_lbl[0] |= (PM_COLOUR_TC_BIT << 4);
	else
		ip6->flow_lbl[0] &= (__u8)~(PM_COLOUR_TC_BIT << 4);
}

#endif /* SRPERF_PM_COMMON_H */
