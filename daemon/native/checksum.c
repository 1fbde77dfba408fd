// SPDX-License-Identifier: GPL-2.0-only
/*
 * checksum.c - file checksums read by one worker thread (checksum.h). Its mutex is held only to
 * look at the cache and the queue, never across a read, so the main loop's checksum_crc32()
 * never waits for the disk. The thread is started by the first ask: a daemon that never meets a
 * debug file without a build id never has it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/bounds.h"
#include "native/checksum.h"

/* Bytes per read: the stop flag is looked at between two. */
#define CHUNK (1U << 20)

struct key {
	uint64_t dev, ino, size;
	int64_t ctime_ns; /* a file rewritten in place under the same inode is read again */
};

enum state { FREE, QUEUED, READING, DONE };

struct slot {
	struct key key;
	enum state state;
	int err; /* DONE: 0 and crc, or -errno */
	uint32_t crc;
	uint64_t used; /* the ask clock when last asked for: the least recent goes first */
	int fd;	       /* QUEUED: the worker's duplicate */
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work; /* the worker waits on it for a queued slot */
	pthread_cond_t idle; /* checksum_wait waits on it for an empty queue */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	struct slot v[CHECKSUM_CACHE_MAX];
	unsigned int pending; /* slots QUEUED or READING */
	uint64_t clock;
	struct checksum_stats st;
} C = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
};

static struct key key_of(const struct stat *st)
{
	struct key k = {
		.dev = (uint64_t)st->st_dev,
		.ino = (uint64_t)st->st_ino,
		.size = (uint64_t)st->st_size,
		.ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec,
	};

	return k;
}

static bool same_key(const struct key *a, const struct key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->ctime_ns == b->ctime_ns;
}

/* CRC32 of fd's first `size` bytes, read in chunks; -EFBIG when the file holds more. */
static int crc_of(int fd, uint64_t size, uint32_t *crc, uint64_t *read_bytes)
{
	static unsigned char buf[CHUNK]; /* the worker's own: there is one worker */
	uLong c = crc32(0L, Z_NULL, 0);
	uint64_t off = 0;
	ssize_t n;

	for (;;) {
		if (atomic_load(&C.stop))
			return -ECANCELED;
		n = pread(fd, buf, sizeof(buf), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += (uint64_t)n;
		*read_bytes += (uint64_t)n;
		/* grown since it was asked for: past the bound it was checked against */
		if (off > size && off > BOUND_FILE_BYTES)
			return -EFBIG;
		c = crc32(c, buf, (uInt)n);
	}
	*crc = (uint32_t)c;
	return 0;
}

static struct slot *next_queued(void)
{
	struct slot *s = NULL;
	size_t i;

	for (i = 0; i < CHECKSUM_CACHE_MAX; i++) {
		if (C.v[i].state == QUEUED && (!s || C.v[i].used < s->used))
			s = &C.v[i];
	}
	return s;
}

static void *worker(void *arg)
{
	struct slot *s;
	struct key k;
	uint64_t bytes;
	uint32_t crc = 0;
	int fd, err;

	(void)arg;
	pthread_mutex_lock(&C.mu);
	while (!atomic_load(&C.stop)) {
		s = next_queued();
		if (!s) {
			pthread_cond_wait(&C.work, &C.mu);
			continue;
		}
		s->state = READING;
		k = s->key;
		fd = s->fd;
		s->fd = -1;
		pthread_mutex_unlock(&C.mu);

		bytes = 0;
		err = crc_of(fd, k.size, &crc, &bytes);
		close(fd);

		pthread_mutex_lock(&C.mu);
		C.st.bytes += bytes;
		if (err)
			C.st.failed++;
		else
			C.st.computed++;
		/* the slot is still this file's: only the worker takes a READING slot away */
		s->state = DONE;
		s->err = err;
		s->crc = crc;
		C.pending--;
		if (!C.pending)
			pthread_cond_broadcast(&C.idle);
	}
	pthread_mutex_unlock(&C.mu);
	return NULL;
}

/* A slot for a new key: a free one, else the least recently asked for answer. NULL: none. */
static struct slot *take_slot(void)
{
	struct slot *s = NULL;
	size_t i;

	for (i = 0; i < CHECKSUM_CACHE_MAX; i++) {
		if (C.v[i].state == FREE)
			return &C.v[i];
		if (C.v[i].state == DONE && (!s || C.v[i].used < s->used))
			s = &C.v[i];
	}
	if (s)
		C.st.evicted++;
	return s;
}

static int start_worker(void)
{
	sigset_t all, old;
	int err;

	if (C.started)
		return 0;
	atomic_store(&C.stop, false);
	/* every signal stays the main thread's (its signalfd, --oneshot's handler and ppoll) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&C.thread, NULL, worker, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	C.started = true;
	return 0;
}

/* Queues the file in a new slot. -EINPROGRESS, or -errno. Under C.mu. */
static int enqueue(int fd, const struct key *k)
{
	struct slot *s;
	int dup, err;

	if (C.pending >= CHECKSUM_QUEUE_MAX) {
		C.st.queue_full++;
		return -EAGAIN;
	}
	err = start_worker();
	if (err)
		return err;
	s = take_slot();
	if (!s) {
		C.st.queue_full++;
		return -EAGAIN;
	}
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup < 0)
		return -errno;
	memset(s, 0, sizeof(*s));
	s->key = *k;
	s->state = QUEUED;
	s->fd = dup;
	s->used = ++C.clock;
	C.pending++;
	pthread_cond_signal(&C.work);
	return -EINPROGRESS;
}

int checksum_crc32(int fd, const struct stat *st, uint32_t *crc)
{
	struct key k = key_of(st);
	int err = -EINPROGRESS;
	size_t i;

	pthread_mutex_lock(&C.mu);
	for (i = 0; i < CHECKSUM_CACHE_MAX; i++) {
		if (C.v[i].state == FREE || !same_key(&C.v[i].key, &k))
			continue;
		C.v[i].used = ++C.clock;
		if (C.v[i].state == DONE) {
			C.st.hits++;
			err = C.v[i].err;
			*crc = C.v[i].crc;
		}
		pthread_mutex_unlock(&C.mu);
		return err;
	}
	err = enqueue(fd, &k);
	pthread_mutex_unlock(&C.mu);
	return err;
}

unsigned int checksum_pending(void)
{
	unsigned int n;

	pthread_mutex_lock(&C.mu);
	n = C.pending;
	pthread_mutex_unlock(&C.mu);
	return n;
}

bool checksum_wait(int timeout_ms)
{
	struct timespec ts;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&C.mu);
	while (C.pending && pthread_cond_timedwait(&C.idle, &C.mu, &ts) == 0)
		;
	idle = !C.pending;
	pthread_mutex_unlock(&C.mu);
	return idle;
}

void checksum_stop(void)
{
	size_t i;

	pthread_mutex_lock(&C.mu);
	atomic_store(&C.stop, true);
	pthread_cond_broadcast(&C.work);
	pthread_mutex_unlock(&C.mu);
	if (C.started)
		pthread_join(C.thread, NULL);
	C.started = false;
	for (i = 0; i < CHECKSUM_CACHE_MAX; i++) {
		if (C.v[i].state == QUEUED)
			close(C.v[i].fd);
		C.v[i].state = FREE;
	}
	C.pending = 0;
	atomic_store(&C.stop, false);
}

void checksum_stats(struct checksum_stats *out)
{
	pthread_mutex_lock(&C.mu);
	*out = C.st;
	pthread_mutex_unlock(&C.mu);
}
