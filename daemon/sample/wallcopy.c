// SPDX-License-Identifier: GPL-2.0-only
/* wallcopy.c - the last walked stack of each Ruby thread, for wall-clock stack reuse. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hmap.h"
#include "sample/wallcopy.h"

struct wallcopy {
	struct hmap index; /* (pid, rb_thread_t *) -> slot + 1 */
	struct wallcopy_entry *slots;
	uint32_t *free_slots; /* slots emptied, reused first */
	size_t max, used, nfree, hand;
	struct wallcopy_counters c;
};

struct wallcopy *wallcopy__new(size_t max)
{
	struct wallcopy *c;

	if (!max) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max = max;
	c->slots = calloc(max, sizeof(*c->slots));
	c->free_slots = calloc(max, sizeof(*c->free_slots));
	if (!c->slots || !c->free_slots) {
		wallcopy__free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void wallcopy__free(struct wallcopy *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; c->slots && i < c->used; i++) {
		free(c->slots[i].frames);
		free(c->slots[i].tctx);
	}
	free(c->slots);
	free(c->free_slots);
	hmap_clear(&c->index);
	free(c);
}

static void slot_drop(struct wallcopy *c, size_t i)
{
	struct wallcopy_entry *e = &c->slots[i];

	hmap_del(&c->index, (uint64_t)e->pid, e->th, NULL);
	free(e->frames);
	free(e->tctx);
	memset(e, 0, sizeof(*e));
	c->free_slots[c->nfree++] = (uint32_t)i;
}

/* A slot for (pid, th): its own, an emptied one, a new one, or the next in turn (evicted). */
static struct wallcopy_entry *slot_for(struct wallcopy *c, pid_t pid, uint64_t th,
				       struct wallcopy_entry *evicted)
{
	uint64_t v;
	size_t i;

	if (hmap_get(&c->index, (uint64_t)pid, th, &v))
		return &c->slots[v - 1];
	if (c->nfree) {
		i = c->free_slots[--c->nfree];
	} else if (c->used < c->max) {
		i = c->used++;
	} else {
		i = c->hand++ % c->max;
		if (evicted)
			*evicted = (struct wallcopy_entry){.pid = c->slots[i].pid,
							   .th = c->slots[i].th};
		c->c.evicted++;
		slot_drop(c, i);
		c->nfree--; /* slot_drop listed i as free: it is taken now */
	}
	if (hmap_put(&c->index, (uint64_t)pid, th, i + 1)) {
		c->free_slots[c->nfree++] = (uint32_t)i;
		return NULL;
	}
	c->slots[i].pid = pid;
	c->slots[i].th = th;
	return &c->slots[i];
}

int wallcopy_keep(struct wallcopy *c, pid_t pid, uint64_t th, uint32_t seq, uint32_t run,
		  const struct rp_frame *frames, size_t n, uint32_t flags, uint32_t truncated,
		  const char *comm, struct wallcopy_entry *evicted)
{
	struct rp_frame *f = NULL;
	struct wallcopy_entry *e;

	if (evicted)
		evicted->pid = 0;
	if (n) {
		f = malloc(n * sizeof(*f));
		if (!f) {
			c->c.failed++;
			return -ENOMEM;
		}
		memcpy(f, frames, n * sizeof(*f));
	}
	e = slot_for(c, pid, th, evicted);
	if (!e) {
		free(f);
		c->c.failed++;
		return -ENOMEM;
	}
	free(e->frames);
	e->frames = f;
	e->n = n;
	e->seq = seq;
	e->run = run;
	e->flags = flags;
	e->truncated = truncated;
	if (comm)
		memcpy(e->comm, comm, sizeof(e->comm));
	else
		memset(e->comm, 0, sizeof(e->comm));
	return 0;
}

int wallcopy_set_tctx(struct wallcopy *c, pid_t pid, uint64_t th, const uint8_t *tctx, size_t len,
		      uint32_t flags)
{
	struct wallcopy_entry *e;
	uint64_t v;

	if (!hmap_get(&c->index, (uint64_t)pid, th, &v))
		return -ENOENT;
	e = &c->slots[v - 1];
	free(e->tctx);
	e->tctx = NULL;
	e->tctx_len = 0;
	e->tctx_flags = 0;
	if (!tctx || !len)
		return 0;
	e->tctx = malloc(len);
	if (!e->tctx) {
		c->c.failed++;
		return -ENOMEM;
	}
	memcpy(e->tctx, tctx, len);
	e->tctx_len = len;
	e->tctx_flags = flags;
	return 0;
}

const struct wallcopy_entry *wallcopy_get(struct wallcopy *c, pid_t pid, uint64_t th, uint32_t seq,
					  uint32_t run)
{
	struct wallcopy_entry *e;
	uint64_t v;

	if (!hmap_get(&c->index, (uint64_t)pid, th, &v))
		return NULL;
	e = &c->slots[v - 1];
	if (e->seq != seq)
		return NULL;
	e->run = run;
	return e;
}

size_t wallcopy_drop_if(struct wallcopy *c, bool (*drop)(void *ctx, pid_t pid, uint32_t run),
			void *ctx)
{
	size_t i, n = 0;

	for (i = 0; i < c->used; i++) {
		if (c->slots[i].pid && drop(ctx, c->slots[i].pid, c->slots[i].run)) {
			slot_drop(c, i);
			n++;
		}
	}
	c->c.dropped += n;
	return n;
}

void wallcopy_counters(const struct wallcopy *c, struct wallcopy_counters *out)
{
	*out = c->c;
	out->entries = c->index.len;
}

#define WALLCOPY_STACK_FLAGS (RP_SAMPLE_TRUNCATED | RP_SAMPLE_GC | RP_SAMPLE_JIT_LEAF)

void wallcopy_on_stack(struct wallcopy *c, struct sampler_stack *st, uint32_t run,
		       struct wallcopy_reuse *out)
{
	pid_t pid = (pid_t)st->first->hdr.pid;
	const struct wallcopy_entry *e;
	struct wallcopy_entry gone;

	memset(out, 0, sizeof(*out));
	if (!(st->flags & RP_SAMPLE_SAME)) {
		/* only what the BPF side may refer to: a whole stack of a known thread */
		if (!st->first->ruby_thread ||
		    (st->flags & (RP_SAMPLE_READ_FAIL | RP_SAMPLE_BAD_EC | RP_SAMPLE_NO_EC)))
			return;
		if (wallcopy_keep(c, pid, st->first->ruby_thread, st->first->seq, run, st->frames,
				  st->nframes, st->flags & WALLCOPY_STACK_FLAGS, st->truncated,
				  st->first->comm, &gone) != 0)
			return;
		if (gone.pid) {
			out->drop_pid = gone.pid;
			out->drop_th = gone.th;
		}
		wallcopy_set_tctx(c, pid, st->first->ruby_thread, st->tctx, st->tctx_len,
				  st->tctx_flags);
		return;
	}
	e = wallcopy_get(c, pid, st->first->ruby_thread, st->first->base_seq, run);
	st->samples = st->first->visits;
	st->nshared = 0;
	if (!e) {
		/* its stack's record was lost, or the copy evicted: no frames this time (counted,
		 * shown as a failed read), and the next visit walks it */
		out->missed = st->first->visits;
		out->drop_pid = pid;
		out->drop_th = st->first->ruby_thread;
		st->flags = (st->flags & ~RP_SAMPLE_SAME) | RP_SAMPLE_READ_FAIL;
		st->nframes = 0;
		st->truncated = 0;
		return;
	}
	out->reused = st->first->visits;
	st->frames = e->frames;
	st->nframes = e->n;
	st->truncated = e->truncated;
	st->flags = (st->flags & ~RP_SAMPLE_SAME) | e->flags;
	st->tctx = e->tctx;
	st->tctx_len = e->tctx_len;
	st->tctx_flags = e->tctx_flags;
}
