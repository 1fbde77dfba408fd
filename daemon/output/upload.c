// SPDX-License-Identifier: GPL-2.0-only
/*
 * upload.c - HTTP POSTs to the collector through libcurl's easy interface: one handle kept for
 * the life of the object so that its connection is reused (keep-alive), persistent options set
 * once, the per-request ones (URL, body, headers) set for each POST.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "output/upload.h"

struct upload {
	CURL *curl;
	struct curl_slist *fixed; /* configured headers, bearer token, tenant: every request */
	char *userpwd;		  /* "user:password", wiped on free */
	char *bearer;		  /* "Authorization: Bearer ...", wiped on free */
	char errbuf[CURL_ERROR_SIZE];
	/* the request in progress */
	struct upload_result *res;
	const atomic_bool *stop;
};

static pthread_once_t upload_once = PTHREAD_ONCE_INIT;
static CURLcode upload_global_rc;

/* curl_global_init is not safe against a concurrent one: once, before any handle. */
static void upload_global_init(void)
{
	upload_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *upload_cause_name(enum upload_cause c)
{
	static const char *const names[UPLOAD_NCAUSES] = {
		[UPLOAD_HTTP] = "http",	      [UPLOAD_DNS] = "dns",
		[UPLOAD_CONNECT] = "connect", [UPLOAD_TLS] = "tls",
		[UPLOAD_TIMEOUT] = "timeout", [UPLOAD_NETWORK] = "network",
		[UPLOAD_ABORTED] = "aborted",
	};

	return (unsigned int)c < UPLOAD_NCAUSES ? names[c] : "unknown";
}

static void upload_wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

int upload_read_secret(const char *path, char *buf, size_t len, bool *world_readable)
{
	struct stat st;
	ssize_t n;
	size_t got = 0, i;
	int fd, err = 0;

	*world_readable = false;
	/* a link is followed: a mounted secret (Kubernetes', systemd's credentials) is one */
	fd = fileio_open_regular(path, 0, UPLOAD_MAX_SECRET, &st);
	if (fd < 0)
		return fd;
	*world_readable = st.st_mode & S_IROTH;
	if (len <= 1) {
		err = -EFBIG;
		goto cleanup;
	}
	for (;;) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got == len - 1) {
			err = -EFBIG;
			goto cleanup;
		}
	}
	/* a file written by an editor or echo ends in a newline that is not part of the secret */
	while (got && (buf[got - 1] == '\n' || buf[got - 1] == '\r' || buf[got - 1] == ' ' ||
		       buf[got - 1] == '\t'))
		got--;
	buf[got] = '\0';
	if (!got) {
		err = -EINVAL;
		goto cleanup;
	}
	/* a newline inside would split the header: a second, forged one */
	for (i = 0; i < got; i++) {
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
			err = -EINVAL;
			goto cleanup;
		}
	}
cleanup:
	if (err)
		explicit_bzero(buf, len);
	close(fd);
	return err;
}

/* "Name: value": a token for the name, no control characters in the value. */
static bool upload_header_ok(const char *h)
{
	const char *colon = strchr(h, ':'), *p;

	if (!colon || colon == h || strlen(h) > UPLOAD_MAX_HEADER)
		return false;
	for (p = h; p < colon; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("!#$%&'*+-.^_`|~", *p)))
			return false;
	}
	for (p = colon + 1; *p; p++) {
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	}
	return true;
}

bool upload_header_valid(const char *h)
{
	return upload_header_ok(h);
}

static int upload_add_header(struct curl_slist **list, const char *h)
{
	struct curl_slist *n = curl_slist_append(*list, h);

	if (!n)
		return -ENOMEM;
	*list = n;
	return 0;
}

/* Reads a secret file for upload__new, with the message naming the file on error. */
static int upload_secret(const char *what, const char *path, char *buf, size_t len, char *err,
			 size_t errlen, char *warn, size_t warnlen)
{
	bool world;
	int r;

	r = upload_read_secret(path, buf, len, &world);
	if (r == -EINVAL)
		snprintf(err, errlen,
			 "%s '%s': empty, not a regular file, or control characters inside", what,
			 path);
	else if (r == -EFBIG)
		snprintf(err, errlen, "%s '%s': larger than %d bytes", what, path,
			 UPLOAD_MAX_SECRET);
	else if (r)
		snprintf(err, errlen, "%s '%s': %s", what, path, strerror(-r));
	else if (world && !warn[0])
		snprintf(warn, warnlen,
			 "%s '%s' can be read by every user: make it 0600 or 0640 (root:rubyprofd)",
			 what, path);
	return r;
}

static size_t upload_write_cb(char *ptr, size_t size, size_t nmemb, void *ctx)
{
	struct upload *u = ctx;
	struct upload_result *res = u->res;
	size_t n = size * nmemb, room;

	if (!res->body) {
		res->body = malloc(UPLOAD_MAX_RESPONSE + 1);
		if (!res->body) {
			res->body_dropped += n;
			return n;
		}
	}
	room = UPLOAD_MAX_RESPONSE - res->body_len;
	if (n > room) {
		res->body_dropped += n - room;
		memcpy(res->body + res->body_len, ptr, room);
		res->body_len += room;
	} else {
		memcpy(res->body + res->body_len, ptr, n);
		res->body_len += n;
	}
	res->body[res->body_len] = '\0';
	return n;
}

/* Header lines of the last answer only: a 100 Continue or a redirect has a block of its own. */
static size_t upload_header_cb(char *ptr, size_t size, size_t nitems, void *ctx)
{
	struct upload *u = ctx;
	struct upload_result *res = u->res;
	size_t n = size * nitems;

	if (n >= 5 && !memcmp(ptr, "HTTP/", 5))
		res->headers_len = 0;
	if (!res->headers) {
		res->headers = malloc(UPLOAD_MAX_HEADERS_BYTES + 1);
		if (!res->headers)
			return n;
	}
	if (n > UPLOAD_MAX_HEADERS_BYTES - res->headers_len)
		return n; /* past the bound: the line is left out */
	memcpy(res->headers + res->headers_len, ptr, n);
	res->headers_len += n;
	res->headers[res->headers_len] = '\0';
	return n;
}

/* Called by libcurl at least once a second during a transfer, however idle the connection. */
static int upload_progress_cb(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			      curl_off_t ulnow)
{
	struct upload *u = ctx;

	return u->stop && atomic_load(u->stop) ? 1 : 0;
}

struct upload *upload__new(const struct upload_opts *o, char *err, size_t errlen, char *warn,
			   size_t warnlen)
{
	struct upload *u = NULL;
	char secret[UPLOAD_MAX_SECRET + 1];
	size_t i, n;
	int r = 0;

	err[0] = '\0';
	warn[0] = '\0';
	pthread_once(&upload_once, upload_global_init);
	if (upload_global_rc != CURLE_OK) {
		snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(upload_global_rc));
		r = -ENOMEM;
		goto cleanup;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		r = -ENOMEM;
		goto cleanup;
	}
	if (o->nheaders > UPLOAD_MAX_HEADERS) {
		snprintf(err, errlen, "more than %d headers", UPLOAD_MAX_HEADERS);
		r = -EINVAL;
		goto cleanup;
	}
	for (i = 0; i < o->nheaders; i++) {
		if (!upload_header_ok(o->headers[i])) {
			snprintf(err, errlen, "header '%s' is not 'Name: value'", o->headers[i]);
			r = -EINVAL;
			goto cleanup;
		}
		r = upload_add_header(&u->fixed, o->headers[i]);
		if (r)
			goto cleanup;
	}
	if (o->tenant_id && o->tenant_id[0]) {
		char h[UPLOAD_MAX_HEADER + 32];

		snprintf(h, sizeof(h), "X-Scope-OrgID: %s", o->tenant_id);
		if (strlen(o->tenant_id) > UPLOAD_MAX_HEADER || !upload_header_ok(h)) {
			snprintf(err, errlen, "tenant id '%s': control characters or too long",
				 o->tenant_id);
			r = -EINVAL;
			goto cleanup;
		}
		r = upload_add_header(&u->fixed, h);
		if (r)
			goto cleanup;
	}
	if (o->token_file && o->token_file[0]) {
		r = upload_secret("token file", o->token_file, secret, sizeof(secret), err, errlen,
				  warn, warnlen);
		if (r)
			goto cleanup;
		n = strlen("Authorization: Bearer ") + strlen(secret) + 1;
		u->bearer = malloc(n);
		if (!u->bearer) {
			r = -ENOMEM;
			goto cleanup;
		}
		snprintf(u->bearer, n, "Authorization: Bearer %s", secret);
		explicit_bzero(secret, sizeof(secret));
	}
	if (o->basic_auth_file && o->basic_auth_file[0]) {
		r = upload_secret("basic auth file", o->basic_auth_file, secret, sizeof(secret),
				  err, errlen, warn, warnlen);
		if (r)
			goto cleanup;
		if (!strchr(secret, ':')) {
			explicit_bzero(secret, sizeof(secret));
			snprintf(err, errlen, "basic auth file '%s': not 'user:password'",
				 o->basic_auth_file);
			r = -EINVAL;
			goto cleanup;
		}
		u->userpwd = strdup(secret);
		explicit_bzero(secret, sizeof(secret));
		if (!u->userpwd) {
			r = -ENOMEM;
			goto cleanup;
		}
	}
	u->curl = curl_easy_init();
	if (!u->curl) {
		r = -ENOMEM;
		goto cleanup;
	}
	/* persistent options: errors here are only out of memory or an old libcurl */
	curl_easy_setopt(u->curl, CURLOPT_NOSIGNAL, 1L); /* a thread: no SIGALRM for DNS */
	curl_easy_setopt(u->curl, CURLOPT_ERRORBUFFER, u->errbuf);
	curl_easy_setopt(u->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(u->curl, CURLOPT_FOLLOWLOCATION, 0L); /* credentials go nowhere else */
	curl_easy_setopt(u->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(u->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (o->ca_file && o->ca_file[0])
		curl_easy_setopt(u->curl, CURLOPT_CAINFO, o->ca_file);
	curl_easy_setopt(u->curl, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
	curl_easy_setopt(u->curl, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(u->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(u->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(u->curl, CURLOPT_USERAGENT, "rubyprofd/" RUBYPROF_VERSION);
	curl_easy_setopt(u->curl, CURLOPT_WRITEFUNCTION, upload_write_cb);
	curl_easy_setopt(u->curl, CURLOPT_WRITEDATA, u);
	curl_easy_setopt(u->curl, CURLOPT_HEADERFUNCTION, upload_header_cb);
	curl_easy_setopt(u->curl, CURLOPT_HEADERDATA, u);
	curl_easy_setopt(u->curl, CURLOPT_XFERINFOFUNCTION, upload_progress_cb);
	curl_easy_setopt(u->curl, CURLOPT_XFERINFODATA, u);
	curl_easy_setopt(u->curl, CURLOPT_NOPROGRESS, 0L);
	if (u->userpwd) {
		curl_easy_setopt(u->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(u->curl, CURLOPT_USERPWD, u->userpwd);
	}
cleanup:
	explicit_bzero(secret, sizeof(secret));
	if (r) {
		upload__free(u);
		errno = -r;
		return NULL;
	}
	return u;
}

void upload__free(struct upload *u)
{
	if (!u)
		return;
	if (u->curl)
		curl_easy_cleanup(u->curl);
	curl_slist_free_all(u->fixed);
	upload_wipe_free(u->userpwd);
	upload_wipe_free(u->bearer);
	free(u);
}

void upload_result_release(struct upload_result *res)
{
	free(res->body);
	free(res->headers);
	res->body = NULL;
	res->headers = NULL;
	res->body_len = res->headers_len = 0;
}

static enum upload_cause upload_classify(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return UPLOAD_DNS;
	case CURLE_COULDNT_CONNECT:
		return UPLOAD_CONNECT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_CLIENTCERT:
	case CURLE_USE_SSL_FAILED:
		return UPLOAD_TLS;
	case CURLE_OPERATION_TIMEDOUT:
		return UPLOAD_TIMEOUT;
	case CURLE_ABORTED_BY_CALLBACK:
		return UPLOAD_ABORTED;
	default:
		return UPLOAD_NETWORK;
	}
}

int upload_post(struct upload *u, const char *url, const char *content_type,
		const char *const *headers, const void *body, size_t len, const atomic_bool *stop,
		struct upload_result *res)
{
	struct curl_slist *list = NULL, *l;
	char ct[256];
	curl_off_t ra = -1, up = 0;
	double secs = 0;
	CURLcode rc;
	long status = 0;
	int err = 0;

	memset(res, 0, sizeof(*res));
	res->retry_after = -1;
	snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
	err = upload_add_header(&list, ct);
	/* no "Expect: 100-continue" round trip: the body is small and the server reads it anyway */
	if (!err)
		err = upload_add_header(&list, "Expect:");
	for (; !err && headers && *headers; headers++) {
		if (!upload_header_ok(*headers))
			err = -EINVAL;
		else
			err = upload_add_header(&list, *headers);
	}
	for (l = u->fixed; !err && l; l = l->next)
		err = upload_add_header(&list, l->data);
	if (!err && u->bearer)
		err = upload_add_header(&list, u->bearer);
	if (err)
		goto cleanup;

	u->res = res;
	u->stop = stop;
	u->errbuf[0] = '\0';
	curl_easy_setopt(u->curl, CURLOPT_URL, url);
	curl_easy_setopt(u->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(u->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(u->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(u->curl, CURLOPT_HTTPHEADER, list);
	rc = curl_easy_perform(u->curl);
	/* the list is freed below: the handle must not keep pointing to it */
	curl_easy_setopt(u->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(u->curl, CURLOPT_POSTFIELDS, NULL);
	u->res = NULL;
	u->stop = NULL;

	curl_easy_getinfo(u->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(u->curl, CURLINFO_TOTAL_TIME, &secs);
	curl_easy_getinfo(u->curl, CURLINFO_SIZE_UPLOAD_T, &up);
	res->seconds = secs;
	res->bytes_sent = up > 0 ? (uint64_t)up : 0;
	if (rc == CURLE_OK) {
		res->cause = UPLOAD_HTTP;
		res->status = status;
		res->reached = true;
		if (curl_easy_getinfo(u->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra >= 0 &&
		    (status == 429 || status == 503 || status >= 300))
			res->retry_after = (int64_t)ra;
		/* a 429 or 503 without the header is common; 0 from curl then means "none" */
		if (res->retry_after == 0)
			res->retry_after = -1;
	} else {
		res->cause = upload_classify(rc);
		res->status = 0;
		/* without a byte of the body sent, the server cannot have taken the profile */
		res->reached = up > 0;
		snprintf(res->error, sizeof(res->error), "%s",
			 u->errbuf[0] ? u->errbuf : curl_easy_strerror(rc));
	}
cleanup:
	curl_slist_free_all(list);
	if (err) {
		upload_result_release(res);
		return err;
	}
	return 0;
}
