// SPDX-License-Identifier: GPL-2.0-only
/* Container ids from the real /proc/PID/cgroup formats of container engines. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "proc/container.h"

#define ID "4a9c6a1b5e2f3d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c"

static void expect(const char *text, const char *want)
{
	char buf[CONTAINER_ID_MAX];

	cr_assert_eq(container_id_parse(text, buf, sizeof(buf)), 0, "%s", text);
	cr_assert_str_eq(buf, want, "%s", text);
}

Test(container, docker_cgroupfs_v1_and_v2)
{
	expect("0::/docker/" ID "\n", ID);
	expect("12:pids:/docker/" ID "\n11:memory:/docker/" ID "\n0::/\n", ID);
}

Test(container, docker_systemd_driver)
{
	expect("0::/system.slice/docker-" ID ".scope\n", ID);
}

Test(container, containerd_cri)
{
	expect("0::/kubepods/besteffort/pod0f2b9e3c-8d6a-4b1e-9c7d-2a5f6e8b1c3d/" ID "\n", ID);
	expect("0::/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-pod0f2b9e3c_8d6a_4b1e_9c7d_2a5f6e8b1c3d.slice/cri-containerd-" ID
	       ".scope\n",
	       ID);
	expect("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podx.slice/"
	       "crio-" ID ".scope\n",
	       ID);
}

Test(container, podman)
{
	expect("0::/machine.slice/libpod-" ID ".scope/container\n", ID);
	expect("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope\n",
	       ID);
}

Test(container, systemd_machine)
{
	expect("0::/machine.slice/machine-web1.scope/payload\n", "web1");
}

Test(container, no_container)
{
	char buf[CONTAINER_ID_MAX];

	cr_assert_eq(container_id_parse("0::/user.slice/user-0.slice/session-3.scope\n", buf,
					sizeof(buf)),
		     -ENOENT);
	cr_assert_eq(container_id_parse("0::/\n", buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(container_id_parse("0::/system.slice/ssh.service\n", buf, sizeof(buf)),
		     -ENOENT);
	/* not hex, wrong length, upper case */
	cr_assert_eq(container_id_parse("0::/docker/abc\n", buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(
		container_id_parse("0::/docker/4A9C6A1B5E2F3D8C7B6A5F4E3D2C1B0A9F8E7D6C5B4A3F2E"
				   "1D0C9B8A7F6E5D4C\n",
				   buf, sizeof(buf)),
		-ENOENT);
}

Test(container, malformed_and_small_buffer)
{
	char buf[8];

	cr_assert_eq(container_id_parse("garbage without colons\n", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(container_id_parse("", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(container_id_parse(NULL, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(container_id_parse("0::/docker/" ID "\n", buf, sizeof(buf)), -ENOSPC);
}

/* A line's three parts, as the kernel writes them (cgroups(7)); a path may hold colons itself. */
Test(container, cgroup_lines_split_at_their_first_two_colons)
{
	struct span h, c, p;
	const char *v1 = "12:name=systemd:/system.slice/a:b.service";

	cr_assert(container_cgroup_line("0::/init.scope", 14, &h, &c, &p));
	cr_assert(span_eq(h, "0") && span_eq(c, "") && span_eq(p, "/init.scope"));
	cr_assert(container_cgroup_line(v1, strlen(v1), &h, &c, &p));
	cr_assert(span_eq(h, "12") && span_eq(c, "name=systemd"));
	cr_assert(span_eq(p, "/system.slice/a:b.service"));
	/* only len bytes are looked at */
	cr_assert(container_cgroup_line("3:cpu:\n4:x:/y", 6, &h, &c, &p));
	cr_assert(span_eq(h, "3") && span_eq(c, "cpu") && p.len == 0);
	cr_assert_not(container_cgroup_line("3:cpu:/", 5, &h, &c, &p));
	cr_assert_not(container_cgroup_line("no colons", 9, &h, &c, &p));
	cr_assert_not(container_cgroup_line("", 0, &h, &c, &p));
}

Test(container, this_process)
{
	char buf[CONTAINER_ID_MAX];
	int err = container_id_of(getpid(), buf, sizeof(buf));

	/* whatever this machine is, the file parses */
	cr_assert(err == 0 || err == -ENOENT, "err %d", err);
}
