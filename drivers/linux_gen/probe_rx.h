// SPDX-License-Identifier: Apache-2.0
/*
 * probe_rx.h: the receiving side of the latency probes, shared by srgen.c and
 * xdpgen.c (both send the same probe frames, see srgen.c -p).  A packet socket
 * on RX keeps only incoming frames that end with the probe trailer, queues them
 * with the kernel's receive time stamp (SO_TIMESTAMPNS, CLOCK_REALTIME) and is
 * read after the trial's drain: each probe's one-way latency is its receive
 * stamp minus the transmit time in its trailer (CLOCK_REALTIME ns).
 *
 * The includer defines die() and now_ns() (CLOCK_MONOTONIC ns) first.
 */
#ifndef SRPERF_PROBE_RX_H
#define SRPERF_PROBE_RX_H

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>

#define PROBE_MAGIC 0x5352504c41543031ull /* "SRPLAT01": the probe trailer's last 8 bytes */
#define PROBE_TRAILER 40              /* 4 slots of 8 bytes + the magic */
#define PROBE_RCVBUF (64 * 1024 * 1024)
#define PROBE_WAIT_MS 20              /* after the drain, wait this long for missing probes */
#define PROBE_BATCH 64                /* probes read per recvmmsg call */
#define PROBE_FRAME_MAX 16384         /* receive buffer per probe */

static uint32_t get_slot(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[4] << 8 | p[5];
}

static int slot_ok(const unsigned char *p)
{
	return (p[0] ^ p[2]) == 0xff && (p[1] ^ p[3]) == 0xff &&
	       (p[4] ^ p[6]) == 0xff && (p[5] ^ p[7]) == 0xff;
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* A frame of len bytes that ends with a probe trailer (any slot values). */
static int has_probe_trailer(const unsigned char *f, size_t len)
{
	const unsigned char *t = f + len - PROBE_TRAILER;
	int i;

	if (len < ETH_HLEN + PROBE_TRAILER || get_be64(f + len - 8) != PROBE_MAGIC)
		return 0;
	for (i = 0; i < 32; i += 8)
		if (!slot_ok(t + i))
			return 0;
	return 1;
}

/* The receiving side of the probes: a packet socket on RX and one trial's tally. */
struct probe_rx {
	int fd;
	struct mmsghdr msgs[PROBE_BATCH];
	struct iovec iov[PROBE_BATCH];
	unsigned char *bufs;              /* PROBE_BATCH x PROBE_FRAME_MAX */
	char ctrl[PROBE_BATCH][CMSG_SPACE(sizeof(struct timespec)) + 64];
	uint32_t trial_no;                /* probes of other trials are late */
	uint64_t cap;                     /* probes the trial may send */
	int64_t *lat;                     /* latencies (ns), arrival order */
	unsigned char *seen;
	uint64_t n, duplicates, reordered, late, foreign, unstamped, highest;
	int any;
};

/* Receive socket for probes on dev: only incoming frames ending with the magic. */
static int open_probe_socket(const char *dev)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 8, 0),
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_STMT(BPF_ALU | BPF_SUB | BPF_K, 8),
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		BPF_STMT(BPF_LD | BPF_W | BPF_IND, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(PROBE_MAGIC >> 32), 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_IND, 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)PROBE_MAGIC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	struct sockaddr_ll sll;
	int one = 1, rcvbuf = PROBE_RCVBUF;
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	if (fd < 0)
		die("socket(AF_PACKET) for probes: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		die("probe socket options on %s: %s", dev, strerror(errno));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(dev);
	if (!sll.sll_ifindex)
		die("no interface %s: %s", dev, strerror(errno));
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind of the probe socket to %s: %s", dev, strerror(errno));
	return fd;
}

/* One received frame: tally it (the latency against its kernel receive time). */
static void take_probe(struct probe_rx *r, const unsigned char *f, size_t len,
		       const struct msghdr *mh)
{
	const unsigned char *t;
	const struct cmsghdr *c;
	uint64_t rx_ns = 0, tx_ns;
	uint32_t no;

	if (!has_probe_trailer(f, len)) {
		r->foreign++;
		return;
	}
	t = f + len - PROBE_TRAILER;
	if (get_slot(t) != r->trial_no) {
		r->late++;
		return;
	}
	no = get_slot(t + 8);
	if (no >= r->cap) {
		r->foreign++;
		return;
	}
	if (r->seen[no]) {
		r->duplicates++;
		return;
	}
	r->seen[no] = 1;
	if (r->any && no < r->highest)
		r->reordered++;
	else
		r->highest = no;
	r->any = 1;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR((struct msghdr *)mh, (struct cmsghdr *)c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			rx_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		}
	if (!rx_ns) {
		r->unstamped++;
		return;
	}
	tx_ns = (uint64_t)get_slot(t + 16) << 32 | get_slot(t + 24);
	r->lat[r->n++] = (int64_t)(rx_ns - tx_ns);
}

/* Read every probe queued on the socket (without waiting); returns how many. */
static uint64_t read_probes(struct probe_rx *r)
{
	uint64_t got = 0;

	for (;;) {
		int i, k;

		for (i = 0; i < PROBE_BATCH; i++) {
			r->iov[i].iov_base = r->bufs + (size_t)i * PROBE_FRAME_MAX;
			r->iov[i].iov_len = PROBE_FRAME_MAX;
			memset(&r->msgs[i].msg_hdr, 0, sizeof(r->msgs[i].msg_hdr));
			r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
			r->msgs[i].msg_hdr.msg_iovlen = 1;
			r->msgs[i].msg_hdr.msg_control = r->ctrl[i];
			r->msgs[i].msg_hdr.msg_controllen = sizeof(r->ctrl[i]);
		}
		k = recvmmsg(r->fd, r->msgs, PROBE_BATCH, MSG_DONTWAIT, NULL);
		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return got;
			if (errno == EINTR)
				continue;
			die("recvmmsg on the probe socket: %s", strerror(errno));
		}
		for (i = 0; i < k; i++)
			take_probe(r, r->bufs + (size_t)i * PROBE_FRAME_MAX, r->msgs[i].msg_len,
				   &r->msgs[i].msg_hdr);
		got += (uint64_t)k;
		if (k < PROBE_BATCH)
			return got;
	}
}

/* After the drain: read the probes, waiting up to PROBE_WAIT_MS for missing ones. */
static void collect_probes(struct probe_rx *r, uint64_t offered)
{
	uint64_t start = now_ns();

	read_probes(r);
	while (r->n + r->unstamped < offered &&
	       now_ns() - start < PROBE_WAIT_MS * 1000000ull) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

		if (poll(&pfd, 1, 1) > 0)
			read_probes(r);
	}
}

/* Frames the probe socket dropped (its buffer full) since the last call. */
static uint64_t socket_drops(int fd)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
		die("PACKET_STATISTICS of the probe socket: %s", strerror(errno));
	return st.tp_drops;
}

/* A trial's probes: its number, room for cap of them, an empty tally; probes
 * still queued from earlier trials are read now (counted late). */
static void probe_rx_begin(struct probe_rx *r, uint32_t trial_no, uint64_t cap)
{
	r->trial_no = trial_no;
	r->cap = cap;
	r->lat = malloc(r->cap * sizeof(*r->lat));
	r->seen = calloc(r->cap, 1);
	if (!r->lat || !r->seen)
		die("out of memory for %" PRIu64 " probes", r->cap);
	r->n = r->duplicates = r->reordered = r->late = r->foreign = r->unstamped = 0;
	r->highest = 0;
	r->any = 0;
	read_probes(r);
	socket_drops(r->fd);    /* reading the statistics resets them */
}

/* The probes' part of the report (", \"probes\": {...}"); ends the trial's tally. */
static void probe_rx_print(struct probe_rx *r, double pps, uint64_t offered, size_t frame_len)
{
	uint64_t i;

	printf(", \"probes\": {\"pps\": %.3f, \"offered\": %" PRIu64 ", \"received\": %" PRIu64
	       ", \"reordered\": %" PRIu64 ", \"duplicates\": %" PRIu64 ", \"late\": %" PRIu64
	       ", \"foreign\": %" PRIu64 ", \"unstamped\": %" PRIu64
	       ", \"socket_drops\": %" PRIu64 ", \"frame_len\": %zu"
	       ", \"clock\": \"realtime\", \"latency_ns\": [",
	       pps, offered, r->n + r->unstamped, r->reordered, r->duplicates, r->late,
	       r->foreign, r->unstamped, socket_drops(r->fd), frame_len);
	for (i = 0; i < r->n; i++)
		printf(i ? ",%" PRId64 : "%" PRId64, r->lat[i]);
	printf("]}");
	free(r->lat);
	free(r->seen);
	r->lat = NULL;
	r->seen = NULL;
}

#endif
