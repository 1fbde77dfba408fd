// SPDX-License-Identifier: GPL-2.0-only
/* notify.c - sd_notify without libsystemd: one AF_UNIX datagram per call. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cmd/notify.h"
#include "profile/session.h"
#include "lib/text.h"

/* Fills addr from $NOTIFY_SOCKET. 1 when there is a socket, 0 when unset, -errno when invalid. */
static int notify_address(struct sockaddr_un *addr, socklen_t *addrlen)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;

	if (!path || !*path)
		return 0;
	if (path[0] != '/' && path[0] != '@')
		return -EAFNOSUPPORT; /* e.g. systemd 254's "vsock:" addresses */
	len = strlen(path);
	if (len > sizeof(addr->sun_path) - (path[0] == '/')) /* a path keeps its NUL */
		return -ENAMETOOLONG;
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	memcpy(addr->sun_path, path, len);
	if (path[0] == '@') {
		/* Abstract: a leading NUL, and the length says where the name ends (no NUL). */
		addr->sun_path[0] = '\0';
		*addrlen = offsetof(struct sockaddr_un, sun_path) + len;
	} else {
		*addrlen = offsetof(struct sockaddr_un, sun_path) + len + 1;
	}
	return 1;
}

int notify_send(const char *state)
{
	struct sockaddr_un addr;
	socklen_t addrlen = 0;
	size_t len = state ? strlen(state) : 0;
	ssize_t n;
	int fd = -1, err;

	if (!len)
		return -EINVAL;
	err = notify_address(&addr, &addrlen);
	if (err <= 0)
		return err;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* MSG_DONTWAIT: a busy manager must not stall the daemon's main loop. */
	n = sendto(fd, state, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&addr, addrlen);
	if (n < 0)
		err = -errno;
	else
		err = (size_t)n == len ? 0 : -EMSGSIZE;
	close(fd);
	return err;
}

int notify_ready(void)
{
	return notify_send("READY=1");
}

int notify_stopping(void)
{
	return notify_send("STOPPING=1");
}

int notify_reloading(void)
{
	char msg[64];
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		return -errno;
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ULL +
			 (unsigned long long)ts.tv_nsec / 1000);
	return notify_send(msg);
}

int notify_status(const char *fmt, ...)
{
	static const char prefix[] = "STATUS=";
	char msg[sizeof(prefix) - 1 + NOTIFY_MAX_STATUS + 1];
	va_list ap;
	char *p;
	int n;

	memcpy(msg, prefix, sizeof(prefix) - 1);
	va_start(ap, fmt);
	n = vsnprintf(msg + sizeof(prefix) - 1, NOTIFY_MAX_STATUS + 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (n > NOTIFY_MAX_STATUS)
		return -EMSGSIZE;
	for (p = msg; (p = strchr(p, '\n')); p++)
		*p = ' ';
	return notify_send(msg);
}

int notify_watchdog(void)
{
	return notify_send("WATCHDOG=1");
}

/* A decimal number with nothing around it; 0 otherwise. */
static unsigned long long notify_parse_u64(const char *s)
{
	uint64_t v;

	return text_parse_u64(s, 0, UINT64_MAX, &v) ? 0 : v;
}

uint64_t notify_watchdog_usec(void)
{
	const char *pid = getenv("WATCHDOG_PID");

	if (pid && notify_parse_u64(pid) != (unsigned long long)getpid())
		return 0;
	return notify_parse_u64(getenv("WATCHDOG_USEC"));
}

int notify_profiling(const struct session *s)
{
	size_t n = session_active(s);

	return notify_status("profiling %zu Ruby process%s at %u Hz", n, n == 1 ? "" : "es",
			     session_frequency(s));
}
