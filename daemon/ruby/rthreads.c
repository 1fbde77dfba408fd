// SPDX-License-Identifier: GPL-2.0-only
/* rthreads.c - rb_thread_t addresses to Ruby thread labels (identity, Thread#name). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/hmap.h"
#include "proc/procmem.h"
#include "ruby/rthreads.h"
#include "ruby/rvalue.h"

#define RTHREAD_T_DATA	   0x0c
/* RTypedData.data: after RBasic (16 bytes) and two words (type and typed_flag, or fields), in
 * every supported version */
#define RTHREAD_TYPED_DATA 32

struct entry {
	uint32_t epoch;	  /* rthreads.epoch when it was read */
	int err;	  /* 0, or why it is not a Ruby thread (not asked again this epoch) */
	int64_t first_ns; /* first sight (monotonic): how young the thread is */
	int64_t read_ns;  /* last read */
	struct rthread_label lab;
};

struct rthreads {
	pid_t pid;
	const struct ruby_offsets *off;
	struct rthread_stats *stats;
	uint32_t epoch;
	struct hmap by_th; /* rb_thread_t address -> struct entry * */
};

struct rthreads *rthreads__new(pid_t pid, const struct ruby_offsets *off,
			       struct rthread_stats *stats)
{
	struct rthreads *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->pid = pid;
	r->off = off;
	r->stats = stats;
	return r;
}

static void drop_all(struct rthreads *r)
{
	hmap_clear_free(&r->by_th);
}

void rthreads__free(struct rthreads *r)
{
	if (!r)
		return;
	drop_all(r);
	free(r);
}

void rthreads_new_epoch(struct rthreads *r)
{
	r->epoch++;
}

/*
 * A live rb_thread_t is the data of its Thread object, a T_DATA held in its `self`: a pointer
 * that does not lead back to itself is not (or no longer) a Ruby thread.
 */
static int check_thread(const struct rthreads *r, uint64_t th)
{
	uint64_t self, flags, data;

	if (procmem_u64(r->pid, th + r->off->th_self, &self) ||
	    rvalue_flags(r->pid, self, &flags) || (flags & RUBY_T_MASK) != RTHREAD_T_DATA ||
	    procmem_u64(r->pid, self + RTHREAD_TYPED_DATA, &data) || data != th)
		return -EINVAL;
	return 0;
}

static void read_entry(struct rthreads *r, uint64_t th, struct entry *e)
{
	uint64_t name;

	r->stats->reads++;
	e->epoch = r->epoch;
	e->read_ns = clock_mono_ns();
	e->lab.name[0] = '\0';
	snprintf(e->lab.id, sizeof(e->lab.id), "0x%llx", (unsigned long long)th);
	e->err = check_thread(r, th);
	if (e->err) {
		r->stats->invalid++;
		return;
	}
	if (!r->off->th_name)
		return;
	/* nil (an unnamed thread, the main thread too) is no name */
	if (procmem_u64(r->pid, th + r->off->th_name, &name)) {
		r->stats->name_failed++;
		return;
	}
	if (rvalue_is_heap(name) &&
	    rvalue_string(r->pid, r->off, name, e->lab.name, sizeof(e->lab.name))) {
		e->lab.name[0] = '\0';
		r->stats->name_failed++;
	}
}

/*
 * An unnamed thread is read again while it is young (RTHREAD_YOUNG_NS, every RTHREAD_REREAD_NS
 * at most): apps name a thread just after its start (Thread.new { Thread.current.name = ... }),
 * and a first sight before that would leave it unnamed for the rest of the interval, its later
 * samples too. What is read is kept only if it is still that thread: one that has ended since
 * keeps the label its samples had.
 */
static void reread_young(struct rthreads *r, uint64_t th, struct entry *e)
{
	struct entry now = *e;
	int64_t t;

	if (e->err || e->lab.name[0] || !r->off->th_name)
		return;
	t = clock_mono_ns();
	if (t - e->first_ns >= RTHREAD_YOUNG_NS || t - e->read_ns < RTHREAD_REREAD_NS)
		return;
	read_entry(r, th, &now);
	if (!now.err)
		*e = now;
	else
		e->read_ns = now.read_ns;
}

int rthreads_get(struct rthreads *r, uint64_t th, const struct rthread_label **out)
{
	struct entry *e = NULL;
	uint64_t val;

	*out = NULL;
	if (!th)
		return -EINVAL;
	if (hmap_get(&r->by_th, th, 0, &val)) {
		e = (struct entry *)(uintptr_t)val;
	} else {
		if (r->by_th.len >= RTHREAD_MAX_PER_PROC) {
			drop_all(r);
			r->stats->resets++;
		}
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		if (hmap_put(&r->by_th, th, 0, (uintptr_t)e)) {
			free(e);
			return -ENOMEM;
		}
		e->epoch = r->epoch - 1;
		e->first_ns = clock_mono_ns();
	}
	if (e->epoch != r->epoch)
		read_entry(r, th, e);
	else
		reread_young(r, th, e);
	if (e->err)
		return e->err;
	*out = &e->lab;
	return 0;
}
