// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ship.c - delivery from a real spool directory to a real HTTP server on loopback
 * (httpd.h): a 2xx removes, 5xx and 429 are retried on the same profile in order (Retry-After
 * honoured), 401 keeps and backs off long, 400 moves aside, too old is dropped, a stop aborts a
 * hung upload, and a restart after it counts the resend. Deadlines are generous; nothing asserts
 * how fast it went, only what arrived, in which order, and what the counters say.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../httpd.h"
#include "output/ship.h"
#include "output/spool.h"
#include "../tmpdir.h"

#define NS 1000000000LL

static char spooldir[256];
static struct httpd *srv;
static struct spool *sp;
static struct ship *sh;

static void setup(void)
{
	tmpdir_make("test_ship");
	snprintf(spooldir, sizeof(spooldir), "%s/spool", tmpdir);
	sp = spool__new(spooldir, 0, 0, NULL, 0);
	cr_assert_not_null(sp, "spool__new: %s", strerror(errno));
	srv = NULL;
	sh = NULL;
}

static void teardown(void)
{
	ship__free(sh);
	httpd_stop(srv);
	spool__free(sp);
	tmpdir_remove();
}

TestSuite(ship, .init = setup, .fini = teardown);

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* A profile whose body is "profile-<i>", ending `age` seconds ago, i seconds apart. */
static void put(int i, double age)
{
	static const struct spool_label labels[] = {{"service_name", "shop"}, {"host", "h1"}};
	int64_t until = now_ns() - (int64_t)(age * NS) - (10 - i) * NS;
	struct spool_meta m = {
		.service = "shop",
		.from_ns = until - 10 * NS,
		.until_ns = until,
		.sample_rate = 19,
		.period_ns = NS / 19,
		.labels = labels,
		.nlabels = 2,
	};
	char body[32];
	int n = snprintf(body, sizeof(body), "profile-%d", i);

	cr_assert_eq(spool_write(sp, &m, body, (size_t)n, NULL, 0), 0);
}

static struct ship_opts opts(void)
{
	static char url[128];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv ? srv->port : 1);
	return (struct ship_opts){
		.url = url,
		.protocol = PROTOCOL_PYROSCOPE,
		.upload = {.connect_timeout_ms = 5000, .timeout_ms = 30000},
		.max_age = 3600,
		.backoff_min = 0.05,
		.backoff_max = 0.2,
		.auth_backoff = 0.3,
		.rejected_max_age = 7 * 24 * 3600,
	};
}

static void start(const struct ship_opts *o)
{
	char err[512];

	sh = ship__new(sp, o, err, sizeof(err));
	cr_assert_not_null(sh, "ship__new: %s", err);
	ship_kick(sh);
}

static uint64_t spool_files(void)
{
	struct spool_stats st;

	spool_stats(sp, &st);
	return st.files;
}

static bool spool_empty(void *ctx)
{
	return spool_files() == 0;
}

static bool nreqs_at_least(void *ctx)
{
	return httpd_nreqs(srv) >= (size_t)(uintptr_t)ctx;
}

static struct ship_stats stats(void)
{
	struct ship_stats st;

	ship_stats(sh, &st);
	return st;
}

static bool state_is(void *ctx)
{
	return stats().state == (enum ship_state)(uintptr_t)ctx;
}

/* The bodies the server got, in order, as "profile-0,profile-1,...". */
static void bodies(char *out, size_t len)
{
	size_t i, n = 0;

	out[0] = '\0';
	pthread_mutex_lock(&srv->mu);
	for (i = 0; i < srv->nreqs && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s", i ? "," : "", srv->reqs[i].body);
	pthread_mutex_unlock(&srv->mu);
}

/* Ships the spool to a server scripted by steps until the spool is empty: got, the bodies it
 * received, in order. */
static void ship_all(const struct httpd_step *steps, size_t nsteps, char *got, size_t len)
{
	struct ship_opts o;

	srv = httpd_start(steps, nsteps);
	o = opts();
	start(&o);
	cr_assert(httpd_wait(spool_empty, NULL, 30), "spool still has %" PRIu64, spool_files());
	bodies(got, len);
}

Test(ship, ok_removes_every_profile_oldest_first)
{
	static const struct httpd_step ok[] = {{.status = 200}};
	struct ship_stats st;
	char got[512];

	put(0, 0);
	put(1, 0);
	put(2, 0);
	ship_all(ok, 1, got, sizeof(got));
	cr_assert_str_eq(got, "profile-0,profile-1,profile-2");
	cr_assert(!strncmp(srv->reqs[0].head, "POST /ingest?", 13), "%s", srv->reqs[0].head);
	st = stats();
	cr_assert_eq(st.uploads_ok, 3);
	cr_assert_eq(st.bytes_sent, 3 * strlen("profile-0"));
	cr_assert_eq(st.latency_count, 3);
	cr_assert_eq(st.state, SHIP_STATE_UP);
	cr_assert_eq(st.resends, 0);
	cr_assert_gt(st.last_success_ns, 0);

	/* later profiles: a kick sends them */
	put(3, 0);
	ship_kick(sh);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	cr_assert_eq(stats().uploads_ok, 4);
}

Test(ship, a_backlog_longer_than_one_pass_goes_whole_and_in_order)
{
	static const struct httpd_step ok[] = {{.status = 200}};
	struct ship_opts o;
	char want[64];
	size_t i;

	for (i = 0; i < 150; i++)
		put((int)i, 0);
	srv = httpd_start(ok, 1);
	o = opts();
	start(&o);
	cr_assert(httpd_wait(spool_empty, NULL, 60), "spool still has %" PRIu64, spool_files());
	cr_assert_eq(stats().uploads_ok, 150);
	cr_assert_eq(stats().oldest_age, 0);
	/* the stand-in keeps the first HTTPD_MAX_REQS requests */
	for (i = 0; i < HTTPD_MAX_REQS; i++) {
		snprintf(want, sizeof(want), "profile-%zu", i);
		cr_assert_str_eq(srv->reqs[i].body, want);
	}
}

Test(ship, server_errors_retry_the_same_profile_in_order)
{
	static const struct httpd_step steps[] = {
		{.status = 500, .body = "boom"}, {.status = 502}, {.status = 200}};
	struct ship_stats st;
	char got[512];

	put(0, 0);
	put(1, 0);
	ship_all(steps, 3, got, sizeof(got));
	cr_assert_str_eq(got, "profile-0,profile-0,profile-0,profile-1");
	st = stats();
	cr_assert_eq(st.failures[SHIP_FAIL_HTTP_5XX], 2);
	cr_assert_eq(st.uploads_ok, 2);
	cr_assert_eq(st.state, SHIP_STATE_UP);
}

/* A profile the server fails on alone (5xx every time) does not block the ones after it. */
Test(ship, a_profile_failing_alone_moves_aside_after_the_next_goes_through)
{
	static const struct httpd_step steps[] = {{.status = 500, .body = "cannot parse"},
						  {.status = 500},
						  {.status = 500},
						  {.status = 500},
						  {.status = 500},
						  {.status = 200}};
	struct ship_stats st;
	char got[512];

	put(0, 0);
	put(1, 0);
	put(2, 0);
	ship_all(steps, 6, got, sizeof(got));
	cr_assert_str_eq(got, "profile-0,profile-0,profile-0,profile-0,profile-0,profile-1,"
			      "profile-2");
	st = stats();
	cr_assert_eq(st.failures[SHIP_FAIL_HTTP_5XX], 5);
	cr_assert_eq(st.failures[SHIP_FAIL_REJECTED], 1);
	cr_assert_eq(st.rejected_moved, 1);
	cr_assert_eq(st.uploads_ok, 2);
}

/* A server that is down fails the probe too: nothing moves aside. */
Test(ship, a_server_failing_everything_moves_nothing_aside)
{
	static const struct httpd_step steps[] = {{.status = 503}};
	struct ship_opts o;
	struct ship_stats st;

	put(0, 0);
	put(1, 0);
	srv = httpd_start(steps, 1);
	o = opts();
	start(&o);
	cr_assert(httpd_wait(nreqs_at_least, (void *)(uintptr_t)14, 60));
	st = stats();
	cr_assert_eq(st.failures[SHIP_FAIL_REJECTED], 0);
	cr_assert_eq(st.rejected_moved, 0);
	cr_assert_eq(spool_files(), 2);
}

Test(ship, too_many_requests_honours_retry_after)
{
	static const struct httpd_step steps[] = {{.status = 429, .retry_after = "2"},
						  {.status = 200}};
	struct ship_opts o;
	double gap;

	put(0, 0);
	srv = httpd_start(steps, 2);
	o = opts(); /* backoff_max 0.2 s: without Retry-After the retry would come much sooner */
	start(&o);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	cr_assert_eq(httpd_nreqs(srv), 2);
	/*
	 * A lower bound, not a speed: the first request was whole before its answer left, the
	 * retry is sent 2 s after that answer came, and whole later still, so a ship that honours
	 * the header gives 2 s or more however slow the machine (load only lengthens it); one that
	 * ignores it gives its backoff, 0.2 s at most. Nothing asserts how soon after 2 s it came.
	 */
	gap = srv->reqs[1].at - srv->reqs[0].at;
	cr_assert(gap >= 1.999, "retried after %.3f s despite Retry-After: 2", gap);
	cr_assert_eq(stats().failures[SHIP_FAIL_HTTP_429], 1);
}

static struct httpd *control_srv;

static bool control_retried(void *ctx)
{
	return httpd_nreqs(control_srv) >= (size_t)(uintptr_t)ctx;
}

/*
 * A 401 backs off for auth_backoff (minutes by default), not for the network backoff. The
 * reference for "long" is a second ship, beside it in the same process, against a server that
 * answers 503 with the same options but for the default auth backoff: once that one has made
 * a dozen requests (its retries 0.05-0.2 s apart, its own thread's time however loaded the
 * machine is), the first has made its one request and no retry.
 */
Test(ship, unauthorized_keeps_profiles_and_backs_off_long)
{
	static const struct httpd_step steps[] = {{.status = 401, .body = "no token"}};
	static const struct httpd_step down[] = {{.status = 503}};
	static char control_url[128];
	struct ship_opts o, co;
	struct ship_stats st;
	struct spool *csp;
	struct ship *csh;
	char cdir[300], err[512];

	put(0, 0);
	put(1, 0);
	srv = httpd_start(steps, 1);
	o = opts();
	o.auth_backoff = 0; /* the default: minutes */
	start(&o);
	cr_assert(httpd_wait(state_is, (void *)(uintptr_t)SHIP_STATE_AUTH, 30));

	snprintf(cdir, sizeof(cdir), "%s/control", tmpdir);
	csp = spool__new(cdir, 0, 0, NULL, 0);
	cr_assert_not_null(csp, "spool__new: %s", strerror(errno));
	{
		struct spool_meta m = {.service = "shop",
				       .from_ns = now_ns() - 10 * NS,
				       .until_ns = now_ns(),
				       .sample_rate = 19,
				       .period_ns = NS / 19};

		cr_assert_eq(spool_write(csp, &m, "control", 7, NULL, 0), 0);
	}
	control_srv = httpd_start(down, 1);
	co = opts();
	snprintf(control_url, sizeof(control_url), "http://127.0.0.1:%d", control_srv->port);
	co.url = control_url;
	csh = ship__new(csp, &co, err, sizeof(err));
	cr_assert_not_null(csh, "ship__new: %s", err);
	ship_kick(csh);
	cr_assert(httpd_wait(control_retried, (void *)(uintptr_t)12, 60),
		  "the control ship made %zu requests in 60 s", httpd_nreqs(control_srv));
	cr_assert_eq(httpd_nreqs(srv), 1, "%zu requests after a 401, while the 503 ship made %zu",
		     httpd_nreqs(srv), httpd_nreqs(control_srv));
	ship__free(csh);
	httpd_stop(control_srv);
	spool__free(csp);

	st = stats();
	cr_assert_eq(st.failures[SHIP_FAIL_AUTH], 1);
	cr_assert_eq(st.uploads_ok, 0);
	cr_assert_eq(spool_files(), 2);
	cr_assert_eq(st.backlog_profiles, 2);
	/* profile-0 began 20 s ago (put): the age comes from the spool, also during the backoff */
	cr_assert_geq(st.oldest_age, 19.9, "oldest_age %.1f s", st.oldest_age);
}

Test(ship, reconfigure_after_auth_failure_retries_at_once)
{
	static const struct httpd_step steps[] = {{.status = 403}, {.status = 200}};
	struct ship_opts o;
	char err[256];

	put(0, 0);
	srv = httpd_start(steps, 2);
	o = opts();
	o.auth_backoff = 0;
	start(&o);
	cr_assert(httpd_wait(state_is, (void *)(uintptr_t)SHIP_STATE_AUTH, 30));
	cr_assert_eq(ship_reconfigure(sh, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	cr_assert_eq(stats().state, SHIP_STATE_UP);
}

Test(ship, bad_request_moves_the_profile_aside_and_goes_on)
{
	static const struct httpd_step steps[] = {{.status = 400, .body = "invalid profile"},
						  {.status = 200}};
	struct ship_stats st;
	char got[512], path[512];
	struct stat sb;
	struct spool_entry *v;
	size_t n;

	put(0, 0);
	put(1, 0);
	cr_assert_eq(spool_list(sp, &v, &n, 0), 0);
	cr_assert_eq(n, 2);
	ship_all(steps, 2, got, sizeof(got));
	cr_assert_str_eq(got, "profile-0,profile-1");
	snprintf(path, sizeof(path), "%s/rejected/%s.pb.gz", spooldir, v[0].stem);
	cr_assert_eq(stat(path, &sb), 0, "%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/rejected/%s.json", spooldir, v[0].stem);
	cr_assert_eq(stat(path, &sb), 0, "%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/rejected/%s.pb.gz", spooldir, v[1].stem);
	cr_assert_neq(stat(path, &sb), 0);
	free(v);
	st = stats();
	cr_assert_eq(st.failures[SHIP_FAIL_REJECTED], 1);
	cr_assert_eq(st.rejected_moved, 1);
	cr_assert_eq(st.uploads_ok, 1);
}

Test(ship, a_2xx_that_says_failure_moves_aside)
{
	/* gRPC-web's Trailers-Only answer: HTTP 200, the error among the headers, no body */
	static const struct httpd_step steps[] = {
		{.status = 200, .header = "grpc-status: 3\r\ngrpc-message: bad%20profile"},
		{.status = 200, .header = "grpc-status: 0", .body = ""}};
	struct ship_opts o;
	struct ship_stats st;

	put(0, 0);
	srv = httpd_start(steps, 2);
	o = opts();
	o.protocol = PROTOCOL_PARCA;
	start(&o);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	st = stats();
	cr_assert_eq(st.failures[SHIP_FAIL_PROTOCOL], 1);
	cr_assert_eq(st.rejected_moved, 1);
	cr_assert_eq(st.uploads_ok, 0);
	cr_assert_eq(httpd_nreqs(srv), 1);
}

Test(ship, rejected_dir_is_bounded)
{
	static const struct httpd_step steps[] = {{.status = 422}};
	struct ship_opts o;
	char path[512];
	int i;

	for (i = 0; i < 5; i++)
		put(i, 0);
	srv = httpd_start(steps, 1);
	o = opts();
	o.rejected_max_files = 2;
	start(&o);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	cr_assert_eq(stats().rejected_moved, 5);
	cr_assert_eq(stats().rejected_removed, 3);
	snprintf(path, sizeof(path), "%s/rejected", spooldir);
	{
		DIR *d = opendir(path);
		struct dirent *de;
		int files = 0;

		cr_assert_not_null(d);
		while ((de = readdir(d)))
			files += de->d_name[0] != '.';
		closedir(d);
		cr_assert_eq(files, 4);
	}
}

Test(ship, too_old_is_dropped_not_sent)
{
	static const struct httpd_step ok[] = {{.status = 200}};
	struct ship_stats st;
	char got[512];

	put(0, 7200);
	put(1, 0);
	ship_all(ok, 1, got, sizeof(got));
	cr_assert_str_eq(got, "profile-1");
	st = stats();
	cr_assert_eq(st.dropped_too_old, 1);
	cr_assert_eq(st.uploads_ok, 1);
}

Test(ship, refused_connection_then_collector_up)
{
	static const struct httpd_step ok[] = {{.status = 200}};
	struct ship_opts o;
	struct ship_stats st;
	char err[256];
	int port;

	put(0, 0);
	srv = httpd_start(ok, 1);
	port = srv->port;
	httpd_stop(srv); /* the collector is down */
	srv = NULL;
	o = opts();
	{
		static char down[128];

		snprintf(down, sizeof(down), "http://127.0.0.1:%d", port);
		o.url = down;
	}
	start(&o);
	cr_assert(httpd_wait(state_is, (void *)(uintptr_t)SHIP_STATE_DOWN, 30));
	st = stats();
	cr_assert_geq(st.failures[SHIP_FAIL_NETWORK], 1);
	cr_assert_eq(spool_files(), 1);

	srv = httpd_start(ok, 1);
	o = opts();
	cr_assert_eq(ship_reconfigure(sh, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	st = stats();
	cr_assert_eq(st.state, SHIP_STATE_UP);
	cr_assert_eq(st.uploads_ok, 1);
	cr_assert_eq(st.resends, 0);
}

Test(ship, stop_aborts_a_hung_upload_and_restart_counts_the_resend)
{
	static const struct httpd_step hang[] = {{.status = 0}};
	static const struct httpd_step ok[] = {{.status = 200}};
	struct ship_opts o;
	char got[512], path[512], line[256], err[256];
	struct spool_entry *v;
	size_t n;
	double t0;
	FILE *f;
	int port;

	put(0, 0);
	put(1, 0);
	cr_assert_eq(spool_list(sp, &v, &n, 0), 0);
	srv = httpd_start(hang, 1);
	o = opts();
	o.upload.timeout_ms = 600000;
	start(&o);
	cr_assert(httpd_wait(nreqs_at_least, (void *)1, 30));
	t0 = httpd_now();
	ship__free(sh);
	sh = NULL;
	/* a liveness bound: the stop aborts the transfer (this whole test takes about 0.5 s
	 * here), where the transfer's own timeout is ten minutes; how fast is not asserted */
	cr_assert(httpd_now() - t0 < 60, "stopping took %.1f s", httpd_now() - t0);
	cr_assert_eq(spool_files(), 2);
	/* the file names the profile that was cut off */
	snprintf(path, sizeof(path), "%s/.ship-inflight", spooldir);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	cr_assert_str_eq(line, v[0].stem);
	free(v);
	port = srv->port;
	httpd_stop(srv);
	srv = NULL; /* its port refuses now */

	/* the next start, over the same directory, first with the collector down: a failed
	 * attempt is no resend; then up: sent again, byte for byte, counted once */
	spool__free(sp);
	sp = spool__new(spooldir, 0, 0, NULL, 0);
	cr_assert_not_null(sp);
	o = opts();
	{
		static char down[128];

		snprintf(down, sizeof(down), "http://127.0.0.1:%d", port);
		o.url = down;
	}
	start(&o);
	cr_assert(httpd_wait(state_is, (void *)(uintptr_t)SHIP_STATE_DOWN, 30));
	cr_assert_eq(stats().resends, 0);
	srv = httpd_start(ok, 1);
	o = opts();
	cr_assert_eq(ship_reconfigure(sh, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	bodies(got, sizeof(got));
	cr_assert_str_eq(got, "profile-0,profile-1");
	cr_assert_eq(stats().resends, 1);
	cr_assert_eq(stats().uploads_ok, 2);
}

Test(ship, answer_clears_the_inflight_record)
{
	static const struct httpd_step steps[] = {{.status = 503}};
	static const struct httpd_step ok[] = {{.status = 200}};
	struct ship_opts o;

	put(0, 0);
	srv = httpd_start(steps, 1);
	o = opts();
	o.backoff_min = o.backoff_max = 30; /* stopped while waiting, not mid-request */
	start(&o);
	cr_assert(httpd_wait(state_is, (void *)(uintptr_t)SHIP_STATE_DOWN, 30));
	ship__free(sh);
	sh = NULL;
	httpd_stop(srv);
	/* the collector answered every attempt: a restart is no resend */
	srv = httpd_start(ok, 1);
	o = opts();
	start(&o);
	cr_assert(httpd_wait(spool_empty, NULL, 30));
	cr_assert_eq(stats().resends, 0);
}

/* The nth oldest stem in the spool. */
static void stem_of(size_t n, char *out, size_t len)
{
	struct spool_entry *ents = NULL;
	size_t cnt = 0;

	cr_assert_eq(spool_list(sp, &ents, &cnt, 0), 0);
	cr_assert_gt(cnt, n);
	snprintf(out, len, "%s", ents[n].stem);
	free(ents);
}

/*
 * A link (or a FIFO) put in the spool after its start scan, in place of a profile or a sidecar,
 * is never followed, read or sent: the pair goes, counted; what the link points to is untouched.
 */
Test(ship, a_link_or_fifo_in_the_spool_is_not_followed)
{
	static const struct httpd_step ok[] = {{.status = 200}};
	char stem[200], path[512], link_path[512], secret[512], got[512];
	struct stat st;
	FILE *f;

	alarm(60); /* a FIFO opened to read waits for a writer: a hang ends here */
	snprintf(secret, sizeof(secret), "%s/secret", tmpdir);
	f = fopen(secret, "w");
	cr_assert_not_null(f);
	fputs("root-secret", f);
	fclose(f);
	put(0, 0);
	put(1, 0);
	put(2, 0);
	stem_of(0, stem, sizeof(stem));
	cr_assert_eq(spool_profile_path(sp, stem, link_path, sizeof(link_path)), 0);
	cr_assert_eq(unlink(link_path), 0);
	cr_assert_eq(symlink(secret, link_path), 0);
	stem_of(1, stem, sizeof(stem));
	cr_assert_eq(spool_sidecar_path(sp, stem, path, sizeof(path)), 0);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkfifo(path, 0600), 0);

	ship_all(ok, 1, got, sizeof(got));
	cr_assert_str_eq(got, "profile-2");
	cr_assert_eq(stats().not_regular, 2);
	cr_assert_eq(stats().uploads_ok, 1);
	/* the link is gone from the spool, what it pointed to is as it was */
	f = fopen(secret, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(got, sizeof(got), f));
	fclose(f);
	cr_assert_str_eq(got, "root-secret");
	cr_assert_eq(lstat(link_path, &st), -1, "the link is still in the spool");
}
