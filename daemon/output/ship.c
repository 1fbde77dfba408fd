// SPDX-License-Identifier: GPL-2.0-only
/*
 * ship.c - the shipper's thread. It holds its mutex only to read its options and to update its
 * counters, never across I/O, so the main loop's ship_kick() and ship_stats() never wait for the
 * network. The spool has its own mutex (spool.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/array.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/log.h"
#include "output/ship.h"

#define NS		  1000000000LL
/* How often rejected/ is swept when nothing else happens. */
#define SWEEP_EVERY_NS	  (600 * NS)
/* 5xx answers in a row to one profile before the next is tried past it. */
#define SHIP_POISON_AFTER 5
/* Spool entries listed per pass (the pass lists again when it got through them all). */
#define SHIP_PASS_MAX	  64
/* Bytes of a server's message quoted in the log. */
#define MAX_LOGGED_REPLY  300

/* The options in force: what ship_opts says, owned, with its transport. */
struct ship_conf {
	char *url;
	enum protocol protocol;
	struct upload *up;
	double max_age, backoff_min, backoff_max, auth_backoff, rejected_max_age;
	size_t rejected_max_files;
	uint64_t rejected_max_bytes;
};

struct ship {
	struct spool *spool;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	atomic_bool stop;
	bool kicked;		   /* under mu */
	struct ship_conf *pending; /* under mu: taken by the thread between uploads */
	struct ship_stats st;	   /* under mu (backlog fields are filled by ship_stats) */

	/* the thread's own */
	struct ship_conf *conf;
	unsigned int failures;					/* in a row, for the backoff */
	int64_t down_since;					/* monotonic */
	char inflight[sizeof(((struct spool_entry *)0)->stem)]; /* what the file says now */
	char resend[sizeof(((struct spool_entry *)0)->stem)];	/* named by the file at start */
	uint64_t seed;
	int64_t next_sweep;
	bool warned_old;
	bool warned_labels; /* once per process: the same labels come with every profile */
	/* The profile the server answered 5xx to, SHIP_POISON_AFTER times in a row or more: the
	 * next pass tries the profile after it first, to tell a server that is down from one
	 * that fails on this profile alone (a body it cannot parse can come back as a 500). */
	char stuck[sizeof(((struct spool_entry *)0)->stem)];
	unsigned int stuck_count;
};

enum outcome {
	OUT_NEXT,  /* done with this profile (sent, dropped, moved aside, gone): the next one */
	OUT_RETRY, /* wait (s->wait_ns) and try the same profile again */
	OUT_STOP,
};

const char *ship_failure_name(enum ship_failure f)
{
	static const char *const names[SHIP_NFAIL] = {
		[SHIP_FAIL_NETWORK] = "network",   [SHIP_FAIL_TIMEOUT] = "timeout",
		[SHIP_FAIL_TLS] = "tls",	   [SHIP_FAIL_HTTP_429] = "http_429",
		[SHIP_FAIL_HTTP_5XX] = "http_5xx", [SHIP_FAIL_AUTH] = "auth",
		[SHIP_FAIL_ENDPOINT] = "endpoint", [SHIP_FAIL_REJECTED] = "rejected",
		[SHIP_FAIL_PROTOCOL] = "protocol",
	};

	return (unsigned int)f < SHIP_NFAIL ? names[f] : "unknown";
}

static void ship_conf_free(struct ship_conf *c)
{
	if (!c)
		return;
	upload__free(c->up);
	free(c->url);
	free(c);
}

static struct ship_conf *ship_conf_new(const struct ship_opts *o, char *err, size_t errlen)
{
	struct ship_conf *c = calloc(1, sizeof(*c));
	char warn[512];

	if (!c || !(c->url = strdup(o->url ? o->url : ""))) {
		snprintf(err, errlen, "out of memory");
		ship_conf_free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->protocol = o->protocol;
	c->max_age = o->max_age;
	c->backoff_min = o->backoff_min > 0 ? o->backoff_min : SHIP_BACKOFF_MIN_DEFAULT;
	c->backoff_max = o->backoff_max > c->backoff_min ? o->backoff_max : c->backoff_min;
	c->auth_backoff = o->auth_backoff > 0 ? o->auth_backoff : SHIP_AUTH_BACKOFF_DEFAULT;
	c->rejected_max_age = o->rejected_max_age;
	c->rejected_max_files =
		o->rejected_max_files ? o->rejected_max_files : SHIP_REJECTED_MAX_FILES_DEFAULT;
	c->rejected_max_bytes =
		o->rejected_max_bytes ? o->rejected_max_bytes : SHIP_REJECTED_MAX_BYTES_DEFAULT;
	c->up = upload__new(&o->upload, err, errlen, warn, sizeof(warn));
	if (!c->up) {
		int e = errno;

		ship_conf_free(c);
		errno = e;
		return NULL;
	}
	if (warn[0])
		log_warn("upload: %s", warn);
	return c;
}

/* ---- files beside the spool ---------------------------------------------------------------- */

static int ship_inflight_path(const struct ship *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", spool_dir(s->spool), SHIP_INFLIGHT_FILE);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * Records the stem about to be sent ("" clears it), durably: after a crash the next start knows
 * that this profile may have reached the collector and counts its upload as a resend.
 */
static int ship_set_inflight(struct ship *s, const char *stem)
{
	char path[PATH_MAX], line[sizeof(s->inflight) + 1];
	size_t n;
	int fd, err = 0;

	if (!strcmp(s->inflight, stem))
		return 0;
	err = ship_inflight_path(s, path, sizeof(path));
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return -errno;
	n = (size_t)snprintf(line, sizeof(line), "%s%s", stem, *stem ? "\n" : "");
	if (write(fd, line, n) != (ssize_t)n || fsync(fd))
		err = errno ? -errno : -EIO;
	close(fd);
	if (!err)
		snprintf(s->inflight, sizeof(s->inflight), "%s", stem);
	return err;
}

/* At start: a stem left in the file whose pair is still in the spool was cut off. */
static void ship_read_inflight(struct ship *s)
{
	char path[PATH_MAX], line[sizeof(s->inflight) + 2], prof[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (ship_inflight_path(s, path, sizeof(path)))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (!line[0] || strlen(line) >= sizeof(s->resend))
		return;
	snprintf(s->inflight, sizeof(s->inflight), "%s", line);
	if (!spool_profile_path(s->spool, line, prof, sizeof(prof)) && !stat(prof, &st)) {
		snprintf(s->resend, sizeof(s->resend), "%s", line);
		log_info("upload: \"%s\" was being sent when the daemon stopped; it is sent again",
			 line);
	}
}

struct rej_file {
	char name[NAME_MAX + 1];
	int64_t mtime_ns;
	uint64_t bytes;
};

static int rej_cmp(const void *a, const void *b)
{
	const struct rej_file *x = a, *y = b;

	return x->mtime_ns < y->mtime_ns ? 1 : x->mtime_ns > y->mtime_ns ? -1 : 0;
}

/*
 * Applies rejected/'s bounds: files older than rejected_max_age go, then the oldest beyond
 * rejected_max_files pairs or rejected_max_bytes. Counted in pairs (profiles).
 */
static void ship_sweep_rejected(struct ship *s)
{
	const struct ship_conf *c = s->conf;
	struct rej_file *v = NULL;
	size_t n = 0, cap = 0, i, max_files = c->rejected_max_files * 2;
	uint64_t bytes = 0, removed = 0;
	int64_t now = clock_real_ns();
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int dfd;

	snprintf(path, sizeof(path), "%s/%s", spool_dir(s->spool), SHIP_REJECTED_DIR);
	d = opendir(path);
	if (!d)
		return;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (array_reserve(v, cap, n + 1, 64))
			break;
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * NS + st.st_mtim.tv_nsec;
		v[n].bytes = (uint64_t)st.st_size;
		n++;
	}
	if (v)
		qsort(v, n, sizeof(*v), rej_cmp); /* newest first */
	for (i = 0; i < n; i++) {
		bool old = c->rejected_max_age > 0 &&
			   now - v[i].mtime_ns > (int64_t)(c->rejected_max_age * NS);

		bytes += v[i].bytes;
		if (!old && i < max_files && bytes <= c->rejected_max_bytes)
			continue;
		if (!unlinkat(dfd, v[i].name, 0) && strstr(v[i].name, ".pb.gz"))
			removed++;
	}
	closedir(d);
	free(v);
	if (removed) {
		pthread_mutex_lock(&s->mu);
		s->st.rejected_removed += removed;
		pthread_mutex_unlock(&s->mu);
	}
}

/* Moves a pair into rejected/ (hard links, then out of the spool's index and directory). */
static int ship_move_aside(struct ship *s, const char *stem)
{
	static const char *const suffixes[] = {".pb.gz", ".json"};
	char dir[PATH_MAX], src[PATH_MAX], dst[PATH_MAX];
	struct timespec now[2] = {{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_NOW}};
	size_t i;
	int err = 0, r;

	snprintf(dir, sizeof(dir), "%s/%s", spool_dir(s->spool), SHIP_REJECTED_DIR);
	if (mkdir(dir, 0750) && errno != EEXIST)
		err = -errno;
	for (i = 0; !err && i < 2; i++) {
		r = i ? spool_sidecar_path(s->spool, stem, src, sizeof(src))
		      : spool_profile_path(s->spool, stem, src, sizeof(src));
		if (r || snprintf(dst, sizeof(dst), "%s/%s%s", dir, stem, suffixes[i]) >=
				 (int)sizeof(dst)) {
			err = -ENAMETOOLONG;
			break;
		}
		unlink(dst);
		if (link(src, dst)) {
			err = -errno;
			break;
		}
		/* kept for rejected_max_age from now, not from when it was written */
		utimensat(AT_FDCWD, dst, now, AT_SYMLINK_NOFOLLOW);
	}
	pthread_mutex_lock(&s->mu);
	if (err)
		s->st.move_errors++;
	else
		s->st.rejected_moved++;
	pthread_mutex_unlock(&s->mu);
	ship_sweep_rejected(s);
	spool_remove(s->spool, stem);
	return err;
}

/* ---- one profile -------------------------------------------------------------------------- */

/*
 * Whether both files of a pair are regular files (not followed: lstat). 0, -ENOENT when one is
 * gone (evicted meanwhile), -ELOOP when one is something else (a link, a FIFO), -errno.
 */
static int ship_pair_regular(struct ship *s, const char *stem)
{
	char path[PATH_MAX];
	struct stat st;
	int i, r;

	for (i = 0; i < 2; i++) {
		r = i ? spool_profile_path(s->spool, stem, path, sizeof(path))
		      : spool_sidecar_path(s->spool, stem, path, sizeof(path));
		if (r)
			return r;
		if (lstat(path, &st))
			return -errno;
		if (!S_ISREG(st.st_mode))
			return -ELOOP;
	}
	return 0;
}

/* Never through a link put there since ship_pair_regular (-ELOOP, as that check says). */
static int ship_read_file(const char *path, uint8_t **out, size_t *len)
{
	int r = fileio_read_file(path, FILEIO_NOFOLLOW, SHIP_MAX_PROFILE_BYTES, out, len);

	return r == -EINVAL ? -ELOOP : r;
}

static double ship_jitter(struct ship *s, double base)
{
	/* xorshift64: jitter needs no quality, only to keep hosts from retrying in step */
	s->seed ^= s->seed << 13;
	s->seed ^= s->seed >> 7;
	s->seed ^= s->seed << 17;
	return base / 2 + base / 2 * ((double)(s->seed >> 11) / (double)(1ULL << 53));
}

/* The next wait after a retryable failure: doubling from backoff_min, jittered, capped. */
static int64_t ship_backoff(struct ship *s, int64_t retry_after)
{
	const struct ship_conf *c = s->conf;
	double base = c->backoff_min;
	unsigned int i;

	for (i = 1; i < s->failures && base < c->backoff_max; i++)
		base *= 2;
	if (base > c->backoff_max)
		base = c->backoff_max;
	base = ship_jitter(s, base);
	if (retry_after > SHIP_RETRY_AFTER_MAX)
		retry_after = SHIP_RETRY_AFTER_MAX;
	if (retry_after > 0 && (double)retry_after > base)
		base = (double)retry_after;
	return (int64_t)(base * NS);
}

static void ship_count(struct ship *s, enum ship_failure f)
{
	pthread_mutex_lock(&s->mu);
	s->st.failures[f]++;
	pthread_mutex_unlock(&s->mu);
}

/* A pair given up without a send: counted in *counter (a member of s->st), removed. */
static void ship_drop(struct ship *s, uint64_t *counter, const char *stem)
{
	pthread_mutex_lock(&s->mu);
	(*counter)++;
	pthread_mutex_unlock(&s->mu);
	spool_remove(s->spool, stem);
}

/* Profiles waiting, the one just sent (still in the spool) not counted. */
static uint64_t ship_pending(struct ship *s)
{
	struct spool_stats sp;

	spool_stats(s->spool, &sp);
	return sp.files ? sp.files - 1 : 0;
}

/* One line per change of state, never one per failed request. */
static void ship_set_state(struct ship *s, enum ship_state to, const char *why)
{
	enum ship_state from;
	int64_t now = clock_mono_ns();

	pthread_mutex_lock(&s->mu);
	from = s->st.state;
	s->st.state = to;
	pthread_mutex_unlock(&s->mu);
	if (from == to)
		return;
	if (to == SHIP_STATE_UP) {
		if (from == SHIP_STATE_UNKNOWN)
			log_info("collector %s: up (%s)", s->conf->url,
				 protocol_name(s->conf->protocol));
		else
			log_info("collector %s: back up after %.0f s; %" PRIu64
				 " profiles waiting in the spool",
				 s->conf->url, (double)(now - s->down_since) / NS, ship_pending(s));
		return;
	}
	if (from == SHIP_STATE_UP || from == SHIP_STATE_UNKNOWN)
		s->down_since = now;
	if (to == SHIP_STATE_AUTH)
		log_error("collector %s: %s; profiles are kept, retrying every %g s (check "
			  "the credentials and upload_url, then reload)",
			  s->conf->url, why, s->conf->auth_backoff);
	else
		log_warn("collector %s: down (%s); profiles are kept and retried with backoff up "
			 "to %g s",
			 s->conf->url, why, s->conf->backoff_max);
}

/* A failure that will be retried on the same profile. */
static enum outcome ship_retry(struct ship *s, enum ship_failure f, const char *why,
			       int64_t retry_after, int64_t *wait)
{
	ship_count(s, f);
	if (s->failures < 64)
		s->failures++;
	if (f == SHIP_FAIL_AUTH || f == SHIP_FAIL_ENDPOINT) {
		ship_set_state(s, SHIP_STATE_AUTH, why);
		*wait = (int64_t)(s->conf->auth_backoff * NS);
		return OUT_RETRY;
	}
	ship_set_state(s, SHIP_STATE_DOWN, why);
	*wait = ship_backoff(s, retry_after);
	return OUT_RETRY;
}

static enum ship_failure ship_cause_failure(enum upload_cause c)
{
	switch (c) {
	case UPLOAD_TIMEOUT:
		return SHIP_FAIL_TIMEOUT;
	case UPLOAD_TLS:
		return SHIP_FAIL_TLS;
	default:
		return SHIP_FAIL_NETWORK;
	}
}

static enum outcome ship_answer(struct ship *s, const char *stem,
				const struct protocol_request *req, struct upload_result *res,
				int64_t *wait)
{
	const struct ship_conf *c = s->conf;
	char why[512], msg[MAX_LOGGED_REPLY + 8], perr[256];
	long st = res->status;

	if (res->cause != UPLOAD_HTTP) {
		if (!res->reached)
			ship_set_inflight(s, ""); /* nothing of it reached the server */
		snprintf(why, sizeof(why), "%s: %s", upload_cause_name(res->cause), res->error);
		return ship_retry(s, ship_cause_failure(res->cause), why, -1, wait);
	}
	pthread_mutex_lock(&s->mu);
	s->st.latency_sum += res->seconds;
	s->st.latency_count++;
	pthread_mutex_unlock(&s->mu);
	/* what the server said, readable and bounded, for the one log line */
	protocol_error_reason(c->protocol, res->headers, res->headers_len, res->body, res->body_len,
			      msg, sizeof(msg));
	if (st >= 200 && st < 300) {
		if (protocol_check_reply(c->protocol, res->headers, res->headers_len, res->body,
					 res->body_len, perr, sizeof(perr))) {
			log_error("collector %s: \"%s\" refused despite HTTP %ld: %s; moved to "
				  "%s/%s/",
				  c->url, stem, st, perr, spool_dir(s->spool), SHIP_REJECTED_DIR);
			ship_count(s, SHIP_FAIL_PROTOCOL);
			ship_move_aside(s, stem);
			return OUT_NEXT;
		}
		s->failures = 0;
		/* counted first: whoever sees the profile gone sees it counted */
		pthread_mutex_lock(&s->mu);
		s->st.uploads_ok++;
		s->st.bytes_sent += req->len;
		s->st.last_success_ns = clock_real_ns();
		/* delivered again: the collector may hold it twice */
		if (!strcmp(s->resend, stem)) {
			s->st.resends++;
			s->resend[0] = '\0';
		}
		pthread_mutex_unlock(&s->mu);
		ship_set_state(s, SHIP_STATE_UP, NULL);
		spool_remove(s->spool, stem);
		s->warned_old = false;
		return OUT_NEXT;
	}
	/* an answer: the server did not take it, and a restart must not count a resend */
	ship_set_inflight(s, "");
	snprintf(why, sizeof(why), "HTTP %ld%s%s", st, msg[0] ? ": " : "", msg);
	if (st == 401 || st == 403)
		return ship_retry(s, SHIP_FAIL_AUTH, why, -1, wait);
	if (st == 429)
		return ship_retry(s, SHIP_FAIL_HTTP_429, why, res->retry_after, wait);
	if (st >= 500 || st == 408) {
		if (strcmp(s->stuck, stem)) {
			snprintf(s->stuck, sizeof(s->stuck), "%s", stem);
			s->stuck_count = 0;
		}
		s->stuck_count++;
		return ship_retry(s, SHIP_FAIL_HTTP_5XX, why, res->retry_after, wait);
	}
	/* a wrong URL would otherwise move every profile aside */
	if (st < 200 || (st >= 300 && st < 400) || st == 404 || st == 405) {
		snprintf(why, sizeof(why),
			 "HTTP %ld at %s: is upload_url (and upload_protocol) right?", st,
			 req->url);
		return ship_retry(s, SHIP_FAIL_ENDPOINT, why, -1, wait);
	}
	log_warn("collector %s: \"%s\" rejected with HTTP %ld%s%s; moved to %s/%s/", c->url, stem,
		 st, msg[0] ? ": " : "", msg, spool_dir(s->spool), SHIP_REJECTED_DIR);
	ship_count(s, SHIP_FAIL_REJECTED);
	/* the collector answers: it is up, this profile was the problem */
	s->failures = 0;
	ship_set_state(s, SHIP_STATE_UP, NULL);
	ship_move_aside(s, stem);
	return OUT_NEXT;
}

static enum outcome ship_one(struct ship *s, const struct spool_entry *e, int64_t *wait)
{
	const struct ship_conf *c = s->conf;
	struct protocol_request req = {0};
	struct upload_result res;
	struct sidecar *sc = NULL;
	uint8_t *body = NULL;
	size_t len = 0;
	char path[PATH_MAX], err[256];
	enum outcome out = OUT_NEXT;
	int r;

	/*
	 * The spool is root's (spool__new refuses another's), but a link or a FIFO in it is still
	 * neither followed nor sent: the pair leaves the queue, counted, said once.
	 */
	r = ship_pair_regular(s, e->stem);
	if (r == -ENOENT)
		goto cleanup; /* evicted meanwhile */
	if (r == -ELOOP) {
		log_warn(
			"upload: \"%s\": a file of the pair in %s is not a regular file (a link?): "
			"not followed, not sent; the pair is removed",
			e->stem, spool_dir(s->spool));
		ship_drop(s, &s->st.not_regular, e->stem);
		goto cleanup;
	}
	r = spool_sidecar_path(s->spool, e->stem, path, sizeof(path));
	if (!r) {
		sc = sidecar__read(path, err, sizeof(err));
		if (!sc)
			r = errno > 0 ? -errno : -EIO;
	}
	if (r == -ENOENT)
		goto cleanup; /* evicted meanwhile */
	if (!sc) {
		log_error("upload: \"%s\": cannot read the sidecar (%s%s%s); moved to %s/%s/",
			  e->stem, strerror(-r), r == -EINVAL ? ": " : "", r == -EINVAL ? err : "",
			  spool_dir(s->spool), SHIP_REJECTED_DIR);
		ship_count(s, SHIP_FAIL_PROTOCOL);
		ship_move_aside(s, e->stem);
		goto cleanup;
	}
	if (c->max_age > 0 && clock_real_ns() - sc->until_ns > (int64_t)(c->max_age * NS)) {
		if (!s->warned_old)
			log_warn("upload: dropping profiles older than upload_max_age (%.0f s), "
				 "first \"%s\": the collector would refuse them",
				 c->max_age, e->stem);
		s->warned_old = true;
		ship_drop(s, &s->st.dropped_too_old, e->stem);
		goto cleanup;
	}
	r = spool_profile_path(s->spool, e->stem, path, sizeof(path));
	if (!r)
		r = ship_read_file(path, &body, &len);
	if (r == -ENOENT)
		goto cleanup;
	if (!r)
		r = protocol_build(c->protocol, c->url, sc, body, len, &req);
	if (r == -ENOMEM) {
		*wait = NS;
		out = OUT_RETRY;
		goto cleanup;
	}
	if (r) {
		log_error("upload: \"%s\": cannot build the request: %s; moved to %s/%s/", e->stem,
			  strerror(-r), spool_dir(s->spool), SHIP_REJECTED_DIR);
		ship_count(s, SHIP_FAIL_PROTOCOL);
		ship_move_aside(s, e->stem);
		goto cleanup;
	}
	if (req.labels_trimmed && !s->warned_labels) {
		log_warn("upload: \"%s\": %zu series labels left out or cut to fit Pyroscope's "
			 "default limits (30 labels, values of 2048 bytes); see docs/shipping.md",
			 e->stem, req.labels_trimmed);
		s->warned_labels = true;
	}
	r = ship_set_inflight(s, e->stem);
	if (r)
		log_debug("upload: cannot record \"%s\" in %s: %s", e->stem, SHIP_INFLIGHT_FILE,
			  strerror(-r));
	r = upload_post(c->up, req.url, req.content_type, req.headers, req.body, req.len, &s->stop,
			&res);
	if (r) {
		*wait = NS;
		out = OUT_RETRY;
		goto cleanup;
	}
	if (res.cause == UPLOAD_ABORTED) {
		upload_result_release(&res);
		out = OUT_STOP;
		goto cleanup;
	}
	out = ship_answer(s, e->stem, &req, &res, wait);
	upload_result_release(&res);
cleanup:
	protocol_request_release(&req);
	sidecar__free(sc);
	free(body);
	return out;
}

/* ---- the thread --------------------------------------------------------------------------- */

/*
 * Takes new options if any (under mu); returns the old ones, for the caller to free after
 * unlocking (closing a connection is I/O). A new configuration retries at once.
 */
static struct ship_conf *ship_take_pending(struct ship *s)
{
	struct ship_conf *c = s->pending, *old;

	if (!c)
		return NULL;
	s->pending = NULL;
	old = s->conf;
	s->conf = c;
	s->failures = 0;
	return old;
}

/*
 * The server failed `stuck` with a 5xx SHIP_POISON_AFTER times: `next` goes first. If the server
 * takes it (or answers it, moving it aside), it is up and fails on `stuck` alone: that one moves
 * aside too instead of blocking every later profile until upload_max_age. Else both stay.
 */
static enum outcome ship_probe_past(struct ship *s, const struct spool_entry *stuck,
				    const struct spool_entry *next, int64_t *wait)
{
	enum outcome out = ship_one(s, next, wait);

	if (out != OUT_NEXT)
		return out;
	log_error("collector %s: \"%s\" failed with a server error %u times while the next "
		  "profile went through: moved to %s/%s/",
		  s->conf->url, stuck->stem, s->stuck_count, spool_dir(s->spool),
		  SHIP_REJECTED_DIR);
	ship_count(s, SHIP_FAIL_REJECTED);
	ship_move_aside(s, stuck->stem);
	s->stuck[0] = '\0';
	s->stuck_count = 0;
	return OUT_NEXT;
}

/* Walks the spool once. OUT_NEXT: everything listed was handled; else wait or stop. */
static enum outcome ship_pass(struct ship *s, int64_t *wait, size_t *handled)
{
	struct spool_entry *v = NULL;
	enum outcome out = OUT_NEXT;
	size_t n = 0, i;
	bool pending;

	*handled = 0;
	/* the oldest few: a long backlog is not copied whole for every pass after a backoff */
	if (spool_list(s->spool, &v, &n, SHIP_PASS_MAX)) {
		*wait = NS;
		return OUT_RETRY;
	}
	for (i = 0; i < n; i++) {
		if (atomic_load(&s->stop)) {
			out = OUT_STOP;
			break;
		}
		pthread_mutex_lock(&s->mu);
		pending = s->pending != NULL;
		pthread_mutex_unlock(&s->mu);
		if (pending)
			break; /* re-listed with the new options */
		if (i == 0 && n > 1 && s->stuck_count >= SHIP_POISON_AFTER &&
		    !strcmp(v[0].stem, s->stuck)) {
			out = ship_probe_past(s, &v[0], &v[1], wait);
			if (out != OUT_NEXT)
				break;
			*handled += 2;
			i++;
			continue;
		}
		out = ship_one(s, &v[i], wait);
		if (out != OUT_NEXT)
			break;
		(*handled)++;
	}
	free(v);
	return out;
}

static void ship_wait_until(struct ship *s, int64_t deadline_mono)
{
	struct timespec ts = {.tv_sec = deadline_mono / NS, .tv_nsec = deadline_mono % NS};

	pthread_cond_timedwait(&s->cond, &s->mu, &ts);
}

static void *ship_main(void *arg)
{
	struct ship *s = arg;
	struct ship_conf *old;
	int64_t wait = 0, now, until;
	enum outcome out;
	size_t handled;

	ship_read_inflight(s);
	ship_sweep_rejected(s);
	s->next_sweep = clock_mono_ns() + SWEEP_EVERY_NS;
	pthread_mutex_lock(&s->mu);
	while (!atomic_load(&s->stop)) {
		old = ship_take_pending(s);
		s->kicked = false;
		pthread_mutex_unlock(&s->mu);
		ship_conf_free(old);

		out = ship_pass(s, &wait, &handled);
		now = clock_mono_ns();
		if (now >= s->next_sweep) {
			ship_sweep_rejected(s);
			s->next_sweep = now + SWEEP_EVERY_NS;
		}

		pthread_mutex_lock(&s->mu);
		if (out == OUT_STOP)
			break;
		if (out == OUT_RETRY) {
			/* a backoff: only a stop or new options end it early */
			until = now + wait;
			while (!atomic_load(&s->stop) && !s->pending && clock_mono_ns() < until)
				ship_wait_until(s, until);
			continue;
		}
		if (handled)
			continue; /* more may have come meanwhile */
		/* idle: until kicked, or the next sweep */
		while (!atomic_load(&s->stop) && !s->kicked && !s->pending &&
		       clock_mono_ns() < s->next_sweep)
			ship_wait_until(s, s->next_sweep);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- API ---------------------------------------------------------------------------------- */

struct ship *ship__new(struct spool *spool, const struct ship_opts *o, char *err, size_t errlen)
{
	sigset_t all, old;
	pthread_condattr_t ca;
	struct ship *s;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->spool = spool;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&s->stop, false);
	if (getrandom(&s->seed, sizeof(s->seed), GRND_NONBLOCK) != sizeof(s->seed) || !s->seed)
		s->seed = (uint64_t)clock_real_ns() | 1;
	s->conf = ship_conf_new(o, err, errlen);
	if (!s->conf) {
		r = -errno;
		goto fail;
	}
	/*
	 * The thread starts with every signal blocked: the process's signals go to the main
	 * loop's signalfd, and a SIGPIPE from a TLS write to a closed connection stays pending
	 * instead of killing the daemon (the write fails with EPIPE; libcurl handles that).
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&s->thread, NULL, ship_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		snprintf(err, errlen, "cannot start the upload thread: %s", strerror(-r));
		goto fail;
	}
	s->started = true;
	return s;
fail:
	ship__free(s);
	errno = -r;
	return NULL;
}

void ship__free(struct ship *s)
{
	if (!s)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		atomic_store(&s->stop, true);
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	ship_conf_free(s->pending);
	ship_conf_free(s->conf);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int ship_reconfigure(struct ship *s, const struct ship_opts *o, char *err, size_t errlen)
{
	struct ship_conf *c = ship_conf_new(o, err, errlen), *old;

	if (!c)
		return -errno;
	pthread_mutex_lock(&s->mu);
	old = s->pending;
	s->pending = c;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	ship_conf_free(old);
	return 0;
}

void ship_kick(struct ship *s)
{
	pthread_mutex_lock(&s->mu);
	s->kicked = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

void ship_stats(struct ship *s, struct ship_stats *out)
{
	struct spool_stats sp;

	spool_stats(s->spool, &sp);
	pthread_mutex_lock(&s->mu);
	*out = s->st;
	pthread_mutex_unlock(&s->mu);
	out->backlog_profiles = sp.files;
	out->backlog_bytes = sp.bytes;
	out->oldest_age = 0;
	/* from the spool itself: right during a backoff and after evictions */
	if (sp.oldest_from_ns) {
		int64_t age = clock_real_ns() - sp.oldest_from_ns;

		out->oldest_age = age > 0 ? (double)age / NS : 0;
	}
}
