// SPDX-License-Identifier: Apache-2.0
/*
 * srgen: the paced raw-frame sender of srperf's "linux" traffic generator.
 *
 * It sends COUNT copies of one Ethernet frame (read from a file, no FCS; with
 * -V each copy carries its own counter) out of the TX interface at RATE
 * packets per second and prints one JSON object:
 * its own counts and the kernel counters of TX and RX read before and after.
 *
 *   - AF_PACKET raw socket bound to TX, PACKET_QDISC_BYPASS (the frame goes
 *     straight to the driver), 8 MB send buffer (SO_SNDBUFFORCE).
 *     Over veth the peer's NAPI ring has 256 slots; a vCPU stall of the
 *     SUT longer than that at the offered rate loses packets that a NIC's
 *     receive ring (thousands of slots) would have held.  Two ways to give
 *     the path such a ring:
 *     -H PKTS (hold): a refused packet stays due and is retried (after
 *     RETRY_NS) until it is taken; at most PKTS packets may wait, while the
 *     peer still refuses older ones are lost (counted refused).  A held
 *     packet counts as offered when it was due.  The waiting and retrying is
 *     done on the sender's CPU only.
 *     -Q PKTS (qdisc): the frames go through TX's queueing discipline
 *     (the caller installs a pfifo of PKTS packets there), which holds them
 *     while the peer's ring is full.  But the kernel then restarts the
 *     queue from the peer's NAPI poll, on the SUT's CPU, which costs the SUT
 *     12-21 % of its forwarding rate here.  Sends are non-blocking and the
 *     send buffer is sized to hold the whole queue, so a full queue shows as
 *     refusals (the qdisc's own drops), never as lag.  Two send
 *     paths (-m): "mmsg" sendmmsg batches whose messages all point at the
 *     frame; "ring" a PACKET_TX_RING (TPACKET_V2) whose slots all hold the
 *     frame, a batch is marked TP_STATUS_SEND_REQUEST and flushed with one
 *     send(MSG_DONTWAIT).  The ring costs the sender less per packet, but
 *     each packet's completion (tpacket_destruct_skb) runs where the packet
 *     is finally freed: over veth, on the SUT's CPU, which it slows a little.
 *   - -V OFFSET (distinct frames): packet i carries the 32-bit counter i at
 *     byte OFFSET of the frame, so that no two packets are identical (a
 *     caching proxy drops a packet identical to one it still holds).  The
 *     8 bytes there must be a counter slot prepared by the frame's builder:
 *     two 16-bit words x, ~x, then y, ~y (e.g. 00 00 ff ff 00 00 ff ff),
 *     at an even offset from the UDP header.  srgen writes the counter's
 *     high half and its complement into the first pair, the low half and
 *     its complement into the second.  Each pair adds exactly 0xffff to the
 *     UDP checksum's sum whatever the counter, so the checksum in the frame
 *     stays valid without being recomputed.  The counter is written into
 *     the copy the kernel sends (the message's own buffer, or the ring
 *     slot) just before the send call.  A packet the path refuses keeps its
 *     number when it is retried (hold) or re-requested (ring), so every sent
 *     frame carries a different counter (the counter wraps after 2^32).
 *   - Pacing: packet i is due at t0 + i / RATE on CLOCK_MONOTONIC; the sender
 *     busy-waits and sends every packet that is due, up to BATCH per call.
 *     After a stall it catches up, but never by more than MAX_LAG: beyond it
 *     the schedule slips (the trial takes longer, which the caller sees as a
 *     lower offered rate).  With a QUANTUM it waits until that much traffic
 *     is due and sends it in one call.  RATE 0 sends as fast as possible.
 *     elapsed_ns (packet 0 due -> last offer) always lies within
 *     [(COUNT-1)/RATE + slipped, (COUNT-1)/RATE + slipped + MAX_LAG].
 *     With -H, once the peer has refused a packet the sender may fall
 *     behind by HOLD_PKTS packets plus MAX_LAG before the schedule slips,
 *     and a held packet's offer counts at its due time.
 *   - Every packet is offered exactly once.  A packet the path refuses
 *     (ENOBUFS/EAGAIN, i.e. the message at which sendmmsg stopped short) is
 *     counted as refused and never retried (with -H: retried while it may
 *     wait; attempts_refused counts every refused attempt, which the kernel
 *     counts as tx_dropped).  Bypassing the qdisc, the socket
 *     blocks when its send buffer is full: that back-pressure shows as lag,
 *     not as loss (with -Q, EAGAIN is a refusal).
 *     Ring: the kernel stops at a refused slot, puts it back to SEND_REQUEST
 *     and send() fails with ENOBUFS; srgen counts one refusal and withdraws
 *     its newest request, so the total stays exact (all slots hold the same
 *     frame).  A full send buffer (EAGAIN) or a slot still in flight only
 *     delays the batch.
 *
 *   - -k FLOWS (flows): the frame file holds FLOWS frames of one length back
 *     to back (built by the caller, each with its own valid checksums: they
 *     differ in the fields that make a flow, e.g. a port or an address);
 *     packet i is frame i % FLOWS.  -V still works on every one of them.
 *   - -I LEN:WEIGHT,... (IMIX): the frame file holds the mix's frames, of
 *     those lengths, back to back; packet i is frame pattern[i % sum(weights)],
 *     mix.h's smooth weighted round robin (as xdpgen's).  Only with -m mmsg,
 *     without -k and -V.
 *   - Drain: after the last offer srgen waits for the path before it reads
 *     the counters: DRAIN_MS at most; with -s SETTLE_US, it stops earlier,
 *     as soon as the RX port has counted every sent packet, or the TX port
 *     has counted every sent packet (none waits in the peer's ring or a
 *     queue) and neither its counter nor the RX counter has moved for
 *     SETTLE_US (0: always the whole DRAIN_MS).  A peer that stalls with
 *     frames in its ring is waited for: a trial stopped early (-L) stops in
 *     such a stall more often than not.
 *   - -L STOP_LOST (stop): the trial ends early, before all COUNT packets
 *     are offered, once more than STOP_LOST of them were refused.  A refused
 *     packet is lost whatever happens later, so the whole trial would have
 *     lost more than STOP_LOST: a caller that asks for this knows the
 *     verdict is then certain.  The report says "stopped": 1 and "offered",
 *     the packets offered before the stop (the trial that ran); elapsed_ns
 *     spans those.  Losses elsewhere on the path (not refusals) are only
 *     counted at the end and never stop a trial.
 *   - -S (serve): srgen stays up between trials, with its socket, ring,
 *     frames and counter files; each line on stdin is a command:
 *       trial RATE COUNT DRAIN_US SETTLE_US [STOP_LOST]
 *                                            -> one JSON line (as above)
 *       quit                                 -> exit 0 (so does end of input)
 *     and it prints {"ready": true} once set up.  Packet numbers (-V) and
 *     flows go on from trial to trial.  rx_between_trials is what the RX
 *     port counted between the previous trial's last read and this one's
 *     first: a packet that arrived after the drain (counted lost before).
 *   - -p PROBE_FILE (latency probes): a trial given PROBE_PPS (serve mode:
 *     a sixth field; one-shot: -a) sends that many of its packets per
 *     second as probe frames instead of the test frame: packet i of the
 *     trial is probe number floor(i * PROBE_PPS / RATE) when that number
 *     changes at i, so the probes are spread evenly inside the offered load
 *     and count in every total like the others.  The probe frame (its own
 *     flow, built by the caller) ends with a 40-byte trailer: four slots of
 *     the -V kind (x, ~x, y, ~y) holding the trial number, the probe number
 *     and the transmit time (CLOCK_REALTIME, ns: high, low 32 bits), then
 *     the magic PROBE_MAGIC.  Headers are only ever added or removed at a
 *     frame's front, so the trailer stays the frame's last 40 bytes through
 *     every SRv6 behavior; srgen writes it checksum-neutrally, just before
 *     the send call, into its own copy (a retried probe is stamped anew).
 *     The sink (sink.c) passes frames ending with the magic up the stack;
 *     srgen's receive socket on RX (ETH_P_ALL, a classic BPF filter that
 *     keeps only incoming frames ending with the magic, SO_TIMESTAMPNS, a
 *     64 MB buffer) queues them with the kernel's receive time stamp (the
 *     skb's, taken when the frame entered RX's receive path, on the same
 *     host clock).  srgen reads them after the drain, so it never wakes
 *     during the trial, and prints each probe's one-way latency (ns, in
 *     arrival order), the probes offered and received, reordered ones
 *     (a number below one already received), duplicates and late ones (of
 *     an earlier trial).  Only with -m mmsg.
 *
 * Run it inside the tester's namespace (ip netns exec NS srgen ...): the
 * counters come from /sys/class/net/DEV/statistics of that namespace, read
 * through files opened once (pread at offset 0 reads the value anew).
 * Errors: message on stderr, exit status 1 (2 for bad usage).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 256
#define MAX_FRAME 16384
#define MAX_FLOWS 65536u
#define MAX_FRAMES_BYTES (64u * 1024 * 1024)
#define POLL_NS 500000ull       /* drain: how often the RX counter is read */
#define CMD_LEN 256
#define SNDBUF_BYTES (8 * 1024 * 1024)
#define SNDBUF_MAX (1024 * 1024 * 1024)
#define RING_FRAMES 4096u             /* slots of the TX ring, at most */
#define RING_MAX_BYTES (64u * 1024 * 1024)
#define RETRY_NS 2000ull        /* hold: retry a refused packet after this */
#define STUCK_NS 5000000000ull /* no slot completes for that long: give up */

enum mode { MODE_MMSG, MODE_RING };

struct opts {
	const char *frame_path, *tx, *rx;
	double rate_pps;      /* 0 = unpaced */
	uint64_t count;       /* packets to offer */
	int cpu;              /* -1 = do not pin */
	int fifo;             /* SCHED_FIFO priority, 0 = normal scheduling */
	uint64_t drain_ns;    /* wait after the last offer before reading counters */
	uint64_t settle_ns;   /* drain ends once RX has not moved for this long (0: never) */
	uint64_t flows;       /* frames in the frame file (1: one frame) */
	int serve;            /* -S: take trials as commands on stdin */
	uint64_t max_lag_ns;  /* bound on catch-up after a stall */
	uint64_t quantum_ns;  /* wait until this much traffic is due (0: send each at once) */
	unsigned int batch;   /* packets per send call, at most */
	enum mode mode;
	uint64_t queue_pkts;  /* 0: bypass the qdisc; else send through it (see -Q) */
	uint64_t hold_pkts;   /* 0: refuse at once; else hold refused packets (see -H) */
	long counter_off;     /* -1: every packet the same; else see -V */
	uint64_t stop_lost;   /* -L: stop once more were refused (NO_STOP: never) */
	const char *probe_path; /* -p: the probe frame (NULL: no latency probes) */
	const char *mix;      /* -I: the frame file holds an IMIX's frames (mix.h) */
	double probe_pps;     /* -a: probes per second of a one-shot trial */
};

/* The sender: its socket and, in ring mode, the mapped TX ring.  head and
 * tail count slots since the start: the kernel sends slot head next; slots
 * head..tail-1 are requested (TP_STATUS_SEND_REQUEST), the others are
 * available or still in flight (TP_STATUS_SENDING). */
struct sender {
	int fd;
	const char *dev;
	struct mmsghdr msgs[MAX_BATCH];
	struct iovec iov[MAX_BATCH];
	unsigned char *bufs;  /* -V, mmsg: one copy of the frame per message */
	unsigned char *frames; /* the flows' frames, len bytes each, back to back */
	uint64_t flows;       /* how many */
	struct mix *mix;      /* -I: an IMIX (NULL: none); len is then its longest frame */
	size_t len;           /* of the frame */
	long counter_off;     /* -1: no counter; else its offset in the frame */
	unsigned char *map;
	size_t map_len, frame_size, data_off;
	unsigned int nframes;
	uint64_t head, tail, calls, refused_short;
	int send_flags;       /* flags of sendmmsg: MSG_DONTWAIT through a qdisc */
	int hold;             /* a refused packet stays due instead of being offered */
	int refused_last;     /* the latest send call ended in a refusal */
	uint64_t attempts_refused; /* send attempts the path refused */
	uint64_t last_refusal;     /* time of the latest refused attempt */
	/* -p: latency probes (see the header) */
	unsigned char *probe;      /* the probe frame */
	size_t probe_len;
	unsigned char *probe_bufs; /* one copy of it per message */
	double probe_ratio;        /* probes per packet this trial (0: none) */
	uint64_t trial_first;      /* number (seq) of the trial's first packet */
	uint32_t trial_no;         /* written into each probe */
};

/* Kernel counters of the two ports, one snapshot. */
struct counters {
	uint64_t tx_packets, tx_dropped, rx_packets, rx_dropped;
};

/* The counter files of the two ports, opened once. */
struct stat_fds {
	int tx_packets, tx_dropped, rx_packets, rx_dropped;
};

#define NO_STOP UINT64_MAX    /* stop_lost: never stop early */

/* One trial: COUNT packets at RATE (0: unpaced), then the drain; it stops
 * early once more than STOP_LOST packets were refused (see -L). */
struct trial_req {
	double rate_pps;
	uint64_t count, drain_ns, settle_ns, stop_lost;
	double probe_pps;     /* latency probes per second (0: none) */
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("srgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void usage(void)
{
	fputs("usage: srgen -f FRAME -r RATE_PPS -n COUNT -t TX_DEV -x RX_DEV\n"
	      "             [-c CPU] [-P FIFO_PRIO] [-d DRAIN_MS] [-b BATCH] [-l MAX_LAG_US]\n"
	      "             [-q QUANTUM_US] [-m mmsg|ring] [-Q QUEUE_PKTS | -H HOLD_PKTS]\n"
	      "             [-V COUNTER_OFFSET] [-k FLOWS | -I LEN:WEIGHT,...] [-s SETTLE_US]\n"
	      "             [-L STOP_LOST]\n"
	      "             [-p PROBE_FILE -a PROBE_PPS]\n"
	      "       srgen -S -f FRAME -t TX_DEV -x RX_DEV [the options above]\n"
	      "  RATE_PPS 0 = unpaced; BATCH 1..256 (16); DRAIN_MS (200); MAX_LAG_US (1000);\n"
	      "  QUANTUM_US (0): send once this much traffic is due (fewer, fuller batches)\n"
	      "  -m send path (mmsg): sendmmsg batches, or a PACKET_TX_RING\n"
	      "  -Q send through TX's qdisc, which queues up to QUEUE_PKTS (0: bypass it)\n"
	      "  -H retry refused packets, up to HOLD_PKTS waiting at a time (0: never)\n"
	      "  -V write packet i's counter into the counter slot at byte COUNTER_OFFSET\n"
	      "  -k the frame file holds FLOWS frames of one length; packet i is frame i % FLOWS\n"
	      "  -I the frame file holds an IMIX's frames of these lengths (mix.h)\n"
	      "  -s end the drain once RX has counted every sent packet, or TX has and\n"
	      "     neither moved for SETTLE_US (0: wait the whole DRAIN_MS)\n"
	      "  -L end the trial once more than STOP_LOST packets were refused\n"
	      "  -p send latency probes built from PROBE_FILE (-a PROBE_PPS of them)\n"
	      "  -S serve: one trial per line on stdin,\n"
	      "     'trial RATE COUNT DRAIN_US SETTLE_US [STOP_LOST [PROBE_PPS]]'\n",
	      stderr);
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#include "probe_rx.h"  /* the probes' receive side (uses die, now_ns) */
#include "mix.h"       /* -I: an IMIX's frames and order, as xdpgen's */

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		die("bad %s: '%s'", what, s);
	return v;
}

static int open_stat(const char *dev, const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", dev, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	return fd;
}

static void open_stats(const struct opts *o, struct stat_fds *f)
{
	f->tx_packets = open_stat(o->tx, "tx_packets");
	f->tx_dropped = open_stat(o->tx, "tx_dropped");
	f->rx_packets = open_stat(o->rx, "rx_packets");
	f->rx_dropped = open_stat(o->rx, "rx_dropped");
}

/* The counter's value now: sysfs makes it anew for every read at offset 0. */
static uint64_t read_stat(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	unsigned long long v;
	char *end;

	if (n <= 0)
		die("cannot read a counter of /sys/class/net: %s", n < 0 ? strerror(errno) : "empty");
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		die("unexpected counter text in /sys/class/net: '%s'", buf);
	return v;
}

static void read_counters(const struct stat_fds *f, struct counters *c)
{
	c->tx_packets = read_stat(f->tx_packets);
	c->tx_dropped = read_stat(f->tx_dropped);
	c->rx_packets = read_stat(f->rx_packets);
	c->rx_dropped = read_stat(f->rx_dropped);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->cpu = -1;
	o->drain_ns = 200ull * 1000000;
	o->max_lag_ns = 1000ull * 1000;
	o->batch = 16;
	o->rate_pps = -1;
	o->counter_off = -1;
	o->flows = 1;
	o->stop_lost = NO_STOP;
	while ((c = getopt(argc, argv, "f:r:n:t:x:c:P:d:b:l:q:m:Q:H:V:k:I:s:L:p:a:Sh")) != -1) {
		switch (c) {
		case 'f': o->frame_path = optarg; break;
		case 'r': {
			char *end;

			o->rate_pps = strtod(optarg, &end);
			if (end == optarg || *end || !(o->rate_pps >= 0))
				die("bad rate: '%s'", optarg);
			break;
		}
		case 'n': o->count = parse_u64(optarg, "count"); break;
		case 't': o->tx = optarg; break;
		case 'x': o->rx = optarg; break;
		case 'c': o->cpu = (int)parse_u64(optarg, "cpu"); break;
		case 'P': o->fifo = (int)parse_u64(optarg, "fifo priority"); break;
		case 'd': o->drain_ns = parse_u64(optarg, "drain") * 1000000ull; break;
		case 'b': o->batch = (unsigned int)parse_u64(optarg, "batch"); break;
		case 'l': o->max_lag_ns = parse_u64(optarg, "max lag") * 1000ull; break;
		case 'Q': o->queue_pkts = parse_u64(optarg, "queue"); break;
		case 'H': o->hold_pkts = parse_u64(optarg, "hold"); break;
		case 'q': o->quantum_ns = parse_u64(optarg, "quantum") * 1000ull; break;
		case 's': o->settle_ns = parse_u64(optarg, "settle") * 1000ull; break;
		case 'L': o->stop_lost = parse_u64(optarg, "stop lost"); break;
		case 'S': o->serve = 1; break;
		case 'p': o->probe_path = optarg; break;
		case 'a': {
			char *end;

			o->probe_pps = strtod(optarg, &end);
			if (end == optarg || *end || !(o->probe_pps >= 0))
				die("bad probe rate: '%s'", optarg);
			break;
		}
		case 'I': o->mix = optarg; break;
		case 'k':
			o->flows = parse_u64(optarg, "flows");
			if (o->flows < 1 || o->flows > MAX_FLOWS)
				die("bad flows: '%s' (1..%u)", optarg, MAX_FLOWS);
			break;
		case 'V':
			o->counter_off = (long)parse_u64(optarg, "counter offset");
			if (o->counter_off > MAX_FRAME)
				die("bad counter offset: '%s'", optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "mmsg"))
				o->mode = MODE_MMSG;
			else if (!strcmp(optarg, "ring"))
				o->mode = MODE_RING;
			else
				die("bad mode: '%s' (mmsg or ring)", optarg);
			break;
		default: usage();
		}
	}
	if (optind != argc || !o->frame_path || !o->tx || !o->rx ||
	    (!o->serve && o->rate_pps < 0))
		usage();
	if (o->batch < 1 || o->batch > MAX_BATCH)
		die("batch must be 1..%d", MAX_BATCH);
	if (o->hold_pkts && (o->queue_pkts || o->mode == MODE_RING))
		die("-H works only with -m mmsg and without -Q");
	if (o->quantum_ns * 2 > o->max_lag_ns)
		die("quantum must be at most half the max lag");
	if (o->probe_path && o->mode == MODE_RING)
		die("-p (latency probes) works only with -m mmsg");
	if (o->probe_pps > 0 && !o->probe_path)
		die("-a needs -p PROBE_FILE");
	if (o->mix && (o->flows > 1 || o->counter_off >= 0 || o->mode == MODE_RING))
		die("-I (a mix of sizes) works only with -m mmsg, without -k and -V");
}

/* Read the frame file: FLOWS frames of one length, back to back.  Returns
 * the frames (malloc'd) and sets *len to the length of one. */
static unsigned char *load_frames(const char *path, uint64_t flows, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = malloc(MAX_FRAMES_BYTES);
	size_t total;

	if (!buf)
		die("out of memory for the frames");
	if (!f)
		die("cannot open frame file %s: %s", path, strerror(errno));
	total = fread(buf, 1, MAX_FRAMES_BYTES, f);
	if (ferror(f) || !feof(f))
		die("cannot read %s (or more than %u bytes)", path, MAX_FRAMES_BYTES);
	fclose(f);
	if (total % flows)
		die("frame file %s of %zu bytes does not hold %" PRIu64 " frames of one length",
		    path, total, flows);
	*len = total / flows;
	if (*len < ETH_HLEN)
		die("frame in %s is %zu bytes, shorter than an Ethernet header", path, *len);
	if (*len > MAX_FRAME)
		die("cannot read %s (or frame longer than %d bytes)", path, MAX_FRAME);
	return realloc(buf, total);
}

/* The frame of packet number seq, and its length. */
static inline const unsigned char *frame_of(const struct sender *s, uint64_t seq)
{
	if (s->mix)
		return s->frames + s->mix->off[s->mix->pattern[seq % s->mix->plen]];
	return s->flows > 1 ? s->frames + (size_t)(seq % s->flows) * s->len : s->frames;
}

static inline size_t len_of(const struct sender *s, uint64_t seq)
{
	return s->mix ? s->mix->len[s->mix->pattern[seq % s->mix->plen]] : s->len;
}

/* -I: read the mix's frames; sets *len to the longest. */
static unsigned char *load_mix(const char *path, const char *spec, struct mix *m, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = malloc(MAX_FRAMES_BYTES);
	const char *why;
	size_t total;
	uint32_t i;

	if (!buf)
		die("out of memory for the frames");
	if (!f)
		die("cannot open frame file %s: %s", path, strerror(errno));
	total = fread(buf, 1, MAX_FRAMES_BYTES, f);
	if (ferror(f) || !feof(f))
		die("cannot read %s (or more than %u bytes)", path, MAX_FRAMES_BYTES);
	fclose(f);
	why = mix_parse(m, spec, total);
	if (why)
		die("bad mix '%s' for %s: %s", spec, path, why);
	*len = 0;
	for (i = 0; i < m->n; i++) {
		if (m->len[i] < ETH_HLEN || m->len[i] > MAX_FRAME)
			die("frame %u of the mix is %zu bytes: must be %d..%d", i, m->len[i], ETH_HLEN,
			    MAX_FRAME);
		if (m->len[i] > *len)
			*len = m->len[i];
	}
	return realloc(buf, total);
}

#define COUNTER_LEN 8

/* Write counter c into the slot at p: hi, ~hi, lo, ~lo (16-bit words, big
 * endian).  A word and its complement sum to 0xffff: checksum-neutral. */
static inline void put_counter(unsigned char *p, uint32_t c)
{
	p[0] = (unsigned char)(c >> 24);
	p[1] = (unsigned char)(c >> 16);
	p[2] = (unsigned char)~p[0];
	p[3] = (unsigned char)~p[1];
	p[4] = (unsigned char)(c >> 8);
	p[5] = (unsigned char)c;
	p[6] = (unsigned char)~p[4];
	p[7] = (unsigned char)~p[5];
}

/* -V: the frame must hold a counter slot at off (pairs of complements). */
static void check_counter_slot(const unsigned char *frame, size_t len, long off)
{
	int i;

	if (off < ETH_HLEN || (size_t)off + COUNTER_LEN > len)
		die("counter offset %ld: the 8-byte counter slot must lie in the frame's "
		    "payload (frame of %zu bytes)", off, len);
	for (i = 0; i < COUNTER_LEN; i += 4)
		if ((frame[off + i] ^ frame[off + i + 2]) != 0xff ||
		    (frame[off + i + 1] ^ frame[off + i + 3]) != 0xff)
			die("no counter slot at offset %ld of the frame (the words there are "
			    "not x, ~x, y, ~y): the checksum would break", off);
}

/* -p: packet idx of the trial is a probe when floor(idx * ratio) changes at
 * it; *no is then the probe's number (a held packet keeps it). */
static inline int is_probe(const struct sender *s, uint64_t idx, uint32_t *no)
{
	uint64_t a = (uint64_t)((double)idx * s->probe_ratio);
	uint64_t b = (uint64_t)((double)(idx + 1) * s->probe_ratio);

	*no = (uint32_t)a;
	return b != a;
}

/* Probes among a trial's first n packets. */
static uint64_t probes_in(const struct sender *s, uint64_t n)
{
	return s->probe_ratio > 0 ? (uint64_t)((double)n * s->probe_ratio) : 0;
}


/* Stamp probe number no of trial trial_no, sent at ts (ns), into frame f. */
static void write_probe(unsigned char *f, size_t len, uint32_t trial_no, uint32_t no, uint64_t ts)
{
	unsigned char *t = f + len - PROBE_TRAILER;

	put_counter(t, trial_no);
	put_counter(t + 8, no);
	put_counter(t + 16, (uint32_t)(ts >> 32));
	put_counter(t + 24, (uint32_t)ts);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


/* Send buffer for a queue of q frames of len bytes: room for the whole queue
 * twice over (an skb's truesize is the frame plus under 1 KiB of overhead). */
static int sndbuf_bytes(uint64_t q, size_t len)
{
	uint64_t want = 2 * q * ((uint64_t)len + 1024);

	if (want < SNDBUF_BYTES)
		return SNDBUF_BYTES;
	return want > SNDBUF_MAX ? SNDBUF_MAX : (int)want;
}

static int open_socket(const char *dev, uint64_t queue_pkts, size_t len)
{
	struct sockaddr_ll sll;
	int one = 1, sndbuf = sndbuf_bytes(queue_pkts, len);
	/* Protocol 0: this socket only sends; it registers no receive hook. */
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	if (fd < 0)
		die("socket(AF_PACKET): %s", strerror(errno));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = (int)if_nametoindex(dev);
	if (!sll.sll_ifindex)
		die("no interface %s: %s", dev, strerror(errno));
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind to %s: %s", dev, strerror(errno));
	if (!queue_pkts &&
	    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0)
		die("PACKET_QDISC_BYPASS: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		die("SO_SNDBUFFORCE: %s (needs CAP_NET_ADMIN)", strerror(errno));
	return fd;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* When packet i is due, t0 being when packet 0 is. */
static uint64_t due_time(uint64_t t0, uint64_t i, double ns_per_pkt)
{
	return t0 + (uint64_t)((double)i * ns_per_pkt);
}

/* Slip the schedule by ns: every packet not yet offered is due that much
 * later (the sender's own lateness, reported as slipped_ns). */
static void slip(uint64_t *t0, uint64_t *slipped, uint64_t ns)
{
	*t0 += ns;
	*slipped += ns;
}

/* How many packets are due at now (packets 0..n-1), at most count. */
static uint64_t due_count(uint64_t now, uint64_t t0, double ns_per_pkt, uint64_t count)
{
	uint64_t n = (uint64_t)((double)(now - t0) / ns_per_pkt) + 1;

	return n < count ? n : count;
}

/* Error left on the socket by a sendmmsg that stopped short (0 if none).
 * Reading it also clears it, so it cannot fail the next, unrelated send. */
static int pending_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		die("getsockopt(SO_ERROR): %s", strerror(errno));
	return err;
}

#define is_refusal(err) ((err) == ENOBUFS || (err) == EAGAIN || (err) == EWOULDBLOCK)

/* Slot n (counted since the start) of the TX ring: blocks are mapped one
 * after the other and hold whole slots, so the ring is one array. */
#define SLOT(s, n) ((struct tpacket2_hdr *)((s)->map + ((n) % (s)->nframes) * (s)->frame_size))
#define STATUS(h) __atomic_load_n(&(h)->tp_status, __ATOMIC_ACQUIRE)
#define SET_STATUS(h, v) __atomic_store_n(&(h)->tp_status, (v), __ATOMIC_RELEASE)

/* Ring mode: a TPACKET_V2 TX ring whose every slot holds the frame. */
static void setup_ring(struct sender *s, const char *dev)
{
	const unsigned char *frame = s->frames;
	size_t len = s->len;
	/* TX data sits right after the aligned tpacket2_hdr. */
	size_t off = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll), block = 4096;
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	int version = TPACKET_V2, one = 1;
	struct tpacket_req req;
	struct ifreq ifr;
	uint64_t i;

	s->frame_size = TPACKET_ALIGNMENT;
	while (s->frame_size < off + sizeof(vh) + len)
		s->frame_size *= 2;     /* a power of two: whole slots per block */
	if (block < s->frame_size)
		block = s->frame_size;
	s->nframes = RING_FRAMES;
	if (s->nframes * s->frame_size > RING_MAX_BYTES)
		s->nframes = (unsigned int)(RING_MAX_BYTES / s->frame_size);
	memset(&req, 0, sizeof(req));
	req.tp_frame_size = (unsigned int)s->frame_size;
	req.tp_block_size = (unsigned int)block;
	req.tp_frame_nr = s->nframes;
	req.tp_block_nr = (unsigned int)(s->nframes * s->frame_size / block);
	/* A virtio-net header whose hdr_len spans the whole frame makes the
	 * kernel copy the frame into a linear skb, as sendmmsg does (without it
	 * the skb would point into the ring page).  It also turns off the
	 * kernel's length check, so srgen checks the MTU itself. */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(s->fd, SIOCGIFMTU, &ifr) < 0)
		die("SIOCGIFMTU %s: %s", dev, strerror(errno));
	if (len > (size_t)ifr.ifr_mtu + ETH_HLEN + (frame[12] == 0x81 && !frame[13] ? 4 : 0))
		die("frame of %zu bytes too long for the MTU of %s (%d)", len, dev, ifr.ifr_mtu);
	vh.hdr_len = (uint16_t)len;
	if (setsockopt(s->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(s->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0 ||
	    setsockopt(s->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0)
		die("TX ring (%u x %zu B) on %s: %s", s->nframes, s->frame_size, dev, strerror(errno));
	s->map_len = (size_t)s->nframes * s->frame_size;
	s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, s->fd, 0);
	if (s->map == MAP_FAILED)
		die("mmap of the TX ring: %s", strerror(errno));
	s->data_off = off + sizeof(vh);
	for (i = 0; i < s->nframes; i++) {
		struct tpacket2_hdr *h = SLOT(s, i);

		memcpy((unsigned char *)h + off, &vh, sizeof(vh));
		memcpy((unsigned char *)h + off + sizeof(vh), frame_of(s, i), len);
		h->tp_len = (uint32_t)(sizeof(vh) + len);
		h->tp_status = TP_STATUS_AVAILABLE;
	}
}

/* Offer up to n packets (sendmmsg).  Adds to *sent and *refused; returns
 * how many packets were offered (sent or refused), 0 after EINTR. */
static uint64_t offer_mmsg(struct sender *s, uint64_t n, uint64_t seq, uint64_t *sent,
			   uint64_t *refused)
{
	int ret;

	if (s->probe_ratio > 0) {
		/* Each message is set anew: the probe copy, or what it would be. */
		uint64_t i, ts = 0;
		uint32_t no;

		for (i = 0; i < n; i++) {
			unsigned char *buf;

			if (is_probe(s, seq + i - s->trial_first, &no)) {
				buf = s->probe_bufs + i * s->probe_len;
				if (!ts)
					ts = realtime_ns();
				write_probe(buf, s->probe_len, s->trial_no, no, ts);
				s->iov[i].iov_base = buf;
				s->iov[i].iov_len = s->probe_len;
				continue;
			}
			s->iov[i].iov_len = len_of(s, seq + i);
			if (s->counter_off >= 0) {
				buf = s->bufs + i * s->len;
				if (s->flows > 1)
					memcpy(buf, frame_of(s, seq + i), s->len);
				put_counter(buf + s->counter_off, (uint32_t)(seq + i));
				s->iov[i].iov_base = buf;
			} else {
				s->iov[i].iov_base = (void *)frame_of(s, seq + i);
			}
		}
	} else if (s->counter_off >= 0) {
		/* Message i is packet seq + i (a held packet keeps its number). */
		uint64_t i;

		for (i = 0; i < n; i++) {
			if (s->flows > 1)
				memcpy(s->bufs + i * s->len, frame_of(s, seq + i), s->len);
			put_counter(s->bufs + i * s->len + s->counter_off, (uint32_t)(seq + i));
		}
	} else if (s->flows > 1 || s->mix) {
		uint64_t i;

		for (i = 0; i < n; i++) {
			s->iov[i].iov_base = (void *)frame_of(s, seq + i);
			s->iov[i].iov_len = len_of(s, seq + i);
		}
	}
	ret = sendmmsg(s->fd, s->msgs, (unsigned int)n, s->send_flags);

	s->calls++;
	if (ret < 0) {
		/* The first message failed: nothing of this batch was sent. */
		if (errno == EINTR)
			return 0;
		if (!is_refusal(errno))
			die("sendmmsg on %s: %s", s->dev, strerror(errno));
		s->attempts_refused++;
		s->refused_last = 1;
		if (s->hold)
			return 0;
		(*refused)++;
		return 1;
	}
	s->refused_last = 0;
	*sent += (uint64_t)ret;
	if ((uint64_t)ret < n) {
		/* The message at index ret failed (the rest were not tried and
		 * stay due): it is refused, never retried. */
		int err = pending_error(s->fd);

		if (err && !is_refusal(err))
			die("sendmmsg on %s: %s", s->dev, strerror(err));
		if (!err)
			s->refused_short++;
		s->attempts_refused++;
		s->refused_last = 1;
		if (s->hold)
			return (uint64_t)ret;
		(*refused)++;
		return (uint64_t)ret + 1;
	}
	return (uint64_t)ret;
}

/* Offer up to n packets (TX ring): request slots until n are requested (a
 * slot still in flight ends the batch early), flush, account. */
static uint64_t offer_ring(struct sender *s, uint64_t n, uint64_t *sent, uint64_t *refused)
{
	uint64_t done = 0;
	int ret, err;

	while (s->tail - s->head < n && STATUS(SLOT(s, s->tail)) == TP_STATUS_AVAILABLE) {
		/* Slot number tail carries counter tail (and flow tail % flows):
		 * a withdrawn request (see ENOBUFS below) was not sent, its
		 * number is reused with it. */
		if (s->flows > 1 && s->nframes % s->flows)
			memcpy((unsigned char *)SLOT(s, s->tail) + s->data_off,
			       frame_of(s, s->tail), s->len);
		if (s->counter_off >= 0)
			put_counter((unsigned char *)SLOT(s, s->tail) + s->data_off +
				    s->counter_off, (uint32_t)s->tail);
		SET_STATUS(SLOT(s, s->tail), TP_STATUS_SEND_REQUEST);
		s->tail++;
	}
	if (s->tail == s->head)
		return 0;               /* every slot in flight: wait */
	ret = send(s->fd, NULL, 0, MSG_DONTWAIT);
	err = ret < 0 ? errno : 0;
	s->calls++;
	if (err && err != ENOBUFS && err != EAGAIN && err != EWOULDBLOCK && err != EINTR)
		die("send on the TX ring of %s: %s", s->dev, strerror(err));
	/* The kernel took the requested slots in order: those no longer in
	 * SEND_REQUEST (sending, or sent and available again) left. */
	while (s->head < s->tail && STATUS(SLOT(s, s->head)) != TP_STATUS_SEND_REQUEST) {
		s->head++;
		done++;
	}
	*sent += done;
	if (err == ENOBUFS) {
		/* The slot at head was refused and put back to SEND_REQUEST: count
		 * it, and withdraw the newest request so it is not sent twice. */
		if (s->head == s->tail)
			die("ENOBUFS from the TX ring of %s without a refused slot", s->dev);
		s->tail--;
		SET_STATUS(SLOT(s, s->tail), TP_STATUS_AVAILABLE);
		s->attempts_refused++;
		(*refused)++;
		done++;
	}
	return done;
}

/* Wait for the path after the last offer (see -s), then read the counters:
 * with a settle time, until RX has counted every sent packet, or neither TX
 * (frames still leaving a queue) nor RX has moved for that long. */
static uint64_t drain(const struct stat_fds *fds, const struct counters *before,
		      uint64_t sent, const struct trial_req *t, struct counters *after)
{
	uint64_t start = now_ns(), moved = start, now = start;
	uint64_t rx = before->rx_packets, tx = before->tx_packets;

	if (!t->settle_ns) {
		struct timespec ts = { (time_t)(t->drain_ns / 1000000000ull),
				       (long)(t->drain_ns % 1000000000ull) };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		read_counters(fds, after);
		return now_ns() - start;
	}
	while (now - start < t->drain_ns) {
		uint64_t r = read_stat(fds->rx_packets), x = read_stat(fds->tx_packets);
		struct timespec ts = { 0, (long)POLL_NS };

		now = now_ns();
		if (r != rx || x != tx) {
			rx = r;
			tx = x;
			moved = now;
		}
		if (rx - before->rx_packets >= sent ||
		    (now - moved >= t->settle_ns && tx - before->tx_packets >= sent))
			break;
		nanosleep(&ts, NULL);
		now = now_ns();
	}
	read_counters(fds, after);
	return now_ns() - start;
}

/* Per-process state of the sender and its counters. */
struct gen {
	struct opts o;
	struct sender snd;
	struct stat_fds fds;
	struct counters last;   /* the previous trial's final read (serve mode) */
	int have_last;
	uint64_t seq;           /* packets offered so far (numbers and flows go on) */
	struct probe_rx prx;    /* -p: the probes' receive side */
};

/* Point every message at the frame (of its flow), or with -V at its own copy. */
static void default_iov(struct sender *snd)
{
	unsigned int i;

	for (i = 0; i < MAX_BATCH; i++) {
		snd->iov[i].iov_base = snd->bufs ? snd->bufs + (size_t)i * snd->len : snd->frames;
		snd->iov[i].iov_len = snd->len;
	}
}


/* A trial with probes: its number, its schedule and an empty tally (probes
 * still queued from earlier trials are read now and counted late). */
static void start_probes(struct gen *g, const struct trial_req *t)
{
	struct sender *snd = &g->snd;
	struct probe_rx *r = &g->prx;

	if (!snd->probe)
		die("a trial with probes needs -p PROBE_FILE");
	if (!(t->rate_pps > 0) || t->probe_pps > t->rate_pps)
		die("probe rate %.3f pps must lie within the trial's rate %.3f pps",
		    t->probe_pps, t->rate_pps);
	snd->probe_ratio = t->probe_pps / t->rate_pps;
	snd->trial_first = g->seq;
	snd->trial_no++;
	probe_rx_begin(r, snd->trial_no, probes_in(snd, t->count) + 1);
}

/* The probes' part of the report; ends the trial's probes. */
static void print_probes(struct gen *g, const struct trial_req *t, uint64_t offered)
{
	probe_rx_print(&g->prx, t->probe_pps, offered, g->snd.probe_len);
	g->snd.probe_ratio = 0;
	default_iov(&g->snd);
}

/* Run one trial and print its JSON report on stdout. */
static void run_trial(struct gen *g, const struct trial_req *t)
{
	const struct opts *o = &g->o;
	struct sender *snd = &g->snd;
	struct counters before, after;
	uint64_t offered = 0, sent = 0, refused = 0;
	uint64_t first, last, max_lag = 0, slipped = 0, t0, drained_ns, between = 0;
	double ns_per_pkt;
	uint64_t min_batch = 1, held_max = 0;
	int holding = 0;      /* a backlog of refused packets is not caught up yet */
	int stopped = 0;      /* more than stop_lost were refused: the trial ended early */

	snd->calls = snd->refused_short = snd->attempts_refused = 0;
	snd->refused_last = 0;
	snd->last_refusal = 0;
	if (t->probe_pps > 0)
		start_probes(g, t);
	read_counters(&g->fds, &before);
	if (g->have_last)
		between = before.rx_packets - g->last.rx_packets;
	ns_per_pkt = t->rate_pps > 0 ? 1e9 / t->rate_pps : 0;
	if (ns_per_pkt > 0 && o->quantum_ns > ns_per_pkt)
		min_batch = (uint64_t)((double)o->quantum_ns / ns_per_pkt);
	if (min_batch > o->batch)
		min_batch = o->batch;
	/* Packet 0 is due at once; elapsed runs from then to the last offer. */
	t0 = first = last = now_ns();
	while (offered < t->count) {
		uint64_t now = now_ns(), due = t->count, n, k;

		if (refused > t->stop_lost) {
			stopped = 1;
			break;
		}

		if (ns_per_pkt > 0) {
			/* Packets 0..due-1 are due at or before now. */
			due = due_count(now, t0, ns_per_pkt, t->count);
			if (due <= offered)
				continue;        /* busy-wait for the next due time */
			/* Lag of the oldest packet not yet offered. */
			uint64_t lag = now - due_time(t0, offered, ns_per_pkt);

			if (lag > max_lag)
				max_lag = lag;
			if (snd->hold && snd->refused_last && !holding) {
				/* A hold starts: lateness the sender had already
				 * beyond MAX_LAG is its own, not the peer's: slip. */
				holding = 1;
				if (lag > o->max_lag_ns) {
					slip(&t0, &slipped, lag - o->max_lag_ns);
					due = due_count(now, t0, ns_per_pkt, t->count);
				}
			} else if (!snd->refused_last && lag <= o->max_lag_ns) {
				holding = 0;
			}
			if (holding) {
				/* -H: the due packets wait for the peer, as in its
				 * receive ring, up to hold_pkts of them; while it
				 * refuses, older ones are lost.  While it takes them,
				 * a backlog beyond the hold and MAX_LAG is the
				 * sender's own: the schedule slips. */
				uint64_t backlog = due - offered;
				uint64_t lag_pkts = (uint64_t)((double)o->max_lag_ns / ns_per_pkt);

				if (backlog > held_max)
					held_max = backlog;
				if (snd->refused_last && backlog > o->hold_pkts) {
					refused += backlog - o->hold_pkts;
					offered += backlog - o->hold_pkts;
					last = max_u64(last, due_time(t0, offered - 1, ns_per_pkt));
				} else if (!snd->refused_last && backlog > o->hold_pkts + lag_pkts) {
					uint64_t over_ns = (uint64_t)((double)(backlog - o->hold_pkts -
									    lag_pkts) * ns_per_pkt);

					slip(&t0, &slipped, over_ns);
					due = due_count(now, t0, ns_per_pkt, t->count);
				}
			} else if (lag > o->max_lag_ns) {
				/* A stall: catch up at most max_lag_ns worth of packets,
				 * slip the schedule for the rest. */
				slip(&t0, &slipped, lag - o->max_lag_ns);
				due = due_count(now, t0, ns_per_pkt, t->count);
			}
			/* With a quantum, wait until min_batch packets are due (the
			 * oldest then waits at most one quantum), except at the end. */
			if (due - offered < min_batch && due < t->count)
				continue;
		}
		if (snd->hold && snd->refused_last && now - snd->last_refusal < RETRY_NS)
			continue;        /* the peer's ring was full: let it drain */
		n = due - offered;
		if (n > o->batch)
			n = o->batch;
		k = o->mode == MODE_RING ? offer_ring(snd, n, &sent, &refused)
					 : offer_mmsg(snd, n, g->seq + offered, &sent, &refused);
		if (snd->refused_last)
			snd->last_refusal = now;
		if (k) {
			offered += k;
			/* Time of the latest offer; a held packet counts as offered
			 * when it was due (the peer's ring made it wait). */
			last = holding ? max_u64(last, due_time(t0, offered - 1, ns_per_pkt)) : now;
		} else if (now - last > STUCK_NS) {
			die("no packet left for %llu s (TX ring slots never completed)",
			    STUCK_NS / 1000000000ull);
		}
	}
	g->seq += offered;

	/* Let the path drain (and the peer's NAPI count what it consumed). */
	drained_ns = drain(&g->fds, &before, sent, t, &after);
	g->last = after;
	g->have_last = 1;
	if (snd->probe_ratio > 0)
		collect_probes(&g->prx, probes_in(snd, offered));

	printf("{\"intended\": %" PRIu64 ", \"sent\": %" PRIu64 ", \"refused\": %" PRIu64
	       ", \"refused_short\": %" PRIu64 ", \"elapsed_ns\": %" PRIu64
	       ", \"rate_pps\": %.3f, \"frame_len\": %zu, \"batch\": %u, \"calls\": %" PRIu64
	       ", \"mode\": \"%s\", \"ring_frames\": %u, \"queue_pkts\": %" PRIu64
	       ", \"hold_pkts\": %" PRIu64 ", \"held_max\": %" PRIu64
	       ", \"counter_offset\": %ld, \"flows\": %" PRIu64 ", \"mix\": \"%s\""
	       ", \"attempts_refused\": %" PRIu64
	       ", \"max_lag_ns\": %" PRIu64 ", \"max_lag_bound_ns\": %" PRIu64
	       ", \"slipped_ns\": %" PRIu64 ", \"drain_ns\": %" PRIu64
	       ", \"settle_ns\": %" PRIu64 ", \"drained_ns\": %" PRIu64 ", \"cpu\": %d"
	       ", \"rx_between_trials\": %" PRIu64
	       ", \"tx_packets_delta\": %" PRIu64 ", \"tx_dropped_delta\": %" PRIu64
	       ", \"rx_packets_delta\": %" PRIu64 ", \"rx_dropped_delta\": %" PRIu64
	       ", \"stopped\": %d, \"offered\": %" PRIu64,
	       t->count, sent, refused, snd->refused_short, t->count ? last - first : 0,
	       t->rate_pps, snd->len, o->batch, snd->calls,
	       o->mode == MODE_RING ? "ring" : "mmsg", snd->nframes,
	       o->queue_pkts, o->hold_pkts, held_max, o->counter_off, snd->flows,
	       o->mix ? o->mix : "",
	       snd->attempts_refused, max_lag, o->max_lag_ns, slipped, t->drain_ns,
	       t->settle_ns, drained_ns, o->cpu, between,
	       after.tx_packets - before.tx_packets, after.tx_dropped - before.tx_dropped,
	       after.rx_packets - before.rx_packets, after.rx_dropped - before.rx_dropped,
	       stopped, offered);
	if (snd->probe_ratio > 0)
		print_probes(g, t, probes_in(snd, offered));
	printf("}\n");
	fflush(stdout);
}

/* Pin, prioritise, load the frames, open the socket (and ring) and the counters. */
static void setup(struct gen *g)
{
	const struct opts *o = &g->o;
	struct sender *snd = &g->snd;
	uint64_t f;
	unsigned int i;

	if (o->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			die("cannot pin to CPU %d: %s", o->cpu, strerror(errno));
	}
	if (o->fifo > 0) {
		/* Real-time priority against other tasks on a shared CPU; the
		 * kernel's RT throttling still leaves them 5 % of each second. */
		struct sched_param sp = { .sched_priority = o->fifo };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			die("SCHED_FIFO %d: %s", o->fifo, strerror(errno));
	}
	snd->flows = o->flows;
	if (o->mix) {
		static struct mix mix;

		snd->mix = &mix;
		snd->frames = load_mix(o->frame_path, o->mix, &mix, &snd->len);
	} else {
		snd->frames = load_frames(o->frame_path, o->flows, &snd->len);
	}
	if (o->counter_off >= 0)
		for (f = 0; f < o->flows; f++)
			check_counter_slot(frame_of(snd, f), snd->len, o->counter_off);
	snd->counter_off = o->counter_off;
	snd->dev = o->tx;
	snd->fd = open_socket(o->tx, o->queue_pkts, snd->len);
	snd->send_flags = o->queue_pkts ? MSG_DONTWAIT : 0;
	snd->hold = o->hold_pkts > 0;
	if (o->mode == MODE_RING) {
		setup_ring(snd, o->tx);
	} else {
		/* Every message of a batch points at the frame (of its flow), or
		 * with -V at its own copy (which gets its packet's counter). */
		if (o->counter_off >= 0) {
			snd->bufs = malloc((size_t)MAX_BATCH * snd->len);
			if (!snd->bufs)
				die("out of memory for %d frame copies", MAX_BATCH);
		}
		for (i = 0; i < MAX_BATCH; i++) {
			if (snd->bufs)
				memcpy(snd->bufs + (size_t)i * snd->len, snd->frames, snd->len);
			snd->msgs[i].msg_hdr.msg_iov = &snd->iov[i];
			snd->msgs[i].msg_hdr.msg_iovlen = 1;
		}
		default_iov(snd);
	}
	if (o->probe_path) {
		snd->probe = load_frames(o->probe_path, 1, &snd->probe_len);
		if (!has_probe_trailer(snd->probe, snd->probe_len))
			die("probe frame %s does not end with a probe trailer (4 slots x, ~x, y, ~y "
			    "and the magic)", o->probe_path);
		snd->probe_bufs = malloc((size_t)MAX_BATCH * snd->probe_len);
		g->prx.bufs = malloc((size_t)PROBE_BATCH * PROBE_FRAME_MAX);
		if (!snd->probe_bufs || !g->prx.bufs)
			die("out of memory for the probes");
		for (i = 0; i < MAX_BATCH; i++)
			memcpy(snd->probe_bufs + (size_t)i * snd->probe_len, snd->probe,
			       snd->probe_len);
		g->prx.fd = open_probe_socket(o->rx);
	}
	open_stats(o, &g->fds);
}

/* -S: one trial per command line until "quit" or the end of input. */
static void serve(struct gen *g)
{
	char line[CMD_LEN];

	printf("{\"ready\": true, \"frame_len\": %zu, \"flows\": %" PRIu64 "}\n",
	       g->snd.len, g->snd.flows);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		struct trial_req t;
		unsigned long long count, drain_us, settle_us, stop_lost;
		char extra;
		int fields;

		if (!strcmp(line, "quit\n") || !strcmp(line, "quit"))
			return;
		t.probe_pps = 0;
		fields = sscanf(line, "trial %lf %llu %llu %llu %llu %lf %c", &t.rate_pps, &count,
				&drain_us, &settle_us, &stop_lost, &t.probe_pps, &extra);
		if (fields < 4 || fields > 6 || !(t.rate_pps >= 0) || !(t.probe_pps >= 0))
			die("bad command: '%.*s' (trial RATE COUNT DRAIN_US SETTLE_US "
			    "[STOP_LOST [PROBE_PPS]], or quit)", (int)strcspn(line, "\n"), line);
		t.count = count;
		t.drain_ns = drain_us * 1000ull;
		t.settle_ns = settle_us * 1000ull;
		t.stop_lost = fields >= 5 ? stop_lost : NO_STOP;
		run_trial(g, &t);
	}
}

int main(int argc, char **argv)
{
	static struct gen g;

	parse_args(argc, argv, &g.o);
	setup(&g);
	if (g.o.serve) {
		serve(&g);
	} else {
		struct trial_req t = { g.o.rate_pps, g.o.count, g.o.drain_ns, g.o.settle_ns,
					g.o.stop_lost, g.o.probe_pps };

		run_trial(&g, &t);
	}
	if (g.snd.map)
		munmap(g.snd.map, g.snd.map_len);
	close(g.snd.fd);
	if (g.snd.probe)
		close(g.prx.fd);
	free(g.snd.probe);
	free(g.snd.probe_bufs);
	free(g.prx.bufs);
	free(g.snd.bufs);
	free(g.snd.frames);
	return 0;
}
