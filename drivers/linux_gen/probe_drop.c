// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * tc ingress drop for the tester's receive port while latency probes run.
 *
 * The XDP sink (sink.c) drops test frames and passes probe frames up the
 * stack; packet sockets (srgen's probe receiver) see them first, then this
 * program drops them at tc ingress, so the tester's stack never answers a
 * probe (an ICMPv6 error would load the SUT).  This kernel has no tc gact:
 * a direct-action cls_bpf program is the drop.
 *
 *   clang -O2 -g -Wall -target bpf -I/usr/include/x86_64-linux-gnu -c probe_drop.c
 *   tc qdisc add dev DEV clsact
 *   tc filter add dev DEV ingress bpf direct-action obj probe_drop.o sec tc
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_probe_drop(struct __sk_buff *skb)
{
	(void)skb;
	return TC_ACT_SHOT;
}

char _license[] SEC("license") = "GPL";
