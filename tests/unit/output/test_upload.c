// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_upload.c - the transport against a real HTTP server on loopback (httpd.h): what a POST
 * carries (headers, credentials from files, body), keep-alive, Retry-After, the bounded answer,
 * the failure classes (refused, TLS, timeout), and a stop that aborts a hung transfer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../httpd.h"
#include "output/upload.h"
#include "../tmpdir.h"

static struct httpd *srv;

static void setup(void)
{
	tmpdir_make("test_upload");
	srv = NULL;
}

static void teardown(void)
{
	httpd_stop(srv);
	tmpdir_remove();
}

TestSuite(upload, .init = setup, .fini = teardown);

static const char *write_file(const char *name, const char *text, mode_t mode)
{
	static char path[4][512];
	static int k;
	char *p = path[k++ % 4];
	FILE *f;

	snprintf(p, 512, "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	chmod(p, mode);
	return p;
}

static struct upload *make(const struct upload_opts *o)
{
	char err[512], warn[512];
	struct upload *u = upload__new(o, err, sizeof(err), warn, sizeof(warn));

	cr_assert_not_null(u, "upload__new: %s", err);
	cr_expect_str_empty(warn);
	return u;
}

static void url_of(char *buf, size_t len, const char *path)
{
	snprintf(buf, len, "http://127.0.0.1:%d%s", srv->port, path);
}

/* The request carries this header, with this value. */
static void expect_header(const struct httpd_req *r, const char *name, const char *want)
{
	char v[256];

	cr_assert(httpd_header(r, name, v, sizeof(v)), "no %s header", name);
	cr_assert_str_eq(v, want, "%s", name);
}

static const struct upload_opts plain = {.connect_timeout_ms = 5000, .timeout_ms = 30000};

Test(upload, post_carries_headers_token_tenant_and_body)
{
	static const struct httpd_step ok[] = {{.status = 200, .body = "fine"}};
	const char *hdrs[] = {"X-Extra: one two", "X-Other:three"};
	const char *proto_hdrs[] = {"Connect-Protocol-Version: 1", NULL};
	struct upload_opts o = plain;
	struct upload_result res;
	struct upload *u;
	char url[128], v[256];
	const uint8_t body[] = {0x1f, 0x8b, 0, 1, 2, 3, 0xff};

	srv = httpd_start(ok, 1);
	o.token_file = write_file("token", "s3cr3t-token\n", 0600);
	o.tenant_id = "team-a";
	o.headers = hdrs;
	o.nheaders = 2;
	u = make(&o);
	url_of(url, sizeof(url), "/ingest?name=shop&from=1");
	cr_assert_eq(upload_post(u, url, "application/octet-stream", proto_hdrs, body, sizeof(body),
				 NULL, &res),
		     0);
	cr_assert_eq(res.cause, UPLOAD_HTTP, "%s", res.error);
	cr_assert_eq(res.status, 200);
	cr_assert_str_eq(res.body, "fine");
	cr_assert_not_null(res.headers);
	cr_assert(!strncmp(res.headers, "HTTP/1.1 200", 12), "%s", res.headers);
	cr_assert(strstr(res.headers, "\r\nContent-Length: 4\r\n"), "%s", res.headers);
	cr_assert_eq(res.retry_after, -1);
	cr_assert_eq(res.bytes_sent, sizeof(body));
	upload_result_release(&res);

	cr_assert_eq(httpd_nreqs(srv), 1);
	cr_assert(!strncmp(srv->reqs[0].head, "POST /ingest?name=shop&from=1 HTTP/1.1\r\n", 40),
		  "%s", srv->reqs[0].head);
	cr_assert_eq(srv->reqs[0].len, sizeof(body));
	cr_assert_eq(memcmp(srv->reqs[0].body, body, sizeof(body)), 0);
	expect_header(&srv->reqs[0], "Authorization", "Bearer s3cr3t-token");
	expect_header(&srv->reqs[0], "X-Scope-OrgID", "team-a");
	expect_header(&srv->reqs[0], "X-Extra", "one two");
	expect_header(&srv->reqs[0], "X-Other", "three");
	expect_header(&srv->reqs[0], "Content-Type", "application/octet-stream");
	expect_header(&srv->reqs[0], "Connect-Protocol-Version", "1");
	cr_assert_not(httpd_header(&srv->reqs[0], "Expect", v, sizeof(v)));
	upload__free(u);
}

Test(upload, basic_auth_from_file)
{
	static const struct httpd_step ok[] = {{.status = 204}};
	struct upload_opts o = plain;
	struct upload_result res;
	struct upload *u;
	char url[128];

	srv = httpd_start(ok, 1);
	o.basic_auth_file = write_file("basic", "alice:open sesame\n", 0640);
	u = make(&o);
	url_of(url, sizeof(url), "/x");
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "b", 1, NULL, &res), 0);
	cr_assert_eq(res.status, 204);
	upload_result_release(&res);
	/* base64("alice:open sesame") */
	expect_header(&srv->reqs[0], "Authorization", "Basic YWxpY2U6b3BlbiBzZXNhbWU=");
	upload__free(u);
}

Test(upload, one_connection_for_many_posts)
{
	static const struct httpd_step ok[] = {{.status = 200}};
	struct upload_result res;
	struct upload *u;
	char url[128];
	int i;

	srv = httpd_start(ok, 1);
	u = make(&plain);
	url_of(url, sizeof(url), "/x");
	for (i = 0; i < 5; i++) {
		cr_assert_eq(upload_post(u, url, "text/plain", NULL, "abc", 3, NULL, &res), 0);
		cr_assert_eq(res.status, 200, "%d: %s", i, res.error);
		upload_result_release(&res);
	}
	cr_assert_eq(httpd_nreqs(srv), 5);
	cr_assert_eq(srv->connections, 1, "keep-alive: %u connections", srv->connections);
	upload__free(u);
}

Test(upload, retry_after_seconds_and_date)
{
	static char date[64];
	struct httpd_step steps[] = {
		{.status = 429, .retry_after = "7"},
		{.status = 503, .retry_after = date},
		{.status = 429},
	};
	time_t t = time(NULL) + 120;
	struct upload_result res;
	struct upload *u;
	char url[128];

	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime(&t));
	srv = httpd_start(steps, 3);
	u = make(&plain);
	url_of(url, sizeof(url), "/x");
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "a", 1, NULL, &res), 0);
	cr_assert_eq(res.status, 429);
	cr_assert_eq(res.retry_after, 7);
	upload_result_release(&res);
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "a", 1, NULL, &res), 0);
	cr_assert_eq(res.status, 503);
	/* a date two minutes ahead: about 120 s, whatever the test took so far */
	cr_assert(res.retry_after > 60 && res.retry_after <= 121, "%" PRId64, res.retry_after);
	upload_result_release(&res);
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "a", 1, NULL, &res), 0);
	cr_assert_eq(res.status, 429);
	cr_assert_eq(res.retry_after, -1);
	upload_result_release(&res);
	upload__free(u);
}

Test(upload, answer_body_is_bounded)
{
	static const struct httpd_step big[] = {
		{.status = 400, .body = "0123456789abcdef", .body_repeat = 8192}}; /* 128 KiB */
	struct upload_result res;
	struct upload *u;
	char url[128];

	srv = httpd_start(big, 1);
	u = make(&plain);
	url_of(url, sizeof(url), "/x");
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "a", 1, NULL, &res), 0);
	cr_assert_eq(res.status, 400);
	cr_assert_eq(res.body_len, UPLOAD_MAX_RESPONSE);
	cr_assert_eq(res.body_dropped, 128 * 1024 - UPLOAD_MAX_RESPONSE);
	cr_assert_eq(strlen(res.body), UPLOAD_MAX_RESPONSE);
	upload_result_release(&res);
	upload__free(u);
}

Test(upload, refused_connection_is_connect_and_not_reached)
{
	struct upload_result res;
	struct upload *u;
	char url[128];
	int port;

	srv = httpd_start((const struct httpd_step[]){{.status = 200}}, 1);
	port = srv->port;
	httpd_stop(srv); /* nothing listens there now */
	srv = NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", port);
	u = make(&plain);
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "a", 1, NULL, &res), 0);
	cr_assert_eq(res.cause, UPLOAD_CONNECT, "%s: %s", upload_cause_name(res.cause), res.error);
	cr_assert_eq(res.status, 0);
	cr_assert_not(res.reached);
	cr_assert_str_neq(res.error, "");
	upload_result_release(&res);
	upload__free(u);
}

Test(upload, https_to_a_plain_server_is_tls)
{
	struct upload_result res;
	struct upload *u;
	char url[128];

	srv = httpd_start((const struct httpd_step[]){{.status = 200}}, 1);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/x", srv->port);
	u = make(&plain);
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "a", 1, NULL, &res), 0);
	cr_assert_eq(res.cause, UPLOAD_TLS, "%s: %s", upload_cause_name(res.cause), res.error);
	cr_assert_not(res.reached);
	upload_result_release(&res);
	upload__free(u);
}

Test(upload, hung_server_times_out)
{
	struct upload_opts o = plain;
	struct upload_result res;
	struct upload *u;
	char url[128];

	srv = httpd_start((const struct httpd_step[]){{.status = 0}}, 1);
	o.timeout_ms = 300;
	u = make(&o);
	url_of(url, sizeof(url), "/x");
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "abc", 3, NULL, &res), 0);
	cr_assert_eq(res.cause, UPLOAD_TIMEOUT, "%s: %s", upload_cause_name(res.cause), res.error);
	cr_assert(res.reached); /* the body went out: the server may have it */
	upload_result_release(&res);
	upload__free(u);
}

static atomic_bool stop_flag;

static void *raise_stop(void *arg)
{
	struct httpd *h = arg;
	double end = httpd_now() + 30;

	while (!httpd_nreqs(h) && httpd_now() < end)
		usleep(10000);
	atomic_store(&stop_flag, true);
	return NULL;
}

Test(upload, stop_aborts_a_hung_transfer)
{
	struct upload_opts o = plain;
	struct upload_result res;
	struct upload *u;
	pthread_t th;
	char url[128];
	double t0;

	srv = httpd_start((const struct httpd_step[]){{.status = 0}}, 1);
	o.timeout_ms = 600000; /* ten minutes: only the stop can end it within the deadline */
	u = make(&o);
	url_of(url, sizeof(url), "/x");
	atomic_store(&stop_flag, false);
	pthread_create(&th, NULL, raise_stop, srv);
	t0 = httpd_now();
	cr_assert_eq(upload_post(u, url, "text/plain", NULL, "abc", 3, &stop_flag, &res), 0);
	pthread_join(th, NULL);
	cr_assert_eq(res.cause, UPLOAD_ABORTED, "%s: %s", upload_cause_name(res.cause), res.error);
	/* a liveness bound, not a speed: the stop ends the transfer at curl's next progress
	 * callback (this whole test takes about 0.5 s here), far below the transfer's own ten
	 * minutes; a transfer the flag cannot end runs into this bound */
	cr_assert(httpd_now() - t0 < 60, "took %.1f s", httpd_now() - t0);
	upload_result_release(&res);
	upload__free(u);
}

Test(upload, secret_files_are_checked_and_never_quoted)
{
	struct upload_opts o = plain;
	char err[512], warn[512], missing[600];
	struct upload *u;

	snprintf(missing, sizeof(missing), "%s/nope", tmpdir);
	o.token_file = missing;
	u = upload__new(&o, err, sizeof(err), warn, sizeof(warn));
	cr_assert_null(u);
	cr_assert_eq(errno, ENOENT);
	cr_assert(strstr(err, missing), "%s", err);

	o.token_file = write_file("two-lines", "abc\ndef\n", 0600);
	u = upload__new(&o, err, sizeof(err), warn, sizeof(warn));
	cr_assert_null(u);
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(strstr(err, "abc"), "%s", err);

	o.token_file = write_file("empty", "\n", 0600);
	cr_assert_null(upload__new(&o, err, sizeof(err), warn, sizeof(warn)));
	cr_assert_eq(errno, EINVAL);

	o.token_file = NULL;
	o.basic_auth_file = write_file("nocolon", "alicepw\n", 0600);
	cr_assert_null(upload__new(&o, err, sizeof(err), warn, sizeof(warn)));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(strstr(err, "alicepw"), "%s", err);

	/* readable by all: accepted, with a warning naming the file, not its text */
	o.basic_auth_file = NULL;
	o.token_file = write_file("open", "tok-visible\n", 0644);
	u = upload__new(&o, err, sizeof(err), warn, sizeof(warn));
	cr_assert_not_null(u, "%s", err);
	cr_assert(strstr(warn, o.token_file), "%s", warn);
	cr_assert_null(strstr(warn, "tok-visible"));
	upload__free(u);
}

Test(upload, bad_headers_are_refused)
{
	const char *bad[] = {"NoColon", "Bad Name: x", "X-Ok: a\r\nInjected: b", ": empty"};
	struct upload_opts o = plain;
	char err[512], warn[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.headers = &bad[i];
		o.nheaders = 1;
		cr_assert_null(upload__new(&o, err, sizeof(err), warn, sizeof(warn)), "%s", bad[i]);
		cr_assert_eq(errno, EINVAL);
	}
	o.headers = NULL;
	o.nheaders = 0;
	o.tenant_id = "a\nb";
	cr_assert_null(upload__new(&o, err, sizeof(err), warn, sizeof(warn)));
	cr_assert_eq(errno, EINVAL);
}
