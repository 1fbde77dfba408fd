// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metrics endpoint: the writers' exact text (checked by Debian's promtool), and the server
 * on a real loopback socket, driven by an epoll loop in a thread as the daemon's loop drives it,
 * fetched with curl and with raw sockets.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cmd/metrics.h"
#include "cmd/metrics_table.h"

/* ---- writers ------------------------------------------------------------------------------- */

/* Label values a Ruby host really produces: paths with quotes, backslashes, newlines, bytes
 * that are not UTF-8, and non-ASCII text. */
static const char *const nasty[] = {
	"/srv/app/\"quoted\".rb",
	"C:\\ruby\\bin\\ruby.exe",
	"line1\nline2",
	"bad \xff byte",
	"overlong \xc0\xaf surrogate \xed\xa0\x80 truncated \xe2\x82",
	"ünïcödé € 😀",
	"",
};

static void write_nasty_body(struct metrics_buf *b)
{
	char labels[512];
	size_t i;

	metrics_buf_family(b, "rubyprofd_samples_total", "counter",
			   "Samples taken, by script.\nHelp with a \\ and a newline.");
	for (i = 0; i < sizeof(nasty) / sizeof(nasty[0]); i++) {
		labels[0] = '\0';
		cr_assert_eq(metrics_buf_label(labels, sizeof(labels), "script", nasty[i]), 0);
		cr_assert_eq(metrics_buf_label(labels, sizeof(labels), "pid", "42"), 0);
		metrics_buf_sample(b, "rubyprofd_samples_total", labels, (double)(i + 1) * 1000);
	}
	metrics_buf_family(b, "rubyprofd_ratio", "gauge", "Values of every kind.");
	metrics_buf_sample(b, "rubyprofd_ratio", "k=\"nan\"", NAN);
	metrics_buf_sample(b, "rubyprofd_ratio", "k=\"pinf\"", INFINITY);
	metrics_buf_sample(b, "rubyprofd_ratio", "k=\"ninf\"", -INFINITY);
	metrics_buf_sample(b, "rubyprofd_ratio", "k=\"big\"", 0x1p53);
	metrics_buf_sample(b, "rubyprofd_ratio", "k=\"frac\"", 0.1);
	metrics_buf_sample(b, "rubyprofd_ratio", "k=\"neg\"", -2.25);
}

Test(metrics_writers, exact_text)
{
	struct metrics_buf *b = metrics_buf__new();
	const char *text;

	cr_assert_not_null(b);
	write_nasty_body(b);
	cr_assert_eq(metrics_buf_error(b), 0);
	text = metrics_buf_data(b, NULL);
	cr_assert_str_eq(
		text,
		"# HELP rubyprofd_samples_total Samples taken, by script.\\nHelp with a \\\\ and a "
		"newline.\n"
		"# TYPE rubyprofd_samples_total counter\n"
		"rubyprofd_samples_total{script=\"/srv/app/\\\"quoted\\\".rb\",pid=\"42\"} 1000\n"
		"rubyprofd_samples_total{script=\"C:\\\\ruby\\\\bin\\\\ruby.exe\",pid=\"42\"} "
		"2000\n"
		"rubyprofd_samples_total{script=\"line1\\nline2\",pid=\"42\"} 3000\n"
		"rubyprofd_samples_total{script=\"bad \xef\xbf\xbd byte\",pid=\"42\"} 4000\n"
		"rubyprofd_samples_total{script=\"overlong \xef\xbf\xbd\xef\xbf\xbd surrogate "
		"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd truncated "
		"\xef\xbf\xbd\xef\xbf\xbd\",pid=\"42\"} "
		"5000\n"
		"rubyprofd_samples_total{script=\"ünïcödé € 😀\",pid=\"42\"} 6000\n"
		"rubyprofd_samples_total{script=\"\",pid=\"42\"} 7000\n"
		"# HELP rubyprofd_ratio Values of every kind.\n"
		"# TYPE rubyprofd_ratio gauge\n"
		"rubyprofd_ratio{k=\"nan\"} NaN\n"
		"rubyprofd_ratio{k=\"pinf\"} +Inf\n"
		"rubyprofd_ratio{k=\"ninf\"} -Inf\n"
		"rubyprofd_ratio{k=\"big\"} 9007199254740992\n"
		"rubyprofd_ratio{k=\"frac\"} 0.1\n"
		"rubyprofd_ratio{k=\"neg\"} -2.25\n");
	metrics_buf__free(b);
}

static const char *value_text(double v)
{
	static char line[128];
	struct metrics_buf *b = metrics_buf__new();
	const char *text;

	metrics_buf_family(b, "v", "gauge", NULL);
	metrics_buf_sample(b, "v", NULL, v);
	cr_assert_eq(metrics_buf_error(b), 0);
	text = metrics_buf_data(b, NULL);
	cr_assert(!strncmp(text, "# TYPE v gauge\nv ", 17), "%s", text);
	snprintf(line, sizeof(line), "%s", text + 17);
	metrics_buf__free(b);
	line[strcspn(line, "\n")] = '\0';
	return line;
}

Test(metrics_writers, numbers)
{
	cr_assert_str_eq(value_text(0), "0");
	cr_assert_str_eq(value_text(-0.0), "0");
	cr_assert_str_eq(value_text(1), "1");
	cr_assert_str_eq(value_text(-7), "-7");
	cr_assert_str_eq(value_text(1e15), "1000000000000000");
	cr_assert_str_eq(value_text(0x1p53 - 1), "9007199254740991");
	cr_assert_str_eq(value_text(0x1p53), "9007199254740992");
	cr_assert_str_eq(value_text(0x1p62), "4611686018427387904");
	cr_assert_str_eq(value_text(0.1), "0.1");
	cr_assert_str_eq(value_text(1.0 / 3), "0.3333333333333333");
	cr_assert_str_eq(value_text(1e-300), "1e-300");
	cr_assert_str_eq(value_text(1e300), "1e+300");
	cr_assert_str_eq(value_text(0.1 + 0.2), "0.30000000000000004");
	cr_assert_eq(strtod(value_text(1e300), NULL), 1e300);
	cr_assert_str_eq(value_text(NAN), "NaN");
	cr_assert_str_eq(value_text(-INFINITY), "-Inf");
}

Test(metrics_writers, labels)
{
	char l[32] = "";

	cr_assert_eq(metrics_buf_label(l, sizeof(l), "a", "1"), 0);
	cr_assert_eq(metrics_buf_label(l, sizeof(l), "b_2", "x\"y"), 0);
	cr_assert_str_eq(l, "a=\"1\",b_2=\"x\\\"y\"");
	cr_assert_eq(metrics_buf_label(l, sizeof(l), "c", "01234567890"), -ENOSPC);
	cr_assert_str_eq(l, "a=\"1\",b_2=\"x\\\"y\"", "dst unchanged when full");
	cr_assert_eq(metrics_buf_label(l, sizeof(l), "c", "0123456789"), 0, "exactly fits: %s", l);
	cr_assert_eq(strlen(l), sizeof(l) - 1);
	l[0] = '\0';
	cr_assert_eq(metrics_buf_label(l, sizeof(l), "1a", "x"), -EINVAL);
	cr_assert_eq(metrics_buf_label(l, sizeof(l), "a-b", "x"), -EINVAL);
	cr_assert_eq(metrics_buf_label(l, sizeof(l), "__name__", "x"), -EINVAL);
	cr_assert_eq(metrics_buf_label(l, sizeof(l), "", "x"), -EINVAL);
	cr_assert_str_eq(l, "");
}

Test(metrics_writers, errors_are_sticky)
{
	struct metrics_buf *b = metrics_buf__new();

	metrics_buf_family(b, "a_total", "counter", "A.");
	metrics_buf_sample(b, "b_total", NULL, 1); /* outside its family */
	cr_assert_eq(metrics_buf_error(b), -EINVAL);
	metrics_buf_family(b, "c", "gauge", "C.");
	cr_assert_eq(metrics_buf_error(b), -EINVAL);
	cr_assert_str_eq(metrics_buf_data(b, NULL), "# HELP a_total A.\n# TYPE a_total counter\n");
	metrics_buf__free(b);

	b = metrics_buf__new();
	metrics_buf_family(b, "x", "histogram", "X.");
	cr_assert_eq(metrics_buf_error(b), -EINVAL);
	metrics_buf__free(b);
	b = metrics_buf__new();
	metrics_buf_family(b, "9x", "gauge", "X.");
	cr_assert_eq(metrics_buf_error(b), -EINVAL);
	metrics_buf__free(b);
	b = metrics_buf__new();
	metrics_buf_sample(b, "x", NULL, 1); /* no family at all */
	cr_assert_eq(metrics_buf_error(b), -EINVAL);
	metrics_buf__free(b);
}

Test(metrics_writers, body_is_bounded)
{
	struct metrics_buf *b = metrics_buf__new();
	size_t len = 0, i;

	metrics_buf_family(b, "rubyprofd_filler", "gauge", "Filler.");
	for (i = 0; i < METRICS_MAX_BODY && !metrics_buf_error(b); i++)
		metrics_buf_sample(b, "rubyprofd_filler",
				   "k=\"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\"", i);
	cr_assert_eq(metrics_buf_error(b), -E2BIG);
	metrics_buf_data(b, &len);
	cr_assert_leq(len, METRICS_MAX_BODY);
	cr_assert_gt(len, METRICS_MAX_BODY - 200);
	metrics_buf__free(b);
}

/* Runs promtool check metrics on path; its exit status, and its output in out. */
static int promtool(const char *path, char *out, size_t len)
{
	char cmd[512];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	return pclose(p);
}

/* promtool must print nothing and exit 0: no parse error, no lint. */
static void promtool_accepts(const char *path)
{
	char out[4096];
	int status = promtool(path, out, sizeof(out));

	cr_assert_eq(status, 0, "promtool exit status %d: %s", status, out);
	cr_assert_str_empty(out, "promtool: %s", out);
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

Test(metrics_writers, promtool_accepts_the_text)
{
	static const char unescaped[] = "# HELP x_total X.\n# TYPE x_total counter\n"
					"x_total{a=\"\"\"} 1\n";
	static const char lint[] = "# TYPE x counter\nx 1\n";
	char path[] = "/tmp/rp-metrics-XXXXXX", out[4096];
	struct metrics_buf *b = metrics_buf__new();
	const char *text;
	size_t len;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_nasty_body(b);
	text = metrics_buf_data(b, &len);
	write_file(path, text, len);
	promtool_accepts(path);

	/* The judge can fail: an unescaped quote, and a counter without HELP or _total. */
	write_file(path, unescaped, strlen(unescaped));
	cr_assert_neq(promtool(path, out, sizeof(out)), 0);
	write_file(path, lint, strlen(lint));
	cr_assert_neq(promtool(path, out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "no help text"), "%s", out);
	unlink(path);
	metrics_buf__free(b);
}

/* ---- server -------------------------------------------------------------------------------- */

enum render_mode { RENDER_NORMAL, RENDER_FAIL, RENDER_BIG };

struct server {
	struct metrics *m;
	int epfd;
	pthread_t thread;
	atomic_bool stop;
	atomic_int mode;
	atomic_int foreign; /* events on fds metrics does not own: must stay 0 */
};

static struct server srv;

/* The endpoint's own families, as the metric table renders them for the service. */
static void render_own(const struct metrics *m, struct metrics_buf *out)
{
	struct metric_snapshot S;

	memset(&S, 0, sizeof(S));
	metrics_stats(m, &S.endpoint);
	S.modes = METRIC_ENDPOINT;
	metrics_table_render(&S, out);
}

static void render(void *ctx, struct metrics_buf *out)
{
	struct server *s = ctx;
	int fd, small = 4096;
	size_t i;

	switch (atomic_load(&s->mode)) {
	case RENDER_FAIL:
		metrics_buf_sample(out, "no_family", NULL, 1);
		return;
	case RENDER_BIG:
		/* Runs in the loop's thread, so asking metrics_owns is safe: small send buffers
		 * on the client's socket make the server's sends stop at EAGAIN. */
		for (fd = 0; fd < 1024; fd++)
			if (fd != metrics_listen_fd(s->m) && metrics_owns(s->m, fd))
				setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		metrics_buf_family(out, "rubyprofd_big", "gauge",
				   "A body larger than socket buffers.");
		for (i = 0; i < 60000; i++)
			metrics_buf_sample(out, "rubyprofd_big",
					   "k=\"some label value to fill it\"", i);
		return;
	default:
		write_nasty_body(out);
		render_own(s->m, out);
	}
}

static void noop_render(void *ctx, struct metrics_buf *out)
{
}

/* The daemon's main loop, in miniature. */
static void *loop(void *arg)
{
	struct server *s = arg;
	struct epoll_event evs[8];
	int n, i;

	while (!atomic_load(&s->stop)) {
		n = epoll_wait(s->epfd, evs, 8, 50);
		for (i = 0; i < n; i++) {
			if (metrics_owns(s->m, evs[i].data.fd))
				metrics_handle(s->m, evs[i].data.fd, evs[i].events, s->epfd);
			else
				atomic_fetch_add(&s->foreign, 1);
		}
		metrics_tick(s->m, s->epfd);
	}
	return NULL;
}

/* response_ms: the response deadline (0: METRICS_RESPONSE_MS), set before the loop runs. */
static void start_with(unsigned int response_ms)
{
	struct epoll_event ev = {.events = EPOLLIN};

	memset(&srv, 0, sizeof(srv));
	srv.m = metrics__new("127.0.0.1:0", render, &srv);
	cr_assert_not_null(srv.m, "metrics__new: %s", strerror(errno));
	cr_assert_gt(metrics_port(srv.m), 0);
	metrics_set_deadlines(srv.m, 0, response_ms, 0);
	srv.epfd = epoll_create1(EPOLL_CLOEXEC);
	cr_assert_geq(srv.epfd, 0);
	ev.data.fd = metrics_listen_fd(srv.m);
	cr_assert_eq(epoll_ctl(srv.epfd, EPOLL_CTL_ADD, ev.data.fd, &ev), 0);
	cr_assert_eq(pthread_create(&srv.thread, NULL, loop, &srv), 0);
}

static void start(void)
{
	start_with(0);
}

static void start_short_response(void)
{
	start_with(1000);
}

static void stop(void)
{
	atomic_store(&srv.stop, true);
	pthread_join(srv.thread, NULL);
	cr_expect_eq(atomic_load(&srv.foreign), 0);
	metrics__free(srv.m);
	close(srv.epfd);
}

/*
 * A blocking client; a receive that waits 10 s fails the test instead of hanging it. rcvbuf:
 * a small receive buffer (a small TCP window), so the server's sends hit EAGAIN; 0: default.
 */
static int client_with(int rcvbuf)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(metrics_port(srv.m))};
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	if (rcvbuf)
		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "connect: %s",
		     strerror(errno));
	return fd;
}

static int client(void)
{
	return client_with(0);
}

static void send_all(int fd, const char *data, size_t len)
{
	ssize_t n;

	while (len) {
		n = send(fd, data, len, MSG_NOSIGNAL);
		cr_assert_gt(n, 0, "send: %s", strerror(errno));
		data += n;
		len -= n;
	}
}

/* Everything until the server closes; NULL-terminated, caller frees. */
static char *read_all(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	ssize_t r;

	cr_assert_not_null(buf);
	for (;;) {
		if (cap - n < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
		r = recv(fd, buf + n, cap - n - 1, 0);
		cr_assert_geq(r, 0, "recv: %s", strerror(errno));
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static char *request_with(int rcvbuf, const char *raw, size_t *len)
{
	int fd = client_with(rcvbuf);
	char *resp;

	send_all(fd, raw, strlen(raw));
	resp = read_all(fd, len);
	close(fd);
	return resp;
}

static char *request(const char *raw, size_t *len)
{
	return request_with(0, raw, len);
}

static void assert_status(const char *raw, const char *status_line)
{
	char *resp = request(raw, NULL);

	cr_assert(!strncmp(resp, status_line, strlen(status_line)), "%s -> %s", raw, resp);
	cr_assert_not_null(strstr(resp, "\r\nConnection: close\r\n"));
	free(resp);
}

/* The body of GET /metrics, after checking the head says what the body is. */
static char *fetch_metrics_with(int rcvbuf)
{
	size_t len, body_len;
	char *resp = request_with(rcvbuf, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &len);
	char *body = strstr(resp, "\r\n\r\n");
	const char *cl;

	cr_assert(!strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), "%s", resp);
	cr_assert_not_null(
		strstr(resp, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	cl = strstr(resp, "\r\nContent-Length: ");
	cr_assert(cl && body && cl < body);
	body += 4;
	body_len = len - (body - resp);
	cr_assert_eq(strtoull(cl + 18, NULL, 10), body_len);
	memmove(resp, body, body_len + 1);
	return resp;
}

static char *fetch_metrics(void)
{
	return fetch_metrics_with(0);
}

static void assert_line(const char *body, const char *line)
{
	char want[256];

	snprintf(want, sizeof(want), "\n%s\n", line);
	cr_assert_not_null(strstr(body, want), "no line \"%s\" in:\n%s", line, body);
}

Test(metrics_server, statuses, .init = start, .fini = stop)
{
	char big[METRICS_MAX_REQUEST + 100];

	assert_status("GET /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK\r\n");
	assert_status("GET /metrics?name[]=x HTTP/1.0\n\n", "HTTP/1.1 200 OK\r\n");
	assert_status("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\n");
	assert_status("GET /nope HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found\r\n");
	assert_status("GET /metrics/ HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found\r\n");
	assert_status("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		      "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; "
		      "charset=utf-8\r\nContent-Length: 29\r\nConnection: close\r\nAllow: GET\r\n");
	assert_status("HEAD /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 405 Method Not Allowed\r\n");
	assert_status("garbage\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n");
	assert_status("GET  /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n");
	assert_status("GET /metrics HTTP/2.0\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n");
	assert_status("GET metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n");

	/* A head that never ends within the limit: 431, and the response survives the unread
	 * rest of the request (no reset). */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "GET /metrics HTTP/1.1\r\nX-Long: ", 31);
	assert_status(big, "HTTP/1.1 431 Request Header Fields Too Large\r\n");

	char *body = fetch_metrics();
	assert_line(body, "rubyprofd_metrics_responses_total{code=\"200\"} 3");
	assert_line(body, "rubyprofd_metrics_responses_total{code=\"400\"} 4");
	assert_line(body, "rubyprofd_metrics_responses_total{code=\"404\"} 2");
	assert_line(body, "rubyprofd_metrics_responses_total{code=\"405\"} 2");
	assert_line(body, "rubyprofd_metrics_responses_total{code=\"431\"} 1");
	assert_line(body, "rubyprofd_metrics_clients_accepted_total 13");
	free(body);
}

Test(metrics_server, render_failure_is_500, .init = start, .fini = stop)
{
	atomic_store(&srv.mode, RENDER_FAIL);
	assert_status("GET /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 500 Internal Server Error\r\n");
}

Test(metrics_server, body_larger_than_socket_buffers, .init = start, .fini = stop)
{
	char *body;

	atomic_store(&srv.mode, RENDER_BIG);
	/* A small window: the server's sends stop at EAGAIN and go on at EPOLLOUT. */
	body = fetch_metrics_with(4096); /* checks Content-Length against what arrived */
	assert_line(body, "rubyprofd_big{k=\"some label value to fill it\"} 59999");
	cr_assert_gt(strlen(body), 2u << 20);
	free(body);
}

/* curl as the client, promtool as the judge of what it got. */
static int curl(const char *args, const char *path, const char *out)
{
	char cmd[512], code[16] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "curl -sS -o '%s' -w '%%{http_code}' %s http://127.0.0.1:%d%s",
		 out, args, metrics_port(srv.m), path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(code, sizeof(code), p));
	cr_assert_eq(pclose(p), 0, "%s", cmd);
	return atoi(code);
}

Test(metrics_server, curl_and_promtool, .init = start, .fini = stop)
{
	char path[] = "/tmp/rp-metrics-XXXXXX";
	char page[512];
	FILE *f;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(curl("", "/metrics", path), 200);
	promtool_accepts(path);
	cr_assert_eq(curl("", "/", path), 200);
	f = fopen(path, "r");
	cr_assert_not_null(fgets(page, sizeof(page), f));
	fclose(f);
	cr_assert_not_null(strstr(page, "href=\"/metrics\""), "%s", page);
	cr_assert_eq(curl("", "/other", path), 404);
	cr_assert_eq(curl("-X POST", "/metrics", path), 405);
	cr_assert_eq(curl("-X DELETE", "/", path), 405);
	unlink(path);
}

/* true when the server closed fd without a response (EOF or reset). */
static bool closed_without_response(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, 0);

	cr_assert(n == 0 || (n < 0 && errno == ECONNRESET), "recv %zd: %s", n, strerror(errno));
	return true;
}

static int64_t elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - since->tv_sec) * 1000 +
	       (now.tv_nsec - since->tv_nsec) / 1000000;
}

/* A slot comes back for a new client when every one is taken: the oldest that has not sent a
 * whole request is closed for it. */
Test(metrics_server, full_slots_make_room_for_a_new_client, .init = start, .fini = stop)
{
	int fds[METRICS_MAX_CLIENTS], fresh[2], i;
	const char *req = "GET /metrics HTTP/1.1\r\n\r\n";
	char *body;

	for (i = 0; i < METRICS_MAX_CLIENTS; i++)
		fds[i] = client();
	/* The accept queue is FIFO: this one is accepted after the 16, so fds[0] is the oldest.
	 * It stays open after its answer (the server waits for its close), holding its slot. */
	fresh[0] = client();
	send_all(fresh[0], req, strlen(req));
	body = read_all(fresh[0], NULL);
	cr_assert(!strncmp(body, "HTTP/1.1 200 OK\r\n", 17), "%s", body);
	assert_line(body, "rubyprofd_metrics_clients_evicted_total 1");
	assert_line(body, "rubyprofd_metrics_clients 16");
	assert_line(body, "rubyprofd_metrics_clients_accepted_total 17");
	free(body);
	cr_assert(closed_without_response(fds[0]));

	/* Those that have sent a whole request are not the ones pushed out: fds[1] asks too (and
	 * holds its slot as fresh[0] does); the next newcomer pushes out fds[2], not fresh[0]. */
	send_all(fds[1], req, strlen(req));
	body = read_all(fds[1], NULL);
	cr_assert(!strncmp(body, "HTTP/1.1 200 OK\r\n", 17), "%s", body);
	free(body);
	fresh[1] = client();
	send_all(fresh[1], req, strlen(req));
	body = read_all(fresh[1], NULL);
	assert_line(body, "rubyprofd_metrics_clients_evicted_total 2");
	assert_line(body, "rubyprofd_metrics_clients 16");
	free(body);
	cr_assert(closed_without_response(fds[2]));
	for (i = 0; i < METRICS_MAX_CLIENTS; i++)
		close(fds[i]);
	close(fresh[0]);
	close(fresh[1]);
}

/* Every slot but one held by a client that asks and never reads its answer, then a scraper
 * whose request comes a little after its connect (as on a busy host), then a newcomer: the one
 * pushed out for the newcomer is one that never read, not the scraper (which went first while
 * the rank of a connection was its phase alone: a scrape lost 1 time in 170 to 100 slow
 * clients beside two CPU hogs). */
Test(metrics_server, a_scraper_whose_request_comes_late_outlasts_peers_that_never_read,
     .init = start, .fini = stop)
{
	const char *req = "GET /metrics HTTP/1.1\r\n\r\n";
	int fds[METRICS_MAX_CLIENTS - 1], scraper, newcomer, i;
	char *body;

	atomic_store(&srv.mode, RENDER_BIG); /* ~2.5 MB each: their answers stall */
	for (i = 0; i < METRICS_MAX_CLIENTS - 1; i++) {
		fds[i] = client_with(4096);
		send_all(fds[i], req, strlen(req));
	}
	/* past the grace of the last one's sends (its render takes a few ms) */
	usleep((METRICS_GRACE_MS + 1000) * 1000);
	atomic_store(&srv.mode, RENDER_NORMAL);
	scraper = client();
	newcomer = client(); /* accepted after the scraper: the accept queue is FIFO */
	usleep(100000);
	send_all(scraper, req, strlen(req));
	body = read_all(scraper, NULL);
	cr_assert(!strncmp(body, "HTTP/1.1 200 OK\r\n", 17), "the scraper got: %.200s", body);
	assert_line(body, "rubyprofd_metrics_clients_evicted_total 1");
	assert_line(body, "rubyprofd_metrics_clients 16");
	free(body);
	for (i = 0; i < METRICS_MAX_CLIENTS - 1; i++)
		close(fds[i]);
	close(scraper);
	close(newcomer);
}

Test(metrics_server, silent_and_partial_clients_time_out, .init = start, .fini = stop)
{
	int silent = client(), partial = client();
	char *body;

	send_all(partial, "GET /met", 8);
	/* Both wait (up to the 10 s receive timeout) for the loop's tick to close them. */
	cr_assert(closed_without_response(silent));
	cr_assert(closed_without_response(partial));
	close(silent);
	close(partial);

	body = fetch_metrics();
	assert_line(body, "rubyprofd_metrics_clients_timed_out_total 2");
	assert_line(body, "rubyprofd_metrics_clients 1"); /* the fetch itself */
	free(body);
}

/* A request that trickles in a byte every 0.5 s is closed at its deadline from the accept: the
 * bytes do not move it. (An idle timer reset by every byte never closed it.) */
Test(metrics_server, request_deadline_is_not_extended_by_bytes, .init = start, .fini = stop)
{
	static const char head[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";
	struct pollfd pfd = {.events = POLLIN};
	struct timespec t0;
	int64_t took;
	size_t sent;
	char *body;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pfd.fd = client();
	for (sent = 0;; sent++) {
		if (poll(&pfd, 1, 500) > 0)
			break; /* the server closed it */
		cr_assert_lt(elapsed_ms(&t0), METRICS_REQUEST_MS + 5000,
			     "a trickling request still open after %lld ms (%zu bytes)",
			     (long long)elapsed_ms(&t0), sent);
		if (send(pfd.fd, sent < sizeof(head) - 1 ? head + sent : "a", 1, MSG_NOSIGNAL) < 0)
			break; /* reset already */
	}
	took = elapsed_ms(&t0);
	cr_assert(closed_without_response(pfd.fd));
	close(pfd.fd);
	/* never before the deadline (now_ms() rounds down: 1 ms of slack) */
	cr_assert_geq(took, METRICS_REQUEST_MS - 1, "closed after %lld ms", (long long)took);
	cr_assert_gt(sent, 4u);

	body = fetch_metrics();
	assert_line(body, "rubyprofd_metrics_clients_timed_out_total 1");
	assert_line(body, "rubyprofd_metrics_clients_evicted_total 0");
	free(body);
}

/* A response read a little at a time: closed at its deadline (1 s here) though it progresses. */
Test(metrics_server, response_deadline_is_not_extended_by_reads, .init = start_short_response,
     .fini = stop)
{
	const char *req = "GET /metrics HTTP/1.1\r\n\r\n";
	struct timespec t0;
	size_t got = 0;
	char buf[1024];
	int64_t took;
	ssize_t n;
	char *body;
	int fd;

	atomic_store(&srv.mode, RENDER_BIG); /* ~2.5 MB, and small server send buffers */
	fd = client_with(4096);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	send_all(fd, req, strlen(req));
	/* 20 KB/s: the whole body would take two minutes. */
	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			break;
		cr_assert_gt(n, 0, "recv: %s", strerror(errno));
		if (!got)
			atomic_store(&srv.mode,
				     RENDER_NORMAL); /* rendered: the next fetch is small */
		got += n;
		cr_assert_lt(elapsed_ms(&t0), 10000, "still answering after %zu bytes", got);
		usleep(50000);
	}
	took = elapsed_ms(&t0);
	close(fd);
	cr_assert_geq(took, 1000 - 1, "closed after %lld ms", (long long)took);
	cr_assert_lt(got, 2u << 20, "%zu bytes: the whole response", got);

	body = fetch_metrics();
	assert_line(body, "rubyprofd_metrics_clients_timed_out_total 1");
	free(body);
}

/* The attack of issue 21 (row 6): every slot held by a client that sends one byte every 0.5 s,
 * and those closed coming back at once. Scrapes are served all along. */
struct trickler {
	int fds[METRICS_MAX_CLIENTS];
	size_t sent[METRICS_MAX_CLIENTS];
	atomic_bool stop, reconnect;
	atomic_int reconnects;
	pthread_t thread;
};

/* No cr_assert off the test's thread: -1 when it failed. */
static int trickler_connect(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(metrics_port(srv.m))};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void *trickle(void *arg)
{
	static const char head[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";
	struct trickler *t = arg;
	char c;
	int i, ms;

	while (!atomic_load(&t->stop)) {
		for (i = 0; i < METRICS_MAX_CLIENTS; i++) {
			/* closed by the server: EOF or reset */
			bool gone = t->fds[i] < 0 || recv(t->fds[i], &c, 1, MSG_DONTWAIT) >= 0 ||
				    (errno != EAGAIN && errno != EWOULDBLOCK);

			if (gone && atomic_load(&t->reconnect)) {
				if (t->fds[i] >= 0)
					close(t->fds[i]);
				t->fds[i] = trickler_connect();
				t->sent[i] = 0;
				atomic_fetch_add(&t->reconnects, 1);
			}
			if (t->fds[i] >= 0 &&
			    send(t->fds[i], t->sent[i] < sizeof(head) - 1 ? head + t->sent[i] : "a",
				 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
				t->sent[i]++;
		}
		for (ms = 0; ms < 500 && !atomic_load(&t->stop); ms += 10)
			usleep(10000);
	}
	return NULL;
}

/* GET /metrics must get a whole, valid reply within 2 s (a liveness bound, not a speed one). */
static char *scrape_in_time(void)
{
	struct timespec t0;
	int64_t took;
	char *body;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	body = fetch_metrics(); /* checks the status, the type and Content-Length */
	took = elapsed_ms(&t0);
	cr_assert_lt(took, 2000, "a scrape took %lld ms", (long long)took);
	assert_line(body, "# TYPE rubyprofd_metrics_clients gauge");
	/* whole: Content-Length matched, and the last family's last sample ends it */
	cr_assert(strstr(body, "\nrubyprofd_metrics_responses_total{code=\"500\"} 0\n") ==
			  body + strlen(body) -
				  strlen("\nrubyprofd_metrics_responses_total{code="
					 "\"500\"} 0\n"),
		  "the body does not end with the last family");
	return body;
}

Test(metrics_server, scrapes_are_served_while_every_slot_trickles, .init = start, .fini = stop)
{
	struct trickler t = {0};
	struct timespec t0;
	char *body;
	int i;

	for (i = 0; i < METRICS_MAX_CLIENTS; i++)
		t.fds[i] = client();
	cr_assert_eq(pthread_create(&t.thread, NULL, trickle, &t), 0);
	/* Every slot taken and trickled into (three bytes each), none near its deadline. */
	usleep(1200000);
	body = scrape_in_time();
	assert_line(body, "rubyprofd_metrics_clients_evicted_total 1");
	assert_line(body, "rubyprofd_metrics_clients 16");
	assert_line(body, "rubyprofd_metrics_clients_accepted_total 17");
	assert_line(body, "rubyprofd_metrics_clients_timed_out_total 0");
	free(body);

	/* Now as an attacker would: each closed one comes back at once. Scrapes every 0.5 s past
	 * the first ones' deadline, through evictions and timeouts alike. */
	atomic_store(&t.reconnect, true);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ms(&t0) < METRICS_REQUEST_MS + 1500) {
		free(scrape_in_time());
		usleep(500000);
	}
	atomic_store(&t.stop, true);
	pthread_join(t.thread, NULL);
	cr_assert_gt(atomic_load(&t.reconnects), METRICS_MAX_CLIENTS, "the attack did not go on");
	body = scrape_in_time();
	cr_assert_null(strstr(body, "\nrubyprofd_metrics_clients_timed_out_total 0\n"), "%s", body);
	cr_assert_null(strstr(body, "\nrubyprofd_metrics_clients_evicted_total 1\n"), "%s", body);
	free(body);
	for (i = 0; i < METRICS_MAX_CLIENTS; i++)
		if (t.fds[i] >= 0)
			close(t.fds[i]);
}

/* docs/metrics.md states the policy with the figures metrics.h holds. */
Test(metrics_server, docs_state_the_deadlines_and_slots)
{
	char want[64], *doc = calloc(1, 1 << 20);
	FILE *f = fopen("docs/metrics.md", "re");

	cr_assert_not_null(f, "docs/metrics.md (the tests run from the tree's top)");
	cr_assert_not_null(doc);
	cr_assert_gt(fread(doc, 1, (1 << 20) - 1, f), 0u);
	fclose(f);
	snprintf(want, sizeof(want), "within %d s of its accept", METRICS_REQUEST_MS / 1000);
	cr_assert_not_null(strstr(doc, want), "no \"%s\" in docs/metrics.md", want);
	snprintf(want, sizeof(want), "taken within %d s", METRICS_RESPONSE_MS / 1000);
	cr_assert_not_null(strstr(doc, want), "no \"%s\" in docs/metrics.md", want);
	snprintf(want, sizeof(want), "close within %d s", METRICS_DRAIN_MS / 1000);
	cr_assert_not_null(strstr(doc, want), "no \"%s\" in docs/metrics.md", want);
	snprintf(want, sizeof(want), "for %g s", METRICS_GRACE_MS / 1000.0);
	cr_assert_not_null(strstr(doc, want), "no \"%s\" in docs/metrics.md", want);
	snprintf(want, sizeof(want), "There are %d slots", METRICS_MAX_CLIENTS);
	cr_assert_not_null(strstr(doc, want), "no \"%s\" in docs/metrics.md", want);
	free(doc);
}

Test(metrics_server, peer_that_gives_up_is_aborted, .init = start, .fini = stop)
{
	int fd = client();
	char *body;

	send_all(fd, "GET /metr", 9);
	shutdown(fd, SHUT_WR);
	cr_assert(closed_without_response(fd));
	close(fd);
	body = fetch_metrics();
	assert_line(body, "rubyprofd_metrics_clients_aborted_total 1");
	free(body);
}

/* Drives the loop in this thread until fd has something to read: nothing blocks. */
static void pump_until_readable(int epfd, struct metrics *m, int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct epoll_event evs[8];
	int i, n, rounds;

	for (rounds = 0; rounds < 100 && poll(&pfd, 1, 0) == 0; rounds++) {
		n = epoll_wait(epfd, evs, 8, 100);
		for (i = 0; i < n; i++)
			metrics_handle(m, evs[i].data.fd, evs[i].events, epfd);
	}
	cr_assert_eq(poll(&pfd, 1, 0), 1, "no response");
}

/* An endpoint that the test's own loop pumps (no server thread), listening in the epoll fd returned. */
static int listen_here(struct metrics **m)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int epfd;

	*m = metrics__new("127.0.0.1:0", noop_render, NULL);
	cr_assert_not_null(*m);
	srv.m = *m; /* for client() */
	epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = metrics_listen_fd(*m);
	cr_assert_eq(epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev), 0);
	return epfd;
}

Test(metrics_server, out_of_fds_pauses_the_listener)
{
	const char *req = "GET / HTTP/1.1\r\n\r\n";
	struct epoll_event out;
	struct metrics_stats st;
	struct rlimit old, low;
	struct metrics *m;
	char *resp;
	int epfd, fd;

	epfd = listen_here(&m);

	/* Room for the client's socket and not one fd more: the accept fails with EMFILE. */
	fd = dup(0);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = fd + 1;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	fd = client();
	send_all(fd, req, strlen(req));
	cr_assert_eq(epoll_wait(epfd, &out, 1, 5000), 1);
	metrics_handle(m, out.data.fd, out.events, epfd);
	metrics_stats(m, &st);
	cr_assert_eq(st.accept_errors, 1);
	cr_assert_eq(st.accepted, 0);
	/* The connection still waits, but the loop is not woken for it again and again. */
	cr_assert_eq(epoll_wait(epfd, &out, 1, 0), 0);

	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	metrics_tick(m, epfd); /* re-arms the listener */
	pump_until_readable(epfd, m, fd);
	resp = read_all(fd, NULL);
	cr_assert(!strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), "%s", resp);
	metrics_stats(m, &st);
	cr_assert_eq(st.accepted, 1);
	free(resp);
	close(fd);
	metrics__free(m);
	close(epfd);
}

/* Pumps the loop (up to 5 s) until metrics_needs_tick() is want. */
static bool pump_until_needs_tick(int epfd, struct metrics *m, bool want)
{
	struct epoll_event evs[8];
	int i, n, rounds;

	for (rounds = 0; rounds < 50 && metrics_needs_tick(m) != want; rounds++) {
		n = epoll_wait(epfd, evs, 8, 100);
		for (i = 0; i < n; i++)
			metrics_handle(m, evs[i].data.fd, evs[i].events, epfd);
	}
	return metrics_needs_tick(m) == want;
}

/* The daemon sleeps through an endpoint nobody is connected to: no tick is due then. */
Test(metrics_server, only_a_connected_client_needs_the_tick)
{
	struct metrics *m;
	int epfd, fd;

	epfd = listen_here(&m);
	cr_assert(!metrics_needs_tick(m));
	fd = client();
	send_all(fd, "GET /met", 8);
	cr_assert(pump_until_needs_tick(epfd, m, true), "a half-sent request needs no tick");
	close(fd);
	cr_assert(pump_until_needs_tick(epfd, m, false), "a closed client still needs the tick");
	metrics__free(m);
	close(epfd);
}

/* ---- addresses ----------------------------------------------------------------------------- */

Test(metrics_address, busy_port_is_a_clear_error)
{
	struct metrics *a = metrics__new("127.0.0.1:0", noop_render, NULL), *b;
	char address[64], msg[128];

	cr_assert_not_null(a);
	snprintf(address, sizeof(address), "127.0.0.1:%d", metrics_port(a));
	b = metrics__new(address, noop_render, NULL);
	cr_assert_null(b);
	cr_assert_eq(errno, EADDRINUSE);
	/* How the daemon words it. */
	snprintf(msg, sizeof(msg), "metrics_address %s: %s", address, strerror(errno));
	cr_assert(strstr(msg, ": Address already in use"), "%s", msg);
	metrics__free(a);
	/* Freed: the port can be bound again at once (SO_REUSEADDR). */
	b = metrics__new(address, noop_render, NULL);
	cr_assert_not_null(b, "%s", strerror(errno));
	metrics__free(b);
}

Test(metrics_address, parsing)
{
	static const char *const good[] = {"127.0.0.1:9464", "0.0.0.0:1", "[::1]:9464",
					   "[::]:65535", "[::ffff:127.0.0.1]:80"};
	static const char *const bad[] = {
		"",
		"127.0.0.1",
		"127.0.0.1:",
		":9464",
		"localhost:9464",
		"::1:9464",
		"[::1]9464",
		"[::1]:",
		"127.0.0.1:65536",
		"1.2.3:80",
		"127.0.0.1:+80",
		"127.0.0.1:080808",
		"127.0.0.1: 80",
		"[127.0.0.1]:80",
		"[::1:80",
		"127.0.0.1:80x",
	};
	struct sockaddr_storage ss;
	socklen_t len;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert_eq(metrics_parse_address(good[i], &ss, &len), 0, "%s", good[i]);
	cr_assert_eq(metrics_parse_address("[::1]:9464", &ss, &len), 0);
	cr_assert_eq(ss.ss_family, AF_INET6);
	cr_assert_eq(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 9464);
	cr_assert_eq(metrics_parse_address("127.0.0.1:9464", &ss, &len), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr), INADDR_LOOPBACK);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(metrics_parse_address(bad[i], &ss, &len), -EINVAL, "\"%s\"", bad[i]);
	cr_assert_null(metrics__new("localhost:9464", noop_render, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(metrics__new("127.0.0.1:0", NULL, NULL));
	cr_assert_eq(errno, EINVAL);
}

Test(metrics_address, ipv6_loopback)
{
	struct metrics *m = metrics__new("[::1]:0", noop_render, NULL);

	if (!m && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
		cr_skip_test("no IPv6 loopback here: %s", strerror(errno));
	cr_assert_not_null(m, "%s", strerror(errno));
	cr_assert_gt(metrics_port(m), 0);
	metrics__free(m);
}
