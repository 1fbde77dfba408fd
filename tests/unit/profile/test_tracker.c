// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tracker's time in the main loop (tracker_tick): however many processes are due and however
 * long each discovery takes, one tick stops after its budget and leaves the rest to the next turn
 * (counted as deferred), and every process is still looked at in the end. Twenty real Rubies,
 * each of whose discoveries takes 30 ms (the thread lister sleeps, then fails): all at once they
 * would hold the loop 600 ms.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "proc/procs.h"
#include "profile/tracker.h"

#define NRUBIES	    20
#define LISTER_MS   30
/* A tick's liveness bound: its 50 ms budget and one discovery past it, many times over (a busy
 * machine); all twenty discoveries in one tick take 600 ms. */
#define TICK_MAX_MS 400

static pid_t rubies[NRUBIES];
static unsigned int listed;

static int slow_lister(void *ctx, pid_t pid, struct rp_thread_tp *out, size_t max, size_t *n)
{
	struct timespec ts = {0, LISTER_MS * 1000000L};

	listed++;
	nanosleep(&ts, NULL);
	*n = 0;
	return -ENOSYS;
}

static int no_enable(void *ctx, const struct ruby_target *t, bool fresh)
{
	return -EINVAL;
}

static int no_fork(void *ctx, pid_t child, pid_t parent)
{
	return -EINVAL;
}

static void no_disable(void *ctx, pid_t pid)
{
}

/* Whether pid has mapped its libruby (or the ruby executable) yet. */
static bool ruby_mapped(pid_t pid)
{
	struct proc_maps m = {0};
	bool yes = false;
	size_t i;

	if (procs_read_maps(pid, &m))
		return false;
	for (i = 0; i < m.n && !yes; i++)
		yes = m.v[i].path && strstr(m.v[i].path, "libruby");
	procs_maps_free(&m);
	return yes;
}

static void start_rubies(void)
{
	int i, tries;

	for (i = 0; i < NRUBIES; i++) {
		rubies[i] = fork();
		cr_assert(rubies[i] >= 0);
		if (rubies[i] == 0) {
			execlp("ruby", "ruby", "-e", "sleep", (char *)NULL);
			_exit(127);
		}
	}
	for (i = 0; i < NRUBIES; i++) {
		for (tries = 0; tries < 1000 && !ruby_mapped(rubies[i]); tries++)
			usleep(10000);
		cr_assert(ruby_mapped(rubies[i]), "ruby %d never mapped its libruby", rubies[i]);
	}
}

static void stop_rubies(void)
{
	int i;

	for (i = 0; i < NRUBIES; i++) {
		if (rubies[i] > 0) {
			kill(rubies[i], SIGKILL);
			waitpid(rubies[i], NULL, 0);
		}
	}
}

/* A tracker of the NRUBIES Rubies (started now) whose thread lister takes LISTER_MS each. */
static struct tracker *slow_tracker(void)
{
	static const struct tracker_ops ops = {
		.enable = no_enable,
		.fork = no_fork,
		.disable = no_disable,
		.threads = slow_lister,
	};
	struct tracker_opts opts = {.pids = rubies, .npids = NRUBIES, .quiet_not_ruby = true};
	struct tracker *tr;

	start_rubies();
	tr = tracker__new(&opts, &ops);
	cr_assert_not_null(tr);
	return tr;
}

Test(tracker, a_tick_keeps_to_its_budget_and_the_rest_waits_a_turn, .fini = stop_rubies,
     .timeout = 120)
{
	struct tracker_stats st;
	struct tracker *tr;
	int64_t t0, took, longest = 0;
	int ticks = 0;

	tr = slow_tracker();
	tracker_scan(tr, clock_mono_ns());
	do {
		t0 = clock_mono_ns();
		tracker_tick(tr, t0);
		took = clock_mono_ns() - t0;
		longest = took > longest ? took : longest;
		tracker_stats(tr, &st);
		ticks++;
	} while (st.refused[TRACKER_REFUSED_UNSUPPORTED] < NRUBIES && ticks < 1000);
	cr_expect_eq(st.refused[TRACKER_REFUSED_UNSUPPORTED], NRUBIES,
		     "every Ruby looked at (and refused: no threads) in %d ticks", ticks);
	cr_expect_eq(listed, NRUBIES);
	cr_expect_lt(longest / 1000000, TICK_MAX_MS, "a tick took %lld ms",
		     (long long)(longest / 1000000));
	cr_expect_geq(ticks, 3, "%d ticks for %d discoveries of %d ms", ticks, NRUBIES, LISTER_MS);
	cr_expect_geq(st.deferred, NRUBIES - 2, "deferred %llu", (unsigned long long)st.deferred);
	cr_expect_geq(st.discovery_ns_max, LISTER_MS * 1000000ULL);
	tracker__free(tr);
}

/*
 * The processes of the first scan are counted until each is settled (here refused: no threads),
 * across ticks that each keep to their budget; the count names them, goes down one by one, and a
 * later scan, which finds the same processes again, adds none (the service's READY=1 waits on
 * this count, docs/service.md).
 */
Test(tracker, the_first_scan_counts_its_processes_until_each_is_settled, .fini = stop_rubies,
     .timeout = 120)
{
	struct tracker_stats st;
	struct tracker *tr;
	pid_t named[NRUBIES];
	size_t pending, last, i, n;
	int ticks = 0;
	bool found;

	tr = slow_tracker();
	cr_expect_eq(tracker_start_pending(tr, NULL, 0), 0, "nothing pending before the scan");
	tracker_scan(tr, clock_mono_ns());
	tracker_stats(tr, &st);
	last = tracker_start_pending(tr, named, NRUBIES);
	/* the scan's own tick took some, within its budget: the rest are pending */
	cr_expect_eq(last, NRUBIES - st.refused[TRACKER_REFUSED_UNSUPPORTED]);
	cr_expect_gt(last, 0, "a 50 ms tick looked at all %d (30 ms each)", NRUBIES);
	/* the pids named are the test's, none twice */
	n = tracker_start_pending(tr, named, NRUBIES);
	for (i = 0; i < n; i++) {
		found = false;
		for (int j = 0; j < NRUBIES; j++)
			found |= named[i] == rubies[j];
		cr_expect(found, "pid %d pending is none of the test's", named[i]);
		for (size_t k = 0; k < i; k++)
			cr_expect_neq(named[i], named[k]);
	}
	cr_expect_eq(tracker_start_pending(tr, named, 2), last, "the count, whatever the room");
	do {
		tracker_tick(tr, clock_mono_ns());
		tracker_stats(tr, &st);
		pending = tracker_start_pending(tr, NULL, 0);
		cr_expect_leq(pending, last, "the count went up: %zu after %zu", pending, last);
		cr_expect_eq(pending, NRUBIES - st.refused[TRACKER_REFUSED_UNSUPPORTED]);
		last = pending;
		ticks++;
	} while (pending && ticks < 1000);
	cr_expect_eq(pending, 0, "%zu still pending after %d ticks", pending, ticks);
	tracker_scan(tr, clock_mono_ns());
	cr_expect_eq(tracker_start_pending(tr, NULL, 0), 0, "a later scan counted again");
	tracker__free(tr);
}
