// SPDX-License-Identifier: GPL-2.0-only
/*
 * oneshot.c - the --oneshot run: load the sampler, optionally start a command, find Ruby
 * processes while sampling, then write the profile and print the summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aggregate.h"
#include "collect.h"
#include "discover.h"
#include "hmap.h"
#include "log.h"
#include "oneshot.h"
#include "pprof.h"
#include "privs.h"
#include "procs.h"
#include "report.h"
#include "sampler.h"

volatile sig_atomic_t oneshot_stop;

#define MAX_STACKS	     (1u << 20)
/* The ring buffer holds at least 32 of the deepest stacks, and 4 MiB (its pages count twice
 * in the daemon's RSS: the kernel maps the data area two times). */
#define RINGBUF_MIN_BYTES    (4u << 20)
#define RINGBUF_STACKS	     32
/* How often /proc is scanned for new Ruby processes, and how long a Ruby that is not yet
 * initialized is waited for. */
#define SCAN_INTERVAL_CMD_NS 50000000LL
#define SCAN_INTERVAL_NS     500000000LL
#define MAX_RETRIES	     100

struct run {
	const struct config *cfg;
	struct sampler *sampler;
	struct collector *coll;
	struct agg *agg;
	pid_t child;
	int child_status;
	int child_exited;
	struct hmap seen; /* pid -> state (below) */
	struct hmap exes; /* (pid, hash of its executable) -> scan at which to look again */
	uint64_t nscan;
	size_t refused;
	int64_t start_ns, wall_start_ns;
};

enum { SEEN_NOT_RUBY = 1, SEEN_REFUSED, SEEN_ACTIVE, SEEN_EXITED, SEEN_RETRY_BASE = 100 };

static size_t ringbuf_size(unsigned int max_frames)
{
	size_t want =
		(size_t)RINGBUF_STACKS * (RP_SAMPLE_HDR_SIZE * (max_frames / RP_CHUNK_FRAMES + 1) +
					  (size_t)max_frames * sizeof(struct rp_frame));
	size_t size = RINGBUF_MIN_BYTES;

	while (size < want)
		size <<= 1;
	return size;
}

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int threads_of(void *ctx, pid_t pid, struct rp_thread_tp *out, size_t max, size_t *n)
{
	return sampler_thread_pointers(ctx, (uint32_t)pid, out, max, n);
}

#define RECHECK_SCANS 20

static uint64_t exe_hash(pid_t pid)
{
	char link[64], exe[PATH_MAX];
	uint64_t h = 0xcbf29ce484222325ULL;
	ssize_t n, i;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, exe, sizeof(exe));
	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)exe[i]) * 0x100000001b3ULL;
	return h;
}

/* Remembers what a non-Ruby process runs, and says whether to look at it again. */
static bool worth_a_look(struct run *r, pid_t pid)
{
	uint64_t h = exe_hash(pid), when;

	if (hmap_get(&r->exes, (uint64_t)pid, h, &when) && r->nscan < when)
		return false;
	hmap_put(&r->exes, (uint64_t)pid, h, r->nscan + RECHECK_SCANS);
	return true;
}

static void consider(struct run *r, pid_t pid)
{
	struct ruby_target t;
	enum discover_status st;
	uint64_t state = 0;
	char why[256];
	int err;

	hmap_get(&r->seen, (uint64_t)pid, 0, &state);
	if (state == SEEN_REFUSED || state == SEEN_ACTIVE || state == SEEN_EXITED)
		return;
	/* A process that was not Ruby is looked at again after an exec, or now and then (a program
	 * that loads libruby later); named processes and a command's children at every scan. */
	if (state == SEEN_NOT_RUBY && !r->cfg->npids && r->child <= 0 && !worth_a_look(r, pid))
		return;
	st = discover_ruby(pid, threads_of, r->sampler, &t, why, sizeof(why));
	switch (st) {
	case DISCOVER_READY:
		err = collector_add(r->coll, &t);
		if (!err)
			err = sampler_set_proc(r->sampler, (uint32_t)pid, &t.bpf);
		if (err) {
			log_error("pid %d: cannot start profiling: %s", pid, strerror(-err));
			hmap_put(&r->seen, (uint64_t)pid, 0, SEEN_REFUSED);
			r->refused++;
			return;
		}
		hmap_put(&r->seen, (uint64_t)pid, 0, SEEN_ACTIVE);
		log_info("pid %d: Ruby %s%s (%s)", pid, t.version,
			 t.exact ? "" : " (unknown patch release, offsets validated)", t.object);
		log_info("pid %d: execution context: %s; symbols: %s; %s; %s", pid, t.how_ec,
			 t.how_symbols, t.how_vm_exec, t.how_gc);
		break;
	case DISCOVER_REFUSED:
		log_warn("pid %d: not profiled: %s", pid, why);
		hmap_put(&r->seen, (uint64_t)pid, 0, SEEN_REFUSED);
		r->refused++;
		break;
	case DISCOVER_RETRY:
		state = state >= SEEN_RETRY_BASE ? state + 1 : SEEN_RETRY_BASE;
		if (state - SEEN_RETRY_BASE >= MAX_RETRIES) {
			log_warn("pid %d: not profiled: %s", pid, why);
			state = SEEN_REFUSED;
			r->refused++;
		}
		hmap_put(&r->seen, (uint64_t)pid, 0, state);
		break;
	case DISCOVER_NOT_RUBY:
		if (r->cfg->npids && state != SEEN_NOT_RUBY)
			log_warn("pid %d is not a Ruby process (no libruby or ruby executable "
				 "mapped)",
				 pid);
		if (state != SEEN_NOT_RUBY)
			worth_a_look(r, pid);
		hmap_put(&r->seen, (uint64_t)pid, 0, SEEN_NOT_RUBY);
		break;
	case DISCOVER_NO_ACCESS:
		/* Scanning every process meets some we may not inspect; only a named one matters. */
		if (r->cfg->npids)
			log_warn("pid %d: not profiled: %s (needs CAP_SYS_PTRACE in its user "
				 "namespace)",
				 pid, why);
		else
			log_debug("pid %d: %s", pid, why);
		hmap_put(&r->seen, (uint64_t)pid, 0, SEEN_REFUSED);
		break;
	case DISCOVER_GONE:
		if (r->cfg->npids && state == 0)
			log_warn("pid %d: no such process", pid);
		hmap_put(&r->seen, (uint64_t)pid, 0, SEEN_REFUSED);
		break;
	}
}

static void mark_exit(void *ctx, uint64_t pid, uint64_t k2, uint64_t state)
{
	struct run *r = ctx;

	if (state != SEEN_ACTIVE || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return;
	/* Keep its symbols (in the collector) for the profile; stop sampling the pid. */
	sampler_del_proc(r->sampler, (uint32_t)pid);
	hmap_put(&r->seen, pid, 0, SEEN_EXITED);
	log_debug("pid %d exited", (int)pid);
}

static void scan(struct run *r)
{
	pid_t *pids = NULL;
	size_t n = 0, i;
	int err;

	r->nscan++;
	if (r->exes.len > (1u << 16))
		hmap_clear(&r->exes); /* bounded: forget old processes, at the cost of a re-read */
	hmap_foreach(&r->seen, mark_exit, r);
	if (r->cfg->npids) {
		for (i = 0; i < r->cfg->npids; i++)
			consider(r, r->cfg->pids[i]);
		return;
	}
	err = procs_list(&pids, &n);
	if (err) {
		log_error("cannot list processes: %s", strerror(-err));
		return;
	}
	for (i = 0; i < n; i++) {
		if (pids[i] == getpid())
			continue;
		if (r->child > 0 && !procs_is_descendant(pids[i], r->child))
			continue;
		consider(r, pids[i]);
	}
	free(pids);
}

static pid_t spawn(char *const *argv)
{
	int pfd[2], err = 0;
	ssize_t n;
	pid_t pid;

	/* A close-on-exec pipe tells the parent whether exec worked. */
	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		close(pfd[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		err = errno;
		if (write(pfd[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	n = read(pfd[0], &err, sizeof(err));
	close(pfd[0]);
	if (n == sizeof(err)) {
		waitpid(pid, NULL, 0);
		errno = err;
		return -1;
	}
	return pid;
}

static void default_output(char *buf, size_t len)
{
	char host[256] = "localhost", stamp[32];
	time_t t = time(NULL);
	struct tm tm;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "rubyprofd-%s-%s.pb.gz", host, stamp);
}

static int write_profile(struct run *r, const char *path, int64_t duration_ns)
{
	struct pprof *p;
	char comment[160];
	int err;

	p = pprof__new();
	if (!p)
		return -ENOMEM;
	pprof_set_period(p, 1000000000LL / r->cfg->frequency);
	pprof_set_time(p, r->wall_start_ns, duration_ns);
	snprintf(comment, sizeof(comment), "rubyprofd %s --oneshot, %u Hz", RUBYPROF_VERSION,
		 r->cfg->frequency);
	err = pprof_add_comment(p, comment);
	if (!err)
		err = agg_to_pprof(r->agg, p, 1000000000LL / r->cfg->frequency);
	if (!err)
		err = pprof_write_file(p, path);
	pprof__free(p);
	return err;
}

static void summary(struct run *r, double secs, const char *path)
{
	struct sampler_counters sc;
	struct collector_stats cs;
	size_t i, nproc = collector_count(r->coll);

	sampler_counters(r->sampler, &sc);
	collector_stats(r->coll, &cs);
	printf("rubyprofd: %zu Ruby process%s profiled for %.1f s at %u Hz\n", nproc,
	       nproc == 1 ? "" : "es", secs, r->cfg->frequency);
	(void)i;
	report_top(stdout, r->agg, r->cfg->top);
	printf("samples: %" PRIu64 " on all CPUs, %" PRIu64 " Ruby, %" PRIu64
	       " with a Ruby stack, %" PRIu64 " without a Ruby context, %" PRIu64 " in GC, %" PRIu64
	       " in JIT code\n",
	       sc.bpf[RP_STAT_SAMPLES], sc.bpf[RP_STAT_RUBY_SAMPLES], sc.bpf[RP_STAT_RUBY_STACKS],
	       sc.bpf[RP_STAT_NO_EC] + sc.bpf[RP_STAT_NOT_GVL], cs.gc, cs.jit_leaf);
	printf("dropped: %" PRIu64 " (ring buffer %" PRIu64 ", incomplete %" PRIu64
	       ", table full %" PRIu64 "), failed reads: %" PRIu64 " (+%" PRIu64
	       " frames unsymbolized), truncated: %" PRIu64 "\n",
	       sc.bpf[RP_STAT_RB_DROPPED] + sc.incomplete + cs.agg_dropped,
	       sc.bpf[RP_STAT_RB_DROPPED], sc.incomplete, cs.agg_dropped,
	       sc.bpf[RP_STAT_READ_FAILED] + sc.bpf[RP_STAT_BAD_EC], cs.frames_failed,
	       sc.bpf[RP_STAT_TRUNCATED]);
	if (path)
		printf("profile: %s  (view: go tool pprof -top %s)\n", path, path);
}

int oneshot_run(const struct config *cfg)
{
	struct sampler_opts sopts = {
		.frequency = cfg->frequency,
		.max_frames = cfg->max_frames,
		.ringbuf_bytes = ringbuf_size(cfg->max_frames),
	};
	struct run r = {.cfg = cfg, .child = -1};
	int64_t deadline = 0, next_scan = 0, now, interval;
	char missing[128], outbuf[512];
	const char *out = cfg->output;
	int ret = 1, err, status;
	double secs;

	err = privs_missing(missing, sizeof(missing));
	if (err > 0) {
		log_error("missing capabilities: %s (run as root, or grant them to rubyprofd)",
			  missing);
		return 1;
	}
	r.agg = agg__new(MAX_STACKS);
	r.coll = r.agg ? collector__new(r.agg) : NULL;
	if (!r.coll) {
		log_error("out of memory");
		goto cleanup;
	}
	r.sampler = sampler__new(&sopts, collector_on_stack, r.coll);
	if (!r.sampler)
		goto cleanup;
	err = sampler_attach(r.sampler);
	if (err)
		goto cleanup;
	if (!out) {
		default_output(outbuf, sizeof(outbuf));
		out = outbuf;
	}

	r.start_ns = now_ns(CLOCK_MONOTONIC);
	r.wall_start_ns = now_ns(CLOCK_REALTIME);
	if (cfg->command) {
		r.child = spawn(cfg->command);
		if (r.child < 0) {
			log_error("cannot run '%s': %s", cfg->command[0], strerror(errno));
			goto cleanup;
		}
	}
	if (cfg->duration > 0)
		deadline = r.start_ns + (int64_t)(cfg->duration * 1e9);
	interval = cfg->command ? SCAN_INTERVAL_CMD_NS : SCAN_INTERVAL_NS;

	while (!oneshot_stop) {
		now = now_ns(CLOCK_MONOTONIC);
		if (deadline && now >= deadline)
			break;
		if (r.child > 0 && waitpid(r.child, &status, WNOHANG) == r.child) {
			r.child_exited = 1;
			r.child_status = status;
			break;
		}
		if (now >= next_scan) {
			scan(&r);
			next_scan = now_ns(CLOCK_MONOTONIC) + interval;
		}
		err = sampler_poll(r.sampler, 20);
		if (err < 0) {
			log_error("reading samples: %s", strerror(-err));
			break;
		}
	}
	sampler_drain(r.sampler);
	secs = (now_ns(CLOCK_MONOTONIC) - r.start_ns) / 1e9;

	if (r.child_exited && WIFEXITED(r.child_status) && WEXITSTATUS(r.child_status))
		log_warn("the command exited with status %d", WEXITSTATUS(r.child_status));
	else if (r.child_exited && WIFSIGNALED(r.child_status))
		log_warn("the command was killed by signal %d", WTERMSIG(r.child_status));

	if (collector_count(r.coll) == 0) {
		log_error("no Ruby process found%s%s",
			  cfg->command ? " started by the command" : "",
			  r.refused ? " that could be profiled (see the warnings above)" : "");
		goto cleanup;
	}
	err = write_profile(&r, out, (int64_t)(secs * 1e9));
	if (err) {
		log_error("cannot write the profile to \"%s\": %s", out, strerror(-err));
		summary(&r, secs, NULL);
		goto cleanup;
	}
	if (!cfg->quiet)
		summary(&r, secs, out);
	ret = 0;

cleanup:
	if (r.child > 0 && !r.child_exited) {
		/* The run ended before the command: leave it running, as rbspy record does not. */
		kill(r.child, SIGTERM);
		waitpid(r.child, NULL, 0);
	}
	hmap_clear(&r.seen);
	sampler__free(r.sampler);
	collector__free(r.coll);
	agg__free(r.agg);
	return ret;
}
