// SPDX-License-Identifier: GPL-2.0-only
/*
 * service.c - the always-on service: profiles every Ruby on the host and, every interval, writes
 * one pprof per service (app) into the spool. One main loop waits on the ring buffer, signals
 * and the metrics socket; timers are the loop's timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cmd/config.h"
#include "cmd/metrics.h"
#include "cmd/metrics_table.h"
#include "cmd/notify.h"
#include "cmd/service.h"
#include "lib/array.h"
#include "lib/clock.h"
#include "lib/hash.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/safepath.h"
#include "output/protocol.h"
#include "output/ship.h"
#include "output/spool.h"
#include "output/upload.h"
#include "proc/appname.h"
#include "proc/apprules.h"
#include "proc/privs.h"
#include "profile/pprof.h"
#include "profile/session.h"

/* metrics_tick() runs at least this often while it has a client or a paused listener. */
#define METRICS_TICK_NS	  1000000000LL
/* Without life-cycle events the /proc scan is all there is. */
#define SCAN_NO_EVENTS_NS 500000000LL
/* Services with labels remembered at once (pruned at each interval's end). */
#define MAX_SERVICES	  4096
#define SERVICE_MAX	  128
/*
 * READY=1 waits for the first looks at every process there at the start (so that `systemctl
 * start` returning means the Rubies already running are profiled), but no longer than this:
 * one look has a budget, but a process can stay undecided (stopped at its exec, a Ruby that
 * never finishes booting) for a minute of looks, and a start must not wait on a tenant.
 */
#define READY_WAIT_NS	  5000000000LL
/* Pids named in the line that says READY=1 did not wait for them. */
#define READY_PIDS_LOGGED 4

/* What is known of a service beyond its name: labels from the rule that named it. */
struct svc {
	char name[SERVICE_MAX];
	struct app_identity id;
	bool seen; /* has a live process (pruning) */
};

struct service {
	struct config *cfg;  /* the one in force (replaced on SIGHUP) */
	struct config *orig; /* the caller's (not ours to free) */
	int argc;
	char **argv;
	struct session *session;
	struct spool *spool;
	struct ship *ship; /* NULL: no upload_url, the spool is the output */
	struct metrics *metrics;
	struct apprules *rules;
	struct hmap svcs; /* hash of name -> struct svc * (chained by probing with k2) */
	char hostname[256];
	int epfd, sigfd;
	int64_t interval_start, interval_start_wall, next_scan, next_watchdog;
	uint64_t watchdog_usec;
	uint64_t profiles_written, profile_errors, intervals, reloads, reload_errors;
	int64_t ready_by; /* READY=1 is sent at the latest then */
	bool ready;	  /* READY=1 sent */
	bool stop;
};

static uint64_t name_hash(const char *s)
{
	return hash_str(HASH_INIT, s);
}

static struct svc *svc_find(struct service *sv, const char *name)
{
	struct hmap_iter it = {0};
	uint64_t val;

	while (hmap_next_dup(&sv->svcs, name_hash(name), 0, &it, &val)) {
		if (strcmp(((struct svc *)(uintptr_t)val)->name, name) == 0)
			return (struct svc *)(uintptr_t)val;
	}
	return NULL;
}

/* session_identify_fn: the service of a validated Ruby, from the rules, its unit, container... */
static int identify(void *ctx, const struct ruby_target *t, const struct procctx_attrs *otel,
		    char *service, size_t len)
{
	struct service *sv = ctx;
	struct app_identity id;
	struct svc *s;
	int err;

	err = appname_identify_with(t->pid, sv->rules, otel ? otel->service_name : NULL, &id);
	if (err)
		return err;
	if (id.ignore)
		return -ECANCELED;
	snprintf(service, len, "%s", id.service);
	log_limited(&log_process_lines, LOG_LVL_INFO, "pid %d: service \"%s\" (from its %s)",
		    t->pid, id.service, id.source);
	s = svc_find(sv, id.service);
	if (s) {
		s->id = id;
		return 0;
	}
	if (sv->svcs.len >= MAX_SERVICES)
		return 0; /* named, but without its rule labels */
	s = calloc(1, sizeof(*s));
	if (!s)
		return 0;
	snprintf(s->name, sizeof(s->name), "%s", id.service);
	s->id = id;
	if (hmap_add(&sv->svcs, name_hash(s->name), 0, (uintptr_t)s))
		free(s);
	return 0;
}

/* ---- interval profiles ------------------------------------------------------------------ */

struct names {
	const char **v;
	size_t n, cap;
	struct service *sv;
};

static void collect_service(void *ctx, const struct aggregate_proc *p)
{
	struct names *x = ctx;
	const char *name = aggregate_proc_info(p)->service;
	struct svc *s = svc_find(x->sv, name);
	size_t i;

	if (s)
		s->seen = true;
	for (i = 0; i < x->n; i++) {
		if (strcmp(x->v[i], name) == 0)
			return;
	}
	if (array_reserve(x->v, x->cap, x->n + 1, 16))
		return;
	x->v[x->n++] = name;
}

struct svc_facts {
	const char *name;
	const char *ruby_version;
	const char *container; /* shared by every process of the service, else NULL */
	bool mixed_container;
	/* of its process contexts (procctx.h): shared by every process sampled, else NULL */
	const char *service_version, *environment;
	bool mixed_version, mixed_environment;
	uint64_t samples;
};

static void facts_of(void *ctx, const struct aggregate_proc *p)
{
	struct svc_facts *f = ctx;
	const struct aggregate_proc_info *info = aggregate_proc_info(p);

	if (strcmp(info->service, f->name) != 0)
		return;
	if (!f->ruby_version)
		f->ruby_version = info->ruby_version;
	if (!f->container && !f->mixed_container)
		f->container = info->container;
	else if (f->container && strcmp(f->container, info->container) != 0) {
		f->container = NULL;
		f->mixed_container = true;
	}
}

/* A value every process of the service shares, or none (*mixed once two differ). */
static void shared(const char **have, bool *mixed, const char *v)
{
	if (*mixed)
		return;
	if (!*have)
		*have = v;
	else if (strcmp(*have, v) != 0) {
		*have = NULL;
		*mixed = true;
	}
}

static void samples_of(void *ctx, const struct aggregate_stack *st)
{
	struct svc_facts *f = ctx;
	const struct aggregate_proc_info *info = aggregate_proc_info(st->proc);

	if (strcmp(info->service, f->name) != 0)
		return;
	f->samples += (uint64_t)st->values[0];
	/* of the processes sampled in this interval (a relabelled one's old entry has none) */
	shared(&f->service_version, &f->mixed_version, info->service_version);
	shared(&f->environment, &f->mixed_environment, info->environment);
}

/* Adds a label unless its key is there already: the first wins. */
static void add_label(struct spool_label *l, size_t *n, size_t max, const char *key,
		      const char *value)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(l[i].key, key) == 0)
			return;
	if (*n < max)
		l[(*n)++] = (struct spool_label){key, value};
}

/*
 * Series labels: low cardinality (pid, tid and thread names stay on the samples). A key comes
 * once (the sidecar is a JSON object): the daemon's own first, then the configuration's, then
 * the service rule's.
 */
static size_t series_labels(struct service *sv, const struct svc_facts *f, struct spool_label *l,
			    size_t max)
{
	struct svc *s = svc_find(sv, f->name);
	size_t n = 0, i;

	add_label(l, &n, max, "service_name", f->name);
	add_label(l, &n, max, "hostname", sv->hostname);
	if (f->ruby_version && f->ruby_version[0])
		add_label(l, &n, max, "ruby_version", f->ruby_version);
	if (f->container && f->container[0])
		add_label(l, &n, max, "container_id", f->container);
	/* OpenTelemetry's resource attributes, named as collectors take label names ('_' for
	 * '.', as protocol.c's label_name and Prometheus' OTLP translation write them) */
	if (f->service_version && f->service_version[0])
		add_label(l, &n, max, "service_version", f->service_version);
	if (f->environment && f->environment[0])
		add_label(l, &n, max, "deployment_environment_name", f->environment);
	for (i = 0; i < sv->cfg->nlabels; i++)
		add_label(l, &n, max, sv->cfg->labels[i].key, sv->cfg->labels[i].value);
	for (i = 0; s && i < s->id.nlabels; i++)
		add_label(l, &n, max, s->id.labels[i].key, s->id.labels[i].value);
	return n;
}

/*
 * Pyroscope turns every string label of a pprof sample into a series label (its distributor
 * splits a profile by them): thread names would make one series per thread. Numeric labels
 * (pid, tid) it ignores. docs/shipping.md says more.
 */
static unsigned int pprof_flags(const struct config *cfg)
{
	bool pyroscope = cfg->upload_url[0] && (cfg->upload_protocol == PROTOCOL_PYROSCOPE ||
						cfg->upload_protocol == PROTOCOL_PYROSCOPE_PUSH);

	if (cfg->thread_names == CONFIG_THREAD_NAMES_NO ||
	    (cfg->thread_names == CONFIG_THREAD_NAMES_AUTO && pyroscope))
		return AGG_PPROF_NO_THREAD_NAME;
	return 0;
}

static int write_service(struct service *sv, const char *name, int64_t until_wall)
{
	struct svc_facts f = {.name = name};
	unsigned int hz = session_frequency(sv->session);
	struct spool_label labels[10 + CONFIG_MAX_LABELS + APPNAME_MAX_LABELS];
	struct spool_meta meta;
	struct pprof *p;
	uint8_t *data = NULL;
	size_t len = 0;
	char comment[200], path[4096];
	int err;

	aggregate_foreach_proc(session_agg(sv->session), facts_of, &f);
	aggregate_foreach(session_agg(sv->session), samples_of, &f);
	if (!f.samples)
		return 0; /* nothing ran: no profile (an idle app costs nothing in the spool) */
	p = pprof__new();
	if (!p)
		return -ENOMEM;
	if (session_wall(sv->session) && pprof_set_wall(p)) {
		pprof__free(p);
		return -ENOMEM;
	}
	pprof_set_period(p, 1000000000LL / hz);
	pprof_set_time(p, sv->interval_start_wall, until_wall - sv->interval_start_wall);
	snprintf(comment, sizeof(comment), "rubyprofd %s, service %s, %u Hz", RUBYPROF_VERSION,
		 name, hz);
	err = pprof_add_comment(p, comment);
	if (!err)
		err = aggregate_to_pprof(session_agg(sv->session), p, name, pprof_flags(sv->cfg));
	if (!err)
		err = pprof_encode(p, 1, &data, &len);
	pprof__free(p);
	if (err)
		goto cleanup;
	meta = (struct spool_meta){
		.service = name,
		.from_ns = sv->interval_start_wall,
		.until_ns = until_wall,
		.sample_rate = hz,
		.period_ns = 1000000000LL / hz,
		.spy_name = "rubyprofd",
		/* what Pyroscope's own wall-clock profiles are named; /ingest derives it from the
		 * pprof's sample types itself */
		.profile_name = session_wall(sv->session) ? "wall" : NULL,
		.labels = labels,
		.nlabels = series_labels(sv, &f, labels, sizeof(labels) / sizeof(labels[0])),
	};
	err = spool_write(sv->spool, &meta, data, len, path, sizeof(path));
	if (!err)
		log_debug("service %s: %" PRIu64 " samples -> \"%s\"", name, f.samples, path);
cleanup:
	free(data);
	return err;
}

static bool unseen(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct svc *s = (struct svc *)(uintptr_t)val;

	if (s->seen) {
		s->seen = false;
		return false;
	}
	free(s);
	return true;
}

/* Ends the interval: one profile per service into the spool, then the next interval. */
static void end_interval(struct service *sv, int64_t now)
{
	struct names x = {.sv = sv};
	int64_t until = clock_real_ns();
	size_t i;
	int err;

	session_drain(sv->session, now); /* what was sampled until now belongs to this interval */
	aggregate_foreach_proc(session_agg(sv->session), collect_service, &x);
	for (i = 0; i < x.n; i++) {
		err = write_service(sv, x.v[i], until);
		if (err) {
			sv->profile_errors++;
			log_error("service %s: cannot write the interval's profile to \"%s\": %s",
				  x.v[i], spool_dir(sv->spool), strerror(-err));
		} else {
			sv->profiles_written++;
		}
	}
	free(x.v);
	/* services with no process left are forgotten */
	hmap_filter(&sv->svcs, unseen, NULL);
	aggregate_cut(session_agg(sv->session));
	/* what the apps published since: labels of the next interval */
	session_poll_contexts(sv->session);
	spool_expire(sv->spool, until);
	/* the shipper's thread takes them from here; the loop never waits for it */
	if (sv->ship)
		ship_kick(sv->ship);
	sv->intervals++;
	sv->interval_start = now;
	sv->interval_start_wall = until;
}

/* ---- metrics ------------------------------------------------------------------------------ */

static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Every counter of the service now, for the metric table (metrics_table.h). */
static void snapshot(struct service *sv, struct metric_snapshot *S)
{
	struct rusage ru;

	memset(S, 0, sizeof(*S));
	session_counters(sv->session, &S->c);
	spool_stats(sv->spool, &S->spool);
	if (sv->ship)
		ship_stats(sv->ship, &S->ship);
	if (sv->metrics)
		metrics_stats(sv->metrics, &S->endpoint);
	getrusage(RUSAGE_SELF, &ru);
	S->cpu_seconds = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	S->rss_bytes = rss_bytes();
	S->profiles_written = sv->profiles_written;
	S->profile_errors = sv->profile_errors;
	S->intervals = sv->intervals;
	S->reloads = sv->reloads;
	S->reload_errors = sv->reload_errors;
	S->frequency = session_frequency(sv->session);
	S->modes = METRIC_ALWAYS | METRIC_ENDPOINT;
	if (S->c.native_on)
		S->modes |= METRIC_NATIVE;
	if (S->c.native_on && sv->cfg->kernel_stacks)
		S->modes |= METRIC_KERNEL;
	if (S->c.native_on && sv->cfg->native_procs != RP_NATIVE_RUBY)
		S->modes |= METRIC_ALONE;
	if (S->c.wall_on)
		S->modes |= METRIC_WALL;
	if (sv->ship)
		S->modes |= METRIC_SHIP;
}

static void render(void *ctx, struct metrics_buf *b)
{
	struct metric_snapshot S;

	snapshot(ctx, &S);
	metrics_table_render(&S, b);
}

/* ---- set-up, reload, loop ----------------------------------------------------------------- */

static struct apprules *compile_rules(const struct config *cfg)
{
	const char *texts[CONFIG_MAX_RULES];
	struct apprules *r;
	char msg[512];
	size_t i, bad = 0;

	for (i = 0; i < cfg->nrules; i++)
		texts[i] = cfg->rules[i].text;
	r = apprules__new(texts, cfg->nrules, &bad, msg, sizeof(msg));
	if (!r)
		log_error("%s: %s", bad < cfg->nrules ? cfg->rules[bad].where : "rule", msg);
	return r;
}

static void apply_log_level(const struct config *cfg)
{
	log_set_level((enum log_level)cfg->log_level);
}

static void set_hostname(struct service *sv)
{
	if (sv->cfg->hostname[0]) {
		snprintf(sv->hostname, sizeof(sv->hostname), "%s", sv->cfg->hostname);
		return;
	}
	if (gethostname(sv->hostname, sizeof(sv->hostname) - 1))
		snprintf(sv->hostname, sizeof(sv->hostname), "localhost");
	sv->hostname[sizeof(sv->hostname) - 1] = '\0';
}

/* The shipper's options from the configuration; headers: CONFIG_MAX_UPLOAD_HEADERS pointers. */
static struct ship_opts ship_opts_of(const struct config *cfg, const char **headers)
{
	size_t i;

	for (i = 0; i < cfg->nupload_headers; i++)
		headers[i] = cfg->upload_headers[i];
	return (struct ship_opts){
		.url = cfg->upload_url,
		.protocol = (enum protocol)cfg->upload_protocol,
		.upload =
			{
				.token_file = cfg->upload_token_file,
				.basic_auth_file = cfg->upload_basic_auth_file,
				.tenant_id = cfg->upload_tenant_id,
				.headers = headers,
				.nheaders = cfg->nupload_headers,
				.ca_file = cfg->upload_ca_file,
				.connect_timeout_ms = (long)(cfg->upload_connect_timeout * 1000),
				.timeout_ms = (long)(cfg->upload_timeout * 1000),
			},
		.max_age = cfg->upload_max_age,
		.backoff_max = cfg->upload_backoff_max,
		.rejected_max_age = cfg->upload_rejected_max_age,
	};
}

/*
 * SIGHUP's part for the shipper: started, stopped or given new options (and secrets, read
 * again). 0, or -errno with the reason logged: the reload then keeps everything as it was.
 */
static int reload_ship(struct service *sv, const struct config *ncfg, bool *stop_ship)
{
	const char *headers[CONFIG_MAX_UPLOAD_HEADERS];
	struct ship_opts o = ship_opts_of(ncfg, headers);
	char err[512];
	int r;

	*stop_ship = false;
	if (!ncfg->upload_url[0]) {
		*stop_ship = sv->ship != NULL;
		return 0;
	}
	if (!sv->ship) {
		sv->ship = ship__new(sv->spool, &o, err, sizeof(err));
		if (!sv->ship) {
			log_error("reload: upload: %s", err);
			return -errno;
		}
		log_info("shipping the spool to %s (%s)", ncfg->upload_url,
			 protocol_name(o.protocol));
		return 0;
	}
	r = ship_reconfigure(sv->ship, &o, err, sizeof(err));
	if (r)
		log_error("reload: upload: %s", err);
	else if (strcmp(ncfg->upload_url, sv->cfg->upload_url) ||
		 ncfg->upload_protocol != sv->cfg->upload_protocol)
		log_info("shipping the spool to %s (%s) from now on", ncfg->upload_url,
			 protocol_name(o.protocol));
	return r;
}

/* SIGHUP: the file again. A bad file keeps the configuration in force (said in the log). */
static void reload(struct service *sv, int64_t now)
{
	struct config *ncfg = malloc(sizeof(*ncfg)), *old = sv->cfg;
	struct apprules *rules;
	bool stop_ship;
	int err;

	/* before READY=1, systemd hears of nothing but the start (READY=1 comes when due) */
	if (sv->ready)
		notify_reloading();
	sv->reloads++;
	if (!ncfg) {
		log_error("reload: out of memory; the configuration stays as it was");
		goto out;
	}
	if (config_parse(ncfg, sv->argc, sv->argv) != CONFIG_RUN) {
		log_error("reload: the configuration stays as it was (see the error above)");
		sv->reload_errors++;
		free(ncfg);
		goto out;
	}
	rules = compile_rules(ncfg);
	if (!rules || reload_ship(sv, ncfg, &stop_ship)) {
		log_error("reload: the configuration stays as it was");
		sv->reload_errors++;
		apprules__free(rules);
		free(ncfg);
		goto out;
	}
	if (stop_ship) {
		ship__free(sv->ship); /* a transfer in flight is cut: sent again if re-enabled */
		sv->ship = NULL;
		log_info("upload_url is empty now: no more shipping; the spool keeps the profiles");
	}
	/* A profile never mixes two periods: a new frequency starts a new interval. */
	if (ncfg->frequency != old->frequency) {
		end_interval(sv, now);
		err = session_set_frequency(sv->session, ncfg->frequency);
		if (err) {
			log_error("reload: cannot change the frequency to %u Hz: %s",
				  ncfg->frequency, strerror(-err));
			ncfg->frequency = old->frequency;
		}
	}
	if (strcmp(ncfg->spool_dir, old->spool_dir) || ncfg->max_frames != old->max_frames ||
	    strcmp(ncfg->metrics_address, old->metrics_address) ||
	    ncfg->clock_wall != old->clock_wall)
		log_warn("reload: spool_dir, max_frames, metrics_address and clock change only "
			 "with a restart");
	ncfg->clock_wall = old->clock_wall;
	/* the BPF program is loaded with them */
	if (ncfg->stacks_mixed != old->stacks_mixed || ncfg->ustack_bytes != old->ustack_bytes ||
	    ncfg->kernel_stacks != old->kernel_stacks || ncfg->native_procs != old->native_procs ||
	    ncfg->nnative_pids != old->nnative_pids ||
	    memcmp(ncfg->native_pids, old->native_pids,
		   old->nnative_pids * sizeof(*old->native_pids)))
		log_warn("reload: stacks, ustack_bytes, kernel_stacks and native_processes change "
			 "only with a restart");
	ncfg->stacks_mixed = old->stacks_mixed;
	ncfg->ustack_bytes = old->ustack_bytes;
	ncfg->kernel_stacks = old->kernel_stacks;
	ncfg->native_procs = old->native_procs;
	ncfg->nnative_pids = old->nnative_pids;
	memcpy(ncfg->native_pids, old->native_pids, sizeof(old->native_pids));
	snprintf(ncfg->spool_dir, sizeof(ncfg->spool_dir), "%s", old->spool_dir);
	snprintf(ncfg->metrics_address, sizeof(ncfg->metrics_address), "%s", old->metrics_address);
	ncfg->max_frames = old->max_frames;
	spool_set_bounds(sv->spool, ncfg->spool_max_bytes, (int64_t)(ncfg->spool_max_age * 1e9));
	apprules__free(sv->rules);
	sv->rules = rules;
	sv->cfg = ncfg;
	if (old != sv->orig)
		free(old);
	apply_log_level(sv->cfg);
	set_hostname(sv);
	log_info("configuration reloaded: %u Hz, interval %g s, %zu label%s, %zu rule%s",
		 sv->cfg->frequency, sv->cfg->interval, sv->cfg->nlabels,
		 sv->cfg->nlabels == 1 ? "" : "s", sv->cfg->nrules,
		 sv->cfg->nrules == 1 ? "" : "s");
out:
	if (sv->ready)
		notify_ready();
}

static int watch(int epfd, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int on_signal(struct service *sv, int64_t now)
{
	struct signalfd_siginfo si;

	while (read(sv->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			reload(sv, now);
			break;
		case SIGINT:
		case SIGTERM:
			sv->stop = true;
			break;
		}
	}
	return 0;
}

/*
 * When the loop must wake without an event: the interval's end, the session's next due work (the
 * tracker's checks, and the ring buffer's read tick while a Ruby is profiled: samples do not wake
 * the fd, process events and a filling buffer do), the rescan, the watchdog and the metrics tick.
 */
static int64_t next_deadline(struct service *sv, int64_t now)
{
	int64_t t = sv->interval_start + (int64_t)(sv->cfg->interval * 1e9), due;

	due = session_next_due(sv->session);
	if (due < t)
		t = due;
	if (sv->next_scan && sv->next_scan < t)
		t = sv->next_scan;
	if (sv->watchdog_usec && sv->next_watchdog < t)
		t = sv->next_watchdog;
	if (sv->metrics && metrics_needs_tick(sv->metrics) && now + METRICS_TICK_NS < t)
		t = now + METRICS_TICK_NS;
	if (!sv->ready && sv->ready_by < t)
		t = sv->ready_by;
	return t;
}

/*
 * READY=1 once every process of the first scan is settled (profiled, refused, given up, not
 * Ruby, gone), or at ready_by with the undecided ones named: they are profiled once found.
 */
static void maybe_ready(struct service *sv, int64_t now)
{
	pid_t pids[READY_PIDS_LOGGED];
	char list[READY_PIDS_LOGGED * 12 + 8] = "";
	size_t n = session_start_pending(sv->session, pids, READY_PIDS_LOGGED), i, len = 0;

	if (n && now < sv->ready_by)
		return;
	if (n) {
		for (i = 0; i < n && i < READY_PIDS_LOGGED; i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d",
						i ? ", " : "", (int)pids[i]);
		if (n > READY_PIDS_LOGGED)
			snprintf(list + len, sizeof(list) - len, ", ...");
		log_warn("ready after %lld s without the first looks at %zu process%s there at the "
			 "start (pid %s): each is profiled once its Ruby is found",
			 READY_WAIT_NS / 1000000000LL, n, n == 1 ? "" : "es", list);
	}
	sv->ready = true;
	notify_ready();
	notify_profiling(sv->session);
	log_info(
		"profiling every Ruby process at %u Hz (%s); a profile per service every %g s into "
		"\"%s\"%s%s",
		sv->cfg->frequency,
		session_wall(sv->session) ? "wall clock: every Ruby thread" : "CPU time",
		sv->cfg->interval, sv->cfg->spool_dir, sv->metrics ? "; metrics on " : "",
		sv->metrics ? sv->cfg->metrics_address : "");
}

static int setup(struct service *sv)
{
	struct session_opts sopts = {
		.frequency = sv->cfg->frequency,
		.max_frames = sv->cfg->max_frames,
		.stacks_mixed = sv->cfg->stacks_mixed,
		.ustack_bytes = sv->cfg->ustack_bytes,
		.kernel_stacks = sv->cfg->kernel_stacks,
		.native_procs = sv->cfg->native_procs,
		.native_pids = sv->cfg->native_pids,
		.nnative_pids = sv->cfg->nnative_pids,
		.clock_wall = sv->cfg->clock_wall,
		.pids = sv->cfg->pids,
		.npids = sv->cfg->npids,
		.identify = identify,
		.identify_ctx = sv,
	};
	char spool_err[2 * PATH_MAX + 256];
	sigset_t mask;
	int err;

	sv->epfd = sv->sigfd = -1;
	set_hostname(sv);
	sv->rules = compile_rules(sv->cfg);
	if (!sv->rules)
		return -EINVAL; /* a configuration error: exit 2, as for the others */
	sv->spool =
		spool__new(sv->cfg->spool_dir, sv->cfg->spool_max_bytes,
			   (int64_t)(sv->cfg->spool_max_age * 1e9), spool_err, sizeof(spool_err));
	if (!sv->spool) {
		err = -errno;
		log_error("spool_dir \"%s\"%s: %s", sv->cfg->spool_dir,
			  err == -EPERM ? " refused" : "", spool_err);
		/* one that others can write is a configuration error: exit 2 */
		return err == -EPERM ? -EINVAL : err;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sv->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	sv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sv->sigfd < 0 || sv->epfd < 0)
		return -errno;
	/* after the mask: the thread inherits it, and a SIGTERM must go to the signalfd */
	if (sv->cfg->upload_url[0]) {
		const char *headers[CONFIG_MAX_UPLOAD_HEADERS];
		struct ship_opts o = ship_opts_of(sv->cfg, headers);
		char msg[512];

		sv->ship = ship__new(sv->spool, &o, msg, sizeof(msg));
		if (!sv->ship) {
			log_error("upload: %s", msg);
			return errno == ENOMEM ? -ENOMEM : -EINVAL;
		}
	}
	sv->session = session__new(&sopts);
	if (!sv->session)
		return -errno ? -errno : -ENOMEM;
	err = session_start(sv->session);
	if (err)
		return err;
	if (sv->cfg->metrics_address[0]) {
		sv->metrics = metrics__new(sv->cfg->metrics_address, render, sv);
		if (!sv->metrics) {
			err = -errno;
			log_error("metrics_address %s: %s", sv->cfg->metrics_address,
				  strerror(-err));
			return err;
		}
		err = watch(sv->epfd, metrics_listen_fd(sv->metrics));
		if (err)
			return err;
	}
	err = watch(sv->epfd, session_fd(sv->session));
	if (!err)
		err = watch(sv->epfd, sv->sigfd);
	return err;
}

/* --check-config: the spool directory as spool__new would judge it, without creating it. */
static bool spool_dir_ok(const struct config *cfg)
{
	char why[PATH_MAX + 128];
	int err = safepath_check(cfg->spool_dir, why, sizeof(why));

	if (err == -EPERM) {
		log_line(LOG_LVL_ERROR, "spool_dir: refused: %s", why);
		return false;
	}
	if (err == -ENOENT) {
		if (!cfg->quiet)
			log_line(LOG_LVL_INFO,
				 "spool_dir \"%s\" does not exist yet: it will be "
				 "created",
				 cfg->spool_dir);
	} else if (err) {
		log_line(LOG_LVL_WARN, "warning: spool_dir: %s", why);
	}
	return true;
}

/* --check-config: what the service's start reads besides the file, checked the same way. */
static bool ship_ok(const struct config *cfg)
{
	const char *headers[CONFIG_MAX_UPLOAD_HEADERS];
	struct ship_opts o = ship_opts_of(cfg, headers);
	char err[512], warn[512] = "";
	struct upload *u;

	if (!cfg->upload_url[0])
		return true;
	u = upload__new(&o.upload, err, sizeof(err), warn, sizeof(warn));
	if (!u) {
		log_line(LOG_LVL_ERROR, "upload: %s", err);
		return false;
	}
	if (warn[0])
		log_line(LOG_LVL_WARN, "warning: upload: %s", warn);
	upload__free(u);
	return true;
}

int service_check_config(const struct config *cfg)
{
	struct apprules *rules;
	const char *file = cfg->config_file ? cfg->config_file : "(no file)";
	bool ok;

	rules = compile_rules(cfg);
	ok = rules != NULL;
	apprules__free(rules);
	ok = spool_dir_ok(cfg) && ok;
	ok = ship_ok(cfg) && ok;
	if (!ok) {
		log_line(LOG_LVL_ERROR, "%s: the configuration is not valid", file);
		return 2;
	}
	/* -q (ExecReload's): the answer alone, in the exit status */
	if (cfg->quiet)
		return 0;
	config_print_effective(cfg, stdout);
	log_line(LOG_LVL_INFO, "%s: the configuration is valid", file);
	return 0;
}

int service_run(struct config *cfg, int argc, char **argv)
{
	struct service sv = {.cfg = cfg, .orig = cfg, .argc = argc, .argv = argv};
	struct epoll_event evs[16];
	int64_t now, deadline, scan_every;
	char missing[256];
	int ret = 1, n, i, err;

	err = privs_missing(missing, sizeof(missing));
	if (err > 0) {
		log_error("missing capabilities: %s (run as root, or grant them to rubyprofd)",
			  missing);
		return 1;
	}
	apply_log_level(cfg);
	err = setup(&sv);
	if (err) {
		if (err == -EINVAL)
			ret = 2;
		goto cleanup;
	}

	now = session_now();
	sv.interval_start = now;
	sv.interval_start_wall = clock_real_ns();
	scan_every = session_has_lifecycle(sv.session) ? (int64_t)(cfg->rescan_interval * 1e9)
						       : SCAN_NO_EVENTS_NS;
	sv.next_scan = scan_every ? now + scan_every : 0;
	sv.watchdog_usec = notify_watchdog_usec();
	sv.next_watchdog = now;
	/* set up: the rest of root goes (docs/security.md, "Capabilities") */
	err = privs_drop(cfg->kernel_stacks ? PRIVS_KEEP_SYSLOG : 0, missing, sizeof(missing));
	if (err)
		log_warn("cannot drop the capabilities it no longer needs: %s", strerror(-err));
	else
		log_info("capabilities kept: %s; no_new_privs set", missing[0] ? missing : "none");
	sv.ready_by = now + READY_WAIT_NS;
	maybe_ready(&sv, now);
	if (sv.ship)
		log_info("shipping the spool to %s (%s)", cfg->upload_url,
			 protocol_name((enum protocol)cfg->upload_protocol));

	while (!sv.stop) {
		deadline = next_deadline(&sv, now);
		n = epoll_wait(sv.epfd, evs, 16,
			       deadline > now ? (int)((deadline - now + 999999) / 1000000) : 0);
		if (n < 0 && errno != EINTR) {
			log_error("epoll_wait: %s", strerror(errno));
			break;
		}
		now = session_now();
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd == sv.sigfd)
				on_signal(&sv, now);
			else if (sv.metrics && evs[i].data.fd != session_fd(sv.session))
				metrics_handle(sv.metrics, evs[i].data.fd, evs[i].events, sv.epfd);
		}
		err = session_run(sv.session, now);
		if (err) {
			log_error("reading samples: %s", strerror(-err));
			break;
		}
		if (sv.next_scan && now >= sv.next_scan) {
			session_scan(sv.session, now);
			sv.next_scan = now + scan_every;
		}
		if (now >= sv.interval_start + (int64_t)(sv.cfg->interval * 1e9)) {
			end_interval(&sv, now);
			notify_profiling(sv.session);
		}
		if (sv.metrics)
			metrics_tick(sv.metrics, sv.epfd);
		if (sv.watchdog_usec && now >= sv.next_watchdog) {
			notify_watchdog();
			sv.next_watchdog = now + (int64_t)sv.watchdog_usec * 1000 / 2;
		}
		if (!sv.ready)
			maybe_ready(&sv, now);
	}
	/* SIGTERM/SIGINT: the interval so far is written, then exit 0 */
	notify_stopping();
	end_interval(&sv, session_now());
	log_info("stopped");
	ret = sv.stop ? 0 : 1;

cleanup:
	/* first: a transfer in flight is aborted, its profile stays in the spool for the next start */
	ship__free(sv.ship);
	session__free(sv.session);
	metrics__free(sv.metrics);
	spool__free(sv.spool);
	apprules__free(sv.rules);
	hmap_filter(&sv.svcs, unseen, NULL);
	hmap_filter(&sv.svcs, unseen, NULL);
	hmap_clear(&sv.svcs);
	if (sv.sigfd >= 0)
		close(sv.sigfd);
	if (sv.epfd >= 0)
		close(sv.epfd);
	if (sv.cfg != sv.orig)
		free(sv.cfg);
	return ret;
}
