// SPDX-License-Identifier: GPL-2.0-only
/* The identity of a mapped file in /proc/PID/maps (device and inode): what tells the file a
 * process mapped from another one renamed over its path since. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proc/procs.h"

Test(maps_identity, parsed_from_the_line)
{
	struct proc_map m;

	cr_assert_eq(procs_parse_maps_line("7f00-7f10 r-xp 00001000 fe:01 10953026 "
					   "/usr/bin/ruby (deleted)\n",
					   &m),
		     0);
	cr_assert_eq(m.dev, makedev(0xfe, 0x01));
	cr_assert_eq(m.inode, 10953026);
	cr_assert(m.deleted);
	cr_assert_str_eq(m.path, "/usr/bin/ruby");
	free(m.path);
	/* anonymous: no file, no identity */
	cr_assert_eq(procs_parse_maps_line("7f00-7f10 rw-p 00000000 00:00 0 \n", &m), 0);
	cr_assert_eq(m.dev, 0);
	cr_assert_eq(m.inode, 0);
	cr_assert_null(m.path);
}

/* The mapping of this test's own executable has the device and inode stat gives its path (not
 * on overlayfs: maps has the layer's device there, stat the overlay's; the daemon then reads
 * through /proc/PID/map_files). */
Test(maps_identity, same_as_stat_for_a_live_mapping)
{
	struct proc_maps maps = {0};
	struct stat st;
	struct statfs fs;
	char exe[4096];
	ssize_t n;
	size_t i;
	bool found = false;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	cr_assert_eq(stat(exe, &st), 0);
	cr_assert_eq(statfs(exe, &fs), 0);
	if (fs.f_type == 0x794c7630) /* OVERLAYFS_SUPER_MAGIC */
		cr_skip_test("%s is on overlayfs", exe);
	cr_assert_eq(procs_read_maps(getpid(), &maps), 0);
	for (i = 0; i < maps.n; i++) {
		if (!maps.v[i].path || strcmp(maps.v[i].path, exe))
			continue;
		found = true;
		cr_assert_eq(maps.v[i].dev, (uint64_t)st.st_dev, "%s: dev %#lx, stat %#lx", exe,
			     (unsigned long)maps.v[i].dev, (unsigned long)st.st_dev);
		cr_assert_eq(maps.v[i].inode, (uint64_t)st.st_ino);
	}
	cr_assert(found, "no mapping of %s", exe);
	procs_maps_free(&maps);
}
