/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * metrics.h - a Prometheus endpoint (text exposition format 0.0.4) served from the daemon's own
 * single-threaded epoll loop: no threads, nothing blocks.
 *
 * HTTP/1.x, one request per connection: GET /metrics answers 200 with a body the render callback
 * builds at request time; GET / a pointer to /metrics; other paths 404; other methods 405; a
 * malformed request 400; a request head over METRICS_MAX_REQUEST bytes 431; a render that failed
 * (sticky buffer error) 500. After its response a connection is closed.
 *
 * Slow or hostile clients never hold the endpoint (nor the loop: nothing here waits on one).
 * Each connection has deadlines that bytes do not extend: its whole request head within
 * METRICS_REQUEST_MS of its accept, its whole response sent within METRICS_RESPONSE_MS of the
 * request, and at most METRICS_DRAIN_MS for the peer to close after that; metrics_tick() closes
 * a connection past one (counted as timed out, except after a response was sent). At most
 * METRICS_MAX_CLIENTS at once: a new connection that finds every slot taken is still served,
 * and the one that has been open longest without a whole request is closed for it (counted as
 * evicted; when every connection has sent its request, the oldest that is only waiting for its
 * peer to close, else the oldest being answered). A request that has arrived with its
 * connection is read and answered at the accept.
 *
 * Wiring into the loop: add metrics_listen_fd() to the epoll set for EPOLLIN with
 * ev.data.fd = that fd. metrics_handle() adds and removes its client fds itself, also with
 * ev.data.fd = fd; route every event whose fd metrics_owns() to metrics_handle(). Call
 * metrics_tick() at least once a second. metrics_handle() may take the listener out of the set
 * while the process is out of fds (else level-triggered EPOLLIN would spin); metrics_tick() puts
 * it back.
 */
#ifndef RP_METRICS_H
#define RP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define METRICS_MAX_CLIENTS 16
#define METRICS_MAX_REQUEST 4096       /* request line and headers */
#define METRICS_MAX_BODY    (4u << 20) /* one rendered body; past it the render fails (500) */
#define METRICS_MAX_NAME    128	       /* metric and label names */
/*
 * 3 s for the request head: a scraper sends it at once in one segment, and 3 s leave room for
 * a few TCP retransmissions of it on a lossy link; 16 connections trickling bytes free their
 * slots within 4 s (the deadline and metrics_tick()'s second). The response: Prometheus's
 * default scrape_timeout, past which a scraper has given up anyway.
 */
#define METRICS_REQUEST_MS  3000
#define METRICS_RESPONSE_MS 10000
#define METRICS_DRAIN_MS    2000
/*
 * A connection this young without its request, or a response that moved this recently, is not
 * the first to give way when every slot is taken: a scraper's request follows its connect by
 * microseconds (milliseconds on a busy host), while the slow clients it must not lose to have
 * sent nothing, or their peer has read nothing, for longer.
 */
#define METRICS_GRACE_MS    500

struct metrics;
struct metrics_buf; /* growable text buffer, bounded by METRICS_MAX_BODY */

/* Writes the exposition body with the metrics_buf_* writers. Errors are sticky in out. */
typedef void (*metrics_render_fn)(void *ctx, struct metrics_buf *out);

/*
 * address: "HOST:PORT" with a numeric IPv4 host, or "[V6]:PORT" (e.g. "127.0.0.1:9464",
 * "[::1]:9464"); port 0 takes an ephemeral port (tests). Host names are refused: resolving them
 * would block. NULL with errno: EINVAL (address syntax), EADDRINUSE (port busy: callers print
 * "metrics_address %s: %s" with strerror), or what socket/bind/listen failed with.
 */
struct metrics *metrics__new(const char *address, metrics_render_fn fn, void *ctx);
void metrics__free(struct metrics *m);

/* Parses address as metrics__new does: 0 or -EINVAL. For checking a configuration early. */
int metrics_parse_address(const char *address, struct sockaddr_storage *ss, socklen_t *sslen);

/* Tests only: deadlines other than METRICS_{REQUEST,RESPONSE,DRAIN}_MS (0 keeps the default),
 * for the deadlines set after the call. Not a configuration key: there is nothing to tune. */
void metrics_set_deadlines(struct metrics *m, unsigned int request_ms, unsigned int response_ms,
			   unsigned int drain_ms);

int metrics_listen_fd(const struct metrics *m);
int metrics_port(const struct metrics *m); /* the bound port, in host order */
bool metrics_owns(const struct metrics *m, int fd);
/* Any event on the listener or a client fd; unknown fds are ignored. */
void metrics_handle(struct metrics *m, int fd, uint32_t events, int epfd);
/* Closes connections past their deadline; re-arms a paused listener. */
void metrics_tick(struct metrics *m, int epfd);
/* Whether metrics_tick() has anything to do: a client connected, or the listener paused. */
bool metrics_needs_tick(const struct metrics *m);

struct metrics_stats {
	uint64_t accepted;
	uint64_t evicted;   /* closed to make room: a new connection found every slot taken */
	uint64_t timed_out; /* past METRICS_REQUEST_MS without a request, or METRICS_RESPONSE_MS */
	uint64_t aborted;   /* peer closed or failed before a whole request */
	uint64_t accept_errors;
	uint64_t responses[6]; /* by METRICS_CODE_* */
	uint64_t clients;      /* connections open now */
};
enum {
	METRICS_CODE_200,
	METRICS_CODE_400,
	METRICS_CODE_404,
	METRICS_CODE_405,
	METRICS_CODE_431,
	METRICS_CODE_500
};

void metrics_stats(const struct metrics *m, struct metrics_stats *out);

/* What a request asks for, from its bytes so far (metrics_parse_request). */
enum metrics_route {
	METRICS_ROUTE_PARTIAL,	 /* the head has not ended: read on */
	METRICS_ROUTE_METRICS,	 /* GET /metrics (any query): 200 with the body */
	METRICS_ROUTE_INDEX,	 /* GET / (any query): 200 with a link */
	METRICS_ROUTE_BAD,	 /* 400: not "METHOD SP /TARGET SP HTTP/1.x" */
	METRICS_ROUTE_NOT_FOUND, /* 404: GET of another path */
	METRICS_ROUTE_METHOD,	 /* 405: not GET */
	METRICS_ROUTE_TOO_LARGE, /* 431: METRICS_MAX_REQUEST bytes without the head's end */
};

/*
 * The request reader's parser: the first len bytes a client sent (what it sends after the head
 * is ignored). Only the request line is read; the head ends at an empty line ("\n\n" or
 * "\n\r\n"). Pure: the endpoint and its fuzz target (tests/fuzz/fuzz_metrics.c) call it alike.
 */
enum metrics_route metrics_parse_request(const char *req, size_t len);

/* ---- writers ------------------------------------------------------------------------------- */

struct metrics_buf *metrics_buf__new(void); /* NULL, errno */
void metrics_buf__free(struct metrics_buf *b);
/* The text so far (NUL-terminated; "" when empty) and its length. */
const char *metrics_buf_data(const struct metrics_buf *b, size_t *len);
/* 0, or the first error a writer hit: -ENOMEM, -E2BIG (METRICS_MAX_BODY), -EINVAL (bad name or
 * type, or a sample outside its family). Writers do nothing once it is set. */
int metrics_buf_error(const struct metrics_buf *b);

/*
 * Starts a family: "# HELP" (skipped when help is NULL or empty) and "# TYPE" lines. name must
 * match [a-zA-Z_:][a-zA-Z0-9_:]*; type is "counter" or "gauge". Counter names should end in
 * "_total" (promtool's lint). Call once per family, then its samples.
 */
void metrics_buf_family(struct metrics_buf *b, const char *name, const char *type,
			const char *help);
/*
 * One sample of the current family (name must be the family's). labels: built with metrics_buf_label,
 * or NULL/"" for none. Integral values print exactly without exponent (|v| < 2^63); others
 * shortest round-trip; NaN, +Inf, -Inf as the format spells them.
 */
void metrics_buf_sample(struct metrics_buf *b, const char *name, const char *labels, double value);
/*
 * Appends key="value" to the NUL-terminated label list dst (with a comma when dst is not
 * empty), escaping \, " and newline, and replacing bytes that are not UTF-8 with U+FFFD (a
 * scraper rejects the whole body otherwise; paths from /proc are arbitrary bytes).
 * 0, -EINVAL (key not [a-zA-Z_][a-zA-Z0-9_]* or starting "__"), -ENOSPC (dst unchanged).
 */
int metrics_buf_label(char *dst, size_t len, const char *key, const char *value);

#endif
