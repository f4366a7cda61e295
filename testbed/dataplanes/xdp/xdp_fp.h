/* SPDX-License-Identifier: Apache-2.0 */
/*
 * srperf's SRv6 fast path (HIKe-v0 class, thesis chapter 6): the layout shared by
 * the XDP programs of xdp_fp.c and the loader (cfg_scripts/xdp.sh, which writes
 * the maps with bpftool) and srperf/forwarders/xdp.py (which reads the counters).
 *
 * A packet enters fp_dispatch; its IPv6 destination is looked up in fp_routes
 * (longest prefix match), whose value is a chain of up to FP_MAX_STEPS steps
 * (program id, operand).  The dispatcher copies the chain into the per-CPU
 * fp_ctx and tail-calls the first step through fp_progs; each step runs and
 * tail-calls the next, or ends the packet (redirect, drop, pass).  A chain that
 * runs out of steps passes the packet to the kernel (the slow path), as does a
 * lookup miss.  XDP programs run with migration disabled through the whole
 * tail-call chain, so the per-CPU fp_ctx is the packet's own.
 */
#ifndef SRPERF_XDP_FP_H
#define SRPERF_XDP_FP_H

#include <linux/types.h>
#include <linux/in6.h>

#define FP_MAX_STEPS 8   /* steps of a chain */
#define FP_MAX_SIDS 8    /* SIDs enc can push (fp_sids entries) */
#define FP_MAX_ROUTES 1024
#define FP_MAX_PROGS 8   /* fp_progs slots (program ids) */

/* Program ids: the index of each step program in fp_progs. */
#define FP_PROGS(X) X(nop, 0) X(end, 1) X(enc, 2) X(mon, 3) X(fw, 4) X(pass, 5)

/* fw operands: how the packet leaves. */
#define FP_FW_STATIC 0 /* static next hop (fp_conf MACs), DEVMAP redirect */
#define FP_FW_FIB 1    /* bpf_fib_lookup on the kernel's tables, redirect */
#define FP_FW_KERNEL 2 /* XDP_PASS: the kernel forwards */

/* Counters (fp_stats, per CPU, index = order here); srperf reads the names here. */
#define FP_COUNTERS(X)                                                                 \
	X(rx) /* packets seen by the dispatcher */                                       \
	X(miss) /* not IPv6, or no route: passed to the kernel */                        \
	X(bad_srh) /* an SRH that does not fit its length, SL > Last Entry + 1: dropped */\
	X(chain_end) /* the chain ran out of steps: passed to the kernel */              \
	X(tail_call_failed) /* an empty fp_progs slot: dropped */                        \
	X(end_done) X(end_no_srh) X(end_sl0) /* end: done; dropped (no SRH, SL = 0) */   \
	X(enc_done) X(enc_failed) /* enc: done; dropped (no room, not IP, no SID) */     \
	X(mon_counted) X(mon_not_counted)                                               \
	X(fw_redirect) X(fw_hop_limit) /* hop limit <= 1: passed (the kernel's ICMP) */  \
	X(fw_fib_miss) /* bpf_fib_lookup found no neighbour/route: passed */             \
	X(fw_kernel) X(pass_redirect)

#define FP_ENUM(name) FP_C_##name,
enum fp_counter { FP_COUNTERS(FP_ENUM) FP_N_COUNTERS };
#undef FP_ENUM

struct fp_step {
	__u32 prog;
	__u32 operand;
};

/* fp_chain.flags: per-step statistics in fp_steps (off when 0: the steps then pay
 * one load and a branch for them).  FP_F_COUNT: each step's runs; FP_F_TIME: also
 * its nanoseconds (bpf_ktime_get_ns at every step's end, about 20-40 ns each). */
#define FP_F_COUNT 1
#define FP_F_TIME 2
#define FP_SLOT_DISPATCH FP_MAX_PROGS /* fp_steps slot of the dispatcher (runs only) */

/* fp_routes value. */
struct fp_chain {
	__u32 len;
	__u32 flags; /* FP_F_* */
	struct fp_step steps[FP_MAX_STEPS];
};

/* fp_steps[slot] (per CPU; slot = program id, FP_SLOT_DISPATCH = the dispatcher):
 * runs of the step and, with FP_F_TIME, the nanoseconds from the previous step's
 * end (its tail call) to this step's end (its tail call or verdict). */
struct fp_step_stat {
	__u64 runs;
	__u64 ns;
};

/* fp_routes key (LPM trie: prefixlen first). */
struct fp_route_key {
	__u32 prefixlen;
	struct in6_addr addr;
};

/* fp_ctx[0]: the packet's chain and how far it got. */
struct fp_ctx {
	__u32 next;       /* index of the step running now */
	__u32 tail_calls; /* tail calls made for this packet */
	__u64 t_last;     /* FP_F_TIME: when the previous step ended (ns) */
	struct fp_chain chain;
};

#define FP_OWNER_LEN 32 /* fp_conf.owner */

/* fp_conf[0], written by xdp.sh. */
struct fp_conf {
	struct in6_addr enc_src; /* enc: outer source address */
	__u8 nh_mac[6];          /* fw static: next hop's MAC */
	__u8 out_mac[6];         /* fw static: the out port's MAC */
	__u32 pad;
	/* Who loaded this object: "srperf-xdp:<network namespace>" (NUL-padded), so
	 * that xdp.sh clean finds its own programs and maps however they were left
	 * (a lost PID file, a killed run) and never touches anyone else's. */
	char owner[FP_OWNER_LEN];
};

#endif /* SRPERF_XDP_FP_H */
