/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * httpd.h - a scripted HTTP/1.1 server on 127.0.0.1 for the upload and ship tests: a thread
 * that accepts one connection at a time, serves keep-alive requests on it, records each request
 * (target, headers, body) and answers from a script (status, Retry-After, body, or hang until
 * stopped). The last script step repeats. A first byte of 0x16 (a TLS ClientHello) closes the
 * connection, as a plain-HTTP server's garbage answer would fail the handshake.
 */
#ifndef TEST_HTTPD_H
#define TEST_HTTPD_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTPD_MAX_STEPS 16
#define HTTPD_MAX_REQS	64

struct httpd_step {
	int status;		 /* 0: hang (read the request, never answer) */
	const char *retry_after; /* NULL: no header */
	const char *body;	 /* NULL: "" */
	size_t body_repeat;	 /* the body this many times (0: once) */
	const char *header;	 /* an extra "Name: value" line, NULL: none */
};

struct httpd_req {
	char head[8192]; /* request line and headers */
	char *body;
	size_t len;
	double at; /* CLOCK_MONOTONIC seconds when complete */
};

struct httpd {
	int lfd, port;
	pthread_t th;
	pthread_mutex_t mu;
	atomic_bool stop;
	struct httpd_step steps[HTTPD_MAX_STEPS];
	size_t nsteps, next;
	struct httpd_req reqs[HTTPD_MAX_REQS];
	size_t nreqs;
	unsigned int connections;
};

static __attribute__((unused)) double httpd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads into buf until cond; -1 on close/stop. Polls so that a stop is seen. */
static int httpd_read_some(struct httpd *h, int fd, char *buf, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	while (!atomic_load(&h->stop)) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(fd, buf, len);
		return n > 0 ? (int)n : -1;
	}
	return -1;
}

static void httpd_answer(struct httpd *h, int fd, const struct httpd_step *st)
{
	const char *body = st->body ? st->body : "";
	size_t blen = strlen(body), reps = st->body_repeat ? st->body_repeat : 1, i;
	char head[1024];
	int n;

	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s%s%s%s%sConnection: "
		     "keep-alive\r\n\r\n",
		     st->status, blen * reps, st->retry_after ? "Retry-After: " : "",
		     st->retry_after ? st->retry_after : "", st->retry_after ? "\r\n" : "",
		     st->header ? st->header : "", st->header ? "\r\n" : "");
	if (write(fd, head, (size_t)n) != n)
		return;
	for (i = 0; i < reps; i++)
		if (write(fd, body, blen) != (ssize_t)blen)
			return;
}

#define HTTPD_BUF (1u << 20)

static void httpd_serve_buf(struct httpd *h, int fd, char *buf)
{
	const size_t bufsize = HTTPD_BUF;
	size_t have = 0;
	int n;

	for (;;) {
		char *end, *cl;
		size_t headlen, bodylen = 0;
		struct httpd_step st;
		struct httpd_req *r;

		while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
			if (have == bufsize)
				return;
			n = httpd_read_some(h, fd, buf + have, bufsize - have);
			if (n < 0)
				return;
			if (!have && buf[0] == 0x16)
				return; /* TLS on a plain port */
			have += (size_t)n;
		}
		headlen = (size_t)(end - buf) + 4;
		buf[headlen - 1] = '\0';
		cl = strcasestr(buf, "\r\nContent-Length:");
		if (cl)
			bodylen = strtoul(cl + 17, NULL, 10);
		buf[headlen - 1] = '\n';
		while (have < headlen + bodylen) {
			if (headlen + bodylen > bufsize)
				return;
			n = httpd_read_some(h, fd, buf + have, bufsize - have);
			if (n < 0)
				return;
			have += (size_t)n;
		}
		pthread_mutex_lock(&h->mu);
		if (h->nreqs < HTTPD_MAX_REQS) {
			r = &h->reqs[h->nreqs];
			snprintf(r->head, sizeof(r->head), "%.*s", (int)headlen, buf);
			r->body = malloc(bodylen + 1);
			memcpy(r->body, buf + headlen, bodylen);
			r->body[bodylen] = '\0';
			r->len = bodylen;
			r->at = httpd_now();
			h->nreqs++;
		}
		st = h->steps[h->next];
		if (h->next + 1 < h->nsteps)
			h->next++;
		pthread_mutex_unlock(&h->mu);
		memmove(buf, buf + headlen + bodylen, have - headlen - bodylen);
		have -= headlen + bodylen;
		if (!st.status) {
			while (httpd_read_some(h, fd, buf, bufsize) >= 0)
				;
			return;
		}
		httpd_answer(h, fd, &st);
	}
}

static void httpd_serve(struct httpd *h, int fd)
{
	char *buf = malloc(HTTPD_BUF);

	if (buf)
		httpd_serve_buf(h, fd, buf);
	free(buf);
}

static void *httpd_main(void *arg)
{
	struct httpd *h = arg;
	struct pollfd p = {.fd = h->lfd, .events = POLLIN};
	int fd;

	while (!atomic_load(&h->stop)) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		fd = accept(h->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&h->mu);
		h->connections++;
		pthread_mutex_unlock(&h->mu);
		httpd_serve(h, fd);
		close(fd);
	}
	return NULL;
}

/* Starts a server answering steps in turn (the last repeats). */
static __attribute__((unused)) struct httpd *httpd_start(const struct httpd_step *steps,
							 size_t nsteps)
{
	struct httpd *h = calloc(1, sizeof(*h));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);

	if (!h)
		return NULL;
	memcpy(h->steps, steps, nsteps * sizeof(*steps));
	h->nsteps = nsteps;
	pthread_mutex_init(&h->mu, NULL);
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->lfd < 0 || bind(h->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(h->lfd, 16) ||
	    getsockname(h->lfd, (struct sockaddr *)&sa, &sl)) {
		free(h);
		return NULL;
	}
	h->port = ntohs(sa.sin_port);
	pthread_create(&h->th, NULL, httpd_main, h);
	return h;
}

static __attribute__((unused)) void httpd_stop(struct httpd *h)
{
	size_t i;

	if (!h)
		return;
	atomic_store(&h->stop, true);
	pthread_join(h->th, NULL);
	close(h->lfd);
	for (i = 0; i < h->nreqs; i++)
		free(h->reqs[i].body);
	free(h);
}

static __attribute__((unused)) size_t httpd_nreqs(struct httpd *h)
{
	size_t n;

	pthread_mutex_lock(&h->mu);
	n = h->nreqs;
	pthread_mutex_unlock(&h->mu);
	return n;
}

/* The value of a request's header (case-insensitive name) into out; false when absent. */
static __attribute__((unused)) bool httpd_header(const struct httpd_req *r, const char *name,
						 char *out, size_t len)
{
	char pat[128];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\n%s:", name);
	p = strcasestr(r->head, pat);
	if (!p)
		return false;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	e = strstr(p, "\r\n");
	if (!e)
		return false;
	snprintf(out, len, "%.*s", (int)(e - p), p);
	return true;
}

/* Waits up to secs for cond(ctx); the VM is noisy: deadlines are generous, never asserted. */
static __attribute__((unused)) bool httpd_wait(bool (*cond)(void *), void *ctx, double secs)
{
	double end = httpd_now() + secs;

	while (httpd_now() < end) {
		if (cond(ctx))
			return true;
		usleep(10000);
	}
	return cond(ctx);
}

#endif
