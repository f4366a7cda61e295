// SPDX-License-Identifier: Apache-2.0
/*
 * Insert the user-space delay line (delay_line.c) at an interface's tc ingress.
 *
 * divert     on the impaired interface DEV (tc clsact ingress, direct-action):
 *            every frame goes to the egress of the veth end DIV (dl_divert_cfg[0]
 *            = its ifindex), whose peer the delay line reads in its own namespace;
 *            a frame marked DELAY_MARK is the delay line's and passes (mark cleared).
 * give_back  on DIV's ingress (the delay line sends each frame back on the peer):
 *            mark the frame and hand it to DEV's ingress (dl_return_cfg[0] = DEV's
 *            ifindex, BPF_F_INGRESS), as if it had just arrived on DEV.
 * The mark survives the redirect (same namespace); frames from another namespace
 * arrive on a veth with mark 0 (scrubbed), so nothing else carries DELAY_MARK.
 * A map left at 0 makes its program pass every frame unchanged.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define DELAY_MARK 0x5de1a700

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} dl_divert_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} dl_return_cfg SEC(".maps");

SEC("tc/divert")
int divert(struct __sk_buff *skb)
{
	__u32 zero = 0;
	__u32 *ifindex;

	if (skb->mark == DELAY_MARK) {
		skb->mark = 0;
		return TC_ACT_OK;
	}
	ifindex = bpf_map_lookup_elem(&dl_divert_cfg, &zero);
	if (!ifindex || !*ifindex)
		return TC_ACT_OK;
	return bpf_redirect(*ifindex, 0);
}

SEC("tc/give_back")
int give_back(struct __sk_buff *skb)
{
	__u32 zero = 0;
	__u32 *ifindex = bpf_map_lookup_elem(&dl_return_cfg, &zero);

	if (!ifindex || !*ifindex)
		return TC_ACT_OK;
	skb->mark = DELAY_MARK;
	return bpf_redirect(*ifindex, BPF_F_INGRESS);
}
