// SPDX-License-Identifier: GPL-2.0-only
/* unwinder.c - native stacks from copied user stacks, with libdwfl's CFI unwinder. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/array.h"
#include "lib/bounds.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/text.h"
#include "native/checksum.h"
#include "native/coldpart.h"
#include "native/debugfile.h"
#include "native/demangle.h"
#include "native/ehframe.h"
#include "native/elf.h"
#include "native/elfcache.h"
#include "native/unwinder.h"
#include "proc/procmem.h"
#include "proc/procs.h"

/* x86-64 DWARF register numbers (System V psABI, figure 3.36). */
#define DWARF_RBP 6
#define DWARF_RSP 7

/* A process's modules are reported again (a leaf in no module) at most this often. */
#define REFRESH_NS	 1000000000LL
/* The main loop's time that one process's unwinding may take per second (its unwinds, the
 * symbolization of their frames, and making its Dwfl, which reads its objects): past it, its
 * samples keep their Ruby frames alone until the second is over (counted; logged once per
 * process). A Ruby sampled at 99 Hz on every CPU of this VM takes 2-10 ms a second. */
#define BUDGET_WINDOW_NS 1000000000LL

/*
 * One process's Dwfl and the sample being unwound in it (the thread callbacks' argument, and
 * every module's userdata: allocated on its own, so that it never moves while its Dwfl lives).
 */
struct uproc {
	struct unwinder *u;
	pid_t pid;
	Dwfl *dwfl;
	/* the shared objects its modules use, one reference each, held until the process goes
	 * (a rebuilt Dwfl finds them again without parsing) */
	struct elfcache_obj **objs;
	size_t nobjs, objs_cap;
	uint64_t used;	  /* unwinder tick of its last use: the least recent goes at the bound */
	int64_t built_ns; /* CLOCK_MONOTONIC when its Dwfl was made */
	uint64_t debug_bytes; /* of the debug file copies its Dwfl holds (find_debuginfo) */
	bool debug_pending;   /* a module's debug file was still being checksummed: made again */
	int64_t window_start; /* CLOCK_MONOTONIC: the budget's second */
	int64_t window_ns;    /* the main loop's CPU time spent unwinding in it */
	bool budget_logged;
	const struct unwind_input *in;
	bool past_copy;
	uint64_t func_start, func_end; /* extent of the last function asked about */
	uint64_t cold_start, cold_end; /* and of its cold part; 0, 0: none */
};

struct unwinder {
	struct uproc **procs;
	struct elfcache *elf;
	size_t max, n;
	uint64_t tick;
	bool full_logged;  /* the ELF cache's bound was met and said once */
	int64_t budget_ns; /* per process and second (UNWIND_BUDGET_NS) */
	struct unwinder_stats stats;
};

/* The mapping of `path` that starts at `start` (the module's first), copied into *out. */
static bool find_mapping(pid_t pid, const char *path, uint64_t start, struct proc_map *out)
{
	struct proc_maps m = {0};
	bool found = false;
	size_t i;

	if (procs_read_maps(pid, &m))
		return false;
	for (i = 0; i < m.n && !found; i++) {
		if (m.v[i].start == start && m.v[i].path && strcmp(m.v[i].path, path) == 0) {
			*out = m.v[i];
			out->path = NULL; /* freed with m */
			found = true;
		}
	}
	procs_maps_free(&m);
	return found;
}

/*
 * path opened inside root (procs_open_in_root: no FIFO, no device, no link out of the root) if
 * it is the mapped file m (NULL: unchecked): the same inode, and the same device unless any_dev
 * (overlayfs). -1 otherwise.
 */
static int open_same(const char *root, const char *path, const struct proc_map *m, bool any_dev)
{
	int fd = procs_open_in_root(root, path);

	if (fd < 0 || !m || procs_is_mapped_file(fd, m, any_dev))
		return fd < 0 ? -1 : fd;
	close(fd);
	return -1;
}

/* Whether p holds o already (a module reported again after a refresh). */
static bool uproc_holds(const struct uproc *p, const struct elfcache_obj *o)
{
	size_t i;

	for (i = 0; i < p->nobjs; i++) {
		if (p->objs[i] == o)
			return true;
	}
	return false;
}

static void uproc_free(struct uproc *p);

/*
 * Makes room in the ELF cache for p: the least recently used other process that holds objects
 * loses its unwinding state (its Dwfl and its references: the objects only it used are freed; it
 * makes them again at its next sample). Whether one went.
 */
static bool evict_for(struct unwinder *u, const struct uproc *p)
{
	size_t i, lru = u->n;

	for (i = 0; i < u->n; i++) {
		if (u->procs[i] != p && u->procs[i]->nobjs &&
		    (lru == u->n || u->procs[i]->used < u->procs[lru]->used))
			lru = i;
	}
	if (lru == u->n)
		return false;
	uproc_free(u->procs[lru]);
	u->procs[lru] = u->procs[--u->n];
	u->stats.evicted++;
	return true;
}

/*
 * find_elf's answer for an opened file (taken: closed in every case): the shared object's Elf
 * in *elfp (libdwfl then owns a reference of the Elf, and no fd), else none (-1): the cache
 * refused it (full even after the other processes' states went, or the object past its bound:
 * counted there), or it is not ELF. Never the fd: libdwfl would map the file, which its owner can
 * truncate under us (SIGBUS).
 */
static int share_elf(struct uproc *p, int fd, Elf **elfp, const char *shown)
{
	struct elfcache_obj *o;
	char clean[256];
	int again;

	bounds_set_pid(p->pid);
	for (;;) {
		again = dup(fd);
		if (again < 0) {
			close(fd);
			return -1;
		}
		o = elfcache_get(p->u->elf, again, shown);
		if (o || errno != ENOSPC || !evict_for(p->u, p))
			break;
	}
	close(fd);
	if (!o && errno == ENOSPC && !p->u->full_logged) {
		/* counted per file (rubyprofd_native_elf_refused_total); said once for the process */
		p->u->full_logged = true;
		log_warn(
			"the ELF cache is at its bound (%d objects or %llu MiB) with one process's "
			"objects alone: objects past it are not unwound, first \"%s\" of pid %d",
			ELFCACHE_MAX_DEFAULT, ELFCACHE_BYTES_DEFAULT >> 20,
			text_clean_copy(shown, clean, sizeof(clean)), (int)p->pid);
	}
	if (!o)
		return -1;
	if (uproc_holds(p, o)) {
		elfcache_put(p->u->elf, o); /* one reference per process is enough */
	} else {
		if (array_reserve(p->objs, p->objs_cap, p->nobjs + 1, 16)) {
			elfcache_put(p->u->elf, o);
			return -1;
		}
		p->objs[p->nobjs++] = o;
	}
	*elfp = elfcache_obj_elf(o);
	return -1;
}

/*
 * The modules' files as the process sees them: inside /proc/PID/root, so that a process in a
 * container gets its own libraries; then the path inside our root (maps name files as seen from
 * the reader's root: a chroot below ours), then the mapping itself (/proc/PID/map_files: a
 * deleted or replaced file; it needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE). Every open is
 * procs_open_in_root's or procs_open_mapped's (non-blocking, regular files only). A path is used
 * only if it still names the mapped file (its inode), so that a container's deleted library is
 * never replaced by the host's file of the same name. Each module's userdata points at its uproc
 * (set right after reporting, before any file is opened: libdwfl opens them lazily).
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct uproc *p = *userdata;
	struct proc_map m;
	const struct proc_map *mp;
	char root[64];
	int fd;

	if (!p || modname[0] != '/')
		/* "[vdso: PID]": libdwfl reads it from the process's memory itself */
		return dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
	/* without its mapping (gone since it was reported), the root's path unchecked */
	mp = find_mapping(p->pid, modname, base, &m) ? &m : NULL;
	snprintf(root, sizeof(root), "/proc/%d/root", (int)p->pid);
	fd = open_same(root, modname, mp, true);
	if (fd < 0 && mp)
		fd = open_same("/", modname, mp, false);
	if (fd < 0 && mp)
		fd = procs_open_mapped(p->pid, mp);
	if (fd < 0)
		return -1;
	*file_name = strdup(modname);
	return share_elf(p, fd, elfp, modname);
}

/*
 * The image of the debug file dbg (elfcache_image: its symbols, .debug_frame and notes, at most
 * BOUND_OBJECT_BYTES read) in a memory file of ours, which libdwfl maps: a copy cannot be
 * truncated by the file's owner. Counted against the ELF cache's byte bound until the process's
 * Dwfl goes. An fd, or -1.
 */
static int debug_copy(struct uproc *p, struct elf_file *dbg, const char *shown)
{
	uint64_t bytes, needed;
	struct stat st;
	int in = elf_file_fd(dbg), fd;

	if (fstat(in, &st))
		return -1;
	fd = elfcache_image(in, &st, BOUND_OBJECT_BYTES, &bytes, &needed);
	if (fd == -EFBIG)
		bounds_refuse(BOUND_OBJECT, shown, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
			      "the debug file's parts unwinding reads", needed);
	else if (fd == -E2BIG)
		bounds_refuse(BOUND_SECTIONS, shown, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
			      "the debug file's section header table", needed);
	if (fd < 0)
		return -1;
	bytes = elfcache_image_cost(fd, bytes);
	if (elfcache_reserve(p->u->elf, bytes)) {
		close(fd);
		return -1;
	}
	p->debug_bytes += bytes;
	return fd;
}

/*
 * Separate debug files (symbols of a stripped object): the daemon's own lookup
 * (debugfile_lookup: by build id, then .gnu_debuglink, inside the process's root, through
 * procs_open_in_root, the CRC read under BOUND_FILE_BYTES), never libdwfl's (which opens paths
 * itself, blocking, and would map them). Handed over as a private copy.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct uproc *p = *userdata;
	char root[64], id[2 * 20 + 1] = "", found[PATH_MAX];
	const unsigned char *bits;
	struct elf_file *dbg;
	const char *how;
	GElf_Addr vaddr;
	int len, i, fd;

	if (!p || modname[0] != '/')
		return -1;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	for (i = 0; len > 0 && i < len && i < 20; i++)
		snprintf(id + (ptrdiff_t)2 * i, 3, "%02x", bits[i]);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)p->pid);
	bounds_set_pid(p->pid);
	dbg = debugfile_lookup(root, modname, id, debuglink_file, debuglink_crc, found,
			       sizeof(found), &how);
	/* a .gnu_debuglink whose CRC32 is still being read (checksum.h) gives none this time:
	 * libdwfl asks once per module, so the Dwfl is made again once the worker is done */
	if (!dbg) {
		p->debug_pending |= errno == EINPROGRESS || errno == EAGAIN;
		return -1;
	}
	fd = debug_copy(p, dbg, found);
	elf_file__free(dbg);
	if (fd >= 0)
		*debuginfo_file_name = strdup(found);
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* ---- the thread callbacks: one thread, its registers and stack from the sample ----------- */

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct uproc *p = dwfl_arg;

	/* one thread per unwind: the sampled one, then no more */
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->in ? p->in->tid : 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct uproc *p = dwfl_arg;

	if (!p->in || p->in->tid != tid)
		return false;
	*thread_argp = p;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct uproc *p = dwfl_arg;
	const struct unwind_input *in = p->in;
	uint64_t v;

	if (addr >= in->sp && addr - in->sp <= in->stack_len &&
	    in->stack_len - (addr - in->sp) >= sizeof(v)) {
		memcpy(&v, (const char *)in->stack + (addr - in->sp), sizeof(v));
		*result = v;
		return true;
	}
	/* Above the copy (a deep stack): the live process's words, which for the frames near the
	 * root are those of the sample while the thread is still inside them. */
	if (procmem_read(p->pid, addr, &v, sizeof(v)))
		return false;
	if (addr >= in->sp)
		p->past_copy = true;
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct uproc *p = thread_arg;
	Dwarf_Word regs[2] = {p->in->bp, p->in->sp};

	if (!dwfl_thread_state_registers(thread, DWARF_RBP, 2, regs))
		return false;
	dwfl_thread_state_register_pc(thread, p->in->ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- the per-process cache --------------------------------------------------------------- */

static int set_userdata(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			void *arg)
{
	*userdata = arg;
	return DWARF_CB_OK;
}

/* Ends the Dwfl, and with it the debug file copies its modules held. */
static void uproc_drop(struct uproc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	p->dwfl = NULL;
	elfcache_release(p->u->elf, p->debug_bytes);
	p->debug_bytes = 0;
}

/* The process's Dwfl, then its references to the shared objects (freed when the last goes). */
static void uproc_free(struct uproc *p)
{
	size_t i;

	if (!p)
		return;
	uproc_drop(p);
	for (i = 0; i < p->nobjs; i++)
		elfcache_put(p->u->elf, p->objs[i]);
	free(p->objs);
	free(p);
}

/* Reports the process's mappings (read from /proc/PID/maps: no ptrace) and attaches our thread
 * callbacks. 0 or -errno. */
static int uproc_build(struct uproc *p)
{
	int err;

	p->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!p->dwfl)
		return -ENOMEM;
	p->built_ns = clock_mono_ns();
	dwfl_report_begin(p->dwfl);
	err = dwfl_linux_proc_report(p->dwfl, p->pid);
	if (dwfl_report_end(p->dwfl, NULL, NULL) != 0 && !err)
		err = ENOENT;
	if (err) {
		uproc_drop(p);
		/* dwfl_linux_proc_report: an errno of opening /proc/PID/maps, or -1 */
		return err == ENOENT || err == ESRCH ? -ESRCH : -ENOENT;
	}
	dwfl_getmodules(p->dwfl, set_userdata, p, 0);
	if (!dwfl_attach_state(p->dwfl, NULL, p->pid, &thread_callbacks, p)) {
		uproc_drop(p);
		return -ENOENT;
	}
	return 0;
}

static struct uproc *uproc_find(struct unwinder *u, pid_t pid)
{
	size_t i;

	for (i = 0; i < u->n; i++) {
		if (u->procs[i]->pid == pid)
			return u->procs[i];
	}
	return NULL;
}

/*
 * A Dwfl that lacks a debug file still being checksummed (find_debuginfo) is ended once the
 * worker is idle, or a second later, for the next use to make it again and ask for the file anew.
 */
static void uproc_debug_again(struct uproc *p)
{
	if (!p->dwfl || !p->debug_pending ||
	    (checksum_pending() && clock_mono_ns() - p->built_ns < REFRESH_NS))
		return;
	uproc_drop(p);
	p->debug_pending = false;
	p->u->stats.refreshed++;
}

/* The process's Dwfl, made on its first sample; at the bound the least recently used goes. */
static int uproc_get(struct unwinder *u, pid_t pid, struct uproc **out)
{
	struct uproc *p = uproc_find(u, pid);
	size_t i, lru = 0;
	int err;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->u = u;
		p->pid = pid;
		if (u->n < u->max) {
			u->procs[u->n++] = p;
		} else {
			for (i = 1; i < u->n; i++) {
				if (u->procs[i]->used < u->procs[lru]->used)
					lru = i;
			}
			uproc_free(u->procs[lru]);
			u->procs[lru] = p;
			u->stats.evicted++;
		}
	}
	p->used = ++u->tick;
	uproc_debug_again(p);
	if (!p->dwfl) {
		err = uproc_build(p);
		if (err)
			return err;
	}
	*out = p;
	return 0;
}

struct unwinder *unwinder__new(size_t max_procs)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->max = max_procs ? max_procs : UNWIND_MAX_PROCS_DEFAULT;
	u->budget_ns = UNWIND_BUDGET_NS;
	u->procs = calloc(u->max, sizeof(*u->procs));
	u->elf = elfcache__new(ELFCACHE_MAX_DEFAULT, ELFCACHE_BYTES_DEFAULT);
	if (!u->procs || !u->elf) {
		elfcache__free(u->elf);
		free(u->procs);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	/* Never a network lookup (libdwfl's standard finder, not used, would ask debuginfod). */
	unsetenv("DEBUGINFOD_URLS");
	return u;
}

void unwinder__free(struct unwinder *u)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; i < u->n; i++)
		uproc_free(u->procs[i]);
	free(u->procs);
	elfcache__free(u->elf);
	free(u);
}

void unwinder_forget(struct unwinder *u, pid_t pid)
{
	size_t i;

	for (i = 0; i < u->n && u->procs[i]->pid != pid; i++)
		;
	if (i == u->n)
		return;
	uproc_free(u->procs[i]);
	u->procs[i] = u->procs[--u->n];
}

/* ---- unwinding ----------------------------------------------------------------------------- */

/* [start, end) of the function at `start`: its symbol's size, else its CFI entry's extent; a
 * function of unknown extent is its first byte alone. */
static uint64_t func_end(Dwfl *dwfl, uint64_t start)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, start);
	uint64_t fstart, end;
	GElf_Off off = 0;
	GElf_Sym sym;

	if (!mod)
		return start + 1;
	if (dwfl_module_addrinfo(mod, start, &off, &sym, NULL, NULL, NULL) && off == 0 &&
	    sym.st_size)
		return start + sym.st_size;
	if (ehframe_hdr_lookup(mod, start, &fstart, &end) == 0 && fstart == start && end > start)
		return end;
	return start + 1;
}

/* The longest function whose code is read from the process to find its cold part: Debian's
 * rb_vm_exec is 2.9 KiB (vm_exec_core, inlined elsewhere, is not the function of interest). */
#define COLD_CODE_MAX (256U << 10)

/*
 * [*start, *end) of the cold part of the function [start, end) (coldpart.h); 0, 0: none. Its code
 * is read from the process (the object's image holds none), at most COLD_CODE_MAX bytes.
 */
static void func_cold(struct uproc *p, uint64_t start, uint64_t end, uint64_t *cstart,
		      uint64_t *cend)
{
	Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, start);
	uint64_t at, s, e;
	uint8_t *code;

	*cstart = *cend = 0;
	if (!mod || end <= start || end - start > COLD_CODE_MAX)
		return;
	code = malloc(end - start);
	if (!code)
		return;
	if (procmem_read(p->pid, start, code, end - start) == 0 &&
	    coldpart_find_code(mod, start, end, code, &at) == 0 &&
	    ehframe_hdr_lookup(mod, at, &s, &e) == 0 && e > s && at < e) {
		*cstart = s;
		*cend = e;
	}
	free(code);
}

struct walk {
	uint64_t *pcs;
	size_t max, n;
	uint64_t func_start, func_end; /* the function of interest, [start, end) */
	uint64_t cold_start, cold_end; /* its cold part (GCC's function.cold), [start, end) */
	uint8_t *marks;		       /* per frame: inside it; NULL: stop before it */
	enum unwind_end end;
};

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	bool activation = false, inside;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (pc == 0) {
		w->end = UNWIND_END_OUTERMOST;
		return DWARF_CB_ABORT;
	}
	/* a return address is looked up at its call instruction */
	inside = w->func_start &&
		 ((activation ? pc : pc - 1) - w->func_start < w->func_end - w->func_start ||
		  (activation ? pc : pc - 1) - w->cold_start < w->cold_end - w->cold_start);
	if (inside && !w->marks) {
		w->end = UNWIND_END_STOP_FUNC;
		return DWARF_CB_ABORT;
	}
	if (w->n == w->max) {
		w->end = UNWIND_END_MAX;
		return DWARF_CB_ABORT;
	}
	if (w->marks)
		w->marks[w->n] = inside;
	w->pcs[w->n++] = pc;
	return DWARF_CB_OK;
}

static int unwind_one(struct unwinder *u, const struct unwind_input *in, uint64_t *pcs, size_t max,
		      struct unwind_result *res);

/* The budget's second that holds `now`: a new one once the last is over. */
static void roll_window(struct uproc *p, int64_t now)
{
	if (now - p->window_start >= BUDGET_WINDOW_NS) {
		p->window_start = now;
		p->window_ns = 0;
	}
}

/* Whether p has used its budget in this second (and says so once for the process). */
static bool over_budget(struct unwinder *u, struct uproc *p, int64_t now)
{
	roll_window(p, now);
	if (p->window_ns <= u->budget_ns)
		return false;
	u->stats.over_budget++;
	if (!p->budget_logged) {
		p->budget_logged = true;
		log_warn("pid %d: unwinding its native stacks took %lld ms of the main loop's CPU "
			 "in a second (the bound is %lld ms): its samples keep their Ruby frames "
			 "alone "
			 "for "
			 "the rest of each such second",
			 (int)p->pid, (long long)(p->window_ns / 1000000),
			 (long long)(u->budget_ns / 1000000));
	}
	return true;
}

/* The main loop's CPU time spent for p since cpu0 (its CLOCK_THREAD_CPUTIME_ID then), counted in
 * the second that t0 is in. CPU time, not the clock's: on a busy host the loop waits for a CPU
 * in the middle of an unwind, which costs the host nothing, and a budget of the clock's time
 * would refuse the process's native stacks for that wait alone. */
static void spent(struct uproc *p, int64_t t0, int64_t cpu0)
{
	if (!p)
		return;
	roll_window(p, t0);
	p->window_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
}

void unwinder_set_budget(struct unwinder *u, int64_t ns)
{
	u->budget_ns = ns;
}

void unwinder_set_elf_bytes(struct unwinder *u, uint64_t bytes)
{
	elfcache_set_max_bytes(u->elf, bytes);
}

int unwinder_unwind(struct unwinder *u, const struct unwind_input *in, uint64_t *pcs, size_t max,
		    struct unwind_result *res)
{
	struct uproc *known = uproc_find(u, in->pid);
	int64_t t0 = clock_mono_ns(), cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int ret;

	memset(res, 0, sizeof(*res));
	if (known && over_budget(u, known, t0))
		return -EBUSY;
	ret = unwind_one(u, in, pcs, max, res);
	spent(uproc_find(u, in->pid), t0, cpu0);
	return ret;
}

static int unwind_one(struct unwinder *u, const struct unwind_input *in, uint64_t *pcs, size_t max,
		      struct unwind_result *res)
{
	struct walk w = {.pcs = pcs, .max = max, .marks = in->marks};
	struct uproc *p;
	int err, ret;

	memset(res, 0, sizeof(*res));
	err = uproc_get(u, in->pid, &p);
	if (err) {
		u->stats.no_dwfl++;
		return err;
	}
	/*
	 * A leaf in no module: a library loaded after the Dwfl was made; report the maps again, at
	 * most once a second (a leaf in anonymous code, JIT code, is in no module ever).
	 */
	if (!dwfl_addrmodule(p->dwfl, in->ip) && clock_mono_ns() - p->built_ns >= REFRESH_NS) {
		uproc_drop(p);
		u->stats.refreshed++;
		err = uproc_build(p);
		if (err) {
			u->stats.no_dwfl++;
			return err;
		}
	}
	u->stats.unwinds++;
	p->in = in;
	p->past_copy = false;
	/* the function's extent, found once per Dwfl */
	if (in->func && in->func != p->func_start) {
		p->func_start = in->func;
		p->func_end = func_end(p->dwfl, in->func);
		func_cold(p, p->func_start, p->func_end, &p->cold_start, &p->cold_end);
	}
	w.func_start = in->func;
	w.func_end = in->func ? p->func_end : 0;
	w.cold_start = in->func ? p->cold_start : 0;
	w.cold_end = in->func ? p->cold_end : 0;
	ret = dwfl_getthread_frames(p->dwfl, in->tid, on_frame, &w);
	p->in = NULL;
	if (ret == 0)
		w.end = UNWIND_END_OUTERMOST;
	else if (ret < 0)
		w.end = UNWIND_END_STOPPED;
	/* otherwise on_frame set why it stopped */
	if (w.end == UNWIND_END_STOPPED)
		u->stats.stopped++;
	if (p->past_copy)
		u->stats.past_copy++;
	res->n = w.n;
	res->end = w.end;
	res->past_copy = p->past_copy;
	return 0;
}

/*
 * The file offset mapped at the module's start: its first PT_LOAD's, less the part of its page
 * before it (0 for the usual shared object, whose first segment is its headers). 0 if unknown.
 */
static uint64_t first_load_offset(Dwfl_Module *mod, uint64_t start)
{
	Dwarf_Addr bias = 0;
	GElf_Phdr ph;
	size_t i, n;
	Elf *elf = dwfl_module_getelf(mod, &bias);

	if (!elf || elf_getphdrnum(elf, &n))
		return 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* the mapping starts at the page of the segment's start */
		if (start > ph.p_vaddr + bias || ph.p_vaddr + bias - start > ph.p_offset)
			return 0;
		return ph.p_offset - (ph.p_vaddr + bias - start);
	}
	return 0;
}

/* A C++ name of module past BOUND_NAME_BYTES (demangle.h): counted and logged, kept mangled. */
static void refuse_name(pid_t pid, const char *module, const char *name)
{
	size_t len = strnlen(name, DEMANGLE_INPUT_MAX);

	bounds_set_pid(pid);
	if (len >= DEMANGLE_INPUT_MAX)
		bounds_refuse(BOUND_NAME, module ? module : "?", 0, 0, "a C++ name", strlen(name));
	else
		bounds_refuse(BOUND_NAME, module ? module : "?", 0, 0,
			      "the demangled form of a C++ name", 0);
}

static int symbolize_one(struct unwinder *u, pid_t pid, uint64_t addr, struct unwind_sym *out);

/* Its time counts against the process's budget too (not refused: the frames are unwound). */
int unwinder_symbolize(struct unwinder *u, pid_t pid, uint64_t addr, struct unwind_sym *out)
{
	int64_t t0 = clock_mono_ns(), cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int ret = symbolize_one(u, pid, addr, out);

	spent(uproc_find(u, pid), t0, cpu0);
	return ret;
}

static int symbolize_one(struct unwinder *u, pid_t pid, uint64_t addr, struct unwind_sym *out)
{
	struct uproc *p = uproc_find(u, pid);
	const unsigned char *bits;
	Dwarf_Addr start = 0, end = 0, vaddr;
	uint64_t fstart, fend;
	Dwfl_Module *mod;
	GElf_Off off = 0;
	GElf_Sym sym;
	int len, i, err;

	memset(out, 0, sizeof(*out));
	if (!p || !p->dwfl)
		return -ENOENT;
	p->used = ++u->tick;
	uproc_debug_again(p);
	if (!p->dwfl && uproc_build(p))
		return -ENOENT;
	mod = dwfl_addrmodule(p->dwfl, addr);
	if (!mod)
		return 0;
	out->module = dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
	out->mod_start = start;
	out->mod_end = end;
	out->mod_offset = first_load_offset(mod, start);
	out->name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (out->name) {
		/* C++ as its source spells it; a name that is not C++, or too long, stays as is */
		err = demangle_cxx(out->name, out->demangled, sizeof(out->demangled));
		if (err == 0)
			out->name = out->demangled;
		else if (err == -ENAMETOOLONG)
			refuse_name(pid, out->module, out->name);
		out->offset = off;
		out->func_addr = addr - off;
	} else if (ehframe_hdr_lookup(mod, addr, &fstart, &fend) == 0 && fstart >= start &&
		   (!fend || addr < fend)) {
		/* no symbol (a static function of a stripped object): the function's start from
		 * its CFI, so that its addresses count as one function */
		out->offset = fstart - start;
		out->func_addr = fstart;
		out->func_from_cfi = true;
	} else {
		out->offset = addr - start;
		out->func_addr = addr;
	}
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	for (i = 0; len > 0 && i < len && i < 20; i++)
		snprintf(out->build_id + (ptrdiff_t)2 * i, 3, "%02x", bits[i]);
	return 0;
}

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *out)
{
	*out = u->stats;
	elfcache_stats(u->elf, &out->elf);
}
