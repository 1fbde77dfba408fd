// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpfbench - the measurements of `make bench` that need their own BPF program or a precise
 * clock, driven by bench/run.rb. Each subcommand prints one JSON object on stdout.
 *
 *   bpfbench floor [-F HZ] [-d SECONDS] [-w WARMUP] [-i STEP] [-t TARGET]...
 *	TARGET = PID:TLS_OFF:EC_VM_STACK:EC_VM_STACK_SIZE:EC_CFP:CFP_SIZE (rubyprofd's procs map).
 *	Attaches bench_floor (floor.bpf.c) to a cpu-clock event on every online CPU and reports its
 *	run time (BPF stats) and counters over DURATION seconds after WARMUP, per STEP-long interval
 *	and in total. Without -t it walks nothing: the cost of a sample that is not a target's.
 *
 *   bpfbench irq [-c CPU] [-F HZ] [-n PAIRS] [-p PHASE]
 *	Spins on CPU and finds every interruption of the spin (a gap in a tight clock_gettime loop),
 *	alternating PHASE seconds without and with a cpu-clock event at HZ on that CPU that runs the
 *	empty program bench_empty. The extra gap time per interrupt of the "with" phase is what one
 *	sampling interrupt costs the interrupted thread.
 *
 *   bpfbench toggle -p PID [-d SECONDS] [-P PHASE]
 *	Takes copies of the perf event fds of process PID (a running profiler: rubyprofd, bpftrace)
 *	with pidfd_getfd and disables and enables them, PHASE seconds each, for SECONDS; prints the
 *	phases' start times. The profiler keeps running throughout, and the workload sees phases
 *	with and without its sampling a fraction of a second apart, so that the machine's slow
 *	drifts cancel. Leaves the events enabled.
 *
 *   bpfbench rusage FILE -- COMMAND [ARGS...]
 *	Runs COMMAND, forwards SIGINT and SIGTERM to it, and writes its peak RSS and CPU time
 *	(wait4) to FILE as JSON. Exits with the command's status.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floor.h"
#include "floor.skel.h"

/* The command of `rusage`, for the signal handler to forward signals to. */
static volatile sig_atomic_t rusage_child;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int parse_u64(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || end == s || *end || *out > max)
		return -EINVAL;
	return 0;
}

static int parse_secs(const char *s, int64_t *ns)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < 0 || v > 3600)
		return -EINVAL;
	*ns = (int64_t)(v * 1e9);
	return 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int open_cpu_clock(int cpu, unsigned long long hz)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = hz,
	};

	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

struct prog_stats {
	uint64_t run_time_ns;
	uint64_t run_cnt;
};

static int prog_stats(const struct bpf_program *prog, struct prog_stats *st)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return -errno;
	st->run_time_ns = info.run_time_ns;
	st->run_cnt = info.run_cnt;
	return 0;
}

/* Sum over CPUs of the per-CPU counters. */
static int floor_counters(const struct floor_bpf *skel, int ncpus, uint64_t *out)
{
	__u64 *vals;
	__u32 key;
	int i, err = 0;

	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (key = 0; key < FLOOR_STAT_MAX; key++) {
		out[key] = 0;
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.stats), &key, vals)) {
			err = -errno;
			break;
		}
		for (i = 0; i < ncpus; i++)
			out[key] += vals[i];
	}
	free(vals);
	return err;
}

/* PID:TLS_OFF:VM_STACK:VM_STACK_SIZE:CFP:CFP_SIZE */
static int parse_target(const char *spec, __u32 *pid, struct floor_target *t)
{
	long long v[6];
	char *end;
	const char *p = spec;
	int i;

	for (i = 0; i < 6; i++) {
		errno = 0;
		v[i] = strtoll(p, &end, 0);
		if (errno || end == p || (i < 5 && *end != ':') || (i == 5 && *end))
			return -EINVAL;
		p = end + 1;
	}
	if (v[0] <= 0 || v[0] > INT32_MAX || v[5] <= 0 || v[5] > FLOOR_CFP_MAX_SIZE)
		return -EINVAL;
	for (i = 2; i < 5; i++)
		if (v[i] < 0 || v[i] >= 64 || v[i] % 8)
			return -EINVAL;
	*pid = (__u32)v[0];
	t->tls_off = v[1];
	t->ec_vm_stack = (__u32)v[2];
	t->ec_vm_stack_size = (__u32)v[3];
	t->ec_cfp = (__u32)v[4];
	t->cfp_size = (__u32)v[5];
	return 0;
}

/* Attaches prog to a cpu-clock event on every online CPU (or only on `only_cpu` when >= 0). */
static int attach_all(struct bpf_program *prog, unsigned long long hz, int only_cpu, int ncpus,
		      struct bpf_link **links, int *pfds)
{
	int cpu, n = 0;

	for (cpu = 0; cpu < ncpus; cpu++) {
		links[cpu] = NULL;
		pfds[cpu] = -1;
		if (only_cpu >= 0 && cpu != only_cpu)
			continue;
		pfds[cpu] = open_cpu_clock(cpu, hz);
		if (pfds[cpu] < 0) {
			if (errno == ENODEV) /* offline CPU */
				continue;
			fprintf(stderr, "bpfbench: perf_event_open on CPU %d: %s\n", cpu,
				strerror(errno));
			return -errno;
		}
		links[cpu] = bpf_program__attach_perf_event(prog, pfds[cpu]);
		if (!links[cpu]) {
			fprintf(stderr, "bpfbench: attach on CPU %d: %s\n", cpu, strerror(errno));
			return -errno;
		}
		n++;
	}
	return n ? 0 : -ENODEV;
}

static void detach_all(int ncpus, struct bpf_link **links, int *pfds)
{
	int cpu;

	for (cpu = 0; cpu < ncpus; cpu++) {
		bpf_link__destroy(links[cpu]);
		if (pfds[cpu] >= 0)
			close(pfds[cpu]);
	}
}

struct common {
	struct floor_bpf *skel;
	struct bpf_link **links;
	int *pfds;
	int ncpus;
	int stats_fd;
};

static int common_open(struct common *c)
{
	int err, i;

	libbpf_set_print(libbpf_print);
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0)
		return c->ncpus ? c->ncpus : -EINVAL;
	c->links = calloc(c->ncpus, sizeof(*c->links));
	c->pfds = calloc(c->ncpus, sizeof(*c->pfds));
	if (!c->links || !c->pfds)
		return -ENOMEM;
	for (i = 0; i < c->ncpus; i++)
		c->pfds[i] = -1;
	/* Run-time statistics stay on while this fd is open (kernel.bpf_stats_enabled may be 0). */
	c->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (c->stats_fd < 0) {
		err = -errno;
		fprintf(stderr, "bpfbench: cannot enable BPF run-time statistics: %s\n",
			strerror(-err));
		return err;
	}
	c->skel = floor_bpf__open();
	if (!c->skel)
		return -errno;
	err = floor_bpf__load(c->skel);
	if (err) {
		fprintf(stderr, "bpfbench: cannot load floor.bpf.o: %s\n", strerror(-err));
		return err;
	}
	return 0;
}

static void common_close(struct common *c)
{
	if (c->links && c->pfds)
		detach_all(c->ncpus, c->links, c->pfds);
	floor_bpf__destroy(c->skel);
	if (c->stats_fd >= 0)
		close(c->stats_fd);
	free(c->links);
	free(c->pfds);
}

/* One measurement interval of the floor. */
struct floor_interval {
	int64_t ns;
	struct prog_stats st;
	uint64_t counts[FLOOR_STAT_MAX];
};

static int floor_read(struct common *c, struct floor_interval *iv)
{
	iv->ns = now_ns();
	if (prog_stats(c->skel->progs.bench_floor, &iv->st))
		return -errno;
	return floor_counters(c->skel, c->ncpus, iv->counts);
}

static int cmd_floor(int argc, char **argv)
{
	struct common c = {.stats_fd = -1};
	unsigned long long hz = 99;
	int64_t duration = 2000000000LL, warmup = 200000000LL, step = 100000000LL, end;
	struct floor_interval first, prev, cur;
	struct floor_target t;
	__u32 pid;
	int opt, err, ret = 1, ntargets = 0, n = 0;

	while ((opt = getopt(argc, argv, "F:d:w:i:t:")) != -1) {
		err = 0;
		switch (opt) {
		case 'F':
			err = parse_u64(optarg, 100000, &hz);
			break;
		case 'd':
			err = parse_secs(optarg, &duration);
			break;
		case 'w':
			err = parse_secs(optarg, &warmup);
			break;
		case 'i':
			err = parse_secs(optarg, &step);
			break;
		case 't':
			/* Parsed again below, once the object is loaded; check it now. */
			err = parse_target(optarg, &pid, &t);
			break;
		default:
			err = -EINVAL;
		}
		if (err) {
			fprintf(stderr, "bpfbench floor: bad option -%c %s\n", opt,
				optarg ? optarg : "");
			return 2;
		}
	}
	if (!hz || step < 1000000) {
		fprintf(stderr, "bpfbench floor: -F must be at least 1 and -i at least 0.001\n");
		return 2;
	}
	err = common_open(&c);
	if (err)
		goto cleanup;
	for (optind = 1; (opt = getopt(argc, argv, "F:d:w:i:t:")) != -1;) {
		if (opt != 't')
			continue;
		if (ntargets == FLOOR_MAX_TARGETS) {
			fprintf(stderr, "bpfbench floor: at most %d targets\n", FLOOR_MAX_TARGETS);
			goto cleanup;
		}
		parse_target(optarg, &pid, &t);
		if (bpf_map_update_elem(bpf_map__fd(c.skel->maps.targets), &pid, &t, BPF_ANY)) {
			fprintf(stderr, "bpfbench floor: target %u: %s\n", pid, strerror(errno));
			goto cleanup;
		}
		ntargets++;
	}
	err = attach_all(c.skel->progs.bench_floor, hz, -1, c.ncpus, c.links, c.pfds);
	if (err)
		goto cleanup;
	sleep_ns(warmup);
	if (floor_read(&c, &first))
		goto cleanup;
	prev = first;
	end = first.ns + duration;
	printf("{\"targets\": %d, \"intervals\": [", ntargets);
	while ((cur.ns = now_ns()) < end) {
		sleep_ns(step < end - cur.ns ? step : end - cur.ns);
		if (now_ns() - prev.ns < step && now_ns() < end)
			continue;
		if (floor_read(&c, &cur))
			goto cleanup;
		printf("%s[%" PRId64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]",
		       n++ ? ", " : "", cur.ns - prev.ns, cur.st.run_time_ns - prev.st.run_time_ns,
		       cur.st.run_cnt - prev.st.run_cnt,
		       cur.counts[FLOOR_STAT_TARGET_SAMPLES] -
			       prev.counts[FLOOR_STAT_TARGET_SAMPLES],
		       cur.counts[FLOOR_STAT_FRAMES] - prev.counts[FLOOR_STAT_FRAMES]);
		prev = cur;
	}
	printf("], \"seconds\": %.6f, \"run_time_ns\": %" PRIu64 ", \"run_cnt\": %" PRIu64
	       ", \"target_samples\": %" PRIu64 ", \"frames\": %" PRIu64
	       ", \"read_failed\": %" PRIu64 "}\n",
	       (prev.ns - first.ns) / 1e9, prev.st.run_time_ns - first.st.run_time_ns,
	       prev.st.run_cnt - first.st.run_cnt,
	       prev.counts[FLOOR_STAT_TARGET_SAMPLES] - first.counts[FLOOR_STAT_TARGET_SAMPLES],
	       prev.counts[FLOOR_STAT_FRAMES] - first.counts[FLOOR_STAT_FRAMES],
	       prev.counts[FLOOR_STAT_READ_FAILED] - first.counts[FLOOR_STAT_READ_FAILED]);
	ret = 0;
cleanup:
	common_close(&c);
	return ret;
}

/* Interruptions by length, log2 buckets: bucket b holds gaps in [2^b, 2^(b+1)) ns. */
#define GAP_BUCKETS 32

struct gaps {
	int64_t ns;		     /* length of the phase */
	int64_t gap_ns[GAP_BUCKETS]; /* time in interruptions */
	uint64_t n[GAP_BUCKETS];     /* interruptions */
};

/*
 * Spins for dur_ns; an iteration longer than thr_ns was interrupted. Gaps are kept by length, so
 * that the reader can tell an interrupt (microseconds) from a preemption by another task or the
 * hypervisor (a time slice, milliseconds) on a shared machine.
 */
static void spin(int64_t dur_ns, int64_t thr_ns, struct gaps *g)
{
	int64_t start = now_ns(), prev = start, t, end = start + dur_ns, d;
	int b;

	memset(g, 0, sizeof(*g));
	while ((t = now_ns()) < end) {
		d = t - prev;
		prev = t;
		if (d <= thr_ns)
			continue;
		b = 63 - __builtin_clzll((unsigned long long)d);
		if (b >= GAP_BUCKETS)
			b = GAP_BUCKETS - 1;
		g->gap_ns[b] += d;
		g->n[b]++;
	}
	g->ns = t - start;
}

static void print_gaps(const char *name, const struct gaps *g)
{
	int b;

	printf("\"%s_ns\": %" PRId64 ", \"%s_gap_ns\": [", name, g->ns, name);
	for (b = 0; b < GAP_BUCKETS; b++)
		printf("%s%" PRId64, b ? ", " : "", g->gap_ns[b]);
	printf("], \"%s_gaps\": [", name);
	for (b = 0; b < GAP_BUCKETS; b++)
		printf("%s%" PRIu64, b ? ", " : "", g->n[b]);
	printf("], ");
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median length of an uninterrupted iteration of the spin loop. */
static int64_t iteration_ns(void)
{
	int64_t d[1001], prev = now_ns(), t;
	int i;

	for (i = 0; i < 1001; i++) {
		t = now_ns();
		d[i] = t - prev;
		prev = t;
	}
	qsort(d, 1001, sizeof(d[0]), cmp_i64);
	return d[500];
}

static int cmd_irq(int argc, char **argv)
{
	struct common c = {.stats_fd = -1};
	unsigned long long hz = 999, cpu = 0, pairs = 8;
	int64_t phase = 500000000LL, thr;
	struct prog_stats s0, s1;
	struct gaps off, on;
	cpu_set_t set;
	unsigned long long i;
	int opt, err, ret = 1;

	err = common_open(&c);
	if (err)
		goto cleanup;
	while ((opt = getopt(argc, argv, "c:F:n:p:")) != -1) {
		switch (opt) {
		case 'c':
			err = parse_u64(optarg, (unsigned long long)c.ncpus - 1, &cpu);
			break;
		case 'F':
			err = parse_u64(optarg, 100000, &hz);
			break;
		case 'n':
			err = parse_u64(optarg, 1000, &pairs);
			break;
		case 'p':
			err = parse_secs(optarg, &phase);
			break;
		default:
			err = -EINVAL;
		}
		if (err) {
			fprintf(stderr, "bpfbench irq: bad option -%c %s\n", opt,
				optarg ? optarg : "");
			goto cleanup;
		}
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "bpfbench irq: cannot run on CPU %llu: %s\n", cpu, strerror(errno));
		goto cleanup;
	}
	err = attach_all(c.skel->progs.bench_empty, hz ? hz : 1, (int)cpu, c.ncpus, c.links,
			 c.pfds);
	if (err)
		goto cleanup;
	/* libbpf enabled the event when it attached; each "with" phase enables it again. */
	ioctl(c.pfds[cpu], PERF_EVENT_IOC_DISABLE, 0);
	thr = iteration_ns() * 4;
	if (thr < 100)
		thr = 100;
	printf("{\"cpu\": %llu, \"hz\": %llu, \"threshold_ns\": %" PRId64 ", \"pairs\": [", cpu, hz,
	       thr);
	for (i = 0; i < pairs; i++) {
		spin(phase, thr, &off);
		if (prog_stats(c.skel->progs.bench_empty, &s0))
			goto cleanup;
		ioctl(c.pfds[cpu], PERF_EVENT_IOC_ENABLE, 0);
		spin(phase, thr, &on);
		ioctl(c.pfds[cpu], PERF_EVENT_IOC_DISABLE, 0);
		if (prog_stats(c.skel->progs.bench_empty, &s1))
			goto cleanup;
		printf("%s{", i ? ", " : "");
		print_gaps("off", &off);
		print_gaps("on", &on);
		printf("\"irqs\": %" PRIu64 ", \"prog_ns\": %" PRIu64 "}", s1.run_cnt - s0.run_cnt,
		       s1.run_time_ns - s0.run_time_ns);
	}
	printf("]}\n");
	ret = 0;
cleanup:
	common_close(&c);
	return ret;
}

#define TOGGLE_MAX_FDS 4096

/* Copies of the perf event fds of pid into fds; returns how many, or -errno. */
static int perf_fds_of(int pid, int *fds, int max)
{
	char path[320], link[64], *end;
	struct dirent *de;
	int pidfd, n = 0, fd;
	ssize_t len;
	long target;
	DIR *dir;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	if (!dir) {
		n = -errno;
		goto cleanup;
	}
	while ((de = readdir(dir)) && n < max) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (strcmp(link, "anon_inode:[perf_event]"))
			continue;
		target = strtol(de->d_name, &end, 10);
		if (*end || target < 0)
			continue;
		fd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)target, 0);
		if (fd < 0) {
			n = -errno;
			break;
		}
		fds[n++] = fd;
	}
	closedir(dir);
cleanup:
	close(pidfd);
	return n;
}

static int cmd_toggle(int argc, char **argv)
{
	unsigned long long pid = 0;
	int64_t duration = 10000000000LL, phase = 200000000LL, start;
	int fds[TOGGLE_MAX_FDS], n, i, k, opt, err = 0;
	struct timespec ts;
	int64_t at;

	while ((opt = getopt(argc, argv, "p:d:P:")) != -1) {
		switch (opt) {
		case 'p':
			err = parse_u64(optarg, INT32_MAX, &pid);
			break;
		case 'd':
			err = parse_secs(optarg, &duration);
			break;
		case 'P':
			err = parse_secs(optarg, &phase);
			break;
		default:
			err = -EINVAL;
		}
		if (err) {
			fprintf(stderr, "bpfbench toggle: bad option -%c %s\n", opt,
				optarg ? optarg : "");
			return 2;
		}
	}
	if (!pid || phase < 1000000) {
		fprintf(stderr, "usage: bpfbench toggle -p PID [-d SECONDS] [-P PHASE >= 0.001]\n");
		return 2;
	}
	n = perf_fds_of((int)pid, fds, TOGGLE_MAX_FDS);
	if (n <= 0) {
		fprintf(stderr, "bpfbench toggle: no perf event of process %llu: %s\n", pid,
			n ? strerror(-n) : "none open");
		return 1;
	}
	printf("{\"fds\": %d, \"phase_ns\": %" PRId64 ", \"phases\": [", n, phase);
	start = now_ns();
	/* Even phases without sampling (the A of A/B), odd phases with it. */
	for (k = 0; (int64_t)k * phase < duration; k++) {
		for (i = 0; i < n; i++)
			ioctl(fds[i], k % 2 ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
		printf("%s[%d, %" PRId64 "]", k ? ", " : "", k % 2, now_ns());
		at = start + (int64_t)(k + 1) * phase;
		ts.tv_sec = at / 1000000000LL;
		ts.tv_nsec = at % 1000000000LL;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	for (i = 0; i < n; i++) {
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
		close(fds[i]);
	}
	printf("], \"end\": %" PRId64 "}\n", now_ns());
	return 0;
}

static void forward_signal(int sig)
{
	if (rusage_child > 0)
		kill(rusage_child, sig);
}

static int cmd_rusage(int argc, char **argv)
{
	struct sigaction sa;
	struct rusage ru;
	FILE *f;
	pid_t pid;
	int status;

	if (argc < 5 || strcmp(argv[3], "--")) {
		fprintf(stderr, "usage: bpfbench rusage FILE -- COMMAND [ARGS...]\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pid = fork();
	if (pid < 0) {
		perror("bpfbench rusage: fork");
		return 1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[4], argv + 4);
		fprintf(stderr, "bpfbench rusage: cannot run %s: %s\n", argv[4], strerror(errno));
		_exit(127);
	}
	rusage_child = pid;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("bpfbench rusage: wait4");
			return 1;
		}
	}
	f = fopen(argv[2], "w");
	if (!f) {
		fprintf(stderr, "bpfbench rusage: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	fprintf(f,
		"{\"pid\": %d, \"maxrss_kib\": %ld, \"utime_us\": %lld, \"stime_us\": %lld, "
		"\"status\": %d}\n",
		(int)pid, ru.ru_maxrss,
		(long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
		(long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec,
		WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	fclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "floor"))
		return cmd_floor(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "irq"))
		return cmd_irq(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "toggle"))
		return cmd_toggle(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "rusage"))
		return cmd_rusage(argc, argv);
	fprintf(stderr, "usage: bpfbench floor|irq|toggle|rusage ... (see bench/bpfbench.c)\n");
	return 2;
}
