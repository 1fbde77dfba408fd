/* SPDX-License-Identifier: GPL-2.0-only */
/* floor.h - shared by bench/floor.bpf.c and bench/bpfbench.c. */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

#ifndef __BPF__
#include <linux/types.h>
#endif

#define FLOOR_MAX_TARGETS  64
#define FLOOR_BATCH	   8	 /* control frames per bpf_probe_read_user, as rp_on_sample */
#define FLOOR_CFP_MAX_SIZE 64	 /* largest sizeof(rb_control_frame_t) */
#define FLOOR_MAX_FRAMES   65536 /* rubyprofd's --max-frames limit */

/* Where the walk finds its data in one process: the values rubyprofd put in its procs map. */
struct floor_target {
	__s64 tls_off; /* ec = *(fsbase + tls_off) */
	__u32 ec_vm_stack;
	__u32 ec_vm_stack_size;
	__u32 ec_cfp;
	__u32 cfp_size;
};

#define FLOOR_STAT_SAMPLES	  0 /* program runs */
#define FLOOR_STAT_TARGET_SAMPLES 1 /* runs in a target process */
#define FLOOR_STAT_FRAMES	  2 /* control frames copied */
#define FLOOR_STAT_READ_FAILED	  3
#define FLOOR_STAT_MAX		  4

#ifndef __cplusplus
_Static_assert(sizeof(struct floor_target) == 24, "floor_target layout");
#endif

#endif
