// SPDX-License-Identifier: Apache-2.0
/*
 * PF-PLM ingress node, eBPF on TC: tc clsact *egress*, direct-action, on the
 * interface an ingress node sends its SRv6-encapsulated packets out of.  For
 * a packet of a monitored flow (its SID list in pm_flows) it writes the
 * current colour (pm_state[0].colour, flipped by srperf every period T) into
 * Traffic Class bit 2 when pm_state[0].marking is set, then counts the packet
 * in pm_counters under that flow and colour.  Every packet passes.
 * Layout and maps: pm_common.h / pm_count.h.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include "pm_count.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Ethernet + IPv6 + SRH header + PM_MAX_SEGS SIDs: what pm_count_packet reads. */
#define PM_PULL_LEN (ETH_HLEN + sizeof(struct ipv6hdr) + sizeof(struct ipv6_sr_hdr) + \
		     PM_MAX_SEGS * sizeof(struct in6_addr))

SEC("tc")
int pm_tc_ingress(struct __sk_buff *skb)
{
	struct ethhdr *eth;
	void *data, *end;

	/* The SRH may sit in paged data: make it linear (a shorter packet: all of it). */
	bpf_skb_pull_data(skb, skb->len < PM_PULL_LEN ? skb->len : PM_PULL_LEN);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	/* The frame's own EtherType, not skb->protocol (a packet socket may leave that unset). */
	if ((void *)(eth + 1) + sizeof(struct ipv6hdr) > end || eth->h_proto != bpf_htons(ETH_P_IPV6))
		return TC_ACT_OK;
	pm_count_packet((void *)(eth + 1), end, 1);
	return TC_ACT_OK;
}
