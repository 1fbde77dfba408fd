// SPDX-License-Identifier: GPL-2.0-only
/* tracker.c - process life cycle: which pids are Ruby, exec, fork, exit, pid reuse. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/array.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "proc/procs.h"
#include "profile/tracker.h"

/* Processes with an entry at once; past it new ones wait for the next scan (counted). */
#define MAX_ENTRIES	   65536
/* Checks of a process that is Ruby but not initialized yet, before it is given up. */
#define MAX_TRIES	   60
/* First look after an exec (the dynamic loader maps libruby within a few ms), then a delay that
 * doubles up to the cap: a Ruby is sampled within ~MAX_DELAY of its VM having a context. */
#define FIRST_DELAY_NS	   5000000LL
#define MAX_DELAY_NS	   80000000LL
#define SLOW_DELAY_NS	   1000000000LL
#define SLOW_AFTER_TRIES   30
/* A process whose loader has not begun (exec'd, then no CPU on a busy host, or stopped at the
 * exec): looked at this often for LOADING_FAST_LOOKS looks (a second), then every SLOW_DELAY_NS
 * up to LOADING_MAX_LOOKS (a minute in all). */
#define LOADING_DELAY_NS   20000000LL
#define LOADING_FAST_LOOKS 50
#define LOADING_MAX_LOOKS  110
/* A process that is not Ruby is looked at again this often (a program that loads libruby with
 * dlopen later), unless an exec event says earlier. */
#define RECHECK_NS	   10000000000LL
/* Discovery work in one tick, at most: the checks still due then wait for the next turn of the
 * main loop, which reads samples, answers /metrics and pets the watchdog in between (a burst of
 * thousands of new processes, or a tenant starting them on purpose, cannot hold it). One
 * discovery reads at most what the byte bounds allow (bounds.h), and never a whole file
 * (checksum.h): a few ms for Debian's libruby. */
#define TICK_BUDGET_NS	   50000000LL
/* One discovery past this is counted, and logged once for its process. */
#define SLOW_CHECK_NS	   100000000LL

enum state {
	ST_PENDING = 1, /* to be looked at (next_ns) */
	ST_NOT_RUBY,	/* no Ruby mapped; again after an exec or at RECHECK_NS */
	ST_REFUSED,	/* a Ruby that cannot be profiled; forgotten when it exits */
	ST_ACTIVE,	/* profiled */
	ST_FORKED,	/* profiled with its parent's layout, validation pending (next_ns) */
};

struct entry {
	pid_t pid;
	enum state state;
	uint64_t start_ticks; /* /proc/PID/stat starttime, 0: not read */
	int64_t next_ns;      /* next check (PENDING, FORKED, NOT_RUBY) */
	int64_t delay_ns;
	unsigned int tries;
	unsigned int not_ruby; /* looks that found no Ruby with the loader done */
	unsigned int loading;  /* looks that found the loader not begun (DISCOVER_LOADING) */
	bool named;	       /* the user named it (--pid): warn about it */
	bool slow_logged;      /* a discovery past SLOW_CHECK_NS was logged */
	bool at_start;	       /* found by the first scan, and its first looks not done yet */
	char *why; /* a named process not ready yet: why, for tracker_report_pending() */
};

struct tracker {
	struct tracker_opts opts;
	pid_t *pids; /* copy of opts.pids */
	int *pidfds; /* each named process's pidfd (-1: none, asked with kill) */
	struct tracker_ops ops;
	struct hmap by_pid; /* pid -> struct entry * */
	int64_t next_due;
	size_t at_start; /* entries with at_start set */
	struct tracker_stats stats;
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

struct tracker *tracker__new(const struct tracker_opts *opts, const struct tracker_ops *ops)
{
	struct tracker *tr = calloc(1, sizeof(*tr));

	if (!tr)
		return NULL;
	tr->opts = *opts;
	tr->ops = *ops;
	tr->next_due = INT64_MAX;
	if (opts->npids) {
		tr->pids = calloc(opts->npids, sizeof(*tr->pids));
		if (!tr->pids) {
			free(tr);
			errno = ENOMEM;
			return NULL;
		}
		memcpy(tr->pids, opts->pids, opts->npids * sizeof(*tr->pids));
		tr->opts.pids = tr->pids;
		/* a pidfd tells that its process exited even while it is an unreaped zombie,
		 * which kill(pid, 0) still finds; it cannot name a later process of that pid */
		tr->pidfds = calloc(opts->npids, sizeof(*tr->pidfds));
		for (size_t i = 0; tr->pidfds && i < opts->npids; i++)
			tr->pidfds[i] = (int)syscall(SYS_pidfd_open, opts->pids[i], 0);
	}
	return tr;
}

static void entry_free(struct entry *e)
{
	if (e)
		free(e->why);
	free(e);
}

/* A process of the first scan is settled: profiled, refused, given up, not Ruby or gone. */
static void settle(struct tracker *tr, struct entry *e)
{
	if (e && e->at_start) {
		e->at_start = false;
		tr->at_start--;
	}
}

static void free_entry(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	entry_free((struct entry *)(uintptr_t)val);
}

void tracker__free(struct tracker *tr)
{
	if (!tr)
		return;
	hmap_foreach(&tr->by_pid, free_entry, NULL);
	hmap_clear(&tr->by_pid);
	for (size_t i = 0; tr->pidfds && i < tr->opts.npids; i++) {
		if (tr->pidfds[i] >= 0)
			close(tr->pidfds[i]);
	}
	free(tr->pidfds);
	free(tr->pids);
	free(tr);
}

static struct entry *find(const struct tracker *tr, pid_t pid)
{
	uint64_t val;

	return hmap_get(&tr->by_pid, (uint64_t)pid, 0, &val) ? (struct entry *)(uintptr_t)val
							     : NULL;
}

static bool is_named(const struct tracker *tr, pid_t pid)
{
	size_t i;

	for (i = 0; i < tr->opts.npids; i++) {
		if (tr->opts.pids[i] == pid)
			return true;
	}
	return false;
}

/* Whether pid is a process of interest at all. */
static bool wanted(const struct tracker *tr, pid_t pid)
{
	if (pid == getpid())
		return false;
	if (tr->opts.npids)
		return is_named(tr, pid);
	if (tr->opts.root < 0)
		return false; /* a command is about to start: nothing else */
	if (tr->opts.root > 0)
		return procs_is_descendant(pid, tr->opts.root);
	return true;
}

static void schedule(struct tracker *tr, struct entry *e, int64_t when)
{
	e->next_ns = when;
	tr->next_due = min64(tr->next_due, when);
}

static struct entry *add(struct tracker *tr, pid_t pid, int64_t now)
{
	struct entry *e;

	if (tr->by_pid.len >= MAX_ENTRIES) {
		tr->stats.table_full++;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->pid = pid;
	e->state = ST_PENDING;
	e->named = is_named(tr, pid);
	e->delay_ns = FIRST_DELAY_NS;
	if (hmap_put(&tr->by_pid, (uint64_t)pid, 0, (uintptr_t)e)) {
		entry_free(e);
		return NULL;
	}
	schedule(tr, e, now);
	return e;
}

/* Forgets pid; stops profiling it if it was. */
static void forget(struct tracker *tr, pid_t pid)
{
	struct entry *e = find(tr, pid);

	if (!e)
		return;
	if (e->state == ST_ACTIVE || e->state == ST_FORKED) {
		tr->ops.disable(tr->ops.ctx, pid);
		tr->stats.active--;
	}
	settle(tr, e);
	hmap_del(&tr->by_pid, (uint64_t)pid, 0, NULL);
	entry_free(e);
}

static void refuse(struct tracker *tr, struct entry *e, enum tracker_refusal why)
{
	if (e->state == ST_ACTIVE || e->state == ST_FORKED) {
		tr->ops.disable(tr->ops.ctx, e->pid);
		tr->stats.active--;
	}
	e->state = ST_REFUSED;
	tr->stats.refused[why]++;
}

static void retry_later(struct tracker *tr, struct entry *e, int64_t now)
{
	e->delay_ns =
		e->tries > SLOW_AFTER_TRIES ? SLOW_DELAY_NS : min64(e->delay_ns * 2, MAX_DELAY_NS);
	schedule(tr, e, now + e->delay_ns);
}

/* Counts one discovery's time; one past SLOW_CHECK_NS is logged, once per process. */
static void took_slow(struct tracker *tr, struct entry *e, int64_t ns)
{
	if ((uint64_t)ns > tr->stats.discovery_ns_max)
		tr->stats.discovery_ns_max = (uint64_t)ns;
	if (ns <= SLOW_CHECK_NS)
		return;
	tr->stats.slow_discoveries++;
	if (e->slow_logged)
		return;
	e->slow_logged = true;
	log_limited(&log_process_lines, LOG_LVL_WARN,
		    "pid %d: looking at its Ruby took %lld ms of the main loop (more than %lld ms)",
		    e->pid, (long long)(ns / 1000000), SLOW_CHECK_NS / 1000000);
}

/* Runs discovery on a pending (or forked) process and acts on the answer. */
static void check_once(struct tracker *tr, struct entry *e, int64_t now)
{
	struct ruby_target t;
	enum discover_status st;
	char why[256];
	bool fresh = e->state != ST_FORKED;
	enum log_level lvl;
	int64_t t0;
	int err;

	e->tries++;
	tr->stats.discoveries++;
	if (!e->start_ticks)
		procs_start_ticks(e->pid, &e->start_ticks);
	t0 = clock_mono_ns();
	st = discover_ruby(e->pid, tr->ops.threads, tr->ops.ctx, &t, why, sizeof(why));
	took_slow(tr, e, clock_mono_ns() - t0);
	switch (st) {
	case DISCOVER_READY:
		err = tr->ops.enable(tr->ops.ctx, &t, fresh);
		if (err == -ECANCELED) {
			log_limited(&log_process_lines, LOG_LVL_INFO,
				    "pid %d: not profiled: a rule says to ignore it", e->pid);
			refuse(tr, e, TRACKER_REFUSED_IGNORED);
			return;
		}
		/* it ended between its discovery and its naming (its /proc files went with it):
		 * a short process, no error */
		if ((err == -ENOENT || err == -ESRCH) && kill(e->pid, 0) && errno == ESRCH) {
			log_debug("pid %d: ended before it could be profiled", e->pid);
			if (e->named)
				log_warn("pid %d: no such process", e->pid);
			forget(tr, e->pid);
			return;
		}
		if (err) {
			log_limited(&log_process_lines, LOG_LVL_ERROR,
				    "pid %d: cannot start profiling: %s", e->pid, strerror(-err));
			refuse(tr, e, TRACKER_REFUSED_ERROR);
			return;
		}
		if (fresh) {
			tr->stats.active++;
			tr->stats.enabled++;
		}
		e->state = ST_ACTIVE;
		/* past the budget, at debug level */
		lvl = log_limit_take(&log_process_lines, clock_mono_ns(), "per-process lines")
			      ? LOG_LVL_INFO
			      : LOG_LVL_DEBUG;
		log_msg(lvl, "pid %d: Ruby %s%s (%s%s)", e->pid, t.version,
			t.exact ? "" : " (unknown patch release, offsets validated)", t.object,
			t.object_replaced	  ? ", replaced on disk since mapped: read through "
						    "/proc/PID/map_files"
			: t.object_from_map_files ? ", not found at its path: read through "
						    "/proc/PID/map_files"
						  : "");
		log_msg(lvl, "pid %d: execution context: %s; symbols: %s; %s; %s", e->pid, t.how_ec,
			t.how_symbols, t.how_vm_exec, t.how_gc);
		return;
	case DISCOVER_REFUSED:
		log_limited(&log_process_lines, LOG_LVL_WARN, "pid %d: not profiled: %s", e->pid,
			    why);
		refuse(tr, e, TRACKER_REFUSED_UNSUPPORTED);
		return;
	case DISCOVER_RETRY:
		if (e->tries >= MAX_TRIES) {
			log_limited(&log_process_lines, LOG_LVL_WARN, "pid %d: not profiled: %s",
				    e->pid, why);
			refuse(tr, e, TRACKER_REFUSED_NOT_READY);
			return;
		}
		log_debug("pid %d: not ready (try %u): %s", e->pid, e->tries, why);
		if (e->named) {
			free(e->why);
			e->why = strdup(why);
		}
		retry_later(tr, e, now);
		return;
	case DISCOVER_NOT_RUBY:
		if (e->state == ST_FORKED) {
			/* the parent's Ruby is not in the child: it must have exec'd meanwhile */
			refuse(tr, e, TRACKER_REFUSED_UNSUPPORTED);
			return;
		}
		/* The loader maps a program's libraries one by one: a look in the middle of it may
		 * come before libruby's turn. Look twice. */
		if (++e->not_ruby < 2) {
			retry_later(tr, e, now);
			return;
		}
		if (e->named && !tr->opts.quiet_not_ruby)
			log_warn("pid %d is not a Ruby process (no libruby or ruby executable "
				 "mapped)",
				 e->pid);
		else
			/* every program the host runs: at debug level only (what a rescan may
			 * later find was decided here) */
			log_debug("pid %d: not Ruby (no libruby or ruby executable mapped)",
				  e->pid);
		e->state = ST_NOT_RUBY;
		schedule(tr, e, now + RECHECK_NS);
		return;
	case DISCOVER_LOADING:
		/* Exec'd a moment ago and not run since (a busy host), or stopped at the exec by a
		 * debugger: whether it is a Ruby is not known yet, and its exec is as good as not
		 * begun (the looks after the loader's work are those of a fresh exec). Looked at
		 * every LOADING_DELAY_NS, then every second; one stopped for longer is a program
		 * that is not Ruby until a rescan looks again. */
		tr->stats.loading++;
		e->tries = 0;
		e->delay_ns = FIRST_DELAY_NS;
		if (++e->loading >= LOADING_MAX_LOOKS) {
			e->state = ST_NOT_RUBY;
			schedule(tr, e, now + RECHECK_NS);
			return;
		}
		schedule(
			tr, e,
			now + (e->loading > LOADING_FAST_LOOKS ? SLOW_DELAY_NS : LOADING_DELAY_NS));
		return;
	case DISCOVER_NO_ACCESS:
		/* Scanning every process meets some we may not inspect; only a named one matters. */
		if (e->named)
			log_warn("pid %d: not profiled: %s (needs CAP_SYS_PTRACE in its user "
				 "namespace)",
				 e->pid, why);
		else
			log_debug("pid %d: %s", e->pid, why);
		refuse(tr, e, TRACKER_REFUSED_NO_ACCESS);
		return;
	case DISCOVER_GONE:
		if (e->named)
			log_warn("pid %d: no such process", e->pid);
		forget(tr, e->pid);
		return;
	}
}

/* check_once(), and a process of the first scan that is no longer pending is settled. */
static void check(struct tracker *tr, struct entry *e, int64_t now)
{
	pid_t pid = e->pid;

	check_once(tr, e, now);
	e = find(tr, pid); /* gone: forgotten (and settled) */
	if (e && e->state != ST_PENDING)
		settle(tr, e);
}

void tracker_on_event(struct tracker *tr, const struct rp_proc_event *ev, int64_t now)
{
	pid_t pid = (pid_t)ev->hdr.pid;
	struct entry *e = NULL;

	switch (ev->event) {
	case RP_PROC_EXEC:
		tr->stats.execs++;
		/* A new program: whatever was known of the pid is void (BPF already dropped its
		 * procs entry). */
		forget(tr, pid);
		if (wanted(tr, pid))
			add(tr, pid, now + FIRST_DELAY_NS);
		break;
	case RP_PROC_FORK:
		forget(tr, pid); /* an earlier process with this pid whose exit was not seen */
		if (!wanted(tr, pid) || !(e = add(tr, pid, now)) ||
		    tr->ops.fork(tr->ops.ctx, pid, (pid_t)ev->ppid)) {
			/* not ours to profile: BPF copied the entry, take it back */
			if (e)
				forget(tr, pid);
			tr->ops.disable(tr->ops.ctx, pid);
			break;
		}
		e->state = ST_FORKED;
		tr->stats.active++;
		tr->stats.forks++;
		/* validate on its own soon: the child may exec at once (most forks of a Ruby do) */
		schedule(tr, e, now + 2 * MAX_DELAY_NS);
		break;
	case RP_PROC_EXIT:
		tr->stats.exits++;
		forget(tr, pid);
		break;
	}
}

struct due_ctx {
	struct tracker *tr;
	int64_t now;
	pid_t *due;
	size_t n, cap;
	int64_t next;
};

static void collect_due(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct due_ctx *x = ctx;
	struct entry *e = (struct entry *)(uintptr_t)val;

	if (e->state != ST_PENDING && e->state != ST_FORKED)
		return;
	if (e->next_ns > x->now) {
		x->next = min64(x->next, e->next_ns);
		return;
	}
	if (array_reserve(x->due, x->cap, x->n + 1, 16))
		return;
	x->due[x->n++] = e->pid;
}

void tracker_tick(struct tracker *tr, int64_t now)
{
	struct due_ctx x = {.tr = tr, .now = now, .next = INT64_MAX};
	struct entry *e;
	int64_t t0;
	size_t i;

	if (now < tr->next_due)
		return;
	/* collect first: a check may add or remove entries */
	hmap_foreach(&tr->by_pid, collect_due, &x);
	tr->next_due = x.next;
	t0 = clock_mono_ns();
	for (i = 0; i < x.n; i++) {
		if (i && clock_mono_ns() - t0 > TICK_BUDGET_NS) {
			/* still due: the next turn takes them up, after the loop's other work */
			tr->stats.deferred += x.n - i;
			tr->next_due = now;
			break;
		}
		e = find(tr, x.due[i]);
		if (e)
			check(tr, e, now);
	}
	free(x.due);
}

int64_t tracker_next_due(const struct tracker *tr)
{
	return tr->next_due;
}

/* Forgets entries whose process is gone or whose pid now belongs to another process. */
static bool gone(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct tracker *tr = ctx;
	struct entry *e = (struct entry *)(uintptr_t)val;
	uint64_t ticks = 0;

	if (kill(e->pid, 0) == 0 || errno != ESRCH) {
		if (!e->start_ticks || procs_start_ticks(e->pid, &ticks) || ticks == e->start_ticks)
			return false;
		tr->stats.reused++;
	}
	if (e->state == ST_ACTIVE || e->state == ST_FORKED) {
		tr->ops.disable(tr->ops.ctx, e->pid);
		tr->stats.active--;
	}
	settle(tr, e);
	entry_free(e);
	return true;
}

/* An entry of the first scan: tracker_start_pending() counts it until it is settled. */
static void mark_start(struct tracker *tr, struct entry *e)
{
	if (e && tr->stats.scans == 1 && !e->at_start) {
		e->at_start = true;
		tr->at_start++;
	}
}

void tracker_scan(struct tracker *tr, int64_t now)
{
	pid_t *pids = NULL;
	size_t n = 0, i;
	struct entry *e;
	int err;

	tr->stats.scans++;
	hmap_filter(&tr->by_pid, gone, tr);
	if (tr->opts.npids) {
		for (i = 0; i < tr->opts.npids; i++) {
			/* EPERM: it lives, as another user's process (no CAP_KILL is needed) */
			if (!find(tr, tr->opts.pids[i]) &&
			    (kill(tr->opts.pids[i], 0) == 0 || errno == EPERM))
				mark_start(tr, add(tr, tr->opts.pids[i], now));
		}
		goto out;
	}
	err = procs_list(&pids, &n);
	if (err) {
		log_error("cannot list processes: %s", strerror(-err));
		return;
	}
	for (i = 0; i < n; i++) {
		e = find(tr, pids[i]);
		if (e) {
			/* a program that is not Ruby is looked at again now and then (dlopen) */
			if (e->state == ST_NOT_RUBY && now >= e->next_ns) {
				e->state = ST_PENDING;
				e->tries = 0;
				e->not_ruby = 0;
				e->loading = 0;
				schedule(tr, e, now);
			}
			continue;
		}
		if (wanted(tr, pids[i]))
			mark_start(tr, add(tr, pids[i], now));
	}
	free(pids);
out:
	tracker_tick(tr, now);
}

struct start_ctx {
	pid_t *pids;
	size_t max, n;
};

static void collect_start(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct start_ctx *x = ctx;
	const struct entry *e = (const struct entry *)(uintptr_t)val;

	if (e->at_start && x->n < x->max)
		x->pids[x->n++] = e->pid;
}

size_t tracker_start_pending(const struct tracker *tr, pid_t *pids, size_t max)
{
	struct start_ctx x = {.pids = pids, .max = pids ? max : 0};

	if (tr->at_start && x.max)
		hmap_foreach(&tr->by_pid, collect_start, &x);
	return tr->at_start;
}

void tracker_set_root(struct tracker *tr, pid_t root)
{
	tr->opts.root = root;
}

static void report_pending(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	const struct entry *e = (const struct entry *)(uintptr_t)val;

	if (e->named && e->state == ST_PENDING && e->why)
		log_warn("pid %d: not profiled: still not ready after %u tries: %s", e->pid,
			 e->tries, e->why);
}

void tracker_report_pending(const struct tracker *tr)
{
	hmap_foreach(&tr->by_pid, report_pending, NULL);
}

bool tracker_all_gone(const struct tracker *tr)
{
	size_t i;

	struct pollfd pfd;

	if (tr->opts.npids) {
		for (i = 0; i < tr->opts.npids; i++) {
			if (tr->pidfds && tr->pidfds[i] >= 0) {
				/* readable once the process exited (a zombie included) */
				pfd = (struct pollfd){.fd = tr->pidfds[i], .events = POLLIN};
				if (poll(&pfd, 1, 0) == 0)
					return false;
			} else if (kill(tr->opts.pids[i], 0) == 0 || errno != ESRCH) {
				return false;
			}
		}
		return true;
	}
	return false;
}

void tracker_stats(const struct tracker *tr, struct tracker_stats *out)
{
	*out = tr->stats;
	out->entries = tr->by_pid.len;
	out->log_held = log_process_lines.suppressed_total;
}

const char *tracker_refusal_name(enum tracker_refusal r)
{
	static const char *const names[] = {
		[TRACKER_REFUSED_UNSUPPORTED] = "unsupported",
		[TRACKER_REFUSED_NOT_READY] = "not_ready",
		[TRACKER_REFUSED_NO_ACCESS] = "no_access",
		[TRACKER_REFUSED_IGNORED] = "ignored",
		[TRACKER_REFUSED_ERROR] = "error",
	};

	return r < TRACKER_REFUSED_MAX ? names[r] : "unknown";
}
