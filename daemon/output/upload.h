/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * upload.h - the shipper's transport: HTTP POSTs to one collector through one reused libcurl easy
 * handle (HTTP/1.1 keep-alive), with HTTPS verification always on, optional bearer token, basic
 * auth, tenant id and extra headers, connect and total timeouts, and an abort flag polled by the
 * transfer so that shutdown never waits for a hung collector.
 *
 * Secrets come from files read by upload__new() (the caller builds a new object on SIGHUP); they
 * are never put in an error text, and their memory is wiped when freed. Not thread-safe: one
 * object belongs to one thread.
 */
#ifndef RP_UPLOAD_H
#define RP_UPLOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Extra "Name: value" headers at most (the configuration's upload_header). */
#define UPLOAD_MAX_HEADERS	 16
/* Bytes of a response body kept; the rest is counted in body_dropped and discarded. */
#define UPLOAD_MAX_RESPONSE	 (64u << 10)
/* Bytes of an answer's header block kept (gRPC-web may carry its status there). */
#define UPLOAD_MAX_HEADERS_BYTES (16u << 10)
/* A secret file larger than this is refused. */
#define UPLOAD_MAX_SECRET	 4096
/* Longest header line accepted from the configuration. */
#define UPLOAD_MAX_HEADER	 1024

struct upload_opts {
	const char *token_file;	     /* "Authorization: Bearer <file's text>"; NULL or "": none */
	const char *basic_auth_file; /* "user:password"; NULL or "": none */
	const char *tenant_id;	     /* "X-Scope-OrgID"; NULL or "": none */
	const char *const *headers;  /* "Name: value" each */
	size_t nheaders;
	const char *ca_file; /* NULL or "": the system's CA store */
	long connect_timeout_ms;
	long timeout_ms; /* the whole transfer */
};

/* Why a transfer got no HTTP answer. UPLOAD_HTTP: it got one (see status). */
enum upload_cause {
	UPLOAD_HTTP = 0,
	UPLOAD_DNS,	/* the host name did not resolve */
	UPLOAD_CONNECT, /* refused, unreachable */
	UPLOAD_TLS,	/* handshake, certificate verification, CA file */
	UPLOAD_TIMEOUT, /* connect or total timeout */
	UPLOAD_NETWORK, /* reset, closed mid-answer, malformed answer, anything else */
	UPLOAD_ABORTED, /* the stop flag was raised */
	UPLOAD_NCAUSES,
};

struct upload_result {
	enum upload_cause cause;
	long status;	     /* HTTP status; 0 without an answer */
	int64_t retry_after; /* seconds the answer's Retry-After asks for (date or delta); -1: none */
	char *body; /* the answer's body, NUL-terminated, at most UPLOAD_MAX_RESPONSE bytes */
	size_t body_len;
	/* the final answer's header lines (CRLF-separated, NUL-terminated), at most
	 * UPLOAD_MAX_HEADERS_BYTES; NULL when none */
	char *headers;
	size_t headers_len;
	uint64_t body_dropped; /* bytes past UPLOAD_MAX_RESPONSE */
	uint64_t bytes_sent;   /* request body bytes handed to the connection */
	double seconds;	       /* the whole transfer */
	bool reached;	       /* the request may have reached the server (not DNS/connect/TLS) */
	char error[256];       /* what libcurl said, when cause != UPLOAD_HTTP; no secrets */
};

struct upload;

/*
 * Reads the secret files and checks the options. NULL with errno set (ENOENT, EACCES...: a file;
 * EINVAL: a bad header or an empty or malformed secret; ENOMEM) and a message naming the file or
 * the header (never a secret's text) in err. warn gets a warning for a secret file that others
 * can read ("" when none).
 */
struct upload *upload__new(const struct upload_opts *o, char *err, size_t errlen, char *warn,
			   size_t warnlen);
void upload__free(struct upload *u);

/*
 * POSTs body to url with the content type and the protocol's extra headers (NULL-ended, may be
 * NULL), plus the configured ones. stop (may be NULL) is polled several times a second: raising
 * it aborts the transfer (UPLOAD_ABORTED). 0 when res is filled in (look at res->cause and
 * res->status), -ENOMEM, -EINVAL (a header the caller passed is malformed). res->body is
 * released by upload_result_release().
 */
int upload_post(struct upload *u, const char *url, const char *content_type,
		const char *const *headers, const void *body, size_t len, const atomic_bool *stop,
		struct upload_result *res);
void upload_result_release(struct upload_result *res);

/* "Name: value" with a token for a name and no control characters: what upload__new takes. */
bool upload_header_valid(const char *h);

/* "dns", "connect", "tls", "timeout", "network", "aborted", "http". */
const char *upload_cause_name(enum upload_cause c);

/* Reads a secret file into buf (NUL-terminated, trailing blanks and newlines cut): 0, -errno,
 * -EFBIG (over UPLOAD_MAX_SECRET), -EINVAL (empty, or control characters inside). *world_readable
 * tells whether others may read it. For the configuration's early check too. */
int upload_read_secret(const char *path, char *buf, size_t len, bool *world_readable);

#endif
