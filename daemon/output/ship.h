/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ship.h - delivers the spool's profiles to the collector, oldest first, on a thread of its own:
 * a profile leaves the spool only after the collector answered 2xx (at-least-once). Network
 * errors, 429 and 5xx are retried with exponential backoff and jitter (honouring Retry-After) on
 * the same, oldest profile, so that the collector gets them in order; 401/403 and a wrong
 * endpoint keep everything and back off long; other 4xx move the profile aside into
 * <spool_dir>/rejected/; profiles older than max_age are dropped. docs/shipping.md describes the
 * states, what is counted where and the restart behaviour.
 *
 * The main loop calls ship_kick() after writing an interval's profiles and never waits on the
 * thread; ship__free() aborts a transfer in flight (the profile stays for the next start).
 */
#ifndef RP_SHIP_H
#define RP_SHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/protocol.h"
#include "output/spool.h"
#include "output/upload.h"

#define SHIP_BACKOFF_MIN_DEFAULT	1.0   /* s, the first retry's delay (before jitter) */
#define SHIP_AUTH_BACKOFF_DEFAULT	300.0 /* s, after 401/403 or a wrong endpoint */
#define SHIP_RETRY_AFTER_MAX		3600  /* s, a longer Retry-After is cut to this */
#define SHIP_REJECTED_MAX_FILES_DEFAULT 1000  /* pairs kept in rejected/ */
#define SHIP_REJECTED_MAX_BYTES_DEFAULT (64ULL << 20)
#define SHIP_MAX_PROFILE_BYTES		(256u << 20) /* a larger profile is moved aside */
#define SHIP_INFLIGHT_FILE		".ship-inflight"
#define SHIP_REJECTED_DIR		"rejected"

struct ship_opts {
	const char *url; /* the collector's base URL (protocol_build adds the path) */
	enum protocol protocol;
	struct upload_opts upload;
	double max_age;		     /* s; a profile whose end is older is dropped; 0: none */
	double backoff_min;	     /* s; 0: SHIP_BACKOFF_MIN_DEFAULT */
	double backoff_max;	     /* s */
	double auth_backoff;	     /* s; 0: SHIP_AUTH_BACKOFF_DEFAULT */
	double rejected_max_age;     /* s; older files in rejected/ are removed */
	size_t rejected_max_files;   /* 0: SHIP_REJECTED_MAX_FILES_DEFAULT */
	uint64_t rejected_max_bytes; /* 0: SHIP_REJECTED_MAX_BYTES_DEFAULT */
};

/* Why an upload failed, for rubyprofd_upload_failures_total{cause=...}. */
enum ship_failure {
	SHIP_FAIL_NETWORK = 0, /* DNS, refused connection, reset */
	SHIP_FAIL_TIMEOUT,
	SHIP_FAIL_TLS,
	SHIP_FAIL_HTTP_429,
	SHIP_FAIL_HTTP_5XX, /* and 408 */
	SHIP_FAIL_AUTH,	    /* 401, 403 */
	SHIP_FAIL_ENDPOINT, /* 3xx, 404, 405: the URL is wrong, nothing is moved aside */
	SHIP_FAIL_REJECTED, /* other 4xx: the profile was moved aside */
	SHIP_FAIL_PROTOCOL, /* a 2xx whose body says failure, or a pair that cannot be sent */
	SHIP_NFAIL,
};

enum ship_state {
	SHIP_STATE_UNKNOWN = 0, /* nothing sent yet */
	SHIP_STATE_UP,
	SHIP_STATE_DOWN, /* network errors, timeouts, TLS, 429, 5xx */
	SHIP_STATE_AUTH, /* 401/403, or a wrong endpoint */
};

struct ship_stats {
	uint64_t uploads_ok;
	uint64_t failures[SHIP_NFAIL];
	uint64_t bytes_sent; /* request bodies of successful uploads */
	uint64_t resends;    /* accepted profiles whose earlier upload a stop or crash cut off */
	uint64_t dropped_too_old;
	uint64_t rejected_moved;   /* pairs moved into rejected/ */
	uint64_t rejected_removed; /* pairs removed from rejected/ by its age and size bounds */
	uint64_t move_errors;	   /* a pair that could not be moved aside (it was removed) */
	uint64_t not_regular;	   /* pairs with a link or FIFO for a file: not sent, removed */
	double latency_sum;	   /* s, over requests that got an HTTP answer */
	uint64_t latency_count;
	uint64_t backlog_profiles; /* pairs in the spool */
	uint64_t backlog_bytes;
	double oldest_age; /* s since the start of the oldest profile waiting; 0 when none */
	enum ship_state state;
	int64_t last_success_ns; /* wall clock; 0: never */
};

struct ship;

/*
 * Builds the transport (reading the secret files) and starts the thread. spool must outlive
 * the ship. NULL with errno set and a message in err (the transport's, naming a file or a
 * header; never a secret).
 */
struct ship *ship__new(struct spool *spool, const struct ship_opts *o, char *err, size_t errlen);
/* Stops the thread, aborting a transfer in flight, and frees. NULL is fine. */
void ship__free(struct ship *s);
/*
 * SIGHUP: new options and secrets. Builds the new transport first: on error (err says why) the
 * old options stay. The thread takes them between two uploads and retries at once.
 */
int ship_reconfigure(struct ship *s, const struct ship_opts *o, char *err, size_t errlen);
/* New profiles in the spool: wakes an idle thread (a backoff is not cut short). Never blocks. */
void ship_kick(struct ship *s);
void ship_stats(struct ship *s, struct ship_stats *out);

const char *ship_failure_name(enum ship_failure f);

#endif
