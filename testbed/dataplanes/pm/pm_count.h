/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-flow counter itself (see pm_common.h for the layout): its three maps
 * and pm_count_packet(), which the fast path's `mon` step (XDP) and PF-PLM's
 * TC and XDP counters call, one implementation for every eBPF monitor.
 *
 * Include it in exactly one program object (the maps are defined here).
 */
#ifndef SRPERF_PM_COUNT_H
#define SRPERF_PM_COUNT_H

#include <linux/bpf.h>
#include <linux/seg6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "pm_common.h"

#ifndef IPPROTO_ROUTING
#define IPPROTO_ROUTING 43
#endif

/* The monitored flows: SID list -> flow index (0..PM_MAX_FLOWS-1), filled by srperf. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PM_MAX_FLOWS);
	__type(key, struct pm_flow_key);
	__type(value, __u32);
} pm_flows SEC(".maps");

/* Packets and bytes per flow and colour, per CPU: index PM_COUNTER_INDEX(flow, colour). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PM_MAX_FLOWS * 2);
	__type(key, __u32);
	__type(value, struct pm_count);
} pm_counters SEC(".maps");

/* pm_state[0]: the colour to mark and whether to mark (an ingress node's). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pm_state);
} pm_state SEC(".maps");

/*
 * Count the packet whose IPv6 header is at ip6 (an SRH right behind it), and
 * before that, when may_mark and pm_state says so, write the current colour
 * into it.  data_end: the end of the packet's linear data (XDP's data_end, or
 * a TC program's after bpf_skb_pull_data).  Returns 1 when the packet is of a
 * monitored flow and was counted, 0 otherwise (no SRH, a list longer than
 * PM_MAX_SEGS, a flow not in pm_flows, a truncated header).
 */
static __always_inline int pm_count_packet(struct ipv6hdr *ip6, void *data_end, int may_mark)
{
	struct ipv6_sr_hdr *srh = (void *)(ip6 + 1);
	struct pm_flow_key key = {};
	struct pm_state *state;
	struct pm_count *count;
	__u32 *flow, idx, zero = 0, n, i;

	if ((void *)(srh + 1) > data_end || ip6->nexthdr != IPPROTO_ROUTING || srh->type != 4)
		return 0;
	n = (__u32)srh->first_segment + 1;
	if (n > PM_MAX_SEGS)
		return 0;
	key.nsegs = (__u8)n;
#pragma unroll
	for (i = 0; i < PM_MAX_SEGS; i++) {
		struct in6_addr *sid = &srh->segments[i];

		if (i >= n)
			break;
		if ((void *)(sid + 1) > data_end)
			return 0;
		__builtin_memcpy(&key.segs[i], sid, sizeof(*sid));
	}
	flow = bpf_map_lookup_elem(&pm_flows, &key);
	if (!flow || *flow >= PM_MAX_FLOWS)
		return 0;
	if (may_mark) {
		state = bpf_map_lookup_elem(&pm_state, &zero);
		if (state && state->marking)
			pm_set_colour(ip6, state->colour);
	}
	idx = PM_COUNTER_INDEX(*flow, pm_colour_of(ip6));
	count = bpf_map_lookup_elem(&pm_counters, &idx);
	if (count) {
		count->packets++;
		count->bytes += (__u64)bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
	}
	return 1;
}

#endif /* SRPERF_PM_COUNT_H */
