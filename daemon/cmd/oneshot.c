// SPDX-License-Identifier: GPL-2.0-only
/*
 * oneshot.c - the --oneshot run: load the sampler, optionally start a command, find Ruby
 * processes while sampling, then write the profile and print the summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/metrics_table.h"
#include "cmd/notify.h"
#include "cmd/oneshot.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/log.h"
#include "proc/privs.h"
#include "profile/pprof.h"
#include "profile/session.h"
#include "view/report.h"
#include "view/toptable.h"
#include "view/view.h"

volatile sig_atomic_t oneshot_stop;

/* The /proc scan under the life-cycle events (with a command: its children are found through
 * their exec events; without the events, the scan is all there is). */
#define SCAN_NS		  2000000000LL
#define SCAN_NO_EVENTS_NS 500000000LL
/* Without a pidfd for the command (an old kernel), its exit is looked for this often. */
#define CHILD_POLL_NS	  100000000LL
/* --pid: whether the processes are all gone is asked this often */
#define GONE_CHECK_NS	  100000000LL

struct run {
	const struct config *cfg;
	struct session *session;
	pid_t child;
	int child_pidfd; /* readable when the command exits; -1: none */
	int child_status;
	int child_exited;
	int64_t start_ns, wall_start_ns;
};

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
		/* main() ignores SIGPIPE for itself; ignored stays ignored across exec, and a
		 * command like `yes | head -1` would then never see the pipe close. */
		signal(SIGPIPE, SIG_DFL);
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

/*
 * Whether a profile can be written to path, before a run spends its duration: what is there
 * must be nothing or a regular file (a link is never followed, fileio.h), and the profile is
 * written to a temporary file next to it and renamed, so a file is created there, given a
 * byte (a full filesystem refuses it) and removed. 0 or -errno.
 */
static int check_output(const char *path)
{
	char *tmp = NULL;
	int fd = -1, ret;

	ret = fileio_check_target(path);
	if (ret)
		return ret;
	if (asprintf(&tmp, "%s.check.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		goto cleanup;
	}
	ret = fileio_write_all(fd, "", 1);
	if (!ret && close(fd))
		ret = -errno;
	else if (ret)
		close(fd);
	unlink(tmp);
cleanup:
	free(tmp);
	return ret;
}

/*
 * Where a profile goes when its path cannot be written at the end (a disk filled during the
 * run): $TMPDIR, else /tmp, under a name with our pid so that no earlier profile is replaced.
 */
static int write_fallback(struct pprof *p, const char *path, char *buf, size_t len)
{
	const char *dirs[2] = {getenv("TMPDIR"), "/tmp"};
	const char *base = strrchr(path, '/');
	int err = -ENOENT;
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < 2; i++) {
		if (!dirs[i] || !dirs[i][0] || (i == 1 && dirs[0] && !strcmp(dirs[0], "/tmp")))
			continue;
		if (snprintf(buf, len, "%s/rubyprofd-%d-%s", dirs[i], (int)getpid(), base) >=
		    (int)len) {
			err = -ENAMETOOLONG;
			continue;
		}
		err = pprof_write_file(p, buf);
		if (!err)
			return 0;
		log_error("cannot write the profile to \"%s\" either: %s", buf,
			  fileio_strerror(err));
	}
	return err;
}

/*
 * Writes the profile to path, or when that fails to a fallback whose path goes into fallback
 * (an empty string when none was needed). 0 when it was written somewhere, or -errno.
 */
static int write_profile(struct run *r, const char *path, int64_t duration_ns, char *fallback,
			 size_t len)
{
	struct pprof *p;
	char comment[160];
	int err;

	fallback[0] = '\0';
	p = pprof__new();
	if (!p)
		return -ENOMEM;
	if (session_wall(r->session) && pprof_set_wall(p)) {
		pprof__free(p);
		return -ENOMEM;
	}
	pprof_set_period(p, 1000000000LL / r->cfg->frequency);
	pprof_set_time(p, r->wall_start_ns, duration_ns);
	snprintf(comment, sizeof(comment), "rubyprofd %s --oneshot, %u Hz%s", RUBYPROF_VERSION,
		 r->cfg->frequency, session_wall(r->session) ? ", wall clock" : "");
	err = pprof_add_comment(p, comment);
	if (!err)
		err = aggregate_to_pprof(session_agg(r->session), p, NULL, 0);
	if (!err) {
		err = pprof_write_file(p, path);
		if (err) {
			log_error("cannot write the profile to \"%s\": %s", path,
				  fileio_strerror(err));
			err = write_fallback(p, path, fallback, len);
			if (!err)
				log_error("the profile is saved in \"%s\" instead", fallback);
			else
				fallback[0] = '\0';
		}
	}
	pprof__free(p);
	return err;
}

/* --format: the view written beside the profile, and how to open it. */
static void write_view(const char *path, const char *format, const char *by)
{
	static const char *const how[][2] = {
		{"flamegraph", "open it in a browser"},
		{"svg", "open it in a browser or an image viewer"},
		{"speedscope", "open it with speedscope (npm package speedscope): speedscope "},
		{"collapsed", "folded stacks for flamegraph.pl or inferno-flamegraph"},
		{"top", "a text table"},
	};
	char out[PATH_MAX], err[512];
	size_t i;

	if (report_write_beside(path, format, by, out, sizeof(out), err, sizeof(err))) {
		log_error("cannot write the %s view: %s", format, err);
		return;
	}
	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		if (strcmp(how[i][0], format) == 0)
			printf("%s: %s  (%s%s)\n", format, out, how[i][1],
			       strcmp(format, "speedscope") == 0 ? out : "");
	}
}

/*
 * --by: the top list per group, from the profile just written (read back: its labels are the
 * groups'; the view's reader is `rubyprofd report`'s). Whether it was printed: without a profile,
 * or when it cannot be read, the plain top list is.
 */
static bool top_by(struct run *r, const char *path)
{
	char err[512];

	if (!r->cfg->by)
		return false;
	if (!path) {
		log_error("--by: no profile was written to group");
		return false;
	}
	if (report_write_top_of(path, r->cfg->by, stdout, r->cfg->top, err, sizeof(err))) {
		log_error("--by: %s", err);
		return false;
	}
	return true;
}

/* The value of metric id (metrics_table.h) as an integer, for the summary's lines. */
#define M(id) ((uint64_t)metrics_table_value(&S, id))

/*
 * The summary: the top list, then the counters, read from the same metric table as the
 * service's endpoint (the names in docs/metrics.md say what each counts).
 */
static void summary(struct run *r, double secs, const char *path)
{
	struct metric_snapshot S;
	size_t nproc = session_profiled(r->session);

	memset(&S, 0, sizeof(S));
	session_counters(r->session, &S.c);
	S.modes = METRIC_ALWAYS | (S.c.native_on ? METRIC_NATIVE : 0) |
		  (S.c.wall_on ? METRIC_WALL : 0);
	printf("rubyprofd: %zu Ruby process%s profiled for %.1f s at %u Hz\n", nproc,
	       nproc == 1 ? "" : "es", secs, r->cfg->frequency);
	if (!top_by(r, path))
		toptable_write(stdout, session_agg(r->session), r->cfg->top);
	if (S.c.wall_on) {
		toptable_wall(stdout, session_agg(r->session));
		printf("wall: %" PRIu64 " thread samples in %" PRIu64 " runs (%s, %" PRIu64
		       " ms in BPF; %" PRIu64 " ticks skipped, %" PRIu64
		       " visits of them added, %" PRIu64 " ticks slept through), %" PRIu64
		       " thread samples left to the perf samples (time on a CPU; %" PRIu64
		       " credits cut; %" PRIu64 " perf samples of processes without), %" PRIu64
		       " lists cut at %d threads, %" PRIu64 " bad nodes, %" PRIu64
		       " failed reads, %" PRIu64 " late ticks, %" PRIu64 " failed runs\n",
		       M(M_WALL_THREADS_SAMPLED), M(M_WALL_RUNS),
		       S.c.wall.by_syscall ? "syscall program" : "task iterator",
		       (uint64_t)(metrics_table_value(&S, M_WALL_ITERATOR_SECONDS) * 1000),
		       M(M_WALL_TICKS_SKIPPED), M(M_WALL_SKIPPED_VISITS), M(M_WALL_TICKS_SLEPT),
		       M(M_WALL_THREADS_ON_CPU), M(M_WALL_CREDIT_CUT), M(M_WALL_PERF_MUTED),
		       M(M_WALL_LOSSES_MAX_THREADS), RP_MAX_WALL_THREADS,
		       M(M_WALL_LOSSES_BAD_LIST_NODE), M(M_WALL_LOSSES_READ_FAILED),
		       M(M_WALL_TICKS_LATE), M(M_WALL_LOSSES_RUN_FAILED));
		printf("wall reuse: %" PRIu64 " stacks reused in %" PRIu64 " records, %" PRIu64
		       " visits without a header copy (%" PRIu64
		       " taken at the end or a thread's end; %" PRIu64 " not found, %" PRIu64
		       " lost with their copy, %" PRIu64 " copies evicted), %" PRIu64
		       " threads first seen or walked again, %" PRIu64
		       " not remembered (table full), %" PRIu64 " runs from a cursor\n",
		       M(M_WALL_STACKS_REUSED), M(M_WALL_REUSE_RECORDS), M(M_WALL_QUIET_VISITS),
		       M(M_WALL_REUSE_FLUSHED), M(M_WALL_LOSSES_REUSED_STACK_MISSING),
		       M(M_WALL_LOSSES_PENDING_LOST), M(M_WALL_STACK_COPIES_EVICTED),
		       M(M_WALL_THREADS_WALKED), M(M_WALL_THREADS_NOT_REMEMBERED),
		       M(M_WALL_CURSOR_RUNS));
	}
	printf("samples: %" PRIu64 " on all CPUs, %" PRIu64 " Ruby, %" PRIu64
	       " with a Ruby stack, %" PRIu64 " without a Ruby context, %" PRIu64 " in GC, %" PRIu64
	       " in JIT code\n",
	       M(M_SAMPLES_RUBY) + M(M_SAMPLES_OTHER) + M(M_DROPPED_SAMPLES_REUSED_PID) +
		       M(M_SAMPLES_OUTSIDE_NAMESPACE),
	       M(M_SAMPLES_RUBY), M(M_RUBY_STACKS), M(M_SAMPLES_WITHOUT_RUBY_CONTEXT),
	       M(M_GC_SAMPLES_KEPT), M(M_JIT_SAMPLES));
	/* only where an app published a thread context (docs/trace-context.md) */
	if (M(M_THREAD_CONTEXT_PROCESSES_LOCATED) || M(M_THREAD_CONTEXT_PROCESSES_REFUSED) ||
	    M(M_THREAD_CONTEXTS))
		printf("thread contexts: %" PRIu64 " samples carried one, in %" PRIu64
		       " process%s; not used: %" PRIu64 " invalid, %" PRIu64
		       " failed reads, %" PRIu64 " lost; parts left out: %" PRIu64 " size, %" PRIu64
		       " read, %" PRIu64 " entry, %" PRIu64 " key, %" PRIu64 " value, %" PRIu64
		       " many\n",
		       M(M_THREAD_CONTEXTS), M(M_THREAD_CONTEXT_PROCESSES_LOCATED),
		       M(M_THREAD_CONTEXT_PROCESSES_LOCATED) == 1 ? "" : "es",
		       M(M_THREAD_CONTEXTS_BAD_INVALID), M(M_THREAD_CONTEXTS_BAD_FAILED),
		       M(M_THREAD_CONTEXTS_BAD_LOST) + M(M_THREAD_CONTEXTS_BAD_UNPAIRED),
		       M(M_THREAD_CONTEXTS_BAD_SIZE), M(M_THREAD_CONTEXTS_BAD_READ),
		       M(M_THREAD_CONTEXTS_BAD_ENTRY), M(M_THREAD_CONTEXTS_BAD_KEY),
		       M(M_THREAD_CONTEXTS_BAD_VALUE), M(M_THREAD_CONTEXTS_BAD_MANY));
	/* only in a pid namespace (docs/containers.md): the usual summary stays as it is */
	if (M(M_SAMPLES_OUTSIDE_NAMESPACE))
		printf("outside the pid namespace: %" PRIu64
		       " samples of processes rubyprofd cannot see, not looked at\n",
		       M(M_SAMPLES_OUTSIDE_NAMESPACE));
	printf("dropped: %" PRIu64 " (ring buffer %" PRIu64 ", incomplete %" PRIu64
	       ", table full %" PRIu64 ", no memory %" PRIu64 ", refused %" PRIu64
	       ", unknown process %" PRIu64 "), failed reads: %" PRIu64 " (+%" PRIu64
	       " frames unsymbolized), truncated: %" PRIu64 "\n",
	       M(M_DROPPED_SAMPLES_RING_BUFFER_FULL) + M(M_DROPPED_SAMPLES_INCOMPLETE) +
		       M(M_DROPPED_SAMPLES_TABLE_FULL) + M(M_DROPPED_SAMPLES_NO_MEMORY) +
		       M(M_DROPPED_SAMPLES_REFUSED) + M(M_DROPPED_SAMPLES_UNKNOWN_PROCESS),
	       M(M_DROPPED_SAMPLES_RING_BUFFER_FULL), M(M_DROPPED_SAMPLES_INCOMPLETE),
	       M(M_DROPPED_SAMPLES_TABLE_FULL), M(M_DROPPED_SAMPLES_NO_MEMORY),
	       M(M_DROPPED_SAMPLES_REFUSED), M(M_DROPPED_SAMPLES_UNKNOWN_PROCESS),
	       M(M_FAILED_READS_BPF_STACK) + M(M_FAILED_READS_BPF_CONTEXT),
	       M(M_FAILED_READS_SYMBOLIZE), M(M_TRUNCATED_STACKS));
	/* A bound hit is counted: a reset costs reads again, never frames (only when it happened,
	 * so that the usual summary stays three lines) */
	if (M(M_SYMBOLIZER_CACHE_RESETS) || M(M_FRAME_CACHE_RESETS))
		printf("cache resets: %" PRIu64 " symbolizer, %" PRIu64 " frame cache\n",
		       M(M_SYMBOLIZER_CACHE_RESETS), M(M_FRAME_CACHE_RESETS));
	if (S.c.native_on)
		printf("native: %" PRIu64 " copies (%" PRIu64 " lost, %" PRIu64 " short), %" PRIu64
		       " unwound, %" PRIu64 " truncated, %" PRIu64
		       " Ruby stacks without their copy\n",
		       M(M_NATIVE_COPIES), M(M_NATIVE_COPIES_LOST), M(M_NATIVE_COPIES_SHORT),
		       M(M_NATIVE_UNWOUND), M(M_NATIVE_TRUNCATED), M(M_NATIVE_UNPAIRED));
	/* the ELF objects the processes shared (elfcache.h): parsed once each, however many
	 * processes map them */
	if (S.c.native_on)
		printf("native objects: %" PRIu64 " parsed, %" PRIu64 " times shared, %" PRIu64
		       " at most at once, %" PRIu64 " freed, %" PRIu64
		       " refused (cache full), %" PRIu64 " unreadable\n",
		       M(M_NATIVE_ELF_PARSED), M(M_NATIVE_ELF_SHARED), M(M_NATIVE_ELF_OBJECTS_PEAK),
		       M(M_NATIVE_ELF_FREED),
		       M(M_NATIVE_ELF_REFUSED_OBJECTS) + M(M_NATIVE_ELF_REFUSED_BYTES),
		       M(M_NATIVE_ELF_REFUSED_UNREADABLE));
	if (S.c.native_on && r->cfg->kernel_stacks)
		printf("kernel: %" PRIu64 " stacks (%" PRIu64 " lost, %" PRIu64
		       " unpaired), %" PRIu64 " frames, %" PRIu64 " unnamed\n",
		       M(M_KERNEL_STACKS_TAKEN), S.c.sampler.bpf[RP_STAT_KSTACK_LOST],
		       S.c.stacks.kernel_unpaired, M(M_KERNEL_FRAMES), M(M_KERNEL_FRAMES_UNNAMED));
	if (S.c.native_on && r->cfg->native_procs != RP_NATIVE_RUBY)
		printf("other processes: %" PRIu64 " samples of %" PRIu64 " processes, %" PRIu64
		       " not unwound, %" PRIu64 " dropped at the bound, %" PRIu64 " Dwfl evicted\n",
		       M(M_OTHER_SAMPLES), M(M_OTHER_PROCESSES), M(M_OTHER_SAMPLES_FAILED),
		       M(M_OTHER_SAMPLES_DROPPED), M(M_NATIVE_DWFL_EVICTED));
	if (path)
		printf("profile: %s  (view: go tool pprof -top %s)\n", path, path);
	if (path && r->cfg->format)
		write_view(path, r->cfg->format, r->cfg->by);
}

#undef M

/*
 * Waits for what the loop acts on: a record that wakes the ring buffer's fd (process events, a
 * filling buffer), the command's exit, a signal (unblocked only while waiting, so that one that
 * arrives before the wait still ends it at once), or the earliest deadline: until (the duration,
 * the next scan) or the session's next due work (its read tick while a Ruby is profiled).
 */
static void wait_records(struct run *r, int64_t now, int64_t until, const sigset_t *waitmask,
			 const sigset_t *stops)
{
	int64_t due = session_next_due(r->session), timeout;
	struct pollfd pfd[2] = {{.fd = session_fd(r->session), .events = POLLIN},
				{.fd = r->child_pidfd, .events = POLLIN}};
	struct timespec ts;

	if (due < until)
		until = due;
	if (r->child > 0 && r->child_pidfd < 0 && now + CHILD_POLL_NS < until)
		until = now + CHILD_POLL_NS;
	timeout = until > now ? until - now : 0;
	ts.tv_sec = (time_t)(timeout / 1000000000LL);
	ts.tv_nsec = (long)(timeout % 1000000000LL);
	if (ppoll(pfd, 2, &ts, waitmask) < 0 || !stops)
		return;
	/* ppoll that finds a descriptor ready restores the mask without delivering a pending
	 * signal: a ring buffer that is never empty (a daemon behind its samples) would keep
	 * SIGINT and SIGTERM pending for the whole --duration. Taken here, without waiting. */
	if (sigtimedwait(stops, NULL, &(const struct timespec){0}) > 0)
		oneshot_stop = 1;
}

int oneshot_run(const struct config *cfg)
{
	struct session_opts sopts = {
		.frequency = cfg->frequency,
		.max_frames = cfg->max_frames,
		.stacks_mixed = cfg->stacks_mixed,
		.ustack_bytes = cfg->ustack_bytes,
		.kernel_stacks = cfg->kernel_stacks,
		.native_procs = cfg->native_procs,
		.native_pids = cfg->native_pids,
		.nnative_pids = cfg->nnative_pids,
		.clock_wall = cfg->clock_wall,
		.pids = cfg->pids,
		.npids = cfg->npids,
	};
	struct run r = {.cfg = cfg, .child = -1, .child_pidfd = -1};
	int64_t deadline = 0, next_scan, next_gone = 0, now, scan_every;
	sigset_t stops, waitmask;
	bool masked = false;
	char missing[128], kept[256], outbuf[512], fallback[PATH_MAX + 64];
	const char *out = cfg->output;
	int ret = 1, err, status;
	double secs;

	err = privs_missing(missing, sizeof(missing));
	if (err > 0) {
		log_error("missing capabilities: %s (run as root, or grant them to rubyprofd)",
			  missing);
		return 1;
	}
	if (!out) {
		default_output(outbuf, sizeof(outbuf));
		out = outbuf;
	}
	/* before sampling: a profile that cannot be written is found out now, not at the end */
	err = check_output(out);
	if (err) {
		log_error("cannot write the profile to \"%s\": %s", out, fileio_strerror(err));
		return 2;
	}
	r.session = session__new(&sopts);
	if (!r.session)
		goto cleanup;
	if (cfg->command)
		session_set_root(r.session, -1); /* nothing before the command starts */
	err = session_start(r.session);
	if (err)
		goto cleanup;

	r.start_ns = clock_ns(CLOCK_MONOTONIC);
	r.wall_start_ns = clock_ns(CLOCK_REALTIME);
	if (cfg->command) {
		r.child = spawn(cfg->command);
		if (r.child < 0) {
			log_error("cannot run '%s': %s", cfg->command[0], strerror(errno));
			goto cleanup;
		}
		session_set_root(r.session, r.child);
		r.child_pidfd = (int)syscall(SYS_pidfd_open, r.child, 0);
	}
	/* set up, the command started with the caller's privileges: the rest of root goes, but
	 * for writing the profile where the caller asked (docs/security.md, "Capabilities") */
	err = privs_drop(PRIVS_KEEP_DAC_OVERRIDE | (cfg->command ? PRIVS_KEEP_KILL : 0) |
				 (cfg->kernel_stacks ? PRIVS_KEEP_SYSLOG : 0),
			 kept, sizeof(kept));
	if (err)
		log_warn("cannot drop the capabilities it no longer needs: %s", strerror(-err));
	else
		log_debug("capabilities kept: %s; no_new_privs set", kept[0] ? kept : "none");
	/* Sampling is attached and the processes there now are known: a script or a unit
	 * (systemd-run -p Type=notify) waiting on $NOTIFY_SOCKET may start its work now. Nothing
	 * is sent without the variable; a failed send changes nothing here. */
	notify_ready();
	notify_profiling(r.session);
	if (cfg->duration > 0)
		deadline = r.start_ns + (int64_t)(cfg->duration * 1e9);
	scan_every = session_has_lifecycle(r.session) ? SCAN_NS : SCAN_NO_EVENTS_NS;
	next_scan = r.start_ns + (cfg->command ? 0 : scan_every);

	/* SIGINT and SIGTERM are taken only inside the wait (after the command started: it must
	 * not inherit the mask) */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	masked = sigprocmask(SIG_BLOCK, &stops, &waitmask) == 0;
	while (!oneshot_stop) {
		now = clock_ns(CLOCK_MONOTONIC);
		if (deadline && now >= deadline)
			break;
		if (r.child > 0 && waitpid(r.child, &status, WNOHANG) == r.child) {
			r.child_exited = 1;
			r.child_status = status;
			break;
		}
		/* at most every GONE_CHECK_NS: a wake-up per wall-clock tick need not also ask the
		 * kernel about every pid */
		if (cfg->npids && now >= next_gone) {
			if (session_all_gone(r.session))
				break;
			next_gone = now + GONE_CHECK_NS;
		}
		if (now >= next_scan) {
			session_scan(r.session, now);
			/* what the apps published since (a process context, an extension that
			 * holds the thread context loaded later): the service does it at each
			 * interval's end */
			session_poll_contexts(r.session);
			next_scan = clock_ns(CLOCK_MONOTONIC) + scan_every;
		}
		err = session_run(r.session, now);
		if (err < 0) {
			log_error("reading samples: %s", strerror(-err));
			break;
		}
		wait_records(&r, clock_ns(CLOCK_MONOTONIC),
			     deadline && deadline < next_scan ? deadline : next_scan,
			     masked ? &waitmask : NULL, masked ? &stops : NULL);
	}
	if (masked)
		sigprocmask(SIG_SETMASK, &waitmask, NULL);
	/* sampling stops before the last records are read: the summary's counts then add up */
	err = session_finish(r.session, clock_ns(CLOCK_MONOTONIC));
	if (err)
		log_warn("cannot stop sampling: %s", strerror(-err));
	secs = (clock_ns(CLOCK_MONOTONIC) - r.start_ns) / 1e9;

	if (r.child_exited && WIFEXITED(r.child_status) && WEXITSTATUS(r.child_status))
		log_warn("the command exited with status %d", WEXITSTATUS(r.child_status));
	else if (r.child_exited && WIFSIGNALED(r.child_status))
		log_warn("the command was killed by signal %d", WTERMSIG(r.child_status));

	session_report_pending(r.session);
	if (session_profiled(r.session) == 0) {
		struct session_counters c;

		session_counters(r.session, &c);
		log_error("no Ruby process found%s%s",
			  cfg->command ? " started by the command" : "",
			  c.tracker.refused[TRACKER_REFUSED_UNSUPPORTED] ||
					  c.tracker.refused[TRACKER_REFUSED_NOT_READY]
				  ? " that could be profiled (see the warnings above)"
				  : "");
		goto cleanup;
	}
	err = write_profile(&r, out, (int64_t)(secs * 1e9), fallback, sizeof(fallback));
	if (err) {
		log_error("the profile is lost: %s", strerror(-err));
		summary(&r, secs, NULL);
		goto cleanup;
	}
	if (!cfg->quiet)
		summary(&r, secs, fallback[0] ? fallback : out);
	/* not where it was asked for: a script must not take the run for a success */
	ret = fallback[0] ? 1 : 0;

cleanup:
	if (r.child > 0 && !r.child_exited) {
		/* The run ended before the command: do not leave it running. */
		kill(r.child, SIGTERM);
		waitpid(r.child, NULL, 0);
	}
	if (r.child_pidfd >= 0)
		close(r.child_pidfd);
	session__free(r.session);
	return ret;
}
