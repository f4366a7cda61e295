// SPDX-License-Identifier: Apache-2.0
/*
 * xdpgen.bpf.c: the XDP program xdpgen (xdpgen.c) runs with BPF_PROG_RUN in
 * live-frames mode.  Each run gets the prepared frame in a page-pool page;
 * the program writes the packet's counter into the frame's counter slot (when
 * cfg.counter_off is set) and returns XDP_TX, which the kernel turns into a
 * redirect to the ingress device (ctx_in's ingress_ifindex, the TX port):
 * the frame leaves through that device's ndo_xdp_xmit, with no socket and no
 * skb.  The slot is srgen's: two 16-bit words x, ~x then y, ~y, so the UDP
 * checksum stays valid whatever the counter (see srgen.c, -V).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_COUNTER_OFF 4096

struct xdpgen_cfg {
	__u64 seq;          /* the next packet's counter (advanced per run) */
	__u32 counter_off;  /* byte offset of the counter slot, 0: none */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpgen_cfg);
} xdpgen_cfg SEC(".maps");

SEC("xdp")
int xdpgen_tx(struct xdp_md *ctx)
{
	unsigned char *data = (unsigned char *)(long)ctx->data;
	unsigned char *end = (unsigned char *)(long)ctx->data_end;
	struct xdpgen_cfg *cfg;
	__u32 key = 0, off, c;
	unsigned char *p;

	cfg = bpf_map_lookup_elem(&xdpgen_cfg, &key);
	if (!cfg)
		return XDP_ABORTED;
	c = (__u32)cfg->seq;
	cfg->seq++;
	off = cfg->counter_off;
	if (off) {
		if (off > MAX_COUNTER_OFF)
			return XDP_ABORTED;
		p = data + off;
		if (p + 8 > end)
			return XDP_ABORTED;
		p[0] = (unsigned char)(c >> 24);
		p[1] = (unsigned char)(c >> 16);
		p[2] = (unsigned char)~p[0];
		p[3] = (unsigned char)~p[1];
		p[4] = (unsigned char)(c >> 8);
		p[5] = (unsigned char)c;
		p[6] = (unsigned char)~p[4];
		p[7] = (unsigned char)~p[5];
	}
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
