// SPDX-License-Identifier: GPL-2.0-only
/*
 * Service names of Ruby processes: cgroup files as systemd (v1, hybrid, v2), docker (cgroupfs and
 * systemd drivers), Kubernetes, nspawn and a plain root produce them; the titles Puma, Unicorn,
 * Sidekiq and Resque set; ruby's own options; rules; and live processes read through /proc.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/appname.h"
#include "proc/apprules.h"

#define ID    "4a9c6a1b5e2f3d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c"
#define SHORT "4a9c6a1b5e2f"

/* cgroup v1 on a systemd host (CentOS 7 style): one line per hierarchy, name=systemd last. */
#define V1_SERVICE                                                                                 \
	"11:cpuset:/\n"                                                                            \
	"10:memory:/system.slice/shop-web.service\n"                                               \
	"9:devices:/system.slice/shop-web.service\n"                                               \
	"8:blkio:/system.slice/shop-web.service\n"                                                 \
	"7:pids:/system.slice/shop-web.service\n"                                                  \
	"6:hugetlb:/\n"                                                                            \
	"5:perf_event:/\n"                                                                         \
	"4:cpu,cpuacct:/system.slice/shop-web.service\n"                                           \
	"3:net_cls,net_prio:/\n"                                                                   \
	"2:freezer:/\n"                                                                            \
	"1:name=systemd:/system.slice/shop-web.service\n"
/* v1 without a name=systemd hierarchy: only the controllers place the process. */
#define V1_CPU_ONLY                                                                                \
	"7:pids:/\n"                                                                               \
	"4:cpu,cpuacct:/system.slice/billing.service\n"                                            \
	"3:memory:/system.slice/billing.service\n"
/* hybrid (systemd's default before v2): both the unified line and v1 lines. */
#define HYBRID_SERVICE                                                                             \
	"12:pids:/system.slice/shop.service\n"                                                     \
	"4:memory:/system.slice/shop.service\n"                                                    \
	"1:name=systemd:/system.slice/shop.service\n"                                              \
	"0::/system.slice/shop.service\n"
/* this build machine: hybrid, everything in the root but for a memory group. */
#define HYBRID_ROOT                                                                                \
	"9:name=systemd:/\n"                                                                       \
	"8:pids:/\n"                                                                               \
	"4:memory:/process_api/e84e149a531bfc2c092e1d567586fd4a\n"                                 \
	"1:cpu:/\n"                                                                                \
	"0::/\n"
#define V2_ESCAPED	"0::/system.slice/shop\\x2dweb.service\n"
#define V2_USER_SERVICE "0::/user.slice/user-1000.slice/user@1000.service/app.slice/shop.service\n"
#define V2_TEMPLATE	"0::/system.slice/system-sidekiq.slice/sidekiq@2.service\n"
#define V2_SESSION	"0::/user.slice/user-1000.slice/session-3.scope\n"
#define V2_USER_MANAGER "0::/user.slice/user-1000.slice/user@1000.service\n"
#define V2_USER_INIT	"0::/user.slice/user-1000.slice/user@1000.service/init.scope\n"
#define V2_INIT		"0::/init.scope\n"
#define V2_ROOT		"0::/\n"
#define DOCKER_CGROUPFS_V1                                                                         \
	"12:pids:/docker/" ID "\n"                                                                 \
	"11:memory:/docker/" ID "\n"                                                               \
	"4:cpu,cpuacct:/docker/" ID "\n"                                                           \
	"1:name=systemd:/docker/" ID "\n"
#define DOCKER_CGROUPFS_V2 "0::/docker/" ID "\n"
#define DOCKER_SYSTEMD	   "0::/system.slice/docker-" ID ".scope\n"
#define K8S_SYSTEMD                                                                                \
	"0::/kubepods.slice/kubepods-burstable.slice/"                                             \
	"kubepods-burstable-pod0f2b9e3c_8d6a_4b1e_9c7d_2a5f6e8b1c3d.slice/cri-containerd-" ID      \
	".scope\n"
#define K8S_CGROUPFS	   "0::/kubepods/besteffort/pod0f2b9e3c-8d6a-4b1e-9c7d-2a5f6e8b1c3d/" ID "\n"
/* a runtime running inside its own service: the service is the runtime's, not the app's */
#define RUNTIME_IN_SERVICE "0::/system.slice/containerd.service/kubepods/besteffort/podx/" ID "\n"
#define NSPAWN_SERVICE	   "0::/machine.slice/machine-web1.scope/payload/system.slice/shop.service\n"
#define NSPAWN_BARE	   "0::/machine.slice/machine-web1.scope/payload\n"

#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})

struct cmd {
	char buf[4096];
	size_t len;
};

/* argv as /proc/PID/cmdline holds it: each entry NUL-terminated, then `pad` extra NULs. */
static void mkcmd(struct cmd *c, const char *const *argv, size_t pad)
{
	size_t n;

	c->len = 0;
	for (; *argv; argv++) {
		n = strlen(*argv) + 1;
		cr_assert_lt(c->len + n + pad, sizeof(c->buf));
		memcpy(c->buf + c->len, *argv, n);
		c->len += n;
	}
	memset(c->buf + c->len, 0, pad);
	c->len += pad;
}

static void identify(const char *cgroup, const char *const *argv, const char *exe,
		     const struct apprules *rules, struct app_identity *out)
{
	struct appname_input in = {.cgroup_text = cgroup, .exe = exe, .comm = "ruby"};
	struct cmd c;

	mkcmd(&c, argv, 0);
	in.cmdline = c.buf;
	in.cmdline_len = c.len;
	cr_assert_eq(appname_identify_from(&in, rules, out), 0);
}

/* The name identify found and its source. */
static void expect_name(const struct app_identity *id, const char *service, const char *source)
{
	cr_assert_str_eq(id->service, service);
	cr_assert_str_eq(id->source, source);
}

/* Label i of the matching rule: this key with this value. */
static void expect_label(const struct app_identity *id, unsigned int i, const char *key,
			 const char *value)
{
	cr_assert_str_eq(id->labels[i].key, key, "label %u", i);
	cr_assert_str_eq(id->labels[i].value, value, "label %u", i);
}

/* The name and its source for argv in a cgroup, without rules. */
static void expect(const char *cgroup, const char *const *argv, const char *service,
		   const char *source)
{
	struct app_identity id;

	identify(cgroup, argv, "/usr/bin/ruby3.1", NULL, &id);
	cr_assert_str_eq(id.service, service, "argv[0] '%s' in '%s'", argv[0], cgroup);
	cr_assert_str_eq(id.source, source, "argv[0] '%s' in '%s'", argv[0], cgroup);
}

static const char *const APP_RB[] = {"ruby", "app.rb", NULL};
static const char *const RUBY_E[] = {"ruby", "-e", "sleep", NULL};
static const char *const PUMA[] = {"puma 6.4.0 (tcp://0.0.0.0:3000) [shop]", NULL};

/* ---- systemd ------------------------------------------------------------------------------ */

Test(appname, systemd_v1_name_systemd)
{
	struct app_identity id;

	identify(V1_SERVICE, APP_RB, "/usr/bin/ruby", NULL, &id);
	expect_name(&id, "shop-web", "systemd");
	cr_assert_str_eq(id.unit, "shop-web.service");
	cr_assert_str_eq(id.container_id, "");
	cr_assert_eq(id.rule, -1);
	cr_assert_not(id.ignore);
}

Test(appname, systemd_v1_controllers_only_and_hybrid)
{
	expect(V1_CPU_ONLY, APP_RB, "billing", "systemd");
	expect(HYBRID_SERVICE, PUMA, "shop", "systemd");
}

Test(appname, systemd_v2_escapes_and_user_services)
{
	struct app_identity id;

	identify(V2_ESCAPED, APP_RB, "/usr/bin/ruby", NULL, &id);
	cr_assert_str_eq(id.service, "shop-web");
	/* the unit as systemctl takes it, escapes and all */
	cr_assert_str_eq(id.unit, "shop\\x2dweb.service");
	expect(V2_USER_SERVICE, APP_RB, "shop", "systemd");
	/* a subgroup the service made under Delegate= is still the service */
	expect("0::/system.slice/shop.service/worker\n", APP_RB, "shop", "systemd");
	/* systemd prefixes '_' to cgroup names that clash with kernel files */
	identify("0::/system.slice/_cpu.service\n", APP_RB, "/usr/bin/ruby", NULL, &id);
	cr_assert_str_eq(id.unit, "cpu.service");
	cr_assert_str_eq(id.service, "cpu");
}

Test(appname, systemd_template_instance)
{
	struct app_identity id;

	identify(V2_TEMPLATE, APP_RB, "/usr/bin/ruby", NULL, &id);
	cr_assert_str_eq(id.unit, "sidekiq@2.service");
	/* "sidekiq@2", then '@' is outside the collectors' set */
	expect_name(&id, "sidekiq_2", "systemd");
}

Test(appname, not_units_fall_through)
{
	struct app_identity id;

	expect(V2_SESSION, PUMA, "shop", "title");
	expect(V2_USER_MANAGER, APP_RB, "app", "script");
	expect(V2_USER_INIT, APP_RB, "app", "script");
	expect(V2_INIT, APP_RB, "app", "script");
	expect(V2_ROOT, APP_RB, "app", "script");
	identify(HYBRID_ROOT, APP_RB, "/usr/bin/ruby3.1", NULL, &id);
	cr_assert_str_eq(id.service, "app");
	cr_assert_str_eq(id.unit, "");
	cr_assert_str_eq(id.container_id, "");
	/* no cgroup file at all */
	expect(NULL, APP_RB, "app", "script");
	expect("", RUBY_E, "ruby", "script");
}

/* ---- containers --------------------------------------------------------------------------- */

Test(appname, docker_cgroupfs_and_systemd_drivers)
{
	static const char *const fixtures[] = {DOCKER_CGROUPFS_V1, DOCKER_CGROUPFS_V2,
					       DOCKER_SYSTEMD};
	struct app_identity id;
	size_t i;

	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		/* the app inside names the series; the id stays on it */
		identify(fixtures[i], PUMA, "/usr/local/bin/ruby", NULL, &id);
		cr_assert_str_eq(id.service, "shop", "%s", fixtures[i]);
		cr_assert_str_eq(id.source, "title");
		cr_assert_str_eq(id.container_id, ID);
		cr_assert_str_eq(id.unit, "", "%s", fixtures[i]);
		/* nothing but ruby -e inside: the container is the better name */
		identify(fixtures[i], RUBY_E, "/usr/local/bin/ruby", NULL, &id);
		cr_assert_str_eq(id.service, "container-" SHORT);
		cr_assert_str_eq(id.source, "container");
		cr_assert_str_eq(id.container_id, ID);
	}
}

Test(appname, kubernetes)
{
	expect(K8S_SYSTEMD, ARGV("sidekiq 7.2.0 shop [0 of 5 busy]"), "shop", "title");
	expect(K8S_CGROUPFS, ARGV("ruby", "-Ilib", "worker.rb"), "worker", "script");
	expect(K8S_CGROUPFS, ARGV("ruby"), "container-" SHORT, "container");
}

Test(appname, runtime_service_is_not_the_app)
{
	struct app_identity id;

	identify(RUNTIME_IN_SERVICE, RUBY_E, "/usr/bin/ruby", NULL, &id);
	cr_assert_str_eq(id.unit, "");
	cr_assert_str_eq(id.container_id, ID);
	cr_assert_str_eq(id.service, "container-" SHORT);
}

Test(appname, nspawn_machine)
{
	struct app_identity id;

	/* a service inside the machine is the app's own unit */
	identify(NSPAWN_SERVICE, RUBY_E, "/usr/bin/ruby", NULL, &id);
	expect_name(&id, "shop", "systemd");
	cr_assert_str_eq(id.container_id, "web1");
	/* a machine name is not hex and is used whole */
	expect(NSPAWN_BARE, RUBY_E, "container-web1", "container");
}

/* ---- titles ------------------------------------------------------------------------------- */

Test(appname, puma_titles)
{
	struct appname_input in = {.cgroup_text = V2_ROOT};
	struct app_identity id;
	struct cmd c;

	expect(V2_ROOT, PUMA, "shop", "title");
	expect(V2_ROOT, ARGV("puma 6.4.0 (tcp://0.0.0.0:3000,unix:///run/shop.sock) [shop]"),
	       "shop", "title");
	expect(V2_ROOT, ARGV("puma 7.0.0.pre1 (ssl://0.0.0.0:443?key=k&cert=c) [app name]"),
	       "app_name", "title");
	expect(V2_ROOT, ARGV("puma 6.4.0 (tcp://0.0.0.0:3000)"), "puma", "title");
	expect(V2_ROOT, ARGV("puma: cluster worker 0: 1234 [shop]"), "shop", "title");
	expect(V2_ROOT, ARGV("puma: cluster worker 12: 1234"), "puma", "title");
	/* Ruby pads a title shorter than the original argv with NULs */
	mkcmd(&c, PUMA, 40);
	in.cmdline = c.buf;
	in.cmdline_len = c.len;
	cr_assert_eq(appname_identify_from(&in, NULL, &id), 0);
	cr_assert_str_eq(id.service, "shop");
	/* not Puma's title: tools named like it are scripts */
	expect(V2_ROOT, ARGV("ruby", "/usr/local/bin/pumactl", "restart"), "pumactl", "script");
	expect(V2_ROOT, ARGV("puma (x) [y]"), "puma", "script");
}

Test(appname, unicorn_titles)
{
	expect(V2_ROOT, ARGV("unicorn master -c config/unicorn.rb -E production -D"), "unicorn",
	       "title");
	expect(V2_ROOT, ARGV("unicorn worker[0] -c config/unicorn.rb -E production -D"), "unicorn",
	       "title");
	expect(V2_ROOT, ARGV("unicorn master (old) -c /srv/shop/config/unicorn.rb"), "unicorn",
	       "title");
	expect(V2_ROOT, ARGV("unicorn_rails worker[3] -c config/unicorn.rb"), "unicorn", "title");
	expect(V2_ROOT, ARGV("unicorn worker[x]"), "unicorn", "script");
}

Test(appname, sidekiq_titles)
{
	expect(V2_ROOT, ARGV("sidekiq 7.2.0 shop [0 of 5 busy]"), "shop", "title");
	expect(V2_ROOT, ARGV("sidekiq 7.2.0  [0 of 5 busy]"), "sidekiq", "title");
	expect(V2_ROOT, ARGV("sidekiq 6.5.12 shop [3 of 10 busy] stopping"), "shop", "title");
	expect(V2_ROOT, ARGV("sidekiq 8.0.0 my [app] [0 of 5 busy]"), "my__app_", "title");
	expect(V2_ROOT, ARGV("sidekiq 7.2.0 shop"), "sidekiq", "script");
}

Test(appname, resque_titles)
{
	expect(V2_ROOT, ARGV("resque-2.6.0: Waiting for default"), "resque", "title");
	expect(V2_ROOT, ARGV("resque-1.27.4: Processing high since 1700000000 [HardJob]"), "resque",
	       "title");
	expect(V2_ROOT, ARGV("resque: Starting"), "resque", "title");
	/* RESQUE_PROCLINE_PREFIX="shop " */
	expect(V2_ROOT, ARGV("shop resque-2.6.0: Waiting for default"), "shop", "title");
	expect(V2_ROOT, ARGV("shop: resque-2.6.0: Paused"), "shop", "title");
}

/* ---- scripts ------------------------------------------------------------------------------ */

Test(appname, ruby_scripts)
{
	expect(V2_ROOT, ARGV("ruby", "path/to/app.rb", "--port", "80"), "app", "script");
	expect(V2_ROOT, ARGV("ruby", "bin/rails", "server"), "rails", "script");
	expect(V2_ROOT,
	       ARGV("/usr/bin/ruby3.1", "-w", "-I", "lib", "-rbundler/setup", "--yjit",
		    "path/to/app.rb"),
	       "app", "script");
	expect(V2_ROOT,
	       ARGV("ruby", "-C", "/srv/app", "-E", "UTF-8", "--enable", "frozen-string-literal",
		    "-r", "set", "worker.rb"),
	       "worker", "script");
	expect(V2_ROOT,
	       ARGV("ruby-3.3.0", "--enable=yjit", "--enable-frozen-string-literal",
		    "-W:no-deprecated", "-x", "-Ku", "-0777", "-F:", "-i.bak", "--dump", "insns",
		    "job.rb"),
	       "job", "script");
	expect(V2_ROOT, ARGV("ruby", "-wIlib", "x.rb"), "x", "script");
	expect(V2_ROOT, ARGV("ruby", "-wI", "lib", "x.rb"), "x", "script");
	expect(V2_ROOT, ARGV("ruby", "-wd", "--yjit-exec-mem-size=64", "--jit", "y.rb"), "y",
	       "script");
	expect(V2_ROOT, ARGV("ruby", "--", "-dash.rb"), "-dash", "script");
	expect(V2_ROOT, ARGV("ruby", "-S", "rake", "jobs:work"), "rake", "script");
	/* $0 = "shop worker": one entry with spaces */
	expect(V2_ROOT, ARGV("shop worker"), "shop", "script");
}

Test(appname, ruby_without_a_script)
{
	expect(V2_ROOT, ARGV("ruby", "-e", "sleep 5"), "ruby", "script");
	expect(V2_ROOT, ARGV("ruby", "-I", "lib", "-esleep", "app.rb"), "ruby", "script");
	expect(V2_ROOT, ARGV("ruby", "-we", "sleep", "x.rb"), "ruby", "script");
	expect(V2_ROOT, ARGV("ruby", "-"), "ruby", "script");
	expect(V2_ROOT, ARGV("ruby3.1"), "ruby", "script");
	expect(V2_ROOT, ARGV("ruby", "-I"), "ruby", "script");
}

Test(appname, bundle_exec)
{
	expect(V2_ROOT,
	       ARGV("ruby", "/usr/local/bin/bundle", "exec", "puma", "-C", "config/puma.rb"),
	       "puma", "script");
	expect(V2_ROOT, ARGV("ruby", "/usr/local/bin/bundle", "exec", "ruby", "-Ilib", "app.rb"),
	       "app", "script");
	expect(V2_ROOT, ARGV("/usr/bin/bundle", "exec", "--keep-file-descriptors", "sidekiq"),
	       "sidekiq", "script");
}

Test(appname, embedding_executables)
{
	struct appname_input in = {.cgroup_text = V2_ROOT};
	struct app_identity id;

	expect(V2_ROOT, ARGV("/opt/game/mkxp-z", "--debug"), "mkxp-z", "script");
	expect(V2_ROOT, ARGV("/usr/local/bin/myapp-1.2.3"), "myapp", "script");
	expect(V2_ROOT, ARGV("/usr/local/bin/app2"), "app2", "script");
	/* an empty cmdline (a zombie, a cleared argv): the executable, then comm */
	in.exe = "/opt/embed/bin/embedder2.1";
	cr_assert_eq(appname_identify_from(&in, NULL, &id), 0);
	cr_assert_str_eq(id.service, "embedder");
	in.exe = "/usr/bin/ruby3.1";
	cr_assert_eq(appname_identify_from(&in, NULL, &id), 0);
	cr_assert_str_eq(id.service, "ruby");
	in.exe = NULL;
	in.comm = "worker";
	cr_assert_eq(appname_identify_from(&in, NULL, &id), 0);
	cr_assert_str_eq(id.service, "worker");
}

/* ---- rules -------------------------------------------------------------------------------- */

static struct apprules *rules1(const char *text)
{
	const char *texts[] = {text};
	struct apprules *r;
	char msg[256];
	size_t bad = 99;

	r = apprules__new(texts, 1, &bad, msg, sizeof(msg));
	cr_assert_not_null(r, "%s: %s", text, msg);
	return r;
}

static void rule_error(const char *text, const char *want)
{
	const char *texts[] = {"comm ~ ^ruby$ => team=a", text};
	char msg[256];
	size_t bad = 99;

	errno = 0;
	cr_assert_null(apprules__new(texts, 2, &bad, msg, sizeof(msg)), "%s", text);
	cr_assert_eq(errno, EINVAL, "%s", text);
	cr_assert_eq(bad, 1, "%s", text);
	cr_assert_str_eq(msg, want, "%s", text);
}

Test(appname, rule_errors)
{
	rule_error("cgrop ~ x => name=a", "rule: unknown field 'cgrop'");
	rule_error("cmdline ~ x", "rule: missing ' => '");
	rule_error("cmdline ~ x =>", "rule: missing ' => '");
	rule_error("cmdline ~ x => ", "rule: no action after ' => '");
	rule_error("cmdline ~ (a) => name=$3", "rule: $3 but the regex has 1 group");
	rule_error("cmdline ~ a => name=$1", "rule: $1 but the regex has 0 groups");
	rule_error("cmdline ~ (a)(b) => team=$3", "rule: $3 but the regex has 2 groups");
	rule_error("cmdline ~ a => name=$x", "rule: '$' must be followed by a digit or '$' in "
					     "'name=$x'");
	rule_error("cmdline ~ a => name=a$", "rule: '$' must be followed by a digit or '$' in "
					     "'name=a$'");
	rule_error("cmdline x => name=a", "rule: missing '~' after 'cmdline'");
	rule_error(" ~ x => name=a", "rule: missing field before '~'");
	rule_error("cmdline ~  => name=a", "rule: empty regular expression");
	rule_error("env: ~ x => name=a", "rule: bad variable name in 'env:'");
	rule_error("cmdline ~ a => shop", "rule: action 'shop' is neither 'ignore' nor "
					  "KEY=TEMPLATE");
	rule_error("cmdline ~ a => ignore name=x",
		   "rule: 'ignore' cannot be combined with other actions");
	rule_error("cmdline ~ a => service_name=x",
		   "rule: label 'service_name' is reserved, set it with name=");
	rule_error("cmdline ~ a => 9x=y",
		   "rule: bad label name '9x' (want [a-zA-Z_][a-zA-Z0-9_]*)");
	rule_error("cmdline ~ a => a-b=y",
		   "rule: bad label name 'a-b' (want [a-zA-Z_][a-zA-Z0-9_]*)");
	rule_error("cmdline ~ a => t=x t=y", "rule: label 't' given twice");
	rule_error("cmdline ~ a => name=x name=y", "rule: name= given twice");
	rule_error("cmdline ~ a => name=", "rule: empty template in 'name='");
	rule_error("cmdline ~ a => a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9",
		   "rule: more than 8 labels");
}

Test(appname, rule_bad_regex_uses_regerror)
{
	char want[300], ebuf[256];
	regex_t re;
	int rc;

	rc = regcomp(&re, "a(b", REG_EXTENDED);
	cr_assert_neq(rc, 0);
	regerror(rc, &re, ebuf, sizeof(ebuf));
	snprintf(want, sizeof(want), "rule: bad regular expression: %s", ebuf);
	rule_error("cmdline ~ a(b => name=x", want);
}

Test(appname, rule_errors_name_the_rule_and_free_half_built)
{
	const char *texts[] = {"comm ~ a => name=a", "comm ~ b => name=b", "comm ~ (c => x=1"};
	char msg[256];
	size_t bad = 99;

	cr_assert_null(apprules__new(texts, 3, &bad, msg, sizeof(msg)));
	cr_assert_eq(bad, 2);
	cr_assert(strncmp(msg, "rule: bad regular expression: ", 30) == 0, "%s", msg);
	apprules__free(NULL);
}

Test(appname, rule_templates_and_labels)
{
	struct apprules *r =
		rules1("cmdline ~ ^puma [^ ]+ \\(.*\\) \\[([a-z]+)\\]$ => name=web-$1 team=$1 "
		       "cost=$$5 whole=$0");
	struct app_identity id;

	identify(V1_SERVICE, PUMA, "/usr/bin/ruby", r, &id);
	expect_name(&id, "web-shop", "rule");
	cr_assert_eq(id.rule, 0);
	/* the unit is still found and reported */
	cr_assert_str_eq(id.unit, "shop-web.service");
	cr_assert_eq(id.nlabels, 3);
	expect_label(&id, 0, "team", "shop");
	expect_label(&id, 1, "cost", "$5");
	expect_label(&id, 2, "whole", PUMA[0]);
	apprules__free(r);
}

Test(appname, rule_regex_with_spaces_and_arrows)
{
	struct apprules *r = rules1("cmdline ~ ^ruby a => (b) => name=$1");
	struct app_identity id;

	identify(V2_ROOT, ARGV("ruby", "a", "=>", "b"), "/usr/bin/ruby", r, &id);
	cr_assert_str_eq(id.service, "b");
	identify(V2_ROOT, ARGV("ruby", "a", "b"), "/usr/bin/ruby", r, &id);
	cr_assert_eq(id.rule, -1);
	cr_assert_str_eq(id.service, "a");
	apprules__free(r);
}

Test(appname, first_matching_rule_decides_entirely)
{
	const char *texts[] = {"comm ~ ^ruby$ => team=payments", "exe ~ ruby => name=never"};
	struct apprules *r;
	struct app_identity id;
	char msg[256];
	size_t bad;

	r = apprules__new(texts, 2, &bad, msg, sizeof(msg));
	cr_assert_not_null(r, "%s", msg);
	/* labels only: the name comes from the steps after the rules, not from rule 2 */
	identify(V2_ESCAPED, APP_RB, "/usr/bin/ruby", r, &id);
	cr_assert_eq(id.rule, 0);
	expect_name(&id, "shop-web", "systemd");
	cr_assert_eq(id.nlabels, 1);
	cr_assert_str_eq(id.labels[0].value, "payments");
	apprules__free(r);
}

Test(appname, rule_empty_expansion_gives_no_name)
{
	struct apprules *r = rules1("cmdline ~ ^ruby( x)?.* => name=$1 seen=yes");
	struct app_identity id;

	identify(V2_ROOT, APP_RB, "/usr/bin/ruby", r, &id);
	cr_assert_eq(id.rule, 0);
	expect_name(&id, "app", "script");
	apprules__free(r);
}

Test(appname, rule_fields_cgroup_exe_comm)
{
	static const struct {
		const char *rule, *cgroup, *exe, *service;
	} cases[] = {
		{"cgroup ~ ^/$ => name=rooted", HYBRID_ROOT, "/usr/bin/ruby", "rooted"},
		/* v1 with neither: the first line */
		{"cgroup ~ ^/$ => name=first", V1_CPU_ONLY, "/usr/bin/ruby", "first"},
		{"exe ~ ^/opt/(shop)/ => name=$1", V2_ROOT, "/opt/shop/bin/ruby", "shop"},
		{"comm ~ ^ru => name=by-comm", V2_ROOT, "/usr/bin/ruby", "by-comm"},
	};
	struct apprules *r;
	struct app_identity id;
	size_t i;

	/* v1 without a unified line: the name=systemd path */
	r = rules1("cgroup ~ ^/system\\.slice/([a-z-]+)\\.service$ => name=v1-$1");
	identify(V1_SERVICE, APP_RB, "/usr/bin/ruby", r, &id);
	cr_assert_str_eq(id.service, "v1-shop-web");
	/* the unified path when present, even when it is the root */
	identify(HYBRID_ROOT, APP_RB, "/usr/bin/ruby", r, &id);
	cr_assert_eq(id.rule, -1);
	apprules__free(r);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = rules1(cases[i].rule);
		identify(cases[i].cgroup, APP_RB, cases[i].exe, r, &id);
		cr_assert_str_eq(id.service, cases[i].service, "%s", cases[i].rule);
		apprules__free(r);
	}
}

Test(appname, rule_env)
{
	static const char env[] = "HOME=/root\0SERVICE=billing\0EMPTY=\0RAILS_ENV=production";
	struct appname_input in = {
		.cgroup_text = V2_ROOT, .environ = env, .environ_len = sizeof(env) - 1};
	const char *texts[] = {"env:MISSING ~ .* => name=missing",
			       "env:SERVICE ~ ^(.+)$ => name=$1 env=prod"};
	const char *empty[] = {"env:EMPTY ~ ^$ => name=empty-set"};
	const char *last[] = {"env:RAILS_ENV ~ ^(production)$ => name=$1"};
	struct apprules *r;
	struct app_identity id;
	char msg[256];
	size_t bad;
	struct cmd c;

	mkcmd(&c, APP_RB, 0);
	in.cmdline = c.buf;
	in.cmdline_len = c.len;
	r = apprules__new(texts, 2, &bad, msg, sizeof(msg));
	cr_assert_not_null(r, "%s", msg);
	cr_assert_eq(appname_identify_from(&in, r, &id), 0);
	cr_assert_eq(id.rule, 1);
	cr_assert_str_eq(id.service, "billing");
	apprules__free(r);
	r = apprules__new(empty, 1, &bad, msg, sizeof(msg));
	cr_assert_eq(appname_identify_from(&in, r, &id), 0);
	cr_assert_str_eq(id.service, "empty-set");
	apprules__free(r);
	/* the last variable has no terminating NUL in the block */
	r = apprules__new(last, 1, &bad, msg, sizeof(msg));
	cr_assert_eq(appname_identify_from(&in, r, &id), 0);
	cr_assert_str_eq(id.service, "production");
	/* no environment at all: no match */
	in.environ = NULL;
	in.environ_len = 0;
	cr_assert_eq(appname_identify_from(&in, r, &id), 0);
	cr_assert_eq(id.rule, -1);
	apprules__free(r);
}

Test(appname, rule_ignore)
{
	struct apprules *r = rules1("cmdline ~ (^|/)irb( |$) => ignore");
	struct app_identity id;

	identify(V2_ROOT, ARGV("ruby", "/usr/bin/irb"), "/usr/bin/ruby", r, &id);
	cr_assert(id.ignore);
	cr_assert_eq(id.rule, 0);
	/* still named, for the log line that says what was ignored */
	cr_assert_str_eq(id.service, "irb");
	identify(V2_ROOT, APP_RB, "/usr/bin/ruby", r, &id);
	cr_assert_not(id.ignore);
	apprules__free(r);
}

/* ---- sanitizing --------------------------------------------------------------------------- */

Test(appname, sanitize)
{
	struct apprules *r = rules1("cmdline ~ ^x (.*)$ => name=$1");
	struct app_identity id;
	char long_name[300];

	identify(V2_ROOT, ARGV("x caf\xc3\xa9/app:1 v"), "/usr/bin/ruby", r, &id);
	cr_assert_str_eq(id.service, "caf___app_1_v");
	identify(V2_ROOT, ARGV("x .."), "/usr/bin/ruby", r, &id);
	cr_assert_str_eq(id.service, "__");
	cr_assert_not(id.truncated);
	memset(long_name, 'a', sizeof(long_name));
	memcpy(long_name, "x ", 2);
	long_name[sizeof(long_name) - 1] = '\0';
	identify(V2_ROOT, ARGV(long_name), "/usr/bin/ruby", r, &id);
	cr_assert_eq(strlen(id.service), APPNAME_MAX - 1);
	cr_assert(id.truncated);
	apprules__free(r);
}

Test(appname, label_values_cut_on_characters)
{
	struct apprules *r = rules1("cmdline ~ ^(.*)$ => v=$1");
	struct app_identity id;
	char arg[400];
	size_t i;

	arg[0] = 'a';
	for (i = 1; i + 2 < sizeof(arg); i += 2)
		memcpy(arg + i, "\xc3\xa9", 2);
	arg[i] = '\0';
	identify(V2_ROOT, ARGV(arg), "/usr/bin/ruby", r, &id);
	/* 'a' and 63 two-byte characters; the 64th would be split at byte 128 */
	cr_assert_eq(strlen(id.labels[0].value), 127);
	cr_assert(id.truncated);
	apprules__free(r);
}

/* ---- live processes ----------------------------------------------------------------------- */

/*
 * Starts argv with envp. Returns once the child is running the program: after exec (a close-on-
 * exec pipe reaches EOF), and, with wait_ok, after it wrote "ok" to its stdout.
 */
static pid_t spawn(const char *path, const char *const *argv, char *const *envp, bool wait_ok)
{
	int sync[2], out[2];
	char buf[8];
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe2(sync, O_CLOEXEC), 0);
	cr_assert_eq(pipe(out), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		close(out[0]);
		close(sync[0]);
		execve(path, (char *const *)argv, envp);
		/* tell the parent; a successful exec closes the pipe instead */
		if (write(sync[1], "x", 1) < 0)
			_exit(126);
		_exit(127);
	}
	close(sync[1]);
	close(out[1]);
	n = read(sync[0], buf, 1);
	cr_assert_eq(n, 0, "exec of %s failed", path);
	close(sync[0]);
	if (wait_ok) {
		n = read(out[0], buf, 3);
		cr_assert_eq(n, 3, "%s did not start", argv[0]);
		cr_assert(memcmp(buf, "ok\n", 3) == 0);
	}
	close(out[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* This machine may place the test inside a unit; then the unit rightly wins. */
static void expect_live(const struct app_identity *id, const char *service, const char *source)
{
	if (id->unit[0]) {
		cr_assert_str_eq(id->source, "systemd", "in %s", id->unit);
		return;
	}
	cr_assert_str_eq(id->service, service);
	cr_assert_str_eq(id->source, source);
}

Test(appname, live_title_of_an_exec_a_process)
{
	/* exec -a: argv[0] is the title, the program is sleep */
	static const char *const titled[] = {"puma 6.4.0 (tcp://0.0.0.0:3000) [shop]", "30", NULL};
	char *envp[] = {NULL};
	struct app_identity id;
	pid_t pid;

	pid = spawn("/bin/sleep", titled, envp, false);
	cr_assert_eq(appname_identify(pid, NULL, &id), 0);
	reap(pid);
	expect_live(&id, "shop", "title");
	cr_assert_eq(id.rule, -1);
	cr_assert_eq(id.environ_err, 0);
}

Test(appname, live_ruby_sets_its_title)
{
	static const char *const argv[] = {
		"/usr/bin/ruby", "-e",
		"$0 = 'sidekiq 7.2.0 shop [0 of 5 busy]'; $stdout.write(\"ok\\n\"); $stdout.flush; "
		"sleep 30",
		NULL};
	char *envp[] = {"RP_TEST_SERVICE=billing", "PATH=/usr/bin:/bin", NULL};
	const char *texts[] = {"env:RP_TEST_SERVICE ~ ^(.+)$ => team=$1",
			       "cmdline ~ sidekiq => name=never"};
	struct apprules *r;
	struct app_identity id;
	char msg[256];
	size_t bad;
	pid_t pid;

	if (access(argv[0], X_OK))
		cr_skip_test("missing: /usr/bin/ruby (make deps installs ruby)");
	r = apprules__new(texts, 2, &bad, msg, sizeof(msg));
	cr_assert_not_null(r, "%s", msg);
	pid = spawn(argv[0], argv, envp, true);
	cr_assert_eq(appname_identify(pid, r, &id), 0);
	reap(pid);
	expect_live(&id, "shop", "title");
	cr_assert_eq(id.environ_err, 0);
	cr_assert_eq(id.rule, 0);
	cr_assert_eq(id.nlabels, 1);
	cr_assert_str_eq(id.labels[0].value, "billing");
	apprules__free(r);
}

Test(appname, live_ruby_script_and_exe_rule)
{
	char dir[] = "/tmp/rp-appname-XXXXXX", script[64];
	const char *argv[] = {"/usr/bin/ruby", "-W0", "-I", "lib", script, NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	struct apprules *r = rules1("exe ~ /(ruby[0-9.]*)$ => interp=$1");
	struct app_identity id;
	FILE *f;
	pid_t pid;

	if (access(argv[0], X_OK))
		cr_skip_test("missing: /usr/bin/ruby (make deps installs ruby)");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(script, sizeof(script), "%s/app.rb", dir);
	f = fopen(script, "w");
	cr_assert_not_null(f);
	fputs("$stdout.write(\"ok\\n\"); $stdout.flush; sleep 30\n", f);
	fclose(f);
	pid = spawn(argv[0], argv, envp, true);
	cr_assert_eq(appname_identify(pid, r, &id), 0);
	reap(pid);
	unlink(script);
	rmdir(dir);
	expect_live(&id, "app", "script");
	cr_assert_eq(id.rule, 0);
	/* the real interpreter, e.g. ruby3.1 behind the /usr/bin/ruby link */
	cr_assert(strncmp(id.labels[0].value, "ruby", 4) == 0, "%s", id.labels[0].value);
	apprules__free(r);
}

Test(appname, live_gone_process)
{
	struct app_identity id;
	pid_t pid;
	int err;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	err = appname_identify(pid, NULL, &id);
	cr_assert(err == -ENOENT || err == -ESRCH, "%d", err);
}

/* Found by fuzzing: regcomp's cost doubles with each repetition operator in some patterns. */
Test(appname, too_many_repetitions_refused)
{
	rule_error("cmdline ~ a+a+a+a+a+a+a+a+a+a+a+a+a+ => name=x",
		   "rule: regular expression with more than 12 repetition operators (*, +, ?, {}): "
		   "too costly to compile");
	rule_error("cmdline ~ (((((((((((((a+)+)+)+)+)+)+)+)+)+)+)+)+)+ => name=x",
		   "rule: regular expression with more than 12 repetition operators (*, +, ?, {}): "
		   "too costly to compile");
	/* twelve are fine; escaped ones and those in a bracket expression are not operators */
	apprules__free(rules1("cmdline ~ a+a+a+a+a+a+a+a+a+a+a+a+ => name=x"));
	apprules__free(rules1(
		"cmdline ~ [+*?{]+\\+\\*\\?\\{ [*+?]* a+ b+ c+ d+ e+ f+ g+ h+ i+ j+ => name=x"));
}

/* ---- the OpenTelemetry process context's service.name ------------------------------------- */

Test(appname, otel_service_name_after_rules_before_the_unit)
{
	const char *texts[] = {"cmdline ~ ^ruby app\\.rb$ => name=from-rule"};
	const char *other[] = {"cmdline ~ ^ruby app\\.rb$ => team=a"};
	struct appname_input in = {
		.cgroup_text = V1_SERVICE, .exe = "/usr/bin/ruby", .comm = "ruby"};
	struct apprules *r, *labels_only;
	struct app_identity id;
	size_t bad;
	char msg[200];
	struct cmd c;

	mkcmd(&c, APP_RB, 0);
	in.cmdline = c.buf;
	in.cmdline_len = c.len;
	in.otel_service = "billing api";
	/* before the unit (shop-web), sanitized as every name */
	cr_assert_eq(appname_identify_from(&in, NULL, &id), 0);
	expect_name(&id, "billing_api", "otel");
	cr_assert_str_eq(id.unit, "shop-web.service");
	/* a rule that names it still wins */
	r = apprules__new(texts, 1, &bad, msg, sizeof(msg));
	cr_assert_not_null(r, "%s", msg);
	cr_assert_eq(appname_identify_from(&in, r, &id), 0);
	expect_name(&id, "from-rule", "rule");
	/* one with labels only does not name it: service.name does */
	labels_only = apprules__new(other, 1, &bad, msg, sizeof(msg));
	cr_assert_not_null(labels_only, "%s", msg);
	cr_assert_eq(appname_identify_from(&in, labels_only, &id), 0);
	cr_assert_str_eq(id.service, "billing_api");
	cr_assert_eq(id.nlabels, 1);
	/* empty: the unit, as without a context */
	in.otel_service = "";
	cr_assert_eq(appname_identify_from(&in, NULL, &id), 0);
	expect_name(&id, "shop-web", "systemd");
	apprules__free(r);
	apprules__free(labels_only);
}
