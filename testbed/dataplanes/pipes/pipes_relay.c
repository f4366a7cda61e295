// SPDX-License-Identifier: Apache-2.0
/*
 * pipes_relay: the bytestream-function node of SRv6Pipes on a stock kernel.
 *
 * The SUT decapsulates the client's SRv6 traffic (seg6local End.DX6 out of a veth
 * whose peer is in the same namespace, the stock-kernel stand-in for SRv6Pipes'
 * End.VNF + nfv0) and nft TPROXY hands the TCP connections arriving on that peer
 * to this program's transparent listener.  For each intercepted connection it
 *   - reads the original destination (getsockname) and the client (getpeername),
 *   - opens the next connection to that destination from the client's own address
 *     (IPV6_TRANSPARENT bind; the SUT's routes re-steer it with SRv6 toward the next
 *     segment), and
 *   - moves the bytestream both ways, applying the function on the way:
 *       relay        unchanged, without copying it through user space: splice()
 *                    from the socket into a pipe and from the pipe into the other
 *                    socket (the pages of the received skbs are handed on);
 *       xor:N        2N passes over every buffer, each XORing every byte with the
 *                    key (SRv6Pipes' CPU microbenchmark: the bytes leave unchanged);
 *       xormask      one XOR pass with the key: the bytes change; a second xormask
 *                    node (the inverse function) restores them.
 *     The XOR functions read into a 128 KiB buffer and XOR it in 64-bit words, a loop
 *     the compiler vectorises (AVX2 where the CPU has it, chosen at load time).
 * Each worker thread has its own SO_REUSEPORT listener and an edge-triggered epoll:
 * both sockets of a connection are registered once, and each event moves bytes until
 * the socket would block (no epoll_ctl per transfer).  Sockets are nonblocking with
 * TCP_NODELAY (a 1 KB response is not held back by Nagle behind the relay).
 *
 * usage: pipes_relay -p PORT -f FUNC [-k KEY] [-t THREADS] [-s STATSFILE]
 * Prints "ready PORT" on stdout once listening.  SIGUSR1 writes the counters to
 * STATSFILE (one JSON line, with the process's user and system CPU time in ms);
 * SIGTERM/SIGINT write them and exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define BUF_SIZE (128 * 1024) /* XOR functions' buffer per direction */
#define PIPE_SIZE (1024 * 1024) /* relay's pipe per direction (fs.pipe-max-size) */
#define MAX_EVENTS 256
#define MAX_THREADS 16

enum func { F_RELAY, F_XOR, F_XORMASK };

static enum func g_func = F_RELAY;
static unsigned g_passes; /* XOR passes per buffer */
static unsigned char g_key = 0x5a;
static int g_port;
static const char *g_stats_path;

static atomic_ulong st_accepted, st_connect_failed, st_closed, st_bytes_up, st_bytes_down,
	st_errors;
static volatile sig_atomic_t g_stop, g_dump;

struct conn;

/* One direction of a connection: bytes read from fd[from] wait for fd[to], in buf
 * (the XOR functions) or in the pipe (relay, spliced). */
struct half {
	char *buf;
	size_t len, off;
	int pipe[2];    /* relay: read end, write end */
	size_t inpipe;  /* relay: bytes spliced into the pipe, not yet out of it */
	int eof;   /* fd[from] reached end of stream */
	int shut;  /* fd[to] was shut down for writing */
};

struct tag {
	struct conn *c;
	int side; /* 0: the client's (intercepted) socket, 1: the outbound socket */
};

struct conn {
	int fd[2];
	int connecting;
	struct half dir[2]; /* dir[0]: client -> server, dir[1]: server -> client */
	struct tag tag[2];
	int closed;        /* closed in this epoll batch: its later events are stale */
	struct conn *dead; /* next closed connection to free after the batch */
};

/* Connections closed during the current epoll batch of this thread.  One batch can hold
 * events of both sockets of a connection: freeing it at once left the second event
 * pointing into freed memory (a segfault under wrk, after which TCP bypassed the
 * relay), so they are freed once the batch is done. */
static __thread struct conn *t_dead;

/* One XOR pass over len bytes in 64-bit words (buf is malloc'ed: aligned), the tail
 * byte by byte; compiled for AVX2 and for the baseline, picked at load time. */
__attribute__((target_clones("avx2", "default")))
static void xor_pass(unsigned char *buf, size_t len, unsigned char key)
{
	uint64_t k = 0x0101010101010101ULL * key, *w = (uint64_t *)(void *)buf;
	size_t words = len / 8;
	for (size_t i = 0; i < words; i++)
		w[i] ^= k;
	for (size_t i = words * 8; i < len; i++)
		buf[i] ^= key;
}

static void apply(char *buf, size_t len)
{
	if (g_func == F_RELAY)
		return;
	for (unsigned p = 0; p < g_passes; p++) {
		xor_pass((unsigned char *)buf, len, g_key);
		/* each pass really touches the buffer: no folding of the passes */
		__asm__ volatile("" : : "r"(buf) : "memory");
	}
}

static void free_halves(struct conn *c)
{
	for (int d = 0; d < 2; d++) {
		free(c->dir[d].buf);
		for (int e = 0; e < 2; e++)
			if (c->dir[d].pipe[e] >= 0)
				close(c->dir[d].pipe[e]);
	}
}

static void close_conn(int ep, struct conn *c, int reset)
{
	for (int s = 0; s < 2; s++) {
		if (c->fd[s] < 0)
			continue;
		epoll_ctl(ep, EPOLL_CTL_DEL, c->fd[s], NULL);
		if (reset) {
			struct linger lg = { 1, 0 };
			setsockopt(c->fd[s], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(c->fd[s]);
	}
	free_halves(c);
	c->closed = 1;
	c->dead = t_dead;
	t_dead = c;
	atomic_fetch_add(&st_closed, 1);
}

static void free_dead(void)
{
	while (t_dead) {
		struct conn *next = t_dead->dead;
		free(t_dead);
		t_dead = next;
	}
}

/* relay: move bytes of direction d through its pipe; 0 when a socket would block,
 * -1 on an error, 1 at the end of the stream (everything sent). */
static int pump_splice(struct conn *c, int d)
{
	struct half *h = &c->dir[d];
	int from = c->fd[d], to = c->fd[1 - d];

	for (;;) {
		while (h->inpipe) {
			ssize_t n = splice(h->pipe[0], NULL, to, NULL, h->inpipe,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0)
				return errno == EAGAIN ? 0 : -1;
			h->inpipe -= (size_t)n;
			atomic_fetch_add(d == 0 ? &st_bytes_up : &st_bytes_down, (unsigned long)n);
		}
		if (h->eof)
			return 1;
		ssize_t n = splice(from, NULL, h->pipe[1], NULL, PIPE_SIZE,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		if (n == 0)
			h->eof = 1;
		h->inpipe = (size_t)n;
	}
}

/* XOR functions: the same through the application buffer. */
static int pump_copy(struct conn *c, int d)
{
	struct half *h = &c->dir[d];
	int from = c->fd[d], to = c->fd[1 - d];

	for (;;) {
		while (h->len > h->off) {
			ssize_t n = send(to, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL);
			if (n < 0)
				return errno == EAGAIN ? 0 : -1;
			h->off += (size_t)n;
			atomic_fetch_add(d == 0 ? &st_bytes_up : &st_bytes_down, (unsigned long)n);
		}
		h->off = h->len = 0;
		if (h->eof)
			return 1;
		ssize_t n = recv(from, h->buf, BUF_SIZE, 0);
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		if (n == 0)
			h->eof = 1;
		apply(h->buf, (size_t)n);
		h->len = (size_t)n;
	}
}

/* Move bytes of direction d until a socket would block; 1 when the connection failed. */
static int pump(struct conn *c, int d)
{
	struct half *h = &c->dir[d];
	if (h->shut)
		return 0;
	int r = g_func == F_RELAY ? pump_splice(c, d) : pump_copy(c, d);
	if (r < 0)
		return 1;
	if (r == 1) {
		shutdown(c->fd[1 - d], SHUT_WR);
		h->shut = 1;
	}
	return 0;
}

static void on_event(int ep, struct tag *t)
{
	struct conn *c = t->c;
	int failed = 0;

	if (c->closed)
		return;

	if (c->connecting) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (t->side != 1)
			return; /* the client's bytes wait in its socket until we are connected */
		getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len);
		if (err == EINPROGRESS || err == EALREADY)
			return;
		if (err) {
			atomic_fetch_add(&st_connect_failed, 1);
			close_conn(ep, c, 1);
			return;
		}
		c->connecting = 0;
	}
	/* edge-triggered: move both directions until each would block */
	for (int d = 0; d < 2 && !failed; d++)
		failed = pump(c, d);
	if (failed)
		atomic_fetch_add(&st_errors, 1);
	if (failed || (c->dir[0].shut && c->dir[1].shut))
		close_conn(ep, c, failed);
}

static int setup_halves(struct conn *c)
{
	for (int d = 0; d < 2; d++)
		c->dir[d].pipe[0] = c->dir[d].pipe[1] = -1;
	for (int d = 0; d < 2; d++) {
		if (g_func == F_RELAY) {
			if (pipe2(c->dir[d].pipe, O_NONBLOCK | O_CLOEXEC) < 0)
				return -1;
			/* a larger pipe holds a whole send window; the default (64 KiB) stays
			 * when fs.pipe-max-size is smaller */
			fcntl(c->dir[d].pipe[1], F_SETPIPE_SZ, PIPE_SIZE);
		} else if (!(c->dir[d].buf = malloc(BUF_SIZE))) {
			return -1;
		}
	}
	return 0;
}

static void on_accept(int ep, int lfd)
{
	for (;;) {
		struct sockaddr_in6 peer, orig;
		socklen_t plen = sizeof(peer), olen = sizeof(orig);
		int cfd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK);
		if (cfd < 0)
			return;
		atomic_fetch_add(&st_accepted, 1);
		if (getsockname(cfd, (struct sockaddr *)&orig, &olen) < 0) {
			close(cfd);
			continue;
		}
		int one = 1;
		int ofd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
		struct sockaddr_in6 src = peer;
		src.sin6_port = 0;
		if (ofd < 0 ||
		    setsockopt(ofd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) < 0 ||
		    setsockopt(ofd, SOL_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) < 0 ||
		    bind(ofd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
		    (connect(ofd, (struct sockaddr *)&orig, sizeof(orig)) < 0 &&
		     errno != EINPROGRESS)) {
			atomic_fetch_add(&st_connect_failed, 1);
			struct linger lg = { 1, 0 };
			setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(cfd);
			if (ofd >= 0)
				close(ofd);
			continue;
		}
		setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(ofd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct conn *c = calloc(1, sizeof(*c));
		if (!c || setup_halves(c) < 0) {
			if (c) {
				free_halves(c);
				free(c);
			}
			close(cfd);
			close(ofd);
			atomic_fetch_add(&st_errors, 1);
			continue;
		}
		c->fd[0] = cfd;
		c->fd[1] = ofd;
		c->connecting = 1;
		for (int s = 0; s < 2; s++) {
			c->tag[s].c = c;
			c->tag[s].side = s;
			struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
						  .data.ptr = &c->tag[s] };
			epoll_ctl(ep, EPOLL_CTL_ADD, c->fd[s], &ev);
		}
	}
}

static int listener(void)
{
	int one = 1;
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)g_port),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0) {
		perror("pipes_relay: listener");
		exit(1);
	}
	return fd;
}

static void *worker(void *arg)
{
	int lfd = *(int *)arg;
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL }, evs[MAX_EVENTS];

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0) {
		perror("pipes_relay: epoll");
		exit(1);
	}
	while (!g_stop) {
		int n = epoll_wait(ep, evs, MAX_EVENTS, 200);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL)
				on_accept(ep, lfd);
			else
				on_event(ep, evs[i].data.ptr);
		}
		free_dead();
	}
	return NULL;
}

static void write_stats(void)
{
	if (!g_stats_path)
		return;
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", g_stats_path);
	struct rusage ru;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	getrusage(RUSAGE_SELF, &ru);
	fprintf(f,
		"{\"accepted\": %lu, \"connect_failed\": %lu, \"closed\": %lu, "
		"\"bytes_up\": %lu, \"bytes_down\": %lu, \"errors\": %lu, "
		"\"cpu_user_ms\": %ld, \"cpu_sys_ms\": %ld}\n",
		atomic_load(&st_accepted), atomic_load(&st_connect_failed), atomic_load(&st_closed),
		atomic_load(&st_bytes_up), atomic_load(&st_bytes_down), atomic_load(&st_errors),
		ru.ru_utime.tv_sec * 1000L + ru.ru_utime.tv_usec / 1000L,
		ru.ru_stime.tv_sec * 1000L + ru.ru_stime.tv_usec / 1000L);
	fclose(f);
	rename(tmp, g_stats_path);
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		g_dump = 1;
	else
		g_stop = 1;
}

static int parse_func(const char *s)
{
	char *end;
	if (strcmp(s, "relay") == 0) {
		g_func = F_RELAY;
		return 0;
	}
	if (strcmp(s, "xormask") == 0) {
		g_func = F_XORMASK;
		g_passes = 1;
		return 0;
	}
	if (strncmp(s, "xor:", 4) == 0) {
		long n = strtol(s + 4, &end, 10);
		if (*end || n < 1 || n > 1024)
			return -1;
		g_func = F_XOR;
		g_passes = 2 * (unsigned)n;
		return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	int threads = 1, opt;
	long v;
	char *end;

	while ((opt = getopt(argc, argv, "p:f:k:t:s:")) != -1) {
		switch (opt) {
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 65535)
				goto usage;
			g_port = (int)v;
			break;
		case 'f':
			if (parse_func(optarg) < 0) {
				fprintf(stderr, "pipes_relay: -f %s: relay, xor:N (1-1024) or xormask\n",
					optarg);
				return 2;
			}
			break;
		case 'k':
			v = strtol(optarg, &end, 0);
			if (*end || v < 1 || v > 255)
				goto usage;
			g_key = (unsigned char)v;
			break;
		case 't':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > MAX_THREADS)
				goto usage;
			threads = (int)v;
			break;
		case 's':
			g_stats_path = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (!g_port || optind != argc)
		goto usage;

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* six descriptors per connection (two sockets, two pipes): the hard limit */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	/* the workers get the signals' siblings blocked: the main thread handles them */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	int lfds[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	for (int i = 0; i < threads; i++)
		lfds[i] = listener();
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, worker, &lfds[i]) != 0) {
			fprintf(stderr, "pipes_relay: pthread_create failed\n");
			return 1;
		}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	printf("ready %d\n", g_port);
	fflush(stdout);
	write_stats();
	while (!g_stop) {
		pause();
		if (g_dump) {
			g_dump = 0;
			write_stats();
		}
	}
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	write_stats();
	return 0;
usage:
	fprintf(stderr, "usage: pipes_relay -p PORT -f relay|xor:N|xormask [-k KEY 1-255] "
			"[-t THREADS 1-%d] [-s STATSFILE]\n", MAX_THREADS);
	return 2;
}
