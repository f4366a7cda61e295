// SPDX-License-Identifier: Apache-2.0
/*
 * srperf legacy VNF helper: drop a share of the packets a VNF receives.
 * tc clsact ingress, direct-action, on the VNF's interface (the kernel here
 * has no tc gact/matchall).  The share is vnf_drop_cfg[0], in parts per
 * million (0: drop nothing, 1000000: drop everything); vnf_drop_stats[0] and
 * [1] count passed and dropped unicast IP packets.  Multicast (the kernel's
 * own MLD/IGMP chatter), broadcast and non-IP frames pass, uncounted.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} vnf_drop_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} vnf_drop_stats SEC(".maps");

SEC("tc")
int vnf_drop(struct __sk_buff *skb)
{
	__u32 zero = 0, idx = 0;
	__u32 *ppm;
	__u64 *n;

	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;

	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + ETH_HLEN;

		if ((void *)(ip6 + 1) > end || ip6->daddr.s6_addr[0] == 0xff)
			return TC_ACT_OK;
	} else if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + ETH_HLEN;

		if ((void *)(ip + 1) > end || ip->daddr == 0xffffffff ||
		    (ip->daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000))
			return TC_ACT_OK;
	} else {
		return TC_ACT_OK;
	}
	ppm = bpf_map_lookup_elem(&vnf_drop_cfg, &zero);
	if (ppm && *ppm && bpf_get_prandom_u32() % 1000000 < *ppm)
		idx = 1;
	n = bpf_map_lookup_elem(&vnf_drop_stats, &idx);
	if (n)
		*n += 1;
	return idx ? TC_ACT_SHOT : TC_ACT_OK;
}
