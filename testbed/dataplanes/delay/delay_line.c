// SPDX-License-Identifier: Apache-2.0
/*
 * delay_line: a user-space delay line for kernels without netem (and without the fq
 * qdisc, so eBPF cannot delay by EDT either).
 *
 * Frames read on interface IN (AF_PACKET, incoming frames only) are held for DELAY
 * milliseconds in a FIFO and then sent on interface OUT (OUT defaults to IN: the frame
 * goes back the way it came, which is how srperf inserts it, see
 * srperf/traffic/delay_line.py).  A constant delay keeps the order.  A share of the frames
 * (-l, %) can be dropped on arrival.  Frames keep their GSO/checksum state through
 * PACKET_VNET_HDR, so a 64 KB TSO/GRO frame passes as one frame.
 *
 * usage: delay_line -d DELAY_MS [-l LOSS_PCT] [-r SEED] [-b RING_MB] [-S] PATH...
 *   PATH   IN or IN:OUT (interface names); one FIFO per path
 *   -S     do not watch stdin (run by hand); otherwise end-of-file on stdin ends it
 * stdout: "ready" once every socket is bound; a line "stats" on stdin answers with
 * "stats {JSON}"; at the end (a line "quit", stdin closed, SIGTERM, SIGINT) it prints
 * "final {JSON}"
 * and exits 0.  Errors are printed as "error: ..." on stdout (its reader may not see
 * stderr) and end it with exit status 1; bad usage exits 2.
 * Counters per path: frames and bytes received and sent, frames dropped by the loss
 * share ("lost"), because the FIFO was full ("overflow"), refused by the kernel on
 * send ("tx_errors"), dropped by the kernel before this program read them
 * ("kernel_drops"), and still held at exit ("pending").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PATHS 8
#define MAX_FRAME (65536 + 256)         /* a GSO frame up to 64 KB plus headers */
#define VNET_LEN ((uint32_t)sizeof(struct virtio_net_hdr))
#define REC_WRAP UINT32_MAX
#define RX_BATCH 64                     /* frames read per socket per loop turn */

struct rec {                            /* one held frame, followed by its bytes */
	uint64_t due_ns;
	uint32_t len;                   /* vnet header + frame; REC_WRAP: go to 0 */
	uint32_t pad;
};

struct path {
	char in_name[IF_NAMESIZE], out_name[IF_NAMESIZE];
	int in_fd, out_fd;
	unsigned char *ring;
	size_t size, r, w, used;        /* bytes; r: oldest record, w: next write */
	unsigned long long rx, rx_bytes, tx, tx_bytes, lost, overflow, tx_errors,
		kernel_drops, pending;
	int blocked;                    /* the last send would block: wait for POLLOUT */
};

static struct path g_paths[MAX_PATHS];
static int g_npaths;
static uint64_t g_delay_ns;
static uint32_t g_loss_ppm;
static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;
static volatile sig_atomic_t g_stop;
static unsigned char g_scratch[MAX_FRAME];

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint32_t rand_ppm(void)
{
	/* xorshift64*: fast, and good enough to draw a loss share */
	g_rng ^= g_rng >> 12;
	g_rng ^= g_rng << 25;
	g_rng ^= g_rng >> 27;
	return (uint32_t)(((g_rng * 0x2545F4914F6CDD1DULL) >> 32) % 1000000U);
}

static int packet_socket(const char *dev, int receive)
{
	int one = 1, size = 64 << 20;
	struct sockaddr_ll sll;
	unsigned idx = if_nametoindex(dev);
	int fd;

	if (!idx)
		fail("interface %s: %s", dev, strerror(errno));
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, receive ? htons(ETH_P_ALL) : 0);
	if (fd < 0)
		fail("AF_PACKET socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)))
		fail("PACKET_VNET_HDR on %s: %s", dev, strerror(errno));
	if (receive && setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)))
		fail("PACKET_IGNORE_OUTGOING on %s: %s", dev, strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		fail("socket buffers on %s: %s", dev, strerror(errno));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = receive ? htons(ETH_P_ALL) : 0;
	sll.sll_ifindex = (int)idx;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		fail("bind to %s: %s", dev, strerror(errno));
	return fd;
}

static size_t rec_size(uint32_t len)
{
	return (sizeof(struct rec) + len + 7) & ~(size_t)7;
}

/* Where the next frame can be written (at least MAX_FRAME contiguous), or NULL. */
static struct rec *ring_slot(struct path *p)
{
	size_t need = rec_size(VNET_LEN + MAX_FRAME);

	if (p->size - p->w < need) {            /* not enough room before the end: wrap */
		if (p->used + (p->size - p->w) + need > p->size)
			return NULL;
		if (p->size - p->w >= sizeof(struct rec))
			((struct rec *)(p->ring + p->w))->len = REC_WRAP;
		p->used += p->size - p->w;
		p->w = 0;
	}
	if (p->used + need > p->size)
		return NULL;
	return (struct rec *)(p->ring + p->w);
}

/* The oldest held frame, or NULL (skips a wrap marker). */
static struct rec *ring_head(struct path *p)
{
	struct rec *h;

	if (!p->used)
		return NULL;
	if (p->size - p->r < sizeof(struct rec) ||
	    ((struct rec *)(p->ring + p->r))->len == REC_WRAP) {
		p->used -= p->size - p->r;
		p->r = 0;
		if (!p->used)
			return NULL;
	}
	h = (struct rec *)(p->ring + p->r);
	return h;
}

static void ring_pop(struct path *p, struct rec *h)
{
	size_t sz = rec_size(h->len);

	p->r += sz;
	p->used -= sz;
	if (!p->used)
		p->r = p->w = 0;        /* empty: start again at the beginning */
}

static void receive(struct path *p)
{
	for (int i = 0; i < RX_BATCH; i++) {
		struct rec *slot = ring_slot(p);
		unsigned char *buf = slot ? (unsigned char *)(slot + 1) : g_scratch;
		ssize_t n = recv(p->in_fd, buf, VNET_LEN + MAX_FRAME, MSG_TRUNC);

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				fail("recv on %s: %s", p->in_name, strerror(errno));
			return;
		}
		if ((size_t)n > VNET_LEN + MAX_FRAME || (size_t)n <= VNET_LEN) {
			p->overflow++;    /* truncated or empty: cannot be sent on */
			continue;
		}
		p->rx++;
		p->rx_bytes += (unsigned long long)n - VNET_LEN;
		if (!slot) {
			p->overflow++;
			continue;
		}
		if (g_loss_ppm && rand_ppm() < g_loss_ppm) {
			p->lost++;
			continue;
		}
		slot->due_ns = now_ns() + g_delay_ns;
		slot->len = (uint32_t)n;
		p->w += rec_size(slot->len);
		p->used += rec_size(slot->len);
	}
}

/* Send every frame that is due; the earliest due time still held (0: none). */
static uint64_t transmit(struct path *p, uint64_t now)
{
	struct rec *h;

	while ((h = ring_head(p)) != NULL) {
		if (h->due_ns > now)
			return h->due_ns;
		if (send(p->out_fd, h + 1, h->len, MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == ENOBUFS) {
				p->blocked = 1;
				return 0;
			}
			p->tx_errors++;
		} else {
			p->tx++;
			p->tx_bytes += h->len - VNET_LEN;
		}
		ring_pop(p, h);
	}
	return 0;
}

static void kernel_drops(struct path *p)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	/* the kernel resets these counters on every read: add them up */
	if (!getsockopt(p->in_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		p->kernel_drops += st.tp_drops;
}

static void print_stats(const char *tag)
{
	printf("%s {\"delay_ms\": %.3f, \"loss_ppm\": %u, \"paths\": [", tag,
	       (double)g_delay_ns / 1e6, g_loss_ppm);
	for (int i = 0; i < g_npaths; i++) {
		struct path *p = &g_paths[i];

		kernel_drops(p);
		printf("%s{\"in\": \"%s\", \"out\": \"%s\", \"rx\": %llu, \"rx_bytes\": %llu, "
		       "\"tx\": %llu, \"tx_bytes\": %llu, \"lost\": %llu, \"overflow\": %llu, "
		       "\"tx_errors\": %llu, \"kernel_drops\": %llu, \"pending\": %llu, "
		       "\"held_bytes\": %zu}", i ? ", " : "", p->in_name, p->out_name, p->rx,
		       p->rx_bytes, p->tx, p->tx_bytes, p->lost, p->overflow, p->tx_errors,
		       p->kernel_drops, p->pending, p->used);
	}
	printf("]}\n");
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr, "usage: delay_line -d DELAY_MS [-l LOSS_PCT] [-r SEED] [-b RING_MB] "
		"[-S] IN[:OUT]...\n");
	printf("error: bad usage\n");
	exit(2);
}

static double number(const char *s, double lo, double hi)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < lo || v > hi) {
		printf("error: %s is not a number in [%g, %g]\n", s, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	double delay_ms = -1, loss_pct = 0;
	size_t ring_mb = 64;
	int opt, watch_stdin = 1;
	char line[64];
	size_t line_len = 0;
	struct sigaction sa;

	while ((opt = getopt(argc, argv, "d:l:r:b:S")) != -1) {
		switch (opt) {
		case 'd': delay_ms = number(optarg, 0, 10000); break;
		case 'l': loss_pct = number(optarg, 0, 100); break;
		case 'r': g_rng = (uint64_t)number(optarg, 1, 4294967295.0); break;
		case 'b': ring_mb = (size_t)number(optarg, 1, 4096); break;
		case 'S': watch_stdin = 0; break;
		default: usage();
		}
	}
	if (delay_ms < 0 || optind >= argc || argc - optind > MAX_PATHS)
		usage();
	g_delay_ns = (uint64_t)(delay_ms * 1e6 + 0.5);
	g_loss_ppm = (uint32_t)(loss_pct * 10000 + 0.5);
	for (int i = optind; i < argc; i++) {
		struct path *p = &g_paths[g_npaths++];
		char *colon = strchr(argv[i], ':');

		if (colon)
			*colon = '\0';
		if (!*argv[i] || strlen(argv[i]) >= IF_NAMESIZE ||
		    (colon && (!colon[1] || strlen(colon + 1) >= IF_NAMESIZE)))
			usage();
		strcpy(p->in_name, argv[i]);
		strcpy(p->out_name, colon ? colon + 1 : argv[i]);
		p->in_fd = packet_socket(p->in_name, 1);
		p->out_fd = colon && strcmp(p->in_name, p->out_name) ?
			packet_socket(p->out_name, 0) : p->in_fd;
		p->size = ring_mb << 20;
		p->ring = malloc(p->size);
		if (!p->ring)
			fail("no memory for a %zu MB FIFO", ring_mb);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;      /* no SA_RESTART: ppoll returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1000UL);       /* wake within ~1 us of a frame's due time */
	printf("ready\n");
	fflush(stdout);

	while (!g_stop) {
		struct pollfd pfd[2 * MAX_PATHS + 1];
		int nfd = 0, timeout_set = 0;
		uint64_t now = now_ns(), next = 0;
		struct timespec ts;

		for (int i = 0; i < g_npaths; i++) {
			uint64_t due = g_paths[i].blocked ? 0 : transmit(&g_paths[i], now);

			if (due && (!next || due < next))
				next = due;
		}
		for (int i = 0; i < g_npaths; i++) {
			pfd[nfd++] = (struct pollfd){.fd = g_paths[i].in_fd, .events = POLLIN};
			if (g_paths[i].blocked)
				pfd[nfd++] = (struct pollfd){.fd = g_paths[i].out_fd,
							     .events = POLLOUT};
		}
		if (watch_stdin)
			pfd[nfd++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		if (next) {
			uint64_t wait = next > now ? next - now : 0;

			ts.tv_sec = (time_t)(wait / 1000000000ULL);
			ts.tv_nsec = (long)(wait % 1000000000ULL);
			timeout_set = 1;
		}
		if (ppoll(pfd, (nfds_t)nfd, timeout_set ? &ts : NULL, NULL) < 0) {
			if (errno == EINTR)
				continue;
			fail("ppoll: %s", strerror(errno));
		}
		for (int k = 0, i = 0; i < g_npaths; i++) {
			struct path *p = &g_paths[i];

			if (pfd[k++].revents & POLLIN)
				receive(p);
			if (p->blocked && (pfd[k++].revents & (POLLOUT | POLLERR)))
				p->blocked = 0;
		}
		if (watch_stdin && pfd[nfd - 1].revents) {
			ssize_t n = read(STDIN_FILENO, line + line_len, sizeof(line) - 1 - line_len);

			if (n <= 0)
				break;          /* the holder went away */
			line_len += (size_t)n;
			line[line_len] = '\0';
			char *nl;
			while ((nl = strchr(line, '\n')) != NULL) {
				*nl = '\0';
				if (!strcmp(line, "stats"))
					print_stats("stats");
				else if (!strcmp(line, "quit"))
					g_stop = 1;
				memmove(line, nl + 1, strlen(nl + 1) + 1);
				line_len = strlen(line);
			}
			if (line_len == sizeof(line) - 1)
				line_len = 0;   /* an overlong line: forget it */
		}
	}
	for (int i = 0; i < g_npaths; i++) {
		struct path *p = &g_paths[i];
		struct rec *h;

		while ((h = ring_head(p)) != NULL) {
			p->pending++;
			ring_pop(p, h);
		}
	}
	print_stats("final");
	return 0;
}
