// SPDX-License-Identifier: GPL-2.0-only
/* sampler.c - BPF skeleton, perf events, ring buffer and stack reassembly. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lib/clock.h"
#include "lib/log.h"
#include "rubyprof.skel.h"
#include "sample/sampler.h"

/*
 * Reassembly of one CPU's stacks: chunks of one sample arrive in order from the same CPU, root
 * first, and a sample may be a delta of the CPU's previous complete stack (RP_SAMPLE_DELTA), so
 * that stack stays in `slots` until the next one replaces it.
 */
struct cpu_asm {
	struct rp_sample first;	 /* header of chunk 0 */
	struct rp_frame *slots;	 /* the stack, root first (max_frames) */
	struct rp_frame *frames; /* the stack delivered, leaf first, empty slots left out */
	uint32_t nslots;	 /* slots of the sample being assembled */
	uint32_t next_slot;	 /* slot the next chunk starts at */
	uint32_t lo;		 /* first known slot (0 but for a partial stack) */
	uint32_t flags;
	uint16_t next_chunk;
	int active;
	/* the last complete stack: slots [0, base_n) of sample base_seq */
	uint32_t base_n, base_seq;
	int has_base;
	/* the thread context sent before the sample being assembled (RP_REC_TCTX), if any */
	struct rp_tctx tctx;
	bool tctx_valid;
};

struct sampler {
	struct rubyprof_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int *pfds; /* perf event of each link (owned by the link) */
	int nlinks;
	struct bpf_link *iter_link;
	uint32_t pidns_level; /* of the daemon's pid namespace (0: the initial one) */
	struct cpu_asm *cpus;
	int ncpus; /* possible CPUs */
	int nasm;  /* reassembly slots: one per CPU, and one for wall-clock records (cpu = ncpus) */
	struct bpf_link *life_links[3];
	bool lifecycle;
	unsigned int frequency;
	unsigned int max_frames;
	struct sampler_handlers h;
	sampler_extra_hook extra_hook; /* wall-clock stacks, before h.on_stack (or NULL) */
	void *extra_ctx;
	uint64_t incomplete, bad_records, tctx_unpaired;
	uint64_t ring_bytes; /* bytes of records read from the ring buffer */
	unsigned int budget; /* records left in this sampler_consume() call */
	int64_t until_ns;    /* and when that call stops (CLOCK_MONOTONIC) */
	char *verifier_log;
};

#define VERIFIER_LOG_SIZE (4u << 20)

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t len;

	/* libbpf's own messages are details; our callers report failures in their words. */
	if (log_get_level() < LOG_LVL_DEBUG)
		return 0;
		/* libbpf hands us its own format strings */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	vsnprintf(buf, sizeof(buf), fmt, ap);
#pragma GCC diagnostic pop
	len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	log_debug("libbpf: %s", buf);
	return 0;
}

/* BPF_COMPLEXITY_LIMIT_INSNS of the kernel: what the verifier may explore of one program. */
#define VERIFIER_INSN_LIMIT 1000000u

void sampler_log_verified(struct bpf_object *obj)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj)
	{
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		log_debug("BPF program %s: the verifier explored %u instructions (%.1f %% of its "
			  "limit of %u)",
			  bpf_program__name(p), info.verified_insns,
			  100.0 * info.verified_insns / VERIFIER_INSN_LIMIT, VERIFIER_INSN_LIMIT);
	}
}

/* Logs the last lines of the verifier log, where the reason for a rejection is. */
static void log_verifier_tail(const char *vlog)
{
	const char *p = vlog + strlen(vlog);
	int lines = 0;

	while (p > vlog && lines < 16) {
		p--;
		if (*p == '\n' && p[1] != '\0')
			lines++;
	}
	if (*p == '\n')
		p++;
	if (*p)
		log_error("BPF verifier log (tail):\n%s", p);
}

static void deliver(struct sampler *s, struct cpu_asm *a)
{
	struct sampler_stack st = {
		.first = &a->first,
		.frames = a->frames,
		.flags = a->flags,
		.truncated = a->first.truncated,
	};
	/* slots [0, shared) are the base's (a delta: then lo is 0) */
	uint32_t shared = a->first.flags & RP_SAMPLE_DELTA ? a->first.first : 0, i;
	size_t n = 0;

	/* leaf first, as Ruby's backtrace, without the control frames it skips */
	for (i = a->nslots; i-- > a->lo;) {
		if (!rp_frame_kind(&a->slots[i]))
			continue;
		a->frames[n++] = a->slots[i];
		if (i < shared)
			st.nshared++;
	}
	st.nframes = n;
	/* its thread context: the record sent just before it on this CPU, for this very sample */
	if (a->tctx_valid) {
		a->tctx_valid = false;
		if (a->tctx.seq == a->first.seq && a->tctx.hdr.pid == a->first.hdr.pid &&
		    a->tctx.hdr.tid == a->first.hdr.tid) {
			st.tctx = a->tctx.data;
			st.tctx_len = RP_TCTX_HDR + (size_t)a->tctx.attrs;
			st.tctx_flags = a->tctx.flags;
		} else {
			s->tctx_unpaired++;
		}
	}
	if (s->extra_hook && a->first.cpu == (uint32_t)s->ncpus)
		s->extra_hook(s->extra_ctx, &st);
	s->h.on_stack(s->h.ctx, &st);
	a->active = 0;
	/* The BPF side counts on this stack as the base of the CPU's next one exactly when it
	 * was sent whole: every chunk, no failed read. */
	if (a->nslots && !(a->flags & RP_SAMPLE_READ_FAIL) && a->lo == 0) {
		a->base_n = a->nslots;
		a->base_seq = a->first.seq;
		a->has_base = 1;
	}
}

/* A chunk of a sample was lost, or its delta has no base: count it, forget the CPU's stack. */
static int lost(struct sampler *s, struct cpu_asm *a)
{
	s->incomplete++;
	a->active = 0;
	a->has_base = 0;
	return 0;
}

static int on_stack_chunk(struct sampler *s, const struct rp_sample *r, size_t size)
{
	struct cpu_asm *a;
	size_t nf;

	if (size < RP_SAMPLE_HDR_SIZE || r->cpu >= (uint32_t)s->nasm ||
	    RP_SAMPLE_HDR_SIZE + (size_t)r->nframes * sizeof(struct rp_frame) > size ||
	    r->nslots > s->max_frames || r->first > r->nslots ||
	    r->nframes > r->nslots - r->first) {
		s->bad_records++;
		return 0;
	}
	nf = r->nframes;
	a = &s->cpus[r->cpu];

	if (r->chunk == 0) {
		if (a->active)
			lost(s, a);
		if (r->flags & RP_SAMPLE_DELTA &&
		    (!a->has_base || a->base_seq != r->base_seq || r->first > a->base_n))
			return lost(s, a);
		memcpy(&a->first, r, RP_SAMPLE_HDR_SIZE);
		a->nslots = r->nslots;
		a->next_slot = r->first;
		a->lo = r->flags & RP_SAMPLE_DELTA ? 0 : r->first;
		a->flags = 0;
		a->next_chunk = 0;
		a->active = 1;
		/* the slots are being rewritten: no base until this stack is whole */
		if (r->nslots)
			a->has_base = 0;
	} else if (!a->active || r->seq != a->first.seq || r->chunk != a->next_chunk ||
		   r->first != a->next_slot) {
		/* A chunk of this sample was dropped: the stack would be wrong, count it instead. */
		if (a->active)
			return lost(s, a);
		return 0;
	}
	memcpy(a->slots + r->first, r->frames, nf * sizeof(struct rp_frame));
	a->next_slot = r->first + (uint32_t)nf;
	a->flags |= r->flags;
	a->first.truncated = r->truncated;
	a->next_chunk++;
	if (r->flags & RP_SAMPLE_LAST) {
		if (a->next_slot != a->nslots)
			return lost(s, a);
		deliver(s, a);
	}
	return 0;
}

/* A sample's thread context: kept for the sample of its (cpu, seq), which comes next. */
static int on_tctx(struct sampler *s, const struct rp_tctx *r, size_t size)
{
	struct cpu_asm *a;

	if (size < RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR || r->cpu >= (uint32_t)s->nasm ||
	    r->attrs > RP_TCTX_MAX - RP_TCTX_HDR ||
	    size != RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR + (size_t)r->attrs) {
		s->bad_records++;
		return 0;
	}
	a = &s->cpus[r->cpu];
	/* the one before never met its sample (the sample's record was lost) */
	if (a->tctx_valid)
		s->tctx_unpaired++;
	memcpy(&a->tctx, r, size);
	a->tctx_valid = true;
	return 0;
}

/* The one dispatcher of ring-buffer records: by kind, each checked against its size. */
/* A record callback's answer that stops ring_buffer__consume after this record (see
 * sampler_consume); any negative value does, this one is ours. */
#define BUDGET_SPENT (-EALREADY)

static int dispatch(struct sampler *s, void *data, size_t size);

static int on_record(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	s->ring_bytes += size;
	dispatch(s, data, size);
	if (s->budget && --s->budget == 0)
		return BUDGET_SPENT;
	/* the clock after every record: one deep stack of frames not cached yet can take long */
	if (s->until_ns && clock_mono_ns() >= s->until_ns)
		return BUDGET_SPENT;
	return 0;
}

static int dispatch(struct sampler *s, void *data, size_t size)
{
	const struct rp_rec *rec = data;

	if (size < sizeof(*rec) || rec->version != RP_REC_VERSION || rec->size > size) {
		s->bad_records++;
		return 0;
	}
	switch (rec->kind) {
	case RP_REC_STACK:
		return on_stack_chunk(s, data, rec->size);
	case RP_REC_PROC:
		if (rec->size < sizeof(struct rp_proc_event)) {
			s->bad_records++;
			return 0;
		}
		if (s->h.on_proc)
			s->h.on_proc(s->h.ctx, data);
		return 0;
	case RP_REC_USTACK:
		if (rec->size < RP_USTACK_HDR_SIZE) {
			s->bad_records++;
			return 0;
		}
		if (s->h.on_ustack)
			s->h.on_ustack(s->h.ctx, data, rec->size);
		return 0;
	case RP_REC_TCTX:
		return on_tctx(s, data, rec->size);
	case RP_REC_KSTACK:
		if (rec->size < sizeof(struct rp_kstack) ||
		    ((const struct rp_kstack *)data)->n > RP_KSTACK_MAX) {
			s->bad_records++;
			return 0;
		}
		if (s->h.on_kstack)
			s->h.on_kstack(s->h.ctx, data);
		return 0;
	default:
		/* a kind of a newer program: skipped by its size */
		s->bad_records++;
		return 0;
	}
}

/* The sampler without its BPF object: the dispatcher and the per-CPU reassembly. */
static struct sampler *sampler_alloc(const struct sampler_opts *opts,
				     const struct sampler_handlers *h, int ncpus)
{
	struct sampler *s;
	int i;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->h = *h;
	s->frequency = opts->frequency;
	s->max_frames = opts->max_frames;
	s->ncpus = ncpus;
	s->nasm = ncpus + 1;
	s->cpus = calloc(s->nasm, sizeof(*s->cpus));
	if (!s->cpus)
		goto cleanup;
	for (i = 0; i < s->nasm; i++) {
		s->cpus[i].slots = calloc(s->max_frames, sizeof(struct rp_frame));
		s->cpus[i].frames = calloc(s->max_frames, sizeof(struct rp_frame));
		if (!s->cpus[i].slots || !s->cpus[i].frames)
			goto cleanup;
	}
	return s;

cleanup:
	sampler__free(s);
	errno = ENOMEM;
	return NULL;
}

struct sampler *sampler__new_offline(const struct sampler_opts *opts,
				     const struct sampler_handlers *h, int ncpus)
{
	if (ncpus <= 0 || !opts->max_frames || opts->max_frames > RP_MAX_FRAMES_LIMIT) {
		errno = EINVAL;
		return NULL;
	}
	return sampler_alloc(opts, h, ncpus);
}

int sampler_feed(struct sampler *s, void *data, size_t size)
{
	return dispatch(s, data, size);
}

/*
 * The level of the daemon's pid namespace, which only the kernel knows (a namespace's parent is
 * hidden from inside it): rp_iter_pidns reads it from the daemon's own task. Set before anything
 * is attached, so that no pid is translated with the wrong level. 0 or -errno.
 */
static int find_pidns_level(struct sampler *s, uint32_t ino)
{
	struct bpf_link *link;
	struct rp_pidns ns = {0};
	ssize_t r = -1;
	int fd, err = 0;

	link = bpf_program__attach_iter(s->skel->progs.rp_iter_pidns, NULL);
	if (!link) {
		err = -errno;
		log_error("cannot attach the pid namespace iterator: %s", strerror(-err));
		return err;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd >= 0) {
		r = read(fd, &ns, sizeof(ns));
		close(fd);
	}
	bpf_link__destroy(link);
	if (r != (ssize_t)sizeof(ns) || ns.inum != ino || ns.level == 0 ||
	    ns.level > RP_PIDNS_MAX_LEVEL) {
		log_error(
			"cannot find the level of rubyprofd's pid namespace (inode %u; the kernel "
			"said level %u, inode %u)",
			ino, ns.level, ns.inum);
		return -EIO;
	}
	s->skel->bss->pidns_level = ns.level;
	s->pidns_level = ns.level;
	log_info("in pid namespace %u (level %u): pids are this namespace's, processes outside "
		 "it are not profiled",
		 ino, ns.level);
	return 0;
}

struct sampler *sampler__new(const struct sampler_opts *opts, const struct sampler_handlers *h)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts);
	struct sampler *s;
	int err, ncpus;
	uint8_t one = 1;
	size_t i;

	libbpf_set_print(libbpf_print);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		errno = ncpus ? -ncpus : EINVAL;
		return NULL;
	}
	s = sampler_alloc(opts, h, ncpus);
	if (!s)
		return NULL;

	s->verifier_log = malloc(VERIFIER_LOG_SIZE);
	if (!s->verifier_log) {
		err = -ENOMEM;
		goto cleanup;
	}
	s->verifier_log[0] = '\0';
	oopts.kernel_log_buf = s->verifier_log;
	oopts.kernel_log_size = VERIFIER_LOG_SIZE;
	oopts.kernel_log_level = 0; /* the log is filled on failure */

	s->skel = rubyprof_bpf__open_opts(&oopts);
	if (!s->skel) {
		err = -errno;
		log_error("cannot open the BPF object: %s", strerror(-err));
		goto cleanup;
	}
	s->skel->rodata->max_frames = s->max_frames;
	/* Each CPU's last stack, in blocks (bpf/maps.bpf.h). */
	s->skel->rodata->slot_blocks = (s->max_frames + RP_SLOT_BLOCK - 1) / RP_SLOT_BLOCK;
	err = bpf_map__set_max_entries(s->skel->maps.slots,
				       s->skel->rodata->slot_blocks * (uint32_t)s->ncpus);
	if (err)
		goto cleanup;
	s->skel->rodata->rb_wakeup_bytes = opts->ringbuf_bytes / 4;
	s->skel->rodata->wall_clock = opts->clock_wall;
	if (opts->stacks_mixed) {
		if (opts->ustack_bytes < RP_USTACK_MIN || opts->ustack_bytes > RP_USTACK_MAX) {
			err = -EINVAL;
			goto cleanup;
		}
		s->skel->rodata->stacks_mixed = 1;
		/* the bytes above sp, and the page sp is in */
		s->skel->rodata->ustack_pages =
			(opts->ustack_bytes + RP_USTACK_PAGE - 1) / RP_USTACK_PAGE + 1;
		s->skel->rodata->kernel_stacks = opts->kernel_stacks;
		if (opts->native_procs > RP_NATIVE_LISTED ||
		    opts->nnative_pids > RP_MAX_NATIVE_PIDS) {
			err = -EINVAL;
			goto cleanup;
		}
		s->skel->rodata->native_procs = opts->native_procs;
	}
	err = bpf_map__set_max_entries(s->skel->maps.samples, opts->ringbuf_bytes);
	if (!err)
		err = bpf_program__set_autoload(s->skel->progs.rp_iter_pidns, opts->pidns_ino != 0);
	if (err)
		goto cleanup;
	s->skel->rodata->pidns_ino = opts->pidns_ino;
	err = rubyprof_bpf__load(s->skel);
	if (err) {
		log_error("cannot load the BPF program: %s", strerror(-err));
		if (err == -EPERM)
			log_error("loading BPF needs CAP_BPF and CAP_PERFMON (or root)");
		log_verifier_tail(s->verifier_log);
		goto cleanup;
	}
	free(s->verifier_log);
	s->verifier_log = NULL;
	sampler_log_verified(s->skel->obj);
	if (opts->pidns_ino) {
		err = find_pidns_level(s, opts->pidns_ino);
		if (err)
			goto cleanup;
	}
	for (i = 0; opts->stacks_mixed && i < opts->nnative_pids; i++) {
		if (bpf_map__update_elem(s->skel->maps.native_pids, &opts->native_pids[i],
					 sizeof(uint32_t), &one, sizeof(one), BPF_ANY)) {
			err = -errno;
			log_error("cannot list pid %u for native stacks: %s", opts->native_pids[i],
				  strerror(-err));
			goto cleanup;
		}
	}

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), on_record, s, NULL);
	if (!s->rb) {
		err = -errno;
		goto cleanup;
	}
	s->iter_link = bpf_program__attach_iter(s->skel->progs.rp_iter_threads, NULL);
	if (!s->iter_link) {
		err = -errno;
		log_error("cannot attach the task iterator: %s", strerror(-err));
		goto cleanup;
	}
	return s;

cleanup:
	sampler__free(s);
	errno = -err;
	return NULL;
}

void sampler__free(struct sampler *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	for (i = 0; i < 3; i++)
		bpf_link__destroy(s->life_links[i]);
	free(s->links);
	free(s->pfds);
	bpf_link__destroy(s->iter_link);
	ring_buffer__free(s->rb);
	rubyprof_bpf__destroy(s->skel);
	if (s->cpus) {
		for (i = 0; i < s->nasm; i++) {
			free(s->cpus[i].slots);
			free(s->cpus[i].frames);
		}
	}
	free(s->cpus);
	free(s->verifier_log);
	free(s);
}

/* Online CPUs from /sys/devices/system/cpu/online ("0-3,5"). Sets online[i] for each. */
static int online_cpus(char *online, int ncpus)
{
	char buf[4096], *p, *end;
	long a, b;
	FILE *f;
	int ret = -EINVAL;

	f = fopen("/sys/devices/system/cpu/online", "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f))
		goto cleanup;
	p = buf;
	while (*p && *p != '\n') {
		errno = 0;
		a = strtol(p, &end, 10);
		if (end == p || errno)
			goto cleanup;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || errno)
				goto cleanup;
			p = end;
		}
		for (; a <= b && a < ncpus; a++)
			online[a] = 1;
		if (*p == ',')
			p++;
	}
	ret = 0;
cleanup:
	fclose(f);
	return ret;
}

/*
 * Exec, fork and exit from the scheduler's tracepoints. Without them (a kernel without BTF
 * tracepoints), the daemon still finds processes by scanning /proc, only later.
 */
static int attach_lifecycle(struct sampler *s)
{
	struct bpf_program *progs[3] = {s->skel->progs.rp_on_exec, s->skel->progs.rp_on_fork,
					s->skel->progs.rp_on_exit};
	int i;

	for (i = 0; i < 3; i++) {
		s->life_links[i] = bpf_program__attach(progs[i]);
		if (!s->life_links[i]) {
			log_warn("cannot attach %s: %s; new processes are found by scanning /proc",
				 bpf_program__name(progs[i]), strerror(errno));
			return 0;
		}
	}
	s->lifecycle = true;
	return 0;
}

int sampler_attach(struct sampler *s)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = s->frequency,
		.freq = 1,
	};
	char *online;
	int cpu, fd, err;

	online = calloc(s->ncpus, 1);
	s->links = calloc(s->ncpus, sizeof(*s->links));
	s->pfds = calloc(s->ncpus, sizeof(*s->pfds));
	if (!online || !s->links || !s->pfds) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = online_cpus(online, s->ncpus);
	if (err) {
		log_error("cannot read the online CPUs: %s", strerror(-err));
		goto cleanup;
	}
	for (cpu = 0; cpu < s->ncpus; cpu++) {
		if (!online[cpu])
			continue;
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			log_error("perf_event_open(cpu-clock, cpu %d): %s%s", cpu, strerror(errno),
				  errno == EACCES || errno == EPERM ? " (needs CAP_PERFMON or root)"
								    : "");
			goto cleanup;
		}
		s->links[s->nlinks] =
			bpf_program__attach_perf_event(s->skel->progs.rp_on_sample, fd);
		if (!s->links[s->nlinks]) {
			err = -errno;
			close(fd);
			log_error("cannot attach to the perf event of cpu %d: %s", cpu,
				  strerror(-err));
			goto cleanup;
		}
		s->pfds[s->nlinks] = fd;
		s->nlinks++;
	}
	err = attach_lifecycle(s);
cleanup:
	free(online);
	return err;
}

bool sampler_has_lifecycle(const struct sampler *s)
{
	return s->lifecycle;
}

int sampler_fd(const struct sampler *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

static int on_wake(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

int sampler_add_wake_ring(struct sampler *s, int map_fd)
{
	return ring_buffer__add(s->rb, map_fd, on_wake, NULL);
}

int sampler_consume(struct sampler *s)
{
	int n;

	/*
	 * At most SAMPLER_CONSUME_MAX records per call: when samples arrive faster than they are
	 * handled, the caller's loop still gets to its timers and signals (an interval's end,
	 * SIGTERM) between calls; what is left stays in the ring buffer for the next call. And
	 * at most SAMPLER_CONSUME_NS: on a starved CPU, with records of a process whose frames
	 * are not cached yet, 4096 records took minutes, and the service answered no /metrics
	 * and wrote no interval meanwhile.
	 */
	s->budget = SAMPLER_CONSUME_MAX;
	s->until_ns = clock_mono_ns() + SAMPLER_CONSUME_NS;
	n = ring_buffer__consume(s->rb);
	s->budget = 0;
	s->until_ns = 0;
	if (n == BUDGET_SPENT)
		return SAMPLER_CONSUME_MAX;
	return n;
}

int sampler_pause(struct sampler *s)
{
	int i, err = 0;

	for (i = 0; i < s->nlinks; i++) {
		if (ioctl(s->pfds[i], PERF_EVENT_IOC_DISABLE, 0) && !err)
			err = -errno;
	}
	return err;
}

int sampler_set_frequency(struct sampler *s, unsigned int frequency)
{
	/*
	 * The kernel turns a cpu-clock event opened with freq = 1 into a fixed period at creation
	 * (perf_swevent_init_hrtimer clears attr.freq), so PERF_EVENT_IOC_PERIOD then takes a
	 * period in nanoseconds, not a frequency: passing the frequency would fire it every few
	 * microseconds.
	 */
	uint64_t period = 1000000000ULL / (frequency ? frequency : 1);
	int i;

	for (i = 0; i < s->nlinks; i++) {
		if (ioctl(s->pfds[i], PERF_EVENT_IOC_PERIOD, &period))
			return -errno;
	}
	s->frequency = frequency;
	return 0;
}

int sampler_set_proc(struct sampler *s, uint32_t pid, const struct rp_proc *proc)
{
	if (bpf_map__update_elem(s->skel->maps.procs, &pid, sizeof(pid), proc, sizeof(*proc),
				 BPF_ANY))
		return -errno;
	return 0;
}

int sampler_set_proc_tctx(struct sampler *s, uint32_t pid, const struct rp_proc *tctx)
{
	struct rp_proc cur;

	if (bpf_map__lookup_elem(s->skel->maps.procs, &pid, sizeof(pid), &cur, sizeof(cur), 0))
		return -errno;
	cur.tctx_mode = tctx->tctx_mode;
	cur.tctx_off = tctx->tctx_off;
	cur.tctx_modid = tctx->tctx_modid;
	cur.tctx_block_off = tctx->tctx_block_off;
	/* only the entry there (an exec or exit may have removed it since) */
	if (bpf_map__update_elem(s->skel->maps.procs, &pid, sizeof(pid), &cur, sizeof(cur),
				 BPF_EXIST))
		return -errno;
	return 0;
}

int sampler_del_proc(struct sampler *s, uint32_t pid)
{
	if (bpf_map__delete_elem(s->skel->maps.procs, &pid, sizeof(pid), 0) && errno != ENOENT)
		return -errno;
	return 0;
}

int sampler_counters(struct sampler *s, struct sampler_counters *out)
{
	uint64_t *vals;
	uint32_t key;
	int i, err = 0;

	memset(out, 0, sizeof(*out));
	out->incomplete = s->incomplete;
	out->bad_records = s->bad_records;
	out->tctx_unpaired = s->tctx_unpaired;
	out->ring_bytes = s->ring_bytes;
	if (!s->skel)
		return 0;
	vals = calloc(s->ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (key = 0; key < RP_STAT_MAX; key++) {
		if (bpf_map__lookup_elem(s->skel->maps.stats, &key, sizeof(key), vals,
					 s->ncpus * sizeof(*vals), 0)) {
			err = -errno;
			break;
		}
		for (i = 0; i < s->ncpus; i++)
			out->bpf[key] += vals[i];
	}
	free(vals);
	return err;
}

int sampler_thread_pointers(struct sampler *s, uint32_t pid, struct rp_thread_tp *out, size_t max,
			    size_t *n)
{
	struct rp_thread_tp tp;
	ssize_t r;
	int fd;

	*n = 0;
	/* The iterator reads its target from .bss; the daemon runs one iteration at a time. */
	s->skel->bss->iter_tgid = pid;
	fd = bpf_iter_create(bpf_link__fd(s->iter_link));
	if (fd < 0)
		return -errno;
	while ((r = read(fd, &tp, sizeof(tp))) == sizeof(tp)) {
		if (*n < max)
			out[(*n)++] = tp;
	}
	close(fd);
	return r < 0 ? -errno : 0;
}

void sampler_set_extra_hook(struct sampler *s, sampler_extra_hook fn, void *ctx)
{
	s->extra_hook = fn;
	s->extra_ctx = ctx;
}

void sampler_on_stack(struct sampler *s, const struct sampler_stack *st)
{
	s->h.on_stack(s->h.ctx, st);
}

int sampler_shared_maps(const struct sampler *s, struct sampler_maps *out)
{
	if (!s->skel)
		return -ENODEV;
	out->procs = bpf_map__fd(s->skel->maps.procs);
	out->samples = bpf_map__fd(s->skel->maps.samples);
	out->stats = bpf_map__fd(s->skel->maps.stats);
	out->extra_cpu = (uint32_t)s->ncpus;
	out->max_frames = s->max_frames;
	out->slot_blocks = s->skel->rodata->slot_blocks;
	out->rb_wakeup_bytes = s->skel->rodata->rb_wakeup_bytes;
	out->pidns_ino = s->skel->rodata->pidns_ino;
	out->pidns_level = s->pidns_level;
	return 0;
}
