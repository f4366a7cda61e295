// SPDX-License-Identifier: Apache-2.0
/*
 * xdpgen: the live-frames send engine of srperf's "linux" traffic generator.
 *
 * Same job, command line subset and report as srgen (srgen.c): COUNT copies
 * of one Ethernet frame out of TX at RATE packets per second, one JSON object
 * per trial, -S (serve) for a resident process.  The frames are not sent
 * through a socket: xdpgen loads a tiny XDP program (xdpgen.bpf.c) and runs it
 * with BPF_PROG_RUN in live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES, kernel
 * 5.18+): the kernel builds the frame once per page-pool page, the program
 * stamps the packet's counter (-V) and returns XDP_TX, which the kernel
 * redirects to the ingress device of ctx_in (the TX port) and hands, in bulks
 * of up to 16, to its ndo_xdp_xmit.  Over veth that needs NAPI on the peer
 * (an XDP program attached to it, as the tester's sink is).
 *
 *   - Pacing: packet i is due at t0 + i / RATE (CLOCK_MONOTONIC, which
 *     bpf_ktime_get_ns reads too); the program never offers a packet before
 *     it is due (it spins until then).  A packet later than MAX_LAG slips the
 *     schedule (slipped_ns): the trial takes longer and the caller sees a
 *     lower offered rate (generator limited), never a lower rate reported as
 *     the one asked.  RATE 0: unpaced.
 *   - The call policy.  A BPF_PROG_RUN with repeat > 1 puts its program into
 *     the kernel's XDP dispatcher and takes it out again, and each change
 *     waits for an RCU grace period (bpf_prog_test_run_xdp ->
 *     bpf_prog_change_xdp -> bpf_dispatcher_update -> synchronize_rcu): two
 *     of them, 16-32 ms on this host, per call.  A program already in the
 *     dispatcher is only counted again, so xdpgen holds it there: a bpf_link
 *     attaches it to the namespace's loopback device in generic mode (the
 *     program passes whatever arrives there).  A call then costs ~5-15 us
 *     plus ~0.25 us per frame, and xdpgen issues repeat = k when k packets
 *     are due, k adapted to the rate:
 *       burst: k = QUANTUM worth of packets (at least 1), the call issued
 *         when the k-th is due, clock_nanosleep in between, so the sender
 *         uses a fraction of its CPU (the oldest packet of a call waits at
 *         most one QUANTUM, as with srgen's -q);
 *       chunk: where a call per QUANTUM would cost more than half of it
 *         (high rates), calls of CHUNK_US of traffic in which the program
 *         spins to each packet's due time, batches of QUANTUM (up to twice that
 *         from 1.6 Mpps on: CHUNK_BATCH_MIN below).
 *     -C burst|chunk forces one; without the hold (the loopback device has an
 *     XDP program already) one call per trial and the program paces
 *     ("held": 0 in the report).
 *   - Counting: BPF_PROG_RUN does not say how many frames the device took.
 *     veth counts them on its peer's receive queues and shows them in the TX
 *     port's ethtool statistics as tx_queue_N_xdp_xmit (taken) and
 *     tx_queue_N_xdp_xmit_errors (refused: the peer's ring was full).  xdpgen
 *     reads both before and after the trial (ETHTOOL_GSTATS): sent is the
 *     xdp_xmit delta, refused is offered - sent (so a frame lost anywhere
 *     between the program and the peer's ring, including one the program
 *     aborted, is refused); attempts_refused is the xdp_xmit_err delta, and
 *     the report's "unaccounted" is what neither counter saw (0 when the
 *     device's counters explain every frame).  A device without these
 *     counters is refused at start (exit 1, stderr says why).
 *   - -L STOP_LOST: a watcher thread reads the refusals (xdp_xmit_errors)
 *     every STOP_POLL_NS during the run and, once more than STOP_LOST were
 *     refused, sets the program's stop flag: the remaining repeats are
 *     dropped unoffered ("stopped": 1, "offered" the packets before it).
 *   - Frames (see "variants" below and xdpgen.bpf.c, shape_frame): -k FLOWS
 *     (the frame file holds FLOWS frames of one length; packet i is frame
 *     i % FLOWS, as srgen), -I LEN:WEIGHT,... (an IMIX: the file holds frames of
 *     those lengths; packet i is the one a smooth weighted round robin of the
 *     weights gives) and -p PROBE_FILE (srgen's latency probes: a trial of
 *     PROBE_PPS, -a or the serve command's sixth field, replaces the packets
 *     srgen's is_probe picks by a probe, stamped by the program with the
 *     transmit time on CLOCK_REALTIME; received by srgen's code, probe_rx.h).
 *     Every packet gets its frame's first 256 bytes (and the span where the
 *     variants' ends differ) written anew: the page it is built in may hold
 *     another variant, or what the SUT wrote into it in place (it forwards this
 *     very page: a router's new Ethernet header, a decremented hop limit).
 *   - Drain, -s SETTLE_US, the counters of TX and RX (sysfs) and serve mode
 *     are as in srgen.  Not supported here (exit 2): -m ring, -Q, -H; the
 *     caller uses srgen for those.
 *   - Cleanup: nothing is pinned; the program and its map are file
 *     descriptors of this process only, so the kernel frees them when it
 *     exits, however it ends (kill -9 included).
 *
 * Run it inside the tester's namespace (ip netns exec NS xdpgen ...).
 * Errors: message on stderr, exit status 1 (2 for bad usage).
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES (1U << 1)
#endif

#define MAX_FRAME 3500           /* a page minus headroom and skb_shared_info */
#define MAX_BATCH 256            /* the kernel's limit for batch_size */
#define COUNTER_LEN 8
#define ETH_HLEN_ 14
#define POLL_NS 500000ull
#define CHECK_WAIT_NS 200000000ull   /* the start-up frame: counted within 200 ms */
#define CHECK_SETTLE_NS 20000000ull  /* and 20 ms for it to reach the rx port */
#define CMD_LEN 256
#define STOP_POLL_NS 1000000ull
#define NO_STOP UINT64_MAX
#define LOOPBACK_IFINDEX 1       /* the loopback device of every namespace */
#define BURST_NPP_MIN 50000.0    /* auto: burst calls at rates up to 20 kpps */
#define YIELD_DIV 16             /* chunk: sleep chunk/16 after each chunk call */
#define SLEEP_MIN_NS 20000ull    /* sleep only for longer waits than this */
#define WAKE_EARLY_NS 10000ull   /* wake this much early; the program spins the rest */
#define UNPACED_CHUNK 65536u     /* frames per call when unpaced */
#define RETRY_NS 50000ull        /* hold: at the end, retry the backlog this often */
/* chunk: the kernel batch is QUANTUM worth of frames; where that is 32 frames or more
 * (1.6 Mpps and up at 20 us) it is stretched up to twice that to reach CHUNK_BATCH_MIN.  The batch is also the size of the call's page pool, whose
 * recycling ring of batch pages overflows into the page allocator when fewer pages fit
 * than are in flight (each new page is then initialised with the frame), and the peer's
 * NAPI is woken once per batch: at 3-5 Mpps a 60-100 frame batch cost 5-15 % of the
 * rate.  128 is half the veth peer's 256-slot ring, room for one more batch while a
 * sleeping NAPI thread wakes. */
#define CHUNK_BATCH_MIN 128u

enum calls { CALLS_AUTO, CALLS_BURST, CALLS_CHUNK, CALLS_TRIAL };

struct opts {
	const char *frame_path, *tx, *rx, *prog_path;
	double rate_pps;
	uint64_t count;
	int cpu, fifo, serve;
	uint64_t drain_ns, settle_ns, max_lag_ns, quantum_ns, chunk_ns, stop_lost, hold_pkts;
	uint64_t yield_ns;           /* -Y: sleep after each chunk call (UINT64_MAX: chunk/16) */
	int hold_ethtool;            /* -R ethtool: the hold reads refusals by ethtool ioctl */
	unsigned int batch;
	enum calls calls;
	long counter_off;
	uint64_t flows;              /* -k: the frame file holds this many frames of one length */
	const char *mix;             /* -I LEN:WEIGHT,...: the frame file holds these frames */
	const char *probe_path;      /* -p: the latency probe frame */
	double probe_pps;            /* -a: probes per second of a one-shot trial */
};

struct xdpgen_cfg {              /* as in xdpgen.bpf.c */
	uint64_t seq, t0_ns, npp_q8, count, offered, max_lag_ns, slipped_ns, lag_max_ns, last_ns;
	uint32_t counter_off, stop;
};

static void die(const char *fmt, ...);
static uint64_t now_ns(void);
#include "probe_rx.h"  /* the probes' receive side, as srgen's (uses die, now_ns) */
#include "mix.h"       /* an IMIX's frames and order, as srgen's */

#define MAX_REGION 256          /* as in xdpgen.bpf.c */
#define MAX_VARIANTS 65537u      /* srgen's 65536 flows, and the probe */
#define MAX_FILE_BYTES (64u * 1024 * 1024)

struct xdpgen_var {              /* as in xdpgen.bpf.c */
	uint32_t len, pad;
	uint8_t head[MAX_REGION], tail[MAX_REGION];
};

struct xdpgen_shape {            /* as in xdpgen.bpf.c */
	uint32_t active, plen, base_len, head_len, tail_off, tail_len, probe_var, trial_no;
	uint64_t probe_q32, probe_acc, probes, tai_off_ns;
};

/* The frames' variants: the test frames (flows or an IMIX's sizes), then the probe. */
struct shape {
	unsigned char *frames;       /* the variants, back to back */
	size_t *off, *len;           /* of each variant in frames */
	struct mix mix;              /* -I: the mix (mix.h) */
	uint32_t ntest, nvar;        /* test variants; all (with the probe) */
	uint32_t base;               /* the longest variant: the page's frame */
	uint32_t *pattern, plen;     /* packet i is test variant pattern[i % plen] */
	struct xdpgen_shape cfg;
	int shape_fd, var_fd, pat_fd;
	size_t probe_len;            /* 0: no probes */
	uint32_t trial_no;
	struct probe_rx rx;
};

struct counters { uint64_t tx_packets, tx_dropped, rx_packets, rx_dropped, xmit, xmit_err; };

struct gen {
	struct opts o;
	unsigned char frame[MAX_FRAME];
	size_t len;
	int prog_fd, cfg_fd, stop_fd, ifindex, sock, hold_fd;
	int st[4];                   /* sysfs counter files */
	struct ethtool_gstrings *names;
	struct ethtool_stats *stats;
	int *xmit_idx, *err_idx, n_xmit, n_err;
	uint64_t seq, calls, prog_ns, prog_ns_max, sleeps;
	uint64_t wake_late_max;       /* this trial: the latest wake-up after a sleep, ns */
	uint64_t read_max;            /* this trial: the longest refusal read of the hold, ns */
	uint64_t backlog, held_max, resent;   /* -H, this trial */
	struct counters last;
	int have_last;
	struct bpf_object *obj;
	struct shape sh;             /* flows, IMIX, probes (see "variants" below) */
};

/* "xdpgen: MESSAGE" on stderr, then exit with CODE (1: a failure, 2: bad input). */
static void __attribute__((noreturn)) vquit(int code, const char *fmt, va_list ap)
{
	fputs("xdpgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	exit(code);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vquit(1, fmt, ap);
}

static void usage(void)
{
	fputs("usage: xdpgen -f FRAME -t TX -x RX -o PROG.o [-r RATE -n COUNT | -S] [-c CPU]\n"
	      "              [-P FIFO] [-d DRAIN_MS] [-s SETTLE_US] [-b BATCH] [-l MAX_LAG_US]\n"
	      "              [-q QUANTUM_US] [-V COUNTER_OFFSET] [-L STOP_LOST]\n"
	      "              [-k FLOWS | -I LEN:WEIGHT,...] [-p PROBE_FILE [-a PROBE_PPS]]\n"
	      "              [-m mmsg|xdp] [-C auto|burst|chunk|trial] [-K CHUNK_US]\n"
	      "              [-H HOLD_PKTS] [-Y YIELD_US] [-R sysfs|ethtool]\n"
	      "  QUANTUM_US (20): traffic sent together (a burst call, a kernel batch)\n"
	      "  BATCH (256): the kernel's batch of an unpaced call; its page pool holds\n"
	      "    BATCH pages, and a smaller one recycles fewer of them (see the docs)\n"
	      "  -C: the call policy (auto: burst up to 20 kpps, chunk above; trial: one call)\n"
	      "  CHUNK_US (1000): traffic of one chunk call (then a sleep of 1/16 of it)\n"
	      "  YIELD_US: the sleep after each chunk call instead (0: none)\n"
	      "  -R: how the hold reads refusals after each call (sysfs tx_dropped: no RTNL)\n"
	      "  -H: re-send refused frames after each call, up to HOLD_PKTS waiting\n",
	      stderr);
	exit(2);
}

static void bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vquit(2, fmt, ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		bad("bad %s: '%s'", what, s);
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->cpu = -1;
	o->drain_ns = 200ull * 1000000;
	o->max_lag_ns = 1000ull * 1000;
	o->quantum_ns = 20ull * 1000;
	o->chunk_ns = 1000ull * 1000;
	o->yield_ns = UINT64_MAX;
	o->batch = MAX_BATCH;    /* unpaced: 64 churned pages, 1.3-1.8x slower */
	o->rate_pps = -1;
	o->counter_off = -1;
	o->stop_lost = NO_STOP;
	o->flows = 1;
	while ((c = getopt(argc, argv, "f:r:n:t:x:c:P:d:b:l:q:m:V:k:I:p:a:s:L:o:C:K:H:Y:R:Sh")) != -1) {
		switch (c) {
		case 'f': o->frame_path = optarg; break;
		case 'o': o->prog_path = optarg; break;
		case 'r': {
			char *end;

			o->rate_pps = strtod(optarg, &end);
			if (end == optarg || *end || !(o->rate_pps >= 0))
				bad("bad rate: '%s'", optarg);
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
		case 'q': o->quantum_ns = parse_u64(optarg, "quantum") * 1000ull; break;
		case 'K': o->chunk_ns = parse_u64(optarg, "chunk") * 1000ull; break;
		case 'H': o->hold_pkts = parse_u64(optarg, "hold"); break;
		case 'Y': o->yield_ns = parse_u64(optarg, "yield") * 1000ull; break;
		case 'R':
			if (strcmp(optarg, "sysfs") && strcmp(optarg, "ethtool"))
				bad("hold reads '%s': sysfs or ethtool", optarg);
			o->hold_ethtool = !strcmp(optarg, "ethtool");
			break;
		case 'C':
			if (!strcmp(optarg, "auto"))
				o->calls = CALLS_AUTO;
			else if (!strcmp(optarg, "burst"))
				o->calls = CALLS_BURST;
			else if (!strcmp(optarg, "chunk"))
				o->calls = CALLS_CHUNK;
			else if (!strcmp(optarg, "trial"))
				o->calls = CALLS_TRIAL;
			else
				bad("call policy '%s': auto, burst or chunk", optarg);
			break;
		case 's': o->settle_ns = parse_u64(optarg, "settle") * 1000ull; break;
		case 'L': o->stop_lost = parse_u64(optarg, "stop lost"); break;
		case 'S': o->serve = 1; break;
		case 'k':
			o->flows = parse_u64(optarg, "flows");
			if (o->flows < 1 || o->flows > MAX_VARIANTS - 1)
				bad("bad flows: '%s' (1..%u)", optarg, MAX_VARIANTS - 1);
			break;
		case 'I': o->mix = optarg; break;
		case 'p': o->probe_path = optarg; break;
		case 'a': {
			char *end;

			o->probe_pps = strtod(optarg, &end);
			if (end == optarg || *end || !(o->probe_pps >= 0))
				bad("bad probe rate: '%s'", optarg);
			break;
		}
		case 'V':
			o->counter_off = (long)parse_u64(optarg, "counter offset");
			break;
		case 'm':
			if (strcmp(optarg, "mmsg") && strcmp(optarg, "xdp"))
				bad("mode '%s' is not supported by xdpgen", optarg);
			break;
		default: usage();
		}
	}
	if (optind != argc || !o->frame_path || !o->tx || !o->rx || !o->prog_path ||
	    (!o->serve && o->rate_pps < 0))
		usage();
	if (o->batch < 1 || o->batch > MAX_BATCH)
		bad("batch must be 1..%d", MAX_BATCH);
	if (o->mix && o->flows > 1)
		bad("-I (a mix of sizes) and -k (flows) do not go together");
	if (o->probe_pps > 0 && !o->probe_path)
		bad("-a needs -p PROBE_FILE");
	if (!o->quantum_ns || o->quantum_ns * 2 > o->max_lag_ns)
		bad("quantum must be more than 0 and at most half the max lag");
	if (!o->chunk_ns)
		bad("chunk must be more than 0");
	if (o->hold_pkts && o->calls == CALLS_TRIAL)
		bad("-H needs calls it can re-send between: not with -C trial");
}

/* -- counters ------------------------------------------------------------ */

static int open_stat(const char *dev, const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", dev, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	return fd;
}

static uint64_t read_stat(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		die("cannot read a counter: %s", strerror(errno));
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

static void ethtool_ioctl(struct gen *g, void *data)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", g->o.tx);
	ifr.ifr_data = data;
	if (ioctl(g->sock, SIOCETHTOOL, &ifr) < 0)
		die("ethtool statistics of %s: %s", g->o.tx, strerror(errno));
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* Find the TX port's per-queue xdp_xmit and xdp_xmit_err counters. */
static void open_xmit_stats(struct gen *g)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t len;
	} sset = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << ETH_SS_STATS } };
	uint32_t n, i;

	g->sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (g->sock < 0)
		die("socket: %s", strerror(errno));
	ethtool_ioctl(g, &sset);
	n = sset.hdr.sset_mask ? sset.len : 0;
	g->names = calloc(1, sizeof(*g->names) + (size_t)n * ETH_GSTRING_LEN);
	g->stats = calloc(1, sizeof(*g->stats) + (size_t)n * sizeof(uint64_t));
	g->xmit_idx = calloc(n + 1, sizeof(int));
	g->err_idx = calloc(n + 1, sizeof(int));
	if (!g->names || !g->stats || !g->xmit_idx || !g->err_idx)
		die("out of memory");
	g->names->cmd = ETHTOOL_GSTRINGS;
	g->names->string_set = ETH_SS_STATS;
	g->names->len = n;
	if (n)
		ethtool_ioctl(g, g->names);
	for (i = 0; i < n; i++) {
		char name[ETH_GSTRING_LEN + 1];

		memcpy(name, g->names->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = 0;
		if (strncmp(name, "tx_queue_", 9))
			continue;
		if (ends_with(name, "_xdp_xmit"))
			g->xmit_idx[g->n_xmit++] = (int)i;
		else if (ends_with(name, "_xdp_xmit_errors"))
			g->err_idx[g->n_err++] = (int)i;
	}
	if (!g->n_xmit || !g->n_err)
		die("%s has no tx_queue_N_xdp_xmit / _xdp_xmit_errors counters (ethtool -S): "
		    "xdpgen could not count what it sends through it", g->o.tx);
	g->stats->cmd = ETHTOOL_GSTATS;
	g->stats->n_stats = n;
}

static void read_xmit_into(struct gen *g, struct ethtool_stats *st, uint64_t *xmit,
			   uint64_t *err)
{
	int i;

	ethtool_ioctl(g, st);
	*xmit = *err = 0;
	for (i = 0; i < g->n_xmit; i++)
		*xmit += st->data[g->xmit_idx[i]];
	for (i = 0; i < g->n_err; i++)
		*err += st->data[g->err_idx[i]];
}

static void read_xmit(struct gen *g, uint64_t *xmit, uint64_t *err)
{
	read_xmit_into(g, g->stats, xmit, err);
}

/* -L: the watcher thread of one trial. */
struct watch {
	struct gen *g;
	struct ethtool_stats *st;
	uint64_t err0, stop_lost;
	volatile int done;
	int stopped;
};

static void *watcher(void *arg)
{
	struct watch *w = arg;
	uint64_t xmit, err;
	uint32_t key = 0, one = 1;
	struct sched_param sp = { .sched_priority = 0 };
	cpu_set_t all;
	int c;

	/* Off the sender's CPU and out of its FIFO class, so that it runs while
	 * the sender is inside the kernel. */
	CPU_ZERO(&all);
	for (c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	while (!w->done) {
		usleep(STOP_POLL_NS / 1000);
		read_xmit_into(w->g, w->st, &xmit, &err);
		/* With -H a refused frame may still be sent again: only what is neither
		 * re-sent nor within the hold's room is surely lost. */
		if (err - w->err0 - __atomic_load_n(&w->g->resent, __ATOMIC_RELAXED) >
		    w->stop_lost + w->g->o.hold_pkts) {
			if (bpf_map_update_elem(w->g->stop_fd, &key, &one, BPF_ANY))
				die("cannot stop the run: %s", strerror(errno));
			w->stopped = 1;
			return NULL;
		}
	}
	return NULL;
}

static void read_counters(struct gen *g, struct counters *c)
{
	c->tx_packets = read_stat(g->st[0]);
	c->tx_dropped = read_stat(g->st[1]);
	c->rx_packets = read_stat(g->st[2]);
	c->rx_dropped = read_stat(g->st[3]);
	read_xmit(g, &c->xmit, &c->xmit_err);
}

/* -- setup --------------------------------------------------------------- */

/* -- variants: flows, IMIX, probes (see xdpgen.bpf.c, shape_frame) ---------- */

static unsigned char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = malloc(MAX_FILE_BYTES);

	if (!buf)
		die("out of memory for the frames");
	if (!f)
		die("cannot open frame %s: %s", path, strerror(errno));
	*n = fread(buf, 1, MAX_FILE_BYTES, f);
	if (ferror(f) || !feof(f))
		bad("cannot read %s (or more than %u bytes)", path, MAX_FILE_BYTES);
	fclose(f);
	return buf;
}

static void check_counter_slot(const unsigned char *frame, size_t n, long off)
{
	int i;

	if (off < ETH_HLEN_ || (size_t)off + COUNTER_LEN > n)
		bad("counter offset %ld: the 8-byte counter slot must lie in the frame's "
		    "payload (frame of %zu bytes)", off, n);
	for (i = 0; i < COUNTER_LEN; i += 4)
		if ((frame[off + i] ^ frame[off + i + 2]) != 0xff ||
		    (frame[off + i + 1] ^ frame[off + i + 3]) != 0xff)
			bad("no counter slot at offset %ld of the frame", off);
}

/* The regions every packet rewrites: the head (all headers, whatever the SUT did to
 * the page), and one tail span that covers every other byte where a variant differs
 * from the base, the counter slot and the probe's trailer. */
static void find_regions(struct gen *g)
{
	struct shape *sh = &g->sh;
	const unsigned char *base = sh->frames + sh->off[sh->base];
	size_t head = g->len < MAX_REGION ? g->len : MAX_REGION, lo = SIZE_MAX, hi = 0, i;
	uint32_t v;

#define MARK(pos) do { size_t p_ = (pos); if (p_ >= head) { if (p_ < lo) lo = p_; \
		if (p_ > hi) hi = p_; } } while (0)
	for (v = 0; v < sh->nvar; v++)
		for (i = 0; i < sh->len[v]; i++)
			if (sh->frames[sh->off[v] + i] != base[i])
				MARK(i);
	if (g->o.counter_off >= 0)
		for (i = 0; i < COUNTER_LEN; i++)
			MARK((size_t)g->o.counter_off + i);
	if (sh->probe_len)
		for (i = sh->probe_len - PROBE_TRAILER; i < sh->probe_len; i++)
			MARK(i);
#undef MARK
	sh->cfg.head_len = (uint32_t)head;
	if (lo <= hi) {
		if (hi - lo + 1 > MAX_REGION)
			bad("the frames differ over %zu bytes past their first %zu (bytes %zu..%zu): "
			    "xdpgen rewrites at most %d there", hi - lo + 1, head, lo, hi, MAX_REGION);
		sh->cfg.tail_off = (uint32_t)lo;
		sh->cfg.tail_len = (uint32_t)(hi - lo + 1);
	}
}

/* Read the frame file (one frame, -k flows of one length, or -I a mix) and the
 * probe (-p); the longest becomes the page's frame. */
static void load_frame(struct gen *g)
{
	const struct opts *o = &g->o;
	struct shape *sh = &g->sh;
	size_t total, probe_len = 0, at = 0;
	unsigned char *file = read_file(o->frame_path, &total), *probe = NULL;
	uint32_t v;

	sh->len = calloc(MAX_VARIANTS, sizeof(size_t));
	sh->off = calloc(MAX_VARIANTS, sizeof(size_t));
	if (!sh->len || !sh->off)
		die("out of memory");
	if (o->mix) {
		const char *why = mix_parse(&sh->mix, o->mix, total);

		if (why)
			bad("bad mix '%s': %s", o->mix, why);
		sh->ntest = sh->mix.n;
		for (v = 0; v < sh->ntest; v++)
			sh->len[v] = sh->mix.len[v];
	} else {
		if (total % o->flows)
			bad("frame file %s of %zu bytes does not hold %" PRIu64 " frames of one length",
			    o->frame_path, total, o->flows);
		sh->ntest = (uint32_t)o->flows;
		for (v = 0; v < sh->ntest; v++)
			sh->len[v] = total / o->flows;
	}
	if (o->probe_path) {
		probe = read_file(o->probe_path, &probe_len);
		if (!has_probe_trailer(probe, probe_len))
			bad("probe frame %s does not end with a probe trailer (4 slots x, ~x, y, ~y "
			    "and the magic)", o->probe_path);
	}
	sh->nvar = sh->ntest + (probe ? 1 : 0);
	sh->frames = malloc(total + probe_len);
	if (!sh->frames)
		die("out of memory for the frames");
	memcpy(sh->frames, file, total);
	if (probe) {
		memcpy(sh->frames + total, probe, probe_len);
		sh->len[sh->ntest] = probe_len;
		sh->probe_len = probe_len;
		sh->cfg.probe_var = sh->ntest;
	}
	free(file);
	free(probe);
	for (v = 0; v < sh->nvar; v++) {
		sh->off[v] = at;
		at += sh->len[v];
		if (sh->len[v] < 14)
			bad("frame %u of %s is shorter than an Ethernet header", v, o->frame_path);
		if (sh->len[v] > MAX_FRAME)
			bad("a frame of %zu bytes is longer than %d bytes: live frames must fit in "
			    "one page", sh->len[v], MAX_FRAME);
		if (sh->len[v] > sh->len[sh->base])
			sh->base = v;
		if (v < sh->ntest && o->counter_off >= 0)
			check_counter_slot(sh->frames + sh->off[v], sh->len[v], o->counter_off);
	}
	g->len = sh->len[sh->base];
	memcpy(g->frame, sh->frames + sh->off[sh->base], g->len);
	if (o->mix) {
		sh->pattern = sh->mix.pattern;
		sh->plen = sh->mix.plen;
	} else {
		sh->plen = sh->ntest;
		sh->pattern = calloc(sh->plen, sizeof(uint32_t));
		if (!sh->pattern)
			die("out of memory");
		for (v = 0; v < sh->plen; v++)
			sh->pattern[v] = v;
	}
	sh->cfg.plen = sh->plen;
	sh->cfg.base_len = (uint32_t)g->len;
	sh->cfg.active = 1;
	find_regions(g);
}

/* Before loading: size the variant and pattern maps. */
static void size_shape_maps(struct gen *g)
{
	struct bpf_map *var = bpf_object__find_map_by_name(g->obj, "xdpgen_var");
	struct bpf_map *pat = bpf_object__find_map_by_name(g->obj, "xdpgen_pat");

	if (!var || !pat || !bpf_object__find_map_by_name(g->obj, "xdpgen_shape"))
		die("%s lacks xdpgen_var, xdpgen_pat or xdpgen_shape", g->o.prog_path);
	if (bpf_map__set_max_entries(var, g->sh.nvar) || bpf_map__set_max_entries(pat, g->sh.plen))
		die("cannot size the maps of %u frames", g->sh.nvar);
}

static void set_shape(struct gen *g)
{
	uint32_t key = 0;

	if (bpf_map_update_elem(g->sh.shape_fd, &key, &g->sh.cfg, BPF_ANY))
		die("cannot set the program's frames: %s", strerror(errno));
}

/* CLOCK_TAI - CLOCK_REALTIME (whole seconds: the kernel's TAI offset), so that the
 * program's bpf_ktime_get_tai_ns() minus it is the probe receiver's CLOCK_REALTIME. */
static uint64_t tai_offset_ns(void)
{
	struct timespec r, t;
	int64_t d;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_TAI, &t);
	d = ((int64_t)t.tv_sec - (int64_t)r.tv_sec) * 1000000000ll + (t.tv_nsec - r.tv_nsec);
	return (uint64_t)(((d + 500000000ll) / 1000000000ll) * 1000000000ll);
}

/* A trial's probes (PROBE_PPS of its RATE, srgen's is_probe in 32.32 fixed point). */
static void shape_begin(struct gen *g, double rate_pps, double probe_pps, uint64_t count)
{
	struct shape *sh = &g->sh;

	sh->cfg.probe_q32 = sh->cfg.probe_acc = sh->cfg.probes = 0;
	sh->cfg.tai_off_ns = tai_offset_ns();
	if (probe_pps > 0) {
		double ratio = probe_pps / rate_pps;

		if (!sh->probe_len)
			bad("a trial with probes needs -p PROBE_FILE");
		if (!(rate_pps > 0) || probe_pps > rate_pps)
			bad("probe rate %.3f pps must lie within the trial's rate %.3f pps",
			    probe_pps, rate_pps);
		sh->cfg.probe_q32 = (uint64_t)(ratio * 4294967296.0 + 0.5);  /* nearest */
		sh->cfg.trial_no = ++sh->trial_no;
		probe_rx_begin(&sh->rx, sh->trial_no, (uint64_t)((double)count * ratio) + 2);
	}
	set_shape(g);
}

/* Probes the program offered this trial. */
static uint64_t shape_probes(struct gen *g)
{
	uint32_t key = 0;

	if (bpf_map_lookup_elem(g->sh.shape_fd, &key, &g->sh.cfg))
		die("cannot read the program's frames: %s", strerror(errno));
	return g->sh.cfg.probes;
}

/* After loading: the variants' regions, the pattern and the shape. */
static void fill_shape_maps(struct gen *g)
{
	struct shape *sh = &g->sh;
	const unsigned char *base = sh->frames + sh->off[sh->base];
	struct xdpgen_var var;
	uint32_t v, i;

	sh->shape_fd = bpf_map__fd(bpf_object__find_map_by_name(g->obj, "xdpgen_shape"));
	sh->var_fd = bpf_map__fd(bpf_object__find_map_by_name(g->obj, "xdpgen_var"));
	sh->pat_fd = bpf_map__fd(bpf_object__find_map_by_name(g->obj, "xdpgen_pat"));
	for (v = 0; v < sh->nvar; v++) {
		const unsigned char *f = sh->frames + sh->off[v];

		memset(&var, 0, sizeof(var));
		var.len = (uint32_t)sh->len[v];
		for (i = 0; i < sh->cfg.head_len; i++)
			var.head[i] = i < sh->len[v] ? f[i] : base[i];
		for (i = 0; i < sh->cfg.tail_len; i++) {
			size_t p = sh->cfg.tail_off + i;

			var.tail[i] = p < sh->len[v] ? f[p] : base[p];
		}
		if (bpf_map_update_elem(sh->var_fd, &v, &var, BPF_ANY))
			die("cannot load frame %u into the program: %s", v, strerror(errno));
	}
	for (v = 0; v < sh->plen; v++)
		if (bpf_map_update_elem(sh->pat_fd, &v, &sh->pattern[v], BPF_ANY))
			die("cannot load the pattern: %s", strerror(errno));
	if (sh->probe_len)
		sh->rx.fd = open_probe_socket(g->o.rx);
	if (sh->probe_len && !(sh->rx.bufs = malloc((size_t)PROBE_BATCH * PROBE_FRAME_MAX)))
		die("out of memory for the probes");
	set_shape(g);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static void set_cfg(struct gen *g, const struct xdpgen_cfg *cfg)
{
	uint32_t key = 0;

	if (bpf_map_update_elem(g->cfg_fd, &key, cfg, BPF_ANY))
		die("cannot set the program's schedule: %s", strerror(errno));
}

static void get_cfg(struct gen *g, struct xdpgen_cfg *cfg)
{
	uint32_t key = 0;

	if (bpf_map_lookup_elem(g->cfg_fd, &key, cfg))
		die("cannot read the program's schedule: %s", strerror(errno));
}

/* One BPF_PROG_RUN of repeat k; returns 0 or -errno. */
static int run_prog(struct gen *g, uint32_t k, uint32_t batch)
{
	struct xdp_md ctx = { .data_end = (uint32_t)g->len,
			      .ingress_ifindex = (uint32_t)g->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, topts,
		    .data_in = g->frame, .data_size_in = (uint32_t)g->len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx),
		    .repeat = k, .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    .batch_size = batch);

	uint64_t t = now_ns(), d;
	int rc = 0;

	g->calls++;
	if (bpf_prog_test_run_opts(g->prog_fd, &topts))
		rc = -errno;
	d = now_ns() - t;
	g->prog_ns += d;
	if (d > g->prog_ns_max)
		g->prog_ns_max = d;
	return rc;
}

/* Give the program the frame to write again before each send (see xdpgen.bpf.c:
 * recycled pages keep what a SUT's stack rewrote in them). */
static void restore_frame(struct gen *g)
{
	static struct { uint32_t len; unsigned char data[MAX_FRAME]; } fr;
	struct bpf_map *map = bpf_object__find_map_by_name(g->obj, "xdpgen_frame");
	uint32_t key = 0;

	if (!map)
		die("%s lacks the xdpgen_frame map", g->o.prog_path);
	fr.len = (uint32_t)g->len;
	memcpy(fr.data, g->frame, g->len);
	if (bpf_map_update_elem(bpf_map__fd(map), &key, &fr, BPF_ANY))
		die("cannot give the program its frame: %s", strerror(errno));
}

/* Keep the program in the kernel's XDP dispatcher for as long as xdpgen runs
 * (see the call policy above): a bpf_link of it on the loopback device, generic
 * mode.  The link is a file descriptor of this process only, so it goes when
 * the process ends, however it ends.  Without it every call costs two RCU
 * grace periods: xdpgen then makes one call per trial. */
static void hold(struct gen *g)
{
	LIBBPF_OPTS(bpf_link_create_opts, lopts, .flags = XDP_FLAGS_SKB_MODE);

	g->hold_fd = bpf_link_create(g->prog_fd, LOOPBACK_IFINDEX, BPF_XDP, &lopts);
	if (g->hold_fd < 0)
		fprintf(stderr, "xdpgen: cannot hold the program in the XDP dispatcher (an XDP "
			"link on the loopback device: %s): one call per trial\n", strerror(errno));
}

/* A frame longer than the TX port's MTU allows is refused (exit 1), as srgen refuses
 * it: the veth's ndo_xdp_xmit lets a frame through up to MTU + 18 bytes (room for a
 * VLAN tag), so without this check xdpgen sent 1-4 bytes more than the link takes. */
static void check_mtu(struct gen *g)
{
	struct ifreq ifr;
	size_t v, room;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", g->o.tx);
	if (ioctl(g->sock, SIOCGIFMTU, &ifr) < 0)
		die("SIOCGIFMTU %s: %s", g->o.tx, strerror(errno));
	for (v = 0; v < g->sh.nvar; v++) {
		const unsigned char *f = g->sh.frames + g->sh.off[v];

		room = (size_t)ifr.ifr_mtu + ETH_HLEN_ + (f[12] == 0x81 && !f[13] ? 4 : 0);
		if (g->sh.len[v] > room)
			die("frame of %zu bytes too long for the MTU of %s (%d)", g->sh.len[v],
			    g->o.tx, ifr.ifr_mtu);
	}
}

/* The start-up frame: live frames must work here (the kernel takes the flag) and the
 * TX port must take them with its counters moving.  A veth whose peer has no NAPI (no
 * XDP program, no GRO) drops every live frame and counts none (-ENXIO): before, such
 * a port gave trials of nothing sent, "refused" with no counter to show it.  Then the
 * frame is given time to arrive (it is no trial's), so that the first trial's
 * received count does not hold it. */
static void check_frame(struct gen *g)
{
	struct counters c0, c1;
	uint64_t start;
	int err;

	read_counters(g, &c0);
	err = run_prog(g, 1, 1);
	if (err)
		die("BPF_PROG_RUN with live frames on %s failed: %s (kernel 5.18+ and a device "
		    "with ndo_xdp_xmit needed)", g->o.tx, strerror(-err));
	start = now_ns();
	for (;;) {
		read_counters(g, &c1);
		if (c1.xmit != c0.xmit || c1.xmit_err != c0.xmit_err)
			break;
		if (now_ns() - start > CHECK_WAIT_NS)
			die("%s took no live frame and counted none (xdp_xmit, xdp_xmit_errors): "
			    "its peer needs NAPI (an XDP program or GRO on it)", g->o.tx);
		usleep(POLL_NS / 1000);
	}
	/* out of the peer's ring (tx_packets), then at the rx port or CHECK_SETTLE_NS */
	for (start = now_ns(); c1.xmit != c0.xmit && c1.tx_packets == c0.tx_packets &&
	     now_ns() - start < CHECK_WAIT_NS;) {
		usleep(POLL_NS / 1000);
		read_counters(g, &c1);
	}
	for (start = now_ns(); c1.rx_packets == c0.rx_packets &&
	     now_ns() - start < CHECK_SETTLE_NS;) {
		usleep(POLL_NS / 1000);
		read_counters(g, &c1);
	}
}

static void setup(struct gen *g)
{
	const struct opts *o = &g->o;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	if (o->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			die("cannot pin to CPU %d: %s", o->cpu, strerror(errno));
	}
	if (o->fifo > 0) {
		struct sched_param sp = { .sched_priority = o->fifo };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			die("SCHED_FIFO %d: %s", o->fifo, strerror(errno));
	}
	load_frame(g);
	g->ifindex = (int)if_nametoindex(o->tx);
	if (!g->ifindex)
		die("no interface %s", o->tx);
	open_xmit_stats(g);
	check_mtu(g);
	g->st[0] = open_stat(o->tx, "tx_packets");
	g->st[1] = open_stat(o->tx, "tx_dropped");
	g->st[2] = open_stat(o->rx, "rx_packets");
	g->st[3] = open_stat(o->rx, "rx_dropped");

	libbpf_set_print(libbpf_quiet);
	g->obj = bpf_object__open_file(o->prog_path, NULL);
	if (!g->obj)
		die("cannot open %s: %s", o->prog_path, strerror(errno));
	size_shape_maps(g);
	err = bpf_object__load(g->obj);
	if (err)
		die("cannot load %s: %s", o->prog_path, strerror(-err));
	prog = bpf_object__find_program_by_name(g->obj, "xdpgen_tx");
	map = bpf_object__find_map_by_name(g->obj, "xdpgen_cfg");
	if (map && !bpf_object__find_map_by_name(g->obj, "xdpgen_stop"))
		map = NULL;
	if (!prog || !map)
		die("%s lacks xdpgen_tx or xdpgen_cfg", o->prog_path);
	g->prog_fd = bpf_program__fd(prog);
	g->cfg_fd = bpf_map__fd(map);
	g->stop_fd = bpf_map__fd(bpf_object__find_map_by_name(g->obj, "xdpgen_stop"));
	fill_shape_maps(g);
	restore_frame(g);
	hold(g);
	{
		struct xdpgen_cfg cfg = { .count = 1 };

		set_cfg(g, &cfg);
	}
	check_frame(g);
	g->seq++;
}

/* -- a trial -------------------------------------------------------------- */

struct trial_req { double rate_pps; uint64_t count, drain_ns, settle_ns, stop_lost; double probe_pps; };

/* Wait for the trial's frames as srgen does: until the rx port has counted every
 * frame the TX port took, or the TX port's tx_packets has (a veth counts a live frame
 * there once its peer's NAPI took it out of the ring: none waits in the SUT's ring)
 * and neither counter moved for settle_ns; drain_ns at most (all of it when settle_ns
 * is 0).  Before, the drain ended once rx had not moved for settle_ns, with frames
 * still in a stalled peer's ring: sent (xdp_xmit) was then more than tx_packets. */
static uint64_t drain(struct gen *g, const struct counters *before, uint64_t offered,
		      const struct trial_req *t, struct counters *after)
{
	uint64_t start = now_ns(), moved = start, now = start, sent;
	uint64_t rx = before->rx_packets, tx = before->tx_packets;

	if (!t->settle_ns) {
		struct timespec ts = { (time_t)(t->drain_ns / 1000000000ull),
				       (long)(t->drain_ns % 1000000000ull) };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		read_counters(g, after);
		return now_ns() - start;
	}
	for (;;) {
		read_counters(g, after);
		now = now_ns();
		sent = after->xmit - before->xmit;
		if (sent > offered)
			sent = offered;
		if (after->rx_packets != rx || after->tx_packets != tx) {
			rx = after->rx_packets;
			tx = after->tx_packets;
			moved = now;
		}
		if (rx - before->rx_packets >= sent ||
		    (now - moved >= t->settle_ns && tx - before->tx_packets >= sent))
			break;
		if (now - start >= t->drain_ns)
			break;
		usleep(POLL_NS / 1000);
	}
	return now_ns() - start;
}

/* How a trial's packets are split into calls (see the call policy above). */
struct plan {
	const char *policy;          /* "burst", "chunk" or "trial" (not held) */
	unsigned int batch;          /* the kernel's batch_size */
	uint64_t per_call;           /* repeat of a full call */
	int sleep;                   /* wait for the call's last packet, sleeping */
	uint64_t yield_ns;           /* sleep after each call (chunk) */
};

static void plan_calls(const struct gen *g, double ns_per_pkt, uint64_t count, struct plan *p)
{
	const struct opts *o = &g->o;
	double q = ns_per_pkt > 0 ? (double)o->quantum_ns / ns_per_pkt : 0;
	uint64_t k = q < 1 ? 1 : q > MAX_BATCH ? MAX_BATCH : (uint64_t)q;
	double chunk;
	int burst;


	memset(p, 0, sizeof(*p));
	if (ns_per_pkt <= 0) {   /* unpaced */
		p->policy = g->hold_fd >= 0 ? "chunk" : "trial";
		p->batch = o->batch;
		p->per_call = g->hold_fd >= 0 ? UNPACED_CHUNK : count;
		return;
	}
	p->batch = (unsigned int)k;
	if (g->hold_fd < 0 || o->calls == CALLS_TRIAL) {
		p->policy = "trial";
		p->per_call = count;
		return;
	}
	burst = o->calls == CALLS_BURST || (o->calls == CALLS_AUTO && ns_per_pkt >= BURST_NPP_MIN);
	if (burst) {
		p->policy = "burst";
		p->per_call = k;
		p->sleep = 1;
		return;
	}
	chunk = (double)o->chunk_ns / ns_per_pkt;
	p->policy = "chunk";
	if (k >= CHUNK_BATCH_MIN / 4 && k < CHUNK_BATCH_MIN)
		k = 2 * k < CHUNK_BATCH_MIN ? 2 * k : CHUNK_BATCH_MIN;
	p->batch = (unsigned int)k;
	p->per_call = chunk > (double)k ? (uint64_t)chunk : k;
	p->yield_ns = o->yield_ns == UINT64_MAX ? o->chunk_ns / YIELD_DIV : o->yield_ns;
}

/* Sleep until at (CLOCK_MONOTONIC ns) if that is far enough away. */
static void sleep_until(struct gen *g, uint64_t at)
{
	struct timespec ts;
	uint64_t late;

	if (at < now_ns() + SLEEP_MIN_NS)
		return;
	at -= WAKE_EARLY_NS;
	ts.tv_sec = (time_t)(at / 1000000000ull);
	ts.tv_nsec = (long)(at % 1000000000ull);
	g->sleeps++;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	late = now_ns() - at;
	if (late > g->wake_late_max)
		g->wake_late_max = late;
}

/* -H: send n held frames again, unpaced and outside the schedule: the schedule's
 * offered, t0 and last offer stay as they were (a held frame was offered when it
 * was due, as with srgen's -H); only the frame counter moves on. */
static void resend(struct gen *g, uint64_t n)
{
	struct xdpgen_cfg cfg, saved;
	int rc;

	get_cfg(g, &saved);
	cfg = saved;
	cfg.npp_q8 = 0;
	cfg.count = cfg.offered + n;
	set_cfg(g, &cfg);
	rc = run_prog(g, (uint32_t)n, n < MAX_BATCH ? (uint32_t)n : MAX_BATCH);
	if (rc)
		die("BPF_PROG_RUN failed: %s", strerror(-rc));
	get_cfg(g, &cfg);
	saved.seq = cfg.seq;
	set_cfg(g, &saved);
	g->resent += n;
}

/* -H: the refusals so far, as the hold counts them after each call.  The TX port's
 * sysfs tx_dropped, which veth raises for each frame its peer's ring refused (the
 * xdp_xmit_errors of ethtool -S, read before and after the trial for the report), reads
 * without the RTNL lock: an ethtool ioctl takes it, and on a host where other work
 * adds or deletes devices or namespaces it waited tens of ms, mid-schedule (-R ethtool
 * keeps that read, to compare).  The longest read of a trial is its "read_max_ns". */
static uint64_t hold_refusals(struct gen *g)
{
	uint64_t t = now_ns(), xmit, err, d;

	if (g->o.hold_ethtool)
		read_xmit(g, &xmit, &err);
	else
		err = read_stat(g->st[1]);
	d = now_ns() - t;
	if (d > g->read_max)
		g->read_max = d;
	return err;
}

/* -H: the frames refused since the last look join the backlog (at most hold_pkts;
 * beyond that the oldest are lost: offered, never sent, counted refused).  When the
 * peer refused nothing since the last look (its ring has room), up to one ring's
 * worth (MAX_BATCH) of the backlog is sent again; what it refuses again comes back
 * at the next look.  A peer that keeps refusing (overload) gets no re-sends, so the
 * schedule is not crowded out: its backlog stays full and the rest is lost, as with
 * srgen's -H. */
static void hold_step(struct gen *g, uint64_t *err_seen)
{
	uint64_t err = hold_refusals(g), fresh, n;

	fresh = err - *err_seen;
	*err_seen = err;
	g->backlog += fresh;
	if (g->backlog > g->o.hold_pkts)
		g->backlog = g->o.hold_pkts;
	if (g->backlog > g->held_max)
		g->held_max = g->backlog;
	if (fresh || !g->backlog)
		return;
	n = g->backlog < MAX_BATCH ? g->backlog : MAX_BATCH;
	g->backlog -= n;
	resend(g, n);
}

/* Calls of repeat k until count packets were offered or the run stopped: the
 * program paces each packet (never before it is due); in burst policy the call
 * is issued, after a sleep, when its last packet is due. */
static void send_calls(struct gen *g, const struct plan *p, uint64_t count, double ns_per_pkt,
		       uint64_t err0, uint64_t drain_ns)
{
	struct xdpgen_cfg cfg;
	uint64_t offered = 0, t0, k, yield = p->yield_ns, err_seen = err0, end;
	int rc;

	g->backlog = g->held_max = g->resent = 0;
	get_cfg(g, &cfg);
	t0 = cfg.t0_ns;
	while (offered < count) {
		k = count - offered < p->per_call ? count - offered : p->per_call;
		if (k > UINT32_MAX)
			k = UINT32_MAX;
		if (p->sleep)
			sleep_until(g, t0 + (uint64_t)((double)(offered + k - 1) * ns_per_pkt));
		rc = run_prog(g, (uint32_t)k, p->batch < k ? p->batch : (uint32_t)k);
		if (rc)
			die("BPF_PROG_RUN failed: %s", strerror(-rc));
		get_cfg(g, &cfg);
		if (cfg.offered < offered + k)
			break;   /* stopped (-L): the rest is dropped unoffered */
		offered = cfg.offered;
		t0 = cfg.t0_ns;
		if (g->o.hold_pkts)
			hold_step(g, &err_seen);
		if (yield && offered < count)
			sleep_until(g, now_ns() + yield + WAKE_EARLY_NS);
	}
	if (!g->o.hold_pkts)
		return;
	/* The schedule is over: retry what still waits, within the drain time. */
	end = now_ns() + drain_ns;
	while (now_ns() < end) {
		if (!g->backlog) {
			if (hold_refusals(g) == err_seen)
				break;   /* nothing waits, nothing new refused */
		}
		sleep_until(g, now_ns() + RETRY_NS + WAKE_EARLY_NS);
		hold_step(g, &err_seen);
	}
}

/* One trial: calls as plan_calls says; the program paces (see xdpgen.bpf.c). */
static void run_trial(struct gen *g, const struct trial_req *t)
{
	const struct opts *o = &g->o;
	struct counters before, after;
	struct xdpgen_cfg cfg;
	struct plan plan;
	uint64_t between = 0, offered, first, last, slipped, max_lag;
	uint64_t calls0 = g->calls, prog0 = g->prog_ns, sleeps0 = g->sleeps, err, sent, refused;
	uint64_t drained, probes;
	struct rusage ru0, ru1;       /* the sender's preemptions while it sends */
	double ns_per_pkt = t->rate_pps > 0 ? 1e9 / t->rate_pps : 0;
	int stopped = 0;
	struct watch w = { .g = g, .stop_lost = t->stop_lost };
	pthread_t th;
	uint32_t key = 0, zero = 0;

	if (t->count > UINT32_MAX)
		bad("count %" PRIu64 " is more than one run can repeat (%u)", t->count, UINT32_MAX);
	plan_calls(g, ns_per_pkt, t->count, &plan);
	if (o->hold_pkts && !strcmp(plan.policy, "trial"))
		die("-H needs the dispatcher hold (see above): one call per trial cannot re-send");
	shape_begin(g, t->rate_pps, t->probe_pps, t->count);
	read_counters(g, &before);
	if (g->have_last)
		between = before.rx_packets - g->last.rx_packets;
	memset(&cfg, 0, sizeof(cfg));
	cfg.seq = g->seq;
	cfg.npp_q8 = (uint64_t)(ns_per_pkt * 256.0);
	cfg.count = t->count;
	cfg.max_lag_ns = o->max_lag_ns;
	cfg.counter_off = o->counter_off > 0 ? (uint32_t)o->counter_off : 0;
	/* Paced: 100 us to enter the kernel.  Unpaced, elapsed runs from now (the
	 * program then leaves t0 alone, and a short run may end within 100 us). */
	first = now_ns() + (ns_per_pkt > 0 ? 100000 : 0);
	cfg.t0_ns = first;
	cfg.last_ns = first;
	set_cfg(g, &cfg);
	if (bpf_map_update_elem(g->stop_fd, &key, &zero, BPF_ANY))
		die("cannot clear the stop flag: %s", strerror(errno));
	if (t->stop_lost != NO_STOP) {
		size_t n = g->stats->n_stats;

		w.st = calloc(1, sizeof(*w.st) + n * sizeof(uint64_t));
		if (!w.st)
			die("out of memory");
		w.st->cmd = ETHTOOL_GSTATS;
		w.st->n_stats = (uint32_t)n;
		w.err0 = before.xmit_err;
		if (pthread_create(&th, NULL, watcher, &w))
			die("cannot start the watcher thread");
	}
	g->wake_late_max = g->read_max = 0;
	getrusage(RUSAGE_THREAD, &ru0);
	if (t->count)
		send_calls(g, &plan, t->count, ns_per_pkt,
			   o->hold_ethtool ? before.xmit_err : before.tx_dropped, t->drain_ns);
	getrusage(RUSAGE_THREAD, &ru1);
	if (t->stop_lost != NO_STOP) {
		w.done = 1;
		pthread_join(th, NULL);
		free(w.st);
		stopped = w.stopped;
	}
	get_cfg(g, &cfg);
	offered = cfg.offered;
	last = cfg.last_ns;
	slipped = cfg.slipped_ns;
	max_lag = cfg.lag_max_ns;
	if (ns_per_pkt <= 0 && offered)
		first = cfg.t0_ns;
	g->seq = cfg.seq;

	probes = shape_probes(g);
	drained = drain(g, &before, offered, t, &after);
	g->last = after;
	g->have_last = 1;
	sent = after.xmit - before.xmit;
	if (sent > offered)
		sent = offered;   /* another sender on TX: cannot happen in the tester */
	refused = offered - sent;
	err = after.xmit_err - before.xmit_err;
	printf("{\"intended\": %" PRIu64 ", \"sent\": %" PRIu64 ", \"refused\": %" PRIu64
	       ", \"refused_short\": 0, \"elapsed_ns\": %" PRIu64
	       ", \"rate_pps\": %.3f, \"frame_len\": %zu, \"batch\": %u, \"calls\": %" PRIu64
	       ", \"mode\": \"xdp\", \"engine\": \"xdp\", \"ring_frames\": 0, \"queue_pkts\": 0"
	       ", \"hold_pkts\": %" PRIu64 ", \"held_max\": %" PRIu64 ", \"resent\": %" PRIu64
	       ", \"counter_offset\": %ld, \"flows\": %" PRIu64 ", \"mix\": \"%s\""
	       ", \"attempts_refused\": %" PRIu64 ", \"unaccounted\": %" PRIu64
	       ", \"max_lag_ns\": %" PRIu64 ", \"max_lag_bound_ns\": %" PRIu64
	       ", \"slipped_ns\": %" PRIu64 ", \"drain_ns\": %" PRIu64
	       ", \"settle_ns\": %" PRIu64 ", \"drained_ns\": %" PRIu64 ", \"cpu\": %d"
	       ", \"rx_between_trials\": %" PRIu64
	       ", \"tx_packets_delta\": %" PRIu64 ", \"tx_dropped_delta\": %" PRIu64
	       ", \"xdp_xmit_delta\": %" PRIu64 ", \"xdp_xmit_err_delta\": %" PRIu64
	       ", \"rx_packets_delta\": %" PRIu64 ", \"rx_dropped_delta\": %" PRIu64
	       ", \"prog_ns\": %" PRIu64 ", \"prog_ns_max\": %" PRIu64
	       ", \"call_policy\": \"%s\", \"per_call\": %" PRIu64 ", \"held\": %d"
	       ", \"sleeps\": %" PRIu64 ", \"wake_late_max_ns\": %" PRIu64
	       ", \"preempted\": %ld, \"read_max_ns\": %" PRIu64
	       ", \"stopped\": %d, \"offered\": %" PRIu64,
	       t->count, sent, refused, t->count ? last - first : 0, t->rate_pps, g->len,
	       plan.batch, g->calls - calls0, o->hold_pkts, g->held_max, g->resent,
	       o->counter_off, o->flows, o->mix ? o->mix : "", err,
	       refused > err ? refused - err : 0, max_lag, o->max_lag_ns, slipped, t->drain_ns,
	       t->settle_ns, drained, o->cpu, between,
	       after.tx_packets - before.tx_packets, after.tx_dropped - before.tx_dropped,
	       after.xmit - before.xmit, err,
	       after.rx_packets - before.rx_packets, after.rx_dropped - before.rx_dropped,
	       g->prog_ns - prog0, g->prog_ns_max, plan.policy, plan.per_call,
	       g->hold_fd >= 0, g->sleeps - sleeps0, g->wake_late_max,
	       ru1.ru_nivcsw - ru0.ru_nivcsw, g->read_max, stopped, offered);
	if (t->probe_pps > 0) {
		collect_probes(&g->sh.rx, probes);
		probe_rx_print(&g->sh.rx, t->probe_pps, probes, g->sh.probe_len);
	}
	printf("}\n");
	g->prog_ns_max = 0;
	fflush(stdout);
}

static void serve(struct gen *g)
{
	char line[CMD_LEN];

	printf("{\"ready\": true, \"frame_len\": %zu, \"flows\": %" PRIu64
	       ", \"engine\": \"xdp\"}\n", g->len, g->o.flows);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		struct trial_req t;
		unsigned long long count, drain_us, settle_us, stop_lost;
		double probe_pps = 0;
		char extra;
		int fields;

		if (!strcmp(line, "quit\n") || !strcmp(line, "quit"))
			return;
		fields = sscanf(line, "trial %lf %llu %llu %llu %llu %lf %c", &t.rate_pps, &count,
				&drain_us, &settle_us, &stop_lost, &probe_pps, &extra);
		if (fields < 4 || fields > 6 || !(t.rate_pps >= 0) || !(probe_pps >= 0))
			bad("bad command: '%.*s' (trial RATE COUNT DRAIN_US SETTLE_US "
			    "[STOP_LOST [PROBE_PPS]], or quit)", (int)strcspn(line, "\n"), line);
		t.count = count;
		t.drain_ns = drain_us * 1000ull;
		t.settle_ns = settle_us * 1000ull;
		t.stop_lost = fields >= 5 ? stop_lost : NO_STOP;
		t.probe_pps = probe_pps;
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
	if (g.hold_fd >= 0)
		close(g.hold_fd);
	bpf_object__close(g.obj);
	close(g.sock);
	return 0;
}
