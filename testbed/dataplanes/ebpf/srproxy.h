/* SPDX-License-Identifier: Apache-2.0 */
/*
 * srperf eBPF dataplane: SRv6 proxies for SR-unaware VNFs.
 *
 * Layouts shared by the programs (srproxy.c) and by the loader
 * (cfg_scripts/ebpf.sh writes these structs byte by byte with bpftool, and
 * srperf/forwarders/ebpf/counters.py reads the counter names from SRP_COUNTERS below),
 * so every struct here has an explicit, padded, little-endian layout that is
 * checked by _Static_assert.
 *
 * Maps (all pinned by the loader under <pin root>/<netns>/maps/):
 *   srp_sid    HASH   VNF SID (16 bytes) -> VNF index (u32)
 *   srp_iface  HASH   ifindex of the SUT-side VNF interface -> VNF index
 *   srp_vnf    ARRAY  VNF index -> struct srp_vnf (behavior, MACs, age...)
 *   srp_hdr    ARRAY  2 * VNF index + (inner is IPv4) -> struct srp_hdr:
 *                     the outer IPv6 + SRH restored on packets from the VNF
 *                     (learned by End.AD, configured for End.AS)
 *   srp_cache  LRU    struct srp_cache_key -> struct srp_cache_val
 *                     (caching proxy: one entry per packet inside the VNF,
 *                     inserted with BPF_NOEXIST, deleted once by the packet
 *                     whose bpf_map_delete_elem succeeds)
 *   srp_scratch PERCPU_ARRAY[1] struct srp_cache_val (work area)
 *   srp_inside ARRAY[1] u32: ifindex of the SUT in-port (the side of the
 *                     clients a source-NAT VNF rewrites; see SRP_F_NAT_KEY)
 *   srp_stats  PERCPU_ARRAY[SRP_NSTATS] u64 (counters below, in packets)
 */
#ifndef SRPERF_SRPROXY_H
#define SRPERF_SRPROXY_H

#include <linux/types.h>
#include <linux/bpf.h>

#define SRP_MAX_VNFS 256
/* Outer IPv6 header (40 bytes) + SRH of at most 280 bytes: 17 segments, or
 * 16 segments and 16 bytes of TLVs.  Longer headers are dropped (counted). */
#define SRP_MAX_HDR 320
#define SRP_MAX_SIDS 1024
/* Extension headers walked in the outer header: hop-by-hop, destination
 * options, the SRH, destination options. */
#define SRP_MAX_EXT 4

#ifndef SRP_CACHE_ENTRIES
#define SRP_CACHE_ENTRIES 65536
#endif

/* struct srp_vnf.behavior */
#define SRP_BEH_NONE 0
#define SRP_BEH_AD 1    /* dynamic proxy: outer header learned per VNF */
#define SRP_BEH_AS 2    /* static proxy: outer header configured */
#define SRP_BEH_AM 3    /* masquerading proxy: DA <-> SRH[0], SRH kept */
#define SRP_BEH_CACHE 4 /* caching proxy: outer header cached per packet */

/* struct srp_vnf.flags */
#define SRP_F_MISS_PASS 0x1 /* no header to restore: forward the bare packet
                             * instead of dropping it */
#define SRP_F_NO_FIB 0x2    /* return path: leave forwarding to the kernel
                             * stack instead of bpf_fib_lookup + redirect */
#define SRP_F_NAT_KEY 0x4   /* caching proxy, a source-NAT VNF: leave out of
                             * the key the address and port it rewrites:
                             * the source of a packet that entered on the
                             * in-port (srp_inside: the NAT's inside), the
                             * destination of one that entered elsewhere
                             * (an answer, de-NATed by the VNF) */

struct srp_vnf {
	__u32 behavior;   /* SRP_BEH_* */
	__u32 ifindex;    /* SUT-side interface towards the VNF */
	__u8 vnf_mac[6];  /* MAC of the VNF's interface */
	__u8 sut_mac[6];  /* MAC of the SUT-side interface */
	__u32 flags;      /* SRP_F_* */
	__u64 age_ns;     /* End.AD: minimum time between two rewrites of the
	                   * stored header, nanoseconds (0: every packet);
	                   * caching proxy: age of a stale entry (its packet
	                   * was lost in the VNF), replaced by the next packet
	                   * with its key (0: never stale) */
};
_Static_assert(sizeof(struct srp_vnf) == 32, "srp_vnf layout");

/* One stored outer header.  `lock` serialises the End.AD writer (inbound)
 * and readers (packets from the VNF) that may run on different CPUs. */
struct srp_hdr {
	struct bpf_spin_lock lock;
	__u32 len;         /* bytes of data[] in use; 0 = nothing stored */
	__u64 updated_ns;  /* bpf_ktime_get_ns() of the last rewrite */
	__u8 data[SRP_MAX_HDR];
};
_Static_assert(sizeof(struct srp_hdr) == 16 + SRP_MAX_HDR, "srp_hdr layout");

/* Caching proxy key: fields of the inner packet that an SR-unaware VNF that
 * only forwards does not change, and a hash of the first payload bytes, so that
 * the key identifies one packet (the caching-proxy paper keys on the whole IP and
 * TCP headers less their mutable fields).  One entry per packet: a second packet
 * with the same key is dropped while the first is inside the VNF.  `vnf` keeps
 * VNFs apart.  Ports and L4 fields are raw (network byte order). */
struct srp_cache_key {
	__u32 vnf;       /* VNF index */
	__u8 family;     /* 4 or 6 */
	__u8 proto;      /* IPv6 next header / IPv4 protocol */
	__u16 len;       /* IPv6 payload length / IPv4 total length */
	__u32 ident;     /* IPv6 flow label / IPv4 identification */
	__u16 sport;     /* TCP/UDP source port (0 with SRP_F_NAT_KEY, inside) */
	__u16 dport;     /* TCP/UDP destination port (0 with SRP_F_NAT_KEY,
	                  * outside) */
	__u32 l4seq;     /* TCP sequence number, ICMP identifier + sequence */
	__u32 l4ack;     /* TCP acknowledgment number */
	__u16 tcp_flags; /* TCP data offset and flags (header bytes 12-13) */
	__u16 tcp_win;   /* TCP window */
	__u32 payload;   /* FNV-1a of the first (at most 16) payload bytes and their
	                  * count, then of the TCP options (duplicate ACKs differ
	                  * only in their SACK blocks or timestamps) */
	__u8 src[16];    /* IPv4 uses the first 4 bytes; zero with
	                  * SRP_F_NAT_KEY, inside */
	__u8 dst[16];    /* zero with SRP_F_NAT_KEY, outside */
};
_Static_assert(sizeof(struct srp_cache_key) == 64, "srp_cache_key layout");

struct srp_cache_val {
	__u32 len;       /* bytes of data[] in use */
	__u32 pad;
	__u64 inserted_ns; /* bpf_ktime_get_ns() at insertion */
	__u8 data[SRP_MAX_HDR];
};
_Static_assert(sizeof(struct srp_cache_val) == 16 + SRP_MAX_HDR, "srp_cache_val layout");

/*
 * Counters, in packets.  X-macro: srperf/forwarders/ebpf/counters.py reads the names and
 * their order from this list (the map index is the position here); add new counters at
 * the end.  Every drop is counted once, under the counter that says why.
 */
#define SRP_COUNTERS(X)                                                        \
	X(in_packets)      /* IPv6 packets seen on the SUT in-port */           \
	X(in_not_sid)      /* not for a proxy SID: left to the kernel */         \
	X(in_bad)          /* for a proxy SID but no SRH, a routing header not  \
	                    * an SRH, SL = 0, SL > Last Entry + 1, Last Entry   \
	                    * beyond the SRH, or inner not IPv6/IPv4/Ethernet   \
	                    * (End.AD/AS/cache): dropped */                     \
	X(in_too_long)     /* outer header longer than SRP_MAX_HDR: dropped */   \
	X(in_ad)           /* End.AD: decapsulated and sent to the VNF */        \
	X(in_as)           /* End.AS: decapsulated and sent to the VNF */        \
	X(in_am)           /* End.AM: masqueraded and sent to the VNF */         \
	X(in_cache)        /* caching proxy: decapsulated and sent to the VNF */ \
	X(ad_learn)        /* End.AD: stored header rewritten */                 \
	X(ad_age_skip)     /* End.AD: stored header younger than age: kept */    \
	X(cache_insert)    /* caching proxy: new entry */                        \
	X(cache_dup)       /* caching proxy: a packet with the same key is      \
	                    * inside the VNF (its entry exists): dropped */      \
	X(from_packets)    /* packets seen on VNF interfaces */                  \
	X(from_ignored)    /* link-local, multicast, non-IP, or End.AM without   \
	                    * SRH: left to the kernel untouched */               \
	X(from_ad)         /* End.AD: header restored */                         \
	X(from_as)         /* End.AS: header restored */                         \
	X(from_am)         /* End.AM: DA restored */                             \
	X(from_no_state)   /* End.AD/AS: no header stored for that family */     \
	X(cache_hit)       /* caching proxy: entry found, taken (deleted by this \
	                    * packet) and its header restored */                 \
	X(cache_miss)      /* caching proxy: key not in the cache */             \
	X(miss_drop)       /* nothing to restore: dropped */                     \
	X(miss_pass)       /* nothing to restore: forwarded bare */              \
	X(fib_redirect)    /* return path: bpf_fib_lookup + redirect */          \
	X(fib_fallback)    /* return path: left to the kernel stack */           \
	X(err)             /* a helper failed: dropped */                        \
	X(in_hop_limit)    /* outer hop limit <= 1: left to the kernel, which    \
	                    * drops it with ICMPv6 time exceeded (RFC 8986) */   \
	X(in_ext_unsupported) /* a fragment or AH header, hop-by-hop not first,  \
	                    * or more than SRP_MAX_EXT extension headers in the  \
	                    * outer header: dropped */                           \
	X(in_l2_unsupported) /* inner Ethernet (next header 143) for End.AD/AS/ \
	                    * cache: End.AD2/AS2 not implemented: dropped */     \
	X(from_hop_limit)  /* inner hop limit/TTL <= 1 from the VNF: the proxy  \
	                    * forwards the inner packet as a router: dropped */  \
	X(cache_race)      /* caching proxy: entry found but taken by another   \
	                    * packet (another CPU) first: a miss */              \
	X(cache_stale)     /* caching proxy: an entry older than the VNF's age  \
	                    * (its packet lost in the VNF) deleted for a new    \
	                    * packet with the same key */

#define SRP_ENUM(name) SRP_##name,
enum srp_counter { SRP_COUNTERS(SRP_ENUM) SRP_NSTATS };
#undef SRP_ENUM

#endif /* SRPERF_SRPROXY_H */
