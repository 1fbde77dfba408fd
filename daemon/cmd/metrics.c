// SPDX-License-Identifier: GPL-2.0-only
/*
 * metrics.c - the Prometheus endpoint: a tiny non-blocking HTTP/1.x server driven by the
 * daemon's epoll loop, and the text-format writers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cmd/metrics.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/text.h"

/* Accepts per listener event, so a connection storm cannot starve the rest of the loop. */
#define METRICS_ACCEPT_BATCH 64
/* Bytes read and discarded after the response before closing; see client_drain(). */
#define METRICS_MAX_DRAIN    (64u << 10)

/* ---- writers ------------------------------------------------------------------------------- */

/* A struct buf that stops at METRICS_MAX_BODY (-E2BIG), and the family its samples are of. */
struct metrics_buf {
	struct buf b;
	char family[METRICS_MAX_NAME + 1]; /* the family samples must belong to */
};

struct metrics_buf *metrics_buf__new(void)
{
	return calloc(1, sizeof(struct metrics_buf));
}

void metrics_buf__free(struct metrics_buf *b)
{
	if (!b)
		return;
	free(b->b.p);
	free(b);
}

const char *metrics_buf_data(const struct metrics_buf *b, size_t *len)
{
	if (len)
		*len = b->b.len;
	return b->b.p ? (const char *)b->b.p : "";
}

int metrics_buf_error(const struct metrics_buf *b)
{
	return b->b.err;
}

static void metrics_buf_fail(struct metrics_buf *b, int err)
{
	if (!b->b.err)
		b->b.err = err;
}

/* Whether n more bytes keep the body within METRICS_MAX_BODY (else the sticky -E2BIG). */
static bool metrics_buf_room(struct metrics_buf *b, size_t n)
{
	if (b->b.err)
		return false;
	if (n > METRICS_MAX_BODY - b->b.len) {
		metrics_buf_fail(b, -E2BIG);
		return false;
	}
	return true;
}

static void metrics_buf_append(struct metrics_buf *b, const char *s, size_t n)
{
	if (metrics_buf_room(b, n))
		buf_put(&b->b, s, n);
}

static void metrics_buf_puts(struct metrics_buf *b, const char *s)
{
	metrics_buf_append(b, s, strlen(s));
}

/*
 * Escapes s as the format wants: \ and newline always, " in label values (quotes), invalid
 * UTF-8 as U+FFFD. Writes to dst unless it is NULL; returns the length either way.
 */
static size_t escape(char *dst, const char *s, bool quotes)
{
	static const char replacement[] = "\xef\xbf\xbd";
	const unsigned char *p = (const unsigned char *)s;
	const char *add;
	size_t out = 0, n, addlen;

	while (*p) {
		n = text_utf8_len(p, strnlen((const char *)p, 4));
		add = (const char *)p;
		addlen = n;
		if (!n) {
			add = replacement;
			addlen = 3;
			n = 1;
		} else if (*p == '\\') {
			add = "\\\\";
			addlen = 2;
		} else if (*p == '\n') {
			add = "\\n";
			addlen = 2;
		} else if (*p == '"' && quotes) {
			add = "\\\"";
			addlen = 2;
		}
		if (dst)
			memcpy(dst + out, add, addlen);
		out += addlen;
		p += n;
	}
	return out;
}

static void metrics_buf_escaped(struct metrics_buf *b, const char *s, bool quotes)
{
	size_t n = escape(NULL, s, quotes);
	char *p = metrics_buf_room(b, n) ? buf_put_space(&b->b, n) : NULL;

	if (p)
		escape(p, s, quotes);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metric names (colon allowed), without it for label names. */
static bool valid_name(const char *s, bool colon)
{
	size_t i;

	if (!s || !*s || strlen(s) > METRICS_MAX_NAME)
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (i > 0 && c >= '0' && c <= '9');

		if (!ok)
			return false;
	}
	return true;
}

void metrics_buf_family(struct metrics_buf *b, const char *name, const char *type, const char *help)
{
	if (b->b.err)
		return;
	if (!valid_name(name, true) || !type ||
	    (strcmp(type, "counter") && strcmp(type, "gauge"))) {
		metrics_buf_fail(b, -EINVAL);
		return;
	}
	if (help && *help) {
		metrics_buf_puts(b, "# HELP ");
		metrics_buf_puts(b, name);
		metrics_buf_puts(b, " ");
		metrics_buf_escaped(b, help, false);
		metrics_buf_puts(b, "\n");
	}
	metrics_buf_puts(b, "# TYPE ");
	metrics_buf_puts(b, name);
	metrics_buf_puts(b, " ");
	metrics_buf_puts(b, type);
	metrics_buf_puts(b, "\n");
	snprintf(b->family, sizeof(b->family), "%s", name); /* fits: valid_name checked */
}

/* The shortest text that reads back as v; integral values exactly, without exponent. */
static void format_value(char *buf, size_t len, double v)
{
	int prec;

	if (isnan(v)) {
		snprintf(buf, len, "NaN");
	} else if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	} else if (v == 0) {
		snprintf(buf, len, "0"); /* not "-0" */
	} else if (v == trunc(v) && fabs(v) < 0x1p63) {
		snprintf(buf, len, "%.0f", v);
	} else {
		for (prec = 15; prec < 17; prec++) {
			snprintf(buf, len, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				return;
		}
		snprintf(buf, len, "%.17g", v);
	}
}

void metrics_buf_sample(struct metrics_buf *b, const char *name, const char *labels, double value)
{
	char num[64];

	if (b->b.err)
		return;
	if (!name || !b->family[0] || strcmp(name, b->family)) {
		metrics_buf_fail(b, -EINVAL);
		return;
	}
	metrics_buf_puts(b, name);
	if (labels && *labels) {
		metrics_buf_puts(b, "{");
		metrics_buf_puts(b, labels);
		metrics_buf_puts(b, "}");
	}
	format_value(num, sizeof(num), value);
	metrics_buf_puts(b, " ");
	metrics_buf_puts(b, num);
	metrics_buf_puts(b, "\n");
}

int metrics_buf_label(char *dst, size_t len, const char *key, const char *value)
{
	size_t cur, need, klen, vlen;
	char *p;

	if (!dst || !valid_name(key, false) || !strncmp(key, "__", 2))
		return -EINVAL;
	cur = strnlen(dst, len);
	if (cur == len)
		return -EINVAL; /* not a string */
	if (!value)
		value = "";
	klen = strlen(key);
	vlen = escape(NULL, value, true);
	need = (cur ? 1 : 0) + klen + 2 + vlen + 1; /* [,]key="value" */
	if (need >= len - cur)
		return -ENOSPC;
	p = dst + cur;
	if (cur)
		*p++ = ',';
	memcpy(p, key, klen);
	p += klen;
	*p++ = '=';
	*p++ = '"';
	p += escape(p, value, true);
	*p++ = '"';
	*p = '\0';
	return 0;
}

/* ---- server -------------------------------------------------------------------------------- */

enum client_state {
	CLIENT_FREE = 0,
	CLIENT_READING,	 /* the request head */
	CLIENT_WRITING,	 /* the response */
	CLIENT_DRAINING, /* response sent and write side shut: waiting for the peer to close */
};

struct client {
	int fd;
	enum client_state state;
	uint32_t events; /* registered in the epoll set */
	uint64_t seq;	 /* accept order: the lower, the older */
	/* When the current phase (request, response, drain) must be over; bytes never move it. */
	uint64_t deadline_ms;
	uint64_t moved_ms; /* its accept, or the response's last bytes sent: see client_rank() */
	size_t len;	   /* of req */
	char req[METRICS_MAX_REQUEST];
	char head[256];
	size_t head_len;
	struct metrics_buf *rendered; /* owns body when the body was rendered */
	const char *body;
	size_t body_len;
	size_t off; /* bytes of head + body sent */
	size_t drained;
};

struct metrics {
	int lfd;
	int port;
	bool paused; /* listener out of the epoll set: out of fds */
	metrics_render_fn fn;
	void *ctx;
	size_t nclients;
	unsigned int request_ms, response_ms, drain_ms; /* METRICS_*_MS; tests shorten them */
	struct metrics_stats stats;
	struct client clients[METRICS_MAX_CLIENTS];
};

static uint64_t now_ms(void)
{
	return (uint64_t)clock_mono_ns() / 1000000;
}

int metrics_parse_address(const char *address, struct sockaddr_storage *ss, socklen_t *sslen)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *h, *hend, *port;
	unsigned long p = 0;
	size_t i;

	if (!address)
		return -EINVAL;
	if (address[0] == '[') {
		h = address + 1;
		hend = strchr(h, ']');
		if (!hend || hend[1] != ':')
			return -EINVAL;
		port = hend + 2;
	} else {
		h = address;
		hend = strchr(h, ':');
		if (!hend || strchr(hend + 1, ':'))
			return -EINVAL; /* a bare IPv6 address needs its brackets */
		port = hend + 1;
	}
	if (hend == h || (size_t)(hend - h) >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hend - h);
	host[hend - h] = '\0';
	/* Digits only, at most five: strtoul would take signs, spaces and overflow silently. */
	for (i = 0; port[i]; i++) {
		if (port[i] < '0' || port[i] > '9' || i >= 5)
			return -EINVAL;
		p = p * 10 + (port[i] - '0');
	}
	if (!i || p > 65535)
		return -EINVAL;

	memset(ss, 0, sizeof(*ss));
	if (address[0] == '[') {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -EINVAL;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(p);
		*sslen = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(p);
		*sslen = sizeof(*sin);
	}
	return 0;
}

struct metrics *metrics__new(const char *address, metrics_render_fn fn, void *ctx)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct metrics *m = NULL;
	int one = 1, err;
	size_t i;

	if (!fn) {
		err = -EINVAL;
		goto cleanup;
	}
	err = metrics_parse_address(address, &ss, &sslen);
	if (err)
		goto cleanup;
	m = calloc(1, sizeof(*m));
	if (!m) {
		err = -ENOMEM;
		goto cleanup;
	}
	m->lfd = -1;
	m->fn = fn;
	m->ctx = ctx;
	m->request_ms = METRICS_REQUEST_MS;
	m->response_ms = METRICS_RESPONSE_MS;
	m->drain_ms = METRICS_DRAIN_MS;
	for (i = 0; i < METRICS_MAX_CLIENTS; i++)
		m->clients[i].fd = -1;
	m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0) {
		err = -errno;
		goto cleanup;
	}
	/* A restarted daemon must rebind at once, not after TIME_WAIT of its old connections. */
	if (setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(m->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(m->lfd, (struct sockaddr *)&ss, sslen) || listen(m->lfd, 64)) {
		err = -errno;
		goto cleanup;
	}
	sslen = sizeof(ss);
	if (getsockname(m->lfd, (struct sockaddr *)&ss, &sslen)) {
		err = -errno;
		goto cleanup;
	}
	m->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	return m;

cleanup:
	metrics__free(m);
	errno = -err;
	return NULL;
}

static void client_close(struct metrics *m, struct client *c, int epfd)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	metrics_buf__free(c->rendered);
	c->rendered = NULL;
	c->fd = -1;
	c->state = CLIENT_FREE;
	m->nclients--;
}

void metrics__free(struct metrics *m)
{
	size_t i;

	if (!m)
		return;
	/* Closing an fd takes it out of every epoll set; no epfd needed here. */
	for (i = 0; i < METRICS_MAX_CLIENTS; i++) {
		if (m->clients[i].fd >= 0)
			close(m->clients[i].fd);
		metrics_buf__free(m->clients[i].rendered);
	}
	if (m->lfd >= 0)
		close(m->lfd);
	free(m);
}

void metrics_set_deadlines(struct metrics *m, unsigned int request_ms, unsigned int response_ms,
			   unsigned int drain_ms)
{
	m->request_ms = request_ms ? request_ms : METRICS_REQUEST_MS;
	m->response_ms = response_ms ? response_ms : METRICS_RESPONSE_MS;
	m->drain_ms = drain_ms ? drain_ms : METRICS_DRAIN_MS;
}

int metrics_listen_fd(const struct metrics *m)
{
	return m->lfd;
}

int metrics_port(const struct metrics *m)
{
	return m->port;
}

static int client_index(const struct metrics *m, int fd)
{
	int i;

	for (i = 0; fd >= 0 && i < METRICS_MAX_CLIENTS; i++)
		if (m->clients[i].fd == fd)
			return i;
	return -1;
}

bool metrics_owns(const struct metrics *m, int fd)
{
	return fd >= 0 && (fd == m->lfd || client_index(m, fd) >= 0);
}

/* The order in which connections give way to a new one (the lowest first); see client_slowest(). */
static int client_rank(const struct client *c, uint64_t now)
{
	bool still = now - c->moved_ms > METRICS_GRACE_MS;

	switch (c->state) {
	case CLIENT_READING:
		/* no whole request METRICS_GRACE_MS after its accept: slow, idle or hostile; a
		 * younger one is likely a scraper whose request is on its way */
		return still ? 0 : 2;
	case CLIENT_WRITING:
		/* a peer that has read nothing for METRICS_GRACE_MS (a client that asks and never
		 * reads), or one being answered */
		return still ? 1 : 4;
	default:
		return 3; /* answered: only its peer's close is awaited */
	}
}

/*
 * The connection to close when a new one finds every slot taken: the one open longest without
 * a whole request, else one whose peer reads nothing of its answer, else a younger one without
 * its request, else one answered, in client_rank()'s order, the oldest first in each. Serving the
 * new one instead of turning it away means that connections which trickle bytes cannot lock
 * scrapers out however many there are (each new one pushes the oldest out), and that a scraper,
 * whose request comes with its connection, is answered at its accept; one whose request comes
 * a little after its connect (its process descheduled on a busy host) is not the first to go
 * while slow clients hold slots (a scrape lost so 1 time in 170 to 100 slow clients before).
 */
static struct client *client_slowest(struct metrics *m)
{
	struct client *best = NULL;
	uint64_t now = now_ms();
	int rank, best_rank = 0;
	size_t i;

	for (i = 0; i < METRICS_MAX_CLIENTS; i++) {
		struct client *c = &m->clients[i];

		if (c->state == CLIENT_FREE)
			continue;
		rank = client_rank(c, now);
		if (!best || rank < best_rank || (rank == best_rank && c->seq < best->seq)) {
			best = c;
			best_rank = rank;
		}
	}
	return best;
}

static void client_read(struct metrics *m, struct client *c, int epfd);

static void metrics_accept(struct metrics *m, int epfd)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
	struct client *c, *victim;
	int i, fd;

	for (i = 0; i < METRICS_ACCEPT_BATCH; i++) {
		fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			m->stats.accept_errors++;
			/* Out of fds or memory: the pending connection stays, so a level-triggered
			 * listener would wake the loop forever. Pause until the next tick. */
			if (epoll_ctl(epfd, EPOLL_CTL_DEL, m->lfd, NULL) == 0)
				m->paused = true;
			return;
		}
		ev.data.fd = fd;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			m->stats.accept_errors++;
			continue;
		}
		c = NULL;
		for (size_t j = 0; j < METRICS_MAX_CLIENTS && !c; j++)
			if (m->clients[j].state == CLIENT_FREE)
				c = &m->clients[j];
		if (!c) {
			/* Every slot is taken (so there is a victim): the new one is served. */
			victim = client_slowest(m);
			client_close(m, victim, epfd);
			m->stats.evicted++;
			c = victim;
		}
		c->fd = fd;
		c->state = CLIENT_READING;
		c->events = ev.events;
		c->seq = m->stats.accepted;
		c->moved_ms = now_ms();
		c->deadline_ms = c->moved_ms + m->request_ms;
		c->len = 0;
		c->rendered = NULL;
		c->drained = 0;
		m->nclients++;
		m->stats.accepted++;
		/* A scraper's request usually came with its connection: answer it now, before
		 * later accepts of this batch could take its slot. */
		client_read(m, c, epfd);
	}
}

static void client_watch(struct client *c, uint32_t events, int epfd)
{
	struct epoll_event ev = {.events = events, .data.fd = c->fd};

	if (c->events != events && epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = events;
}

static void client_drain(struct metrics *m, struct client *c, int epfd)
{
	char buf[4096];
	ssize_t n;

	/*
	 * Closing with unread input makes the kernel send a reset, which can destroy the response
	 * before the peer reads it (a 431's peer has surely sent more). So read until its EOF.
	 */
	for (;;) {
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n > 0) {
			c->drained += n;
			if (c->drained > METRICS_MAX_DRAIN)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break; /* EOF or error */
	}
	client_close(m, c, epfd);
}

static void client_write(struct metrics *m, struct client *c, int epfd)
{
	size_t total = c->head_len + c->body_len;
	struct iovec iov[2];
	struct msghdr msg = {.msg_iov = iov};
	ssize_t n;

	while (c->off < total) {
		msg.msg_iovlen = 0;
		if (c->off < c->head_len) {
			iov[msg.msg_iovlen].iov_base = c->head + c->off;
			iov[msg.msg_iovlen++].iov_len = c->head_len - c->off;
			iov[msg.msg_iovlen].iov_base = (void *)c->body;
			iov[msg.msg_iovlen++].iov_len = c->body_len;
		} else {
			iov[msg.msg_iovlen].iov_base = (void *)(c->body + (c->off - c->head_len));
			iov[msg.msg_iovlen++].iov_len = total - c->off;
		}
		/* MSG_NOSIGNAL: a scraper that went away must not kill the daemon with SIGPIPE. */
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			client_watch(c, EPOLLOUT, epfd);
			return;
		}
		if (n < 0) {
			client_close(m, c, epfd);
			return;
		}
		c->off += n;
		c->moved_ms = now_ms();
	}
	metrics_buf__free(c->rendered);
	c->rendered = NULL;
	shutdown(c->fd, SHUT_WR);
	c->state = CLIENT_DRAINING;
	c->deadline_ms = now_ms() + m->drain_ms;
	client_watch(c, EPOLLIN | EPOLLRDHUP, epfd);
	client_drain(m, c, epfd);
}

static const struct {
	int status;
	const char *reason;
} metrics_codes[] = {
	[METRICS_CODE_200] = {200, "OK"},
	[METRICS_CODE_400] = {400, "Bad Request"},
	[METRICS_CODE_404] = {404, "Not Found"},
	[METRICS_CODE_405] = {405, "Method Not Allowed"},
	[METRICS_CODE_431] = {431, "Request Header Fields Too Large"},
	[METRICS_CODE_500] = {500, "Internal Server Error"},
};

static void client_respond(struct metrics *m, struct client *c, int epfd, int code,
			   const char *type, const char *body, size_t len)
{
	int n;

	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s\r\n",
		     metrics_codes[code].status, metrics_codes[code].reason, type, len,
		     code == METRICS_CODE_405 ? "Allow: GET\r\n" : "");
	c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
	c->body = body;
	c->body_len = len;
	c->off = 0;
	c->state = CLIENT_WRITING;
	c->moved_ms = now_ms();
	c->deadline_ms = c->moved_ms + m->response_ms;
	m->stats.responses[code]++;
	client_write(m, c, epfd);
}

static void client_error(struct metrics *m, struct client *c, int epfd, int code)
{
	static const char *const texts[] = {
		[METRICS_CODE_400] = "bad request\n",
		[METRICS_CODE_404] = "not found: see /metrics\n",
		[METRICS_CODE_405] = "method not allowed: GET only\n",
		[METRICS_CODE_431] = "request header fields too large\n",
		[METRICS_CODE_500] = "rendering the metrics failed\n",
	};

	client_respond(m, c, epfd, code, "text/plain; charset=utf-8", texts[code],
		       strlen(texts[code]));
}

static void client_metrics(struct metrics *m, struct client *c, int epfd)
{
	const char *data;
	size_t len;

	c->rendered = metrics_buf__new();
	if (!c->rendered) {
		client_error(m, c, epfd, METRICS_CODE_500);
		return;
	}
	m->fn(m->ctx, c->rendered);
	if (metrics_buf_error(c->rendered)) {
		metrics_buf__free(c->rendered);
		c->rendered = NULL;
		client_error(m, c, epfd, METRICS_CODE_500);
		return;
	}
	data = metrics_buf_data(c->rendered, &len);
	client_respond(m, c, epfd, METRICS_CODE_200, "text/plain; version=0.0.4; charset=utf-8",
		       data, len);
}

/* Where the request head ends (after its blank line), or 0 when it has not ended yet. */
static size_t head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The request line of a whole head, line_len bytes before its newline. */
static enum metrics_route request_line(const char *line, size_t line_len)
{
	const char *sp1, *sp2, *version;
	size_t method_len, path_len, version_len;

	if (line_len && line[line_len - 1] == '\r')
		line_len--;
	/* METHOD SP TARGET SP HTTP/1.x, with single spaces (RFC 9112 section 3). */
	sp1 = memchr(line, ' ', line_len);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', line + line_len - sp1 - 1) : NULL;
	if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1 || sp1[1] != '/')
		return METRICS_ROUTE_BAD;
	version = sp2 + 1;
	version_len = line + line_len - version;
	if (version_len != 8 || (memcmp(version, "HTTP/1.1", 8) && memcmp(version, "HTTP/1.0", 8)))
		return METRICS_ROUTE_BAD;
	method_len = sp1 - line;
	if (method_len != 3 || memcmp(line, "GET", 3))
		return METRICS_ROUTE_METHOD;
	for (path_len = 0; sp1 + 1 + path_len < sp2 && sp1[1 + path_len] != '?'; path_len++)
		;
	if (path_len == 8 && !memcmp(sp1 + 1, "/metrics", 8))
		return METRICS_ROUTE_METRICS;
	if (path_len == 1)
		return METRICS_ROUTE_INDEX;
	return METRICS_ROUTE_NOT_FOUND;
}

enum metrics_route metrics_parse_request(const char *req, size_t len)
{
	if (!head_end(req, len))
		return len >= METRICS_MAX_REQUEST ? METRICS_ROUTE_TOO_LARGE : METRICS_ROUTE_PARTIAL;
	return request_line(req, (const char *)memchr(req, '\n', len) - req);
}

/* The request head is complete: answer what it asks for. */
static void client_request(struct metrics *m, struct client *c, int epfd, enum metrics_route r)
{
	static const char index_html[] = "<html><head><title>rubyprofd</title></head><body>"
					 "<a href=\"/metrics\">/metrics</a></body></html>\n";

	switch (r) {
	case METRICS_ROUTE_METRICS:
		client_metrics(m, c, epfd);
		break;
	case METRICS_ROUTE_INDEX:
		client_respond(m, c, epfd, METRICS_CODE_200, "text/html; charset=utf-8", index_html,
			       sizeof(index_html) - 1);
		break;
	case METRICS_ROUTE_METHOD:
		client_error(m, c, epfd, METRICS_CODE_405);
		break;
	case METRICS_ROUTE_NOT_FOUND:
		client_error(m, c, epfd, METRICS_CODE_404);
		break;
	case METRICS_ROUTE_TOO_LARGE:
		client_error(m, c, epfd, METRICS_CODE_431);
		break;
	case METRICS_ROUTE_BAD:
	case METRICS_ROUTE_PARTIAL:
		client_error(m, c, epfd, METRICS_CODE_400);
		break;
	}
}

static void client_read(struct metrics *m, struct client *c, int epfd)
{
	enum metrics_route r;
	bool eof = false;
	ssize_t n;

	while (c->len < sizeof(c->req)) {
		n = recv(c->fd, c->req + c->len, sizeof(c->req) - c->len, 0);
		if (n > 0) {
			c->len += n;
			continue;
		}
		if (n == 0) {
			eof = true;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		m->stats.aborted++;
		client_close(m, c, epfd);
		return;
	}
	r = metrics_parse_request(c->req, c->len);
	if (r == METRICS_ROUTE_PARTIAL) {
		if (eof) {
			m->stats.aborted++;
			client_close(m, c, epfd);
		}
		return;
	}
	client_request(m, c, epfd, r);
}

void metrics_handle(struct metrics *m, int fd, uint32_t events, int epfd)
{
	struct client *c;
	int i;

	if (fd == m->lfd) {
		metrics_accept(m, epfd);
		return;
	}
	i = client_index(m, fd);
	if (i < 0)
		return;
	c = &m->clients[i];
	/*
	 * events is not trusted: an fd closed earlier in the same epoll batch may already be
	 * reused by a new client. Every step asks the socket itself and stops at EAGAIN.
	 */
	switch (c->state) {
	case CLIENT_READING:
		client_read(m, c, epfd);
		break;
	case CLIENT_WRITING:
		client_write(m, c, epfd);
		break;
	case CLIENT_DRAINING:
		client_drain(m, c, epfd);
		break;
	case CLIENT_FREE:
		break;
	}
}

void metrics_tick(struct metrics *m, int epfd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = m->lfd};
	uint64_t now = now_ms();
	size_t i;

	for (i = 0; i < METRICS_MAX_CLIENTS; i++) {
		struct client *c = &m->clients[i];

		if (c->state == CLIENT_FREE || now < c->deadline_ms)
			continue;
		/* What arrived while the loop was busy elsewhere (since the last event) counts: a
		 * late loop must not fail a request that was in time. */
		if (c->state == CLIENT_READING) {
			client_read(m, c, epfd);
			if (c->state != CLIENT_READING)
				continue;
		}
		/* A peer that got its response but keeps the connection open is not an error. */
		if (c->state != CLIENT_DRAINING)
			m->stats.timed_out++;
		client_close(m, c, epfd);
	}
	if (m->paused && epoll_ctl(epfd, EPOLL_CTL_ADD, m->lfd, &ev) == 0)
		m->paused = false;
}

bool metrics_needs_tick(const struct metrics *m)
{
	size_t i;

	if (m->paused)
		return true;
	for (i = 0; i < METRICS_MAX_CLIENTS; i++) {
		if (m->clients[i].state != CLIENT_FREE)
			return true;
	}
	return false;
}

void metrics_stats(const struct metrics *m, struct metrics_stats *out)
{
	*out = m->stats;
	out->clients = m->nclients;
}
