// SPDX-License-Identifier: GPL-2.0-only
/*
 * spool.c - the on-disk spool (docs/spool.md). The directory is the truth; the index is a sorted
 * copy of its pair names, rebuilt by a scan at startup. Names begin with the UTC start time at a
 * fixed width, so name order is time order and the oldest pair is the index's first entry.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/array.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/safepath.h"
#include "lib/text.h"
#include "output/sidecar.h"
#include "output/spool.h"

#define TMP_PREFIX     ".tmp-"
#define PROFILE_SUFFIX ".pb.gz"
#define SIDECAR_SUFFIX ".json"
#define TIME_LEN       20 /* YYYYMMDDTHHMMSS.mmmZ */
#define SEQ_MAX	       99999
#define TMP_TRIES      100
#define NS_PER_MS      1000000LL
#define NS_PER_S       1000000000LL

struct spool {
	pthread_mutex_t lock; /* taken by every public function */
	char *dir;
	int dirfd; /* holds the flock that keeps a second spool out */
	uint64_t max_bytes;
	int64_t max_age_ns;
	size_t max_files;
	/* ents[off .. off + n), sorted by stem; evicting the oldest only moves off */
	struct spool_entry *ents;
	size_t off, n, cap;
	unsigned int tmpseq;
	struct spool_stats st;
};

/* ---- names --------------------------------------------------------------------------------- */

static bool spool_name_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* "YYYYMMDDTHHMMSS.mmmZ" for a time in ns since the epoch; -EINVAL outside years 1970..9999. */
static int spool_fmt_time(int64_t ns, char out[TIME_LEN + 1])
{
	time_t secs = (time_t)(ns / NS_PER_S);
	struct tm tm;

	if (ns < 0 || !gmtime_r(&secs, &tm) || tm.tm_year + 1900 > 9999)
		return -EINVAL;
	/* 1970..9999: exactly 15 characters, then ".mmmZ" */
	strftime(out, TIME_LEN + 1, "%Y%m%dT%H%M%S", &tm);
	snprintf(out + 15, TIME_LEN + 1 - 15, ".%03uZ", (unsigned int)(ns % NS_PER_S / NS_PER_MS));
	return 0;
}

static int spool_digits(const char *p, int n)
{
	int v = 0;

	while (n--) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p++ - '0');
	}
	return v;
}

/*
 * Whether stem is "<time>-<service>-<seq>" as this module writes it; its start time to *from_ns.
 * Anything else in the directory is not ours and is left alone.
 */
static bool spool_parse_stem(const char *stem, size_t len, int64_t *from_ns)
{
	char again[TIME_LEN + 1];
	const char *seq;
	struct tm tm = {0};
	int64_t ns;
	time_t secs;
	size_t i;

	if (len >= sizeof(((struct spool_entry *)0)->stem) || len < TIME_LEN + 4 ||
	    stem[8] != 'T' || stem[15] != '.' || stem[19] != 'Z' || stem[TIME_LEN] != '-')
		return false;
	tm.tm_year = spool_digits(stem, 4) - 1900;
	tm.tm_mon = spool_digits(stem + 4, 2) - 1;
	tm.tm_mday = spool_digits(stem + 6, 2);
	tm.tm_hour = spool_digits(stem + 9, 2);
	tm.tm_min = spool_digits(stem + 11, 2);
	tm.tm_sec = spool_digits(stem + 13, 2);
	if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mday < 1 || tm.tm_hour < 0 || tm.tm_min < 0 ||
	    tm.tm_sec < 0 || spool_digits(stem + 16, 3) < 0)
		return false;
	secs = timegm(&tm);
	if (secs == (time_t)-1)
		return false;
	ns = (int64_t)secs * NS_PER_S + spool_digits(stem + 16, 3) * NS_PER_MS;
	/* timegm normalizes 20230231 into March: a name must format back to itself */
	if (spool_fmt_time(ns, again) || memcmp(again, stem, TIME_LEN))
		return false;
	seq = memrchr(stem + TIME_LEN + 1, '-', len - TIME_LEN - 1);
	if (!seq || seq == stem + TIME_LEN + 1 || seq + 1 == stem + len || len - (seq - stem) > 6)
		return false;
	for (i = TIME_LEN + 1; i < len; i++)
		if (!spool_name_char(stem[i]))
			return false;
	if (spool_digits(seq + 1, (int)(stem + len - seq - 1)) < 0)
		return false;
	*from_ns = ns;
	return true;
}

/* ---- index --------------------------------------------------------------------------------- */

static struct spool_entry *spool_ent(struct spool *s, size_t i)
{
	return &s->ents[s->off + i];
}

/* First index whose stem is >= stem. */
static size_t spool_lower_bound(struct spool *s, const char *stem)
{
	size_t lo = 0, hi = s->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(spool_ent(s, mid)->stem, stem) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool spool_find(struct spool *s, const char *stem, size_t *idx)
{
	*idx = spool_lower_bound(s, stem);
	return *idx < s->n && !strcmp(spool_ent(s, *idx)->stem, stem);
}

/* Room for one more entry at the end, so that an insert after a write cannot fail. */
static int spool_reserve(struct spool *s)
{
	if (s->off + s->n < s->cap)
		return 0;
	if (s->off) {
		memmove(s->ents, s->ents + s->off, s->n * sizeof(*s->ents));
		s->off = 0;
		return 0;
	}
	return array_reserve(s->ents, s->cap, s->n + 1, 64);
}

static void spool_insert(struct spool *s, const struct spool_entry *e)
{
	size_t pos = spool_lower_bound(s, e->stem);
	struct spool_entry *at = spool_ent(s, pos);

	memmove(at + 1, at, (s->n - pos) * sizeof(*at));
	*at = *e;
	s->n++;
	s->st.files++;
	s->st.bytes += e->bytes;
}

static void spool_delete(struct spool *s, size_t i)
{
	s->st.files--;
	s->st.bytes -= spool_ent(s, i)->bytes;
	if (i == 0)
		s->off++;
	else
		memmove(spool_ent(s, i), spool_ent(s, i + 1), (s->n - i - 1) * sizeof(*s->ents));
	if (!--s->n)
		s->off = 0;
}

/* ---- files --------------------------------------------------------------------------------- */

static int spool_unlink(struct spool *s, const char *stem, const char *suffix)
{
	char name[NAME_MAX + 1];

	snprintf(name, sizeof(name), "%s%s", stem, suffix);
	if (unlinkat(s->dirfd, name, 0) && errno != ENOENT)
		return -errno;
	return 0;
}

/*
 * Removes pair i: the profile first, so that a crash in between leaves an orphan sidecar, which
 * the next startup removes. A file already gone (an operator, the shipper) is not an error.
 */
static int spool_remove_at(struct spool *s, size_t i)
{
	const char *stem = spool_ent(s, i)->stem;
	int err;

	err = spool_unlink(s, stem, PROFILE_SUFFIX);
	if (err) {
		s->st.remove_errors++;
		return err;
	}
	err = spool_unlink(s, stem, SIDECAR_SUFFIX);
	if (err)
		s->st.remove_errors++;
	/* without its profile the pair is gone for the shipper either way */
	spool_delete(s, i);
	return err;
}

static bool spool_exists(struct spool *s, const char *stem, const char *suffix)
{
	char name[NAME_MAX + 1];
	struct stat st;

	snprintf(name, sizeof(name), "%s%s", stem, suffix);
	return !fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || errno != ENOENT;
}

/*
 * Writes name atomically: a temporary file in the same directory (a dot name, skipped by listings
 * and removed at startup), fsync, rename, fsync of the directory. The rename never replaces a
 * file: a name that appeared meanwhile is -EEXIST, not lost data.
 */
static int spool_write_file(struct spool *s, const char *name, const void *data, size_t len)
{
	char tmp[64];
	int fd = -1, err = 0, i;

	for (i = 0; i < TMP_TRIES; i++) {
		snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d-%u", (int)getpid(), s->tmpseq++);
		fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return -errno;
	err = fileio_write_all(fd, data, len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (err)
		goto cleanup;
	if (renameat2(s->dirfd, tmp, s->dirfd, name, RENAME_NOREPLACE)) {
		/* a file system without RENAME_NOREPLACE: the name was checked free under the lock */
		if (errno != EINVAL || renameat(s->dirfd, tmp, s->dirfd, name)) {
			err = -errno;
			goto cleanup;
		}
	}
	if (fsync(s->dirfd)) {
		err = -errno;
		unlinkat(s->dirfd, name, 0);
	}
cleanup:
	if (err)
		unlinkat(s->dirfd, tmp, 0);
	return err;
}

/* The sidecar first, the profile last: the profile's rename commits the pair. */
static int spool_write_pair(struct spool *s, const char *stem, const struct buf *json,
			    const void *profile, size_t len)
{
	char name[NAME_MAX + 1];
	int err;

	snprintf(name, sizeof(name), "%s%s", stem, SIDECAR_SUFFIX);
	err = spool_write_file(s, name, json->p, json->len);
	if (err)
		return err;
	snprintf(name, sizeof(name), "%s%s", stem, PROFILE_SUFFIX);
	err = spool_write_file(s, name, profile, len);
	if (err)
		spool_unlink(s, stem, SIDECAR_SUFFIX);
	return err;
}

/* ---- bounds -------------------------------------------------------------------------------- */

/*
 * Removes the oldest pairs until the spool, plus a write of need bytes (need_files 1) or nothing
 * (0), is within every bound. Stops at the first unlink that fails: it would fail again.
 */
static int spool_enforce(struct spool *s, int64_t now_ns, uint64_t need, size_t need_files)
{
	int err;

	while (s->max_age_ns > 0 && s->n && spool_ent(s, 0)->from_ns < now_ns - s->max_age_ns) {
		err = spool_remove_at(s, 0);
		if (err)
			return err;
		s->st.evicted_age++;
	}
	while (s->n && s->n + need_files > s->max_files) {
		err = spool_remove_at(s, 0);
		if (err)
			return err;
		s->st.evicted_files++;
	}
	while (s->max_bytes && s->n && s->st.bytes + need > s->max_bytes) {
		err = spool_remove_at(s, 0);
		if (err)
			return err;
		s->st.evicted_bytes++;
	}
	return 0;
}

/* ---- startup ------------------------------------------------------------------------------- */

/* Creates dir and its missing parents with mode 0750. */
static int spool_mkdir_p(const char *dir)
{
	char *buf = strdup(dir), *p;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) && errno != EEXIST) {
			err = -errno;
			goto cleanup;
		}
		*p = '/';
	}
	if (mkdir(buf, 0750) && errno != EEXIST)
		err = -errno;
cleanup:
	free(buf);
	return err;
}

struct scan_ent {
	struct spool_entry e;
	bool profile; /* else the sidecar */
};

static int scan_cmp(const void *a, const void *b)
{
	const struct scan_ent *x = a, *y = b;
	int c = strcmp(x->e.stem, y->e.stem);

	return c ? c : (int)x->profile - (int)y->profile;
}

/* Whether name is "<stem><suffix>" with a stem of ours; fills e. */
static bool scan_name(const char *name, const char *suffix, struct scan_ent *se)
{
	size_t len = strlen(name), slen = strlen(suffix);

	if (len <= slen || strcmp(name + len - slen, suffix) ||
	    !spool_parse_stem(name, len - slen, &se->e.from_ns))
		return false;
	memcpy(se->e.stem, name, len - slen);
	se->e.stem[len - slen] = '\0';
	return true;
}

/*
 * Indexes the directory: removes temporary files (a writer that crashed), pairs up profiles and
 * sidecars, removes the halves without their other half. Files not named as ours stay untouched.
 */
static int spool_scan(struct spool *s)
{
	struct scan_ent *v = NULL;
	size_t nv_len = 0, nv_cap = 0, i;
	struct dirent *de;
	struct stat st;
	DIR *d = NULL;
	int fd, err = 0;

	fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	while ((errno = 0, de = readdir(d))) {
		struct scan_ent se = {0};

		if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			if (!unlinkat(s->dirfd, de->d_name, 0))
				s->st.temp_removed++;
			else if (errno != ENOENT)
				s->st.remove_errors++;
			continue;
		}
		if (scan_name(de->d_name, PROFILE_SUFFIX, &se))
			se.profile = true;
		else if (!scan_name(de->d_name, SIDECAR_SUFFIX, &se))
			continue;
		if (fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		/* a link or a FIFO is never followed or read: left alone, counted */
		if (!S_ISREG(st.st_mode)) {
			s->st.not_regular++;
			continue;
		}
		se.e.bytes = (uint64_t)st.st_size;
		if (array_reserve(v, nv_cap, nv_len + 1, 64)) {
			err = -ENOMEM;
			goto cleanup;
		}
		v[nv_len++] = se;
	}
	if (errno) {
		err = -errno;
		goto cleanup;
	}
	if (nv_len)
		qsort(v, nv_len, sizeof(*v), scan_cmp);
	/* sorted by stem, the sidecar before the profile of the same stem */
	for (i = 0; i < nv_len; i++) {
		if (i + 1 < nv_len && !v[i].profile && v[i + 1].profile &&
		    !strcmp(v[i].e.stem, v[i + 1].e.stem)) {
			err = spool_reserve(s);
			if (err)
				goto cleanup;
			v[i].e.bytes += v[i + 1].e.bytes;
			*spool_ent(s, s->n) = v[i].e; /* in order: appended */
			s->n++;
			s->st.files++;
			s->st.bytes += v[i].e.bytes;
			i++;
			continue;
		}
		if (!spool_unlink(s, v[i].e.stem, v[i].profile ? PROFILE_SUFFIX : SIDECAR_SUFFIX))
			s->st.orphans_removed++;
		else
			s->st.remove_errors++;
	}
cleanup:
	closedir(d);
	free(v);
	return err;
}

struct spool *spool__new(const char *dir, uint64_t max_bytes, int64_t max_age_ns, char *err_msg,
			 size_t errlen)
{
	struct spool *s = NULL;
	int err = 0;

	if (errlen)
		err_msg[0] = '\0';
	/* room for "/<stem>.pb.gz" in a path */
	if (!dir || !*dir || strlen(dir) + sizeof(((struct spool_entry *)0)->stem) + 8 > PATH_MAX) {
		snprintf(err_msg, errlen, "not a path, or too long");
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err_msg, errlen, "out of memory");
		return NULL;
	}
	s->dirfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->max_bytes = max_bytes;
	s->max_age_ns = max_age_ns;
	s->max_files = SPOOL_MAX_FILES_DEFAULT;
	s->dir = strdup(dir);
	if (!s->dir) {
		err = -ENOMEM;
		snprintf(err_msg, errlen, "out of memory");
		goto cleanup;
	}
	err = spool_mkdir_p(dir);
	if (err) {
		snprintf(err_msg, errlen, "cannot create it: %s", strerror(-err));
		goto cleanup;
	}
	/*
	 * Whoever else can write the directory (or one above it) can put profiles in it for the
	 * shipper to send, or take them away: refused, as the configuration is (safepath.h). The
	 * directories created just now are root's, 0750.
	 */
	err = safepath_check(dir, err_msg, errlen);
	if (err == -EPERM)
		goto cleanup;
	s->dirfd = err ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		err = err ? err : -errno;
		snprintf(err_msg, errlen, "%s", strerror(-err));
		goto cleanup;
	}
	/* two writers would evict each other's pairs and count them wrong */
	if (flock(s->dirfd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(err_msg, errlen, "%s",
			 err == -EBUSY ? "another rubyprofd holds it" : strerror(-err));
		goto cleanup;
	}
	err = spool_scan(s);
	if (err) {
		snprintf(err_msg, errlen, "reading it: %s", strerror(-err));
		goto cleanup;
	}
	/* a file that cannot be removed now is counted; it does not keep the service down */
	(void)spool_enforce(s, clock_real_ns(), 0, 0);
cleanup:
	if (err) {
		spool__free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void spool__free(struct spool *s)
{
	if (!s)
		return;
	if (s->dirfd >= 0)
		close(s->dirfd);
	pthread_mutex_destroy(&s->lock);
	free(s->ents);
	free(s->dir);
	free(s);
}

/* ---- public -------------------------------------------------------------------------------- */

static bool spool_meta_ok(const struct spool_meta *m, const void *profile, size_t len)
{
	size_t i, j;

	if (!m || (!profile && len) || !m->service || !*m->service ||
	    strlen(m->service) > SPOOL_MAX_STRING || m->from_ns < 0 || m->until_ns < m->from_ns ||
	    (m->spy_name && strlen(m->spy_name) > SPOOL_MAX_STRING) ||
	    m->nlabels > SPOOL_MAX_LABELS || (m->nlabels && !m->labels))
		return false;
	for (i = 0; i < m->nlabels; i++) {
		if (!m->labels[i].key || !m->labels[i].value ||
		    strlen(m->labels[i].key) > SPOOL_MAX_STRING ||
		    strlen(m->labels[i].value) > SPOOL_MAX_STRING)
			return false;
		/* a JSON object with a key twice: readers disagree on which wins (ours refuses it) */
		for (j = 0; j < i; j++)
			if (strcmp(m->labels[i].key, m->labels[j].key) == 0)
				return false;
	}
	return true;
}

/* "<time>-<service>-<seq>" with the first seq free in the index and on disk. */
static int spool_pick_stem(struct spool *s, const struct spool_meta *m, char *stem, size_t len)
{
	char when[TIME_LEN + 1], svc[SPOOL_MAX_SERVICE_NAME + 1];
	unsigned int seq;
	size_t i, idx;
	int err;

	err = spool_fmt_time(m->from_ns, when);
	if (err)
		return err;
	for (i = 0; i < SPOOL_MAX_SERVICE_NAME && m->service[i]; i++)
		svc[i] = spool_name_char((unsigned char)m->service[i]) ? m->service[i] : '_';
	svc[i] = '\0';
	for (seq = 0; seq <= SEQ_MAX; seq++) {
		snprintf(stem, len, "%s-%s-%u", when, svc, seq);
		if (!spool_find(s, stem, &idx) && !spool_exists(s, stem, SIDECAR_SUFFIX) &&
		    !spool_exists(s, stem, PROFILE_SUFFIX))
			return 0;
	}
	return -EEXIST;
}

int spool_write(struct spool *s, const struct spool_meta *m, const void *profile, size_t len,
		char *path, size_t pathlen)
{
	struct spool_entry e = {0};
	struct buf json = {0};
	char name[sizeof(e.stem) + sizeof(PROFILE_SUFFIX)];
	uint64_t need;
	int err;

	if (!s || !spool_meta_ok(m, profile, len))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	err = spool_pick_stem(s, m, e.stem, sizeof(e.stem));
	if (err)
		goto cleanup;
	e.from_ns = m->from_ns - m->from_ns % NS_PER_MS; /* what a scan reads back from the name */
	if (path &&
	    (size_t)snprintf(path, pathlen, "%s/%s%s", s->dir, e.stem, PROFILE_SUFFIX) >= pathlen) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	snprintf(name, sizeof(name), "%s" PROFILE_SUFFIX, e.stem);
	err = sidecar_write(&json, m, name, len);
	if (err)
		goto cleanup;
	need = (uint64_t)len + json.len;
	if (s->max_bytes && need > s->max_bytes) {
		s->st.refused_too_big++;
		err = -EFBIG;
		goto cleanup;
	}
	err = spool_reserve(s);
	if (!err)
		err = spool_enforce(s, clock_real_ns(), need, 1);
	if (!err)
		err = spool_write_pair(s, e.stem, &json, profile, len);
	if ((err == -ENOSPC || err == -EDQUOT) && s->n && !spool_remove_at(s, 0)) {
		s->st.evicted_bytes++;
		err = spool_write_pair(s, e.stem, &json, profile, len);
	}
	if (err) {
		s->st.write_errors++;
		goto cleanup;
	}
	e.bytes = need;
	spool_insert(s, &e);
	s->st.written++;
cleanup:
	pthread_mutex_unlock(&s->lock);
	if (err && path && pathlen)
		path[0] = '\0';
	free(json.p);
	return err;
}

int spool_expire(struct spool *s, int64_t now_ns)
{
	int err;

	pthread_mutex_lock(&s->lock);
	err = spool_enforce(s, now_ns, 0, 0);
	pthread_mutex_unlock(&s->lock);
	return err;
}

void spool_set_bounds(struct spool *s, uint64_t max_bytes, int64_t max_age_ns)
{
	pthread_mutex_lock(&s->lock);
	s->max_bytes = max_bytes;
	s->max_age_ns = max_age_ns;
	spool_enforce(s, clock_real_ns(), 0, 0); /* failures are counted in remove_errors */
	pthread_mutex_unlock(&s->lock);
}

void spool_set_max_files(struct spool *s, size_t max_files)
{
	pthread_mutex_lock(&s->lock);
	s->max_files = max_files ? max_files : SPOOL_MAX_FILES_DEFAULT;
	spool_enforce(s, clock_real_ns(), 0, 0);
	pthread_mutex_unlock(&s->lock);
}

void spool_stats(const struct spool *s, struct spool_stats *out)
{
	/* the mutex is not part of the spool's value: locking it does not change the spool */
	pthread_mutex_t *lock = (pthread_mutex_t *)&s->lock;

	pthread_mutex_lock(lock);
	*out = s->st;
	out->oldest_from_ns = s->n ? s->ents[s->off].from_ns : 0;
	pthread_mutex_unlock(lock);
}

int spool_list(struct spool *s, struct spool_entry **out, size_t *n, size_t max)
{
	size_t take;
	int err = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&s->lock);
	if (!s->n)
		goto cleanup;
	take = max && max < s->n ? max : s->n;
	*out = malloc(take * sizeof(**out));
	if (!*out) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(*out, spool_ent(s, 0), take * sizeof(**out));
	*n = take;
cleanup:
	pthread_mutex_unlock(&s->lock);
	return err;
}

int spool_remove(struct spool *s, const char *stem)
{
	size_t idx;
	int err;

	pthread_mutex_lock(&s->lock);
	err = spool_find(s, stem, &idx) ? spool_remove_at(s, idx) : -ENOENT;
	pthread_mutex_unlock(&s->lock);
	return err;
}

static int spool_path(const struct spool *s, const char *stem, const char *suffix, char *buf,
		      size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s%s", s->dir, stem, suffix) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int spool_profile_path(const struct spool *s, const char *stem, char *buf, size_t len)
{
	return spool_path(s, stem, PROFILE_SUFFIX, buf, len);
}

int spool_sidecar_path(const struct spool *s, const char *stem, char *buf, size_t len)
{
	return spool_path(s, stem, SIDECAR_SUFFIX, buf, len);
}

const char *spool_dir(const struct spool *s)
{
	return s->dir;
}
