// SPDX-License-Identifier: GPL-2.0-only
/* The notify protocol: exact datagrams on a real AF_UNIX socket, path and abstract. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cmd/notify.h"

static char dir[64];
static int sock = -1;

/* Binds a datagram socket at name (a path, or '@' for abstract) and points NOTIFY_SOCKET at it. */
static void listen_at(const char *name)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + strlen(name);

	cr_assert_lt(strlen(name), sizeof(addr.sun_path));
	memcpy(addr.sun_path, name, strlen(name));
	if (name[0] == '@')
		addr.sun_path[0] = '\0';
	else
		len++;
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(sock, 0);
	cr_assert_eq(bind(sock, (struct sockaddr *)&addr, len), 0, "bind %s: %s", name,
		     strerror(errno));
	cr_assert_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
}

static void setup_path(void)
{
	char path[128];

	snprintf(dir, sizeof(dir), "/tmp/rp-notify-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	listen_at(path);
}

static void teardown_path(void)
{
	char path[128];

	close(sock);
	snprintf(path, sizeof(path), "%s/notify", dir);
	unlink(path);
	rmdir(dir);
}

static void setup_abstract(void)
{
	char name[64];

	snprintf(name, sizeof(name), "@rubyprofd-test-notify-%d-%ld", (int)getpid(),
		 (long)time(NULL));
	listen_at(name);
}

static void teardown_abstract(void)
{
	close(sock);
}

/* The next datagram, which the send has already queued (AF_UNIX datagrams are synchronous). */
static const char *next_datagram(void)
{
	static char buf[2048];
	ssize_t n = recv(sock, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	cr_assert_geq(n, 0, "no datagram: %s", strerror(errno));
	buf[n] = '\0';
	return buf;
}

static void assert_no_datagram(void)
{
	char buf[16];

	cr_assert_eq(recv(sock, buf, sizeof(buf), MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
}

static void check_every_message(void)
{
	cr_assert_eq(notify_ready(), 0);
	cr_assert_str_eq(next_datagram(), "READY=1");
	cr_assert_eq(notify_stopping(), 0);
	cr_assert_str_eq(next_datagram(), "STOPPING=1");
	cr_assert_eq(notify_watchdog(), 0);
	cr_assert_str_eq(next_datagram(), "WATCHDOG=1");
	cr_assert_eq(notify_status("sampling %d processes at %s", 3, "99 Hz"), 0);
	cr_assert_str_eq(next_datagram(), "STATUS=sampling 3 processes at 99 Hz");
	cr_assert_eq(notify_send("READY=1\nSTATUS=up"), 0);
	cr_assert_str_eq(next_datagram(), "READY=1\nSTATUS=up");
	assert_no_datagram();
}

Test(notify, path_socket, .init = setup_path, .fini = teardown_path)
{
	check_every_message();
}

Test(notify, abstract_socket, .init = setup_abstract, .fini = teardown_abstract)
{
	check_every_message();
}

Test(notify, reloading_carries_the_monotonic_clock, .init = setup_abstract,
     .fini = teardown_abstract)
{
	struct timespec before, after;
	unsigned long long usec, lo, hi;
	char tail;

	clock_gettime(CLOCK_MONOTONIC, &before);
	cr_assert_eq(notify_reloading(), 0);
	clock_gettime(CLOCK_MONOTONIC, &after);
	cr_assert_eq(sscanf(next_datagram(), "RELOADING=1\nMONOTONIC_USEC=%llu%c", &usec, &tail),
		     1);
	lo = before.tv_sec * 1000000ULL + before.tv_nsec / 1000;
	hi = after.tv_sec * 1000000ULL + after.tv_nsec / 1000;
	cr_assert(usec >= lo && usec <= hi, "%llu not in [%llu, %llu]", usec, lo, hi);
}

Test(notify, status_cannot_forge_assignments, .init = setup_abstract, .fini = teardown_abstract)
{
	cr_assert_eq(notify_status("%s", "ok\nREADY=1\n"), 0);
	cr_assert_str_eq(next_datagram(), "STATUS=ok READY=1 ");
}

Test(notify, status_too_long_is_refused, .init = setup_abstract, .fini = teardown_abstract)
{
	char text[NOTIFY_MAX_STATUS + 2];

	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	cr_assert_eq(notify_status("%s", text), -EMSGSIZE);
	assert_no_datagram();
	text[NOTIFY_MAX_STATUS] = '\0'; /* exactly the limit */
	cr_assert_eq(notify_status("%s", text), 0);
	cr_assert_eq(strlen(next_datagram()), strlen("STATUS=") + NOTIFY_MAX_STATUS);
}

Test(notify, unset_socket_does_nothing)
{
	unsetenv("NOTIFY_SOCKET");
	cr_assert_eq(notify_ready(), 0);
	cr_assert_eq(notify_stopping(), 0);
	cr_assert_eq(notify_reloading(), 0);
	cr_assert_eq(notify_watchdog(), 0);
	cr_assert_eq(notify_status("x"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	cr_assert_eq(notify_ready(), 0);
}

Test(notify, bad_addresses_are_errors)
{
	char longpath[200];

	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	cr_assert_eq(notify_ready(), -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	cr_assert_eq(notify_ready(), -EAFNOSUPPORT);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longpath, 1);
	cr_assert_eq(notify_ready(), -ENAMETOOLONG);
	setenv("NOTIFY_SOCKET", "/nonexistent/rubyprofd-notify", 1);
	cr_assert_eq(notify_ready(), -ENOENT);
	cr_assert_eq(notify_send(""), -EINVAL);
}

Test(notify, nobody_listening_is_refused, .init = setup_path, .fini = teardown_path)
{
	close(sock); /* the path stays, the socket is gone */
	cr_assert_eq(notify_ready(), -ECONNREFUSED);
}

Test(notify, watchdog_usec)
{
	char pid[32];

	unsetenv("WATCHDOG_PID");
	unsetenv("WATCHDOG_USEC");
	cr_assert_eq(notify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "30000000", 1);
	cr_assert_eq(notify_watchdog_usec(), 30000000);

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert_eq(notify_watchdog_usec(), 30000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert_eq(notify_watchdog_usec(), 0, "inherited from a parent: not ours");
	setenv("WATCHDOG_PID", "abc", 1);
	cr_assert_eq(notify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_PID");

	const char *bad[] = {"", "0", "-1", " 5", "5s", "99999999999999999999999", "+5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("WATCHDOG_USEC", bad[i], 1);
		cr_assert_eq(notify_watchdog_usec(), 0, "WATCHDOG_USEC=\"%s\"", bad[i]);
	}
}
