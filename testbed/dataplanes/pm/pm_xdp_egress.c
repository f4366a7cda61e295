// SPDX-License-Identifier: Apache-2.0
/*
 * PF-PLM egress node, eBPF on XDP: attached to the interface an egress node
 * receives SRv6 packets on.  It counts a packet of a monitored flow (its SID
 * list in pm_flows) in pm_counters under that flow and the colour it carries
 * (Traffic Class bit 2); it never marks.  Every packet passes (XDP_PASS) to
 * the kernel, which decapsulates it.  Layout and maps: pm_common.h / pm_count.h.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include "pm_count.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int pm_xdp_egress(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDP_PASS;
	if ((void *)(eth + 1) + sizeof(struct ipv6hdr) > end)
		return XDP_PASS;
	pm_count_packet((void *)(eth + 1), end, 0);
	return XDP_PASS;
}
