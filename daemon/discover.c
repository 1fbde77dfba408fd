// SPDX-License-Identifier: GPL-2.0-only
/* discover.c - Ruby process discovery and live validation. */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "discover.h"
#include "elf.h"
#include "procmem.h"
#include "rvalue.h"

#define MAX_THREADS	4096
/* Bytes of an exported function scanned for a recognizable instruction. */
#define SCAN_BYTES	256
/* A TLS block further than this from the thread pointer is not in the static TLS area. */
#define STATIC_TLS_SPAN (1 << 20)

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool is_libruby(const char *path)
{
	const char *b = base_name(path);

	return strncmp(b, "libruby", 7) == 0 && strstr(b, ".so");
}

bool discover_find_object(pid_t pid, const struct proc_maps *maps, size_t *index)
{
	char exe_link[64], exe[PATH_MAX];
	ssize_t n;
	size_t i;

	for (i = 0; i < maps->n; i++) {
		if (maps->v[i].path && is_libruby(maps->v[i].path)) {
			*index = i;
			return true;
		}
	}
	/* A ruby built without a shared libruby: the executable itself holds the VM. */
	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", pid);
	n = readlink(exe_link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
		exe[n - 10] = '\0';
	if (!strstr(base_name(exe), "ruby"))
		return false;
	for (i = 0; i < maps->n; i++) {
		if (maps->v[i].path && strcmp(maps->v[i].path, exe) == 0) {
			*index = i;
			return true;
		}
	}
	return false;
}

size_t discover_rip_targets(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *out,
			    size_t max)
{
	size_t i, n = 0;
	int32_t disp;

	/* REX.W (+R) 8b/8d modrm(mod=00, rm=101) disp32: mov/lea reg, [rip + disp32] */
	for (i = 0; i + 7 <= len && n < max; i++) {
		if ((code[i] & 0xfb) != 0x48 || (code[i + 1] != 0x8b && code[i + 1] != 0x8d) ||
		    (code[i + 2] & 0xc7) != 0x05)
			continue;
		memcpy(&disp, code + i + 3, sizeof(disp));
		out[n++] = vaddr + i + 7 + (int64_t)disp;
		i += 6;
	}
	return n;
}

int discover_gd_tls_index(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *tls_index)
{
	static const uint8_t gd[] = {0x66, 0x48, 0x8d, 0x3d}; /* data16 lea X(%rip),%rdi */
	int32_t disp;
	size_t i;

	for (i = 0; i + 8 <= len; i++) {
		if (memcmp(code + i, gd, sizeof(gd)))
			continue;
		memcpy(&disp, code + i + 4, sizeof(disp));
		*tls_index = vaddr + i + 8 + (int64_t)disp;
		return 0;
	}
	return -ENOENT;
}

static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static const char *sym_source(const struct elf_sym *s)
{
	return s->source == ELF_SYM_DYNSYM ? ".dynsym" : ".symtab";
}

/* The pthread id (== thread pointer on glibc) recorded in the EC's thread. */
static int ec_pthread_id(pid_t pid, const struct ruby_offsets *off, const uint64_t ecw[8],
			 uint64_t *ptid)
{
	uint64_t th = ecw[(off->vm.ec_thread_ptr / 8) & 7], nt;

	if (!rvalue_is_heap(th))
		return -EINVAL;
	if (off->thread_id_path == THREAD_ID_DIRECT)
		return procmem_u64(pid, th + off->vm.th_thread_id, ptid);
	if (procmem_u64(pid, th + off->th_nt, &nt) || !nt)
		return -EINVAL;
	return procmem_u64(pid, nt + off->vm.nt_thread_id, ptid);
}

/* Shape of an EC and the pthread id of its thread. 0 when it looks like an EC. */
static int check_ec(pid_t pid, const struct ruby_offsets *off, uint64_t ec, uint64_t *ptid)
{
	uint64_t w[8], stack, size, cfp;
	int err;

	err = procmem_read(pid, ec, w, sizeof(w));
	if (err)
		return err;
	stack = w[off->vm.ec_vm_stack / 8];
	size = w[off->vm.ec_vm_stack_size / 8];
	cfp = w[off->vm.ec_cfp / 8];
	if (!stack || size == 0 || size > (1ULL << 27) || cfp < stack || cfp >= stack + size * 8 ||
	    (stack + size * 8 - cfp) % off->vm.cfp_size)
		return -EINVAL;
	return ec_pthread_id(pid, off, w, ptid);
}

struct tls_loc {
	uint64_t modid;
	uint64_t block_off; /* offset of ruby_current_ec in the module's TLS block */
};

/* The TLS module id and offset of ruby_current_ec, from the symbol or recognized in code. */
static int find_tls_ec(pid_t pid, struct elf_file *ef, uint64_t bias, struct tls_loc *loc,
		       char *how, size_t howlen)
{
	struct elf_sym sym, fn;
	uint8_t code[SCAN_BYTES];
	uint64_t slot, ti[2];
	size_t len;
	int err;

	err = elf_find_symbol(ef, "ruby_current_ec", &sym);
	if (!err && sym.type == STT_TLS) {
		loc->block_off = sym.value;
		if (elf_dtpmod_slot(ef, "ruby_current_ec", &slot) == 0) {
			err = procmem_u64(pid, bias + slot, &loc->modid);
			if (err)
				return err;
		} else if (elf_file_type(ef) == ET_EXEC || elf_file_type(ef) == ET_DYN) {
			/* No module id slot: TLS of the main executable, which is module 1. */
			loc->modid = 1;
		}
		say(how, howlen,
		    "ruby_current_ec (%s, TLS module %" PRIu64 ", offset %#" PRIx64 ")",
		    sym_source(&sym), loc->modid, loc->block_off);
		return 0;
	}
	/* Stripped 3.3+: rb_thread_current() reads the EC with a general-dynamic TLS access. */
	err = elf_find_symbol(ef, "rb_thread_current", &fn);
	if (err)
		return -ENOENT;
	len = fn.size && fn.size < sizeof(code) ? fn.size : sizeof(code);
	err = elf_read_vaddr(ef, fn.value, code, len);
	if (err)
		return err;
	err = discover_gd_tls_index(code, len, fn.value, &slot);
	if (err)
		return err;
	/* tls_index {module id, offset}: filled by the loader, read from the live process */
	err = procmem_read(pid, bias + slot, ti, sizeof(ti));
	if (err)
		return err;
	loc->modid = ti[0];
	loc->block_off = ti[1];
	say(how, howlen,
	    "rb_thread_current code (tls_index at %#" PRIx64 ", module %" PRIu64
	    ", offset %#" PRIx64 ")",
	    slot, ti[0], ti[1]);
	return 0;
}

/* Validates the TLS location on every thread and picks static or DTV mode. */
static enum discover_status validate_tls(pid_t pid, const struct ruby_offsets *off,
					 const struct tls_loc *loc, const struct rp_thread_tp *tps,
					 size_t ntps, struct rp_proc *bp, char *why, size_t whylen)
{
	uint64_t dtv, block, ec, ptid;
	int64_t tls_off = 0;
	size_t i, good = 0, bad = 0;
	bool varying = false;

	/* 0: the loader has not filled the GOT yet (the process is starting) */
	if (!loc->modid) {
		say(why, whylen, "TLS module id not assigned yet");
		return DISCOVER_RETRY;
	}
	if (loc->modid > 1 << 16) {
		say(why, whylen, "implausible TLS module id %" PRIu64, loc->modid);
		return DISCOVER_REFUSED;
	}
	for (i = 0; i < ntps; i++) {
		if (!tps[i].fsbase || procmem_u64(pid, tps[i].fsbase + 8, &dtv) ||
		    procmem_u64(pid, dtv + loc->modid * 16, &block) || !block ||
		    block == (uint64_t)-1 || procmem_u64(pid, block + loc->block_off, &ec) || !ec)
			continue;
		if (check_ec(pid, off, ec, &ptid) || ptid != tps[i].fsbase) {
			bad++;
			continue;
		}
		if (good && tls_off != (int64_t)(block + loc->block_off - tps[i].fsbase))
			varying = true;
		tls_off = (int64_t)(block + loc->block_off - tps[i].fsbase);
		good++;
	}
	if (!good && !bad) {
		say(why, whylen, "no thread has a Ruby execution context yet");
		return kill(pid, 0) && errno == ESRCH ? DISCOVER_GONE : DISCOVER_RETRY;
	}
	if (bad > good) {
		say(why, whylen,
		    "execution context failed validation on %zu of %zu threads (offsets do not "
		    "match "
		    "this build)",
		    bad, bad + good);
		return DISCOVER_REFUSED;
	}
	bp->tls_modid = loc->modid;
	bp->tls_block_off = loc->block_off;
	if (!varying && tls_off < 0 && tls_off > -STATIC_TLS_SPAN) {
		bp->ec_mode = RP_EC_TLS_STATIC;
		bp->tls_off = tls_off;
	} else {
		bp->ec_mode = RP_EC_TLS_DTV;
	}
	return DISCOVER_READY;
}

static enum discover_status validate_global(pid_t pid, const struct ruby_offsets *off,
					    uint64_t addr, const struct rp_thread_tp *tps,
					    size_t ntps, char *why, size_t whylen)
{
	uint64_t ec, ptid;
	size_t i;

	if (procmem_u64(pid, addr, &ec)) {
		say(why, whylen, "cannot read ruby_current_execution_context_ptr");
		return kill(pid, 0) && errno == ESRCH ? DISCOVER_GONE : DISCOVER_REFUSED;
	}
	if (!ec) {
		say(why, whylen, "no execution context yet");
		return DISCOVER_RETRY;
	}
	if (check_ec(pid, off, ec, &ptid)) {
		say(why, whylen,
		    "execution context failed validation (offsets do not match this build)");
		return DISCOVER_REFUSED;
	}
	for (i = 0; i < ntps; i++) {
		if (tps[i].fsbase == ptid)
			return DISCOVER_READY;
	}
	say(why, whylen, "the execution context's thread is not a thread of the process");
	return DISCOVER_REFUSED;
}

static void add_symbols_candidate(struct ruby_target *t, uint64_t addr)
{
	unsigned int i;

	for (i = 0; i < t->nsymbols_cand; i++) {
		if (t->symbols_cand[i] == addr)
			return;
	}
	if (t->nsymbols_cand < DISCOVER_MAX_CANDIDATES)
		t->symbols_cand[t->nsymbols_cand++] = addr;
}

/*
 * ruby_global_symbols: a symbol (3.x name, or 2.x's static global_symbols), else recognized in
 * the code of rb_sym_all_symbols, which reads the table or one of its first fields (str_sym at
 * +8). Every candidate is checked by structure; those that do not pass yet are kept, since a
 * Ruby that is still booting has no table yet.
 */
static void find_symbols(pid_t pid, struct elf_file *ef, const struct ruby_offsets *off,
			 struct ruby_target *t)
{
	static const char *const names[] = {"ruby_global_symbols", "global_symbols"};
	uint8_t code[SCAN_BYTES];
	uint64_t targets[8];
	struct elf_sym sym;
	size_t i, j, n, len;
	const char *how = NULL;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (elf_find_symbol(ef, names[i], &sym) == 0) {
			add_symbols_candidate(t, t->bias + sym.value);
			say(t->how_symbols, sizeof(t->how_symbols), "%s (%s)", names[i],
			    sym_source(&sym));
			how = t->how_symbols;
			break;
		}
	}
	if (!how && elf_find_symbol(ef, "rb_sym_all_symbols", &sym) == 0) {
		len = sym.size && sym.size < sizeof(code) ? sym.size : sizeof(code);
		if (elf_read_vaddr(ef, sym.value, code, len) == 0) {
			n = discover_rip_targets(code, len, sym.value, targets, 8);
			for (i = 0; i < n; i++) {
				for (j = 0; j <= 16; j += 8)
					add_symbols_candidate(t, t->bias + targets[i] - j);
			}
			if (n) {
				say(t->how_symbols, sizeof(t->how_symbols),
				    "rb_sym_all_symbols code");
				how = t->how_symbols;
			}
		}
	}
	if (!how) {
		say(t->how_symbols, sizeof(t->how_symbols), "not found: C functions stay unnamed");
		return;
	}
	for (i = 0; i < t->nsymbols_cand; i++) {
		if (rvalue_check_symbols(pid, off, t->symbols_cand[i]) == 0) {
			t->symbols = t->symbols_cand[i];
			return;
		}
	}
	n = strlen(t->how_symbols);
	say(t->how_symbols + n, sizeof(t->how_symbols) - n, ", not validated yet");
}

static int open_object(pid_t pid, const struct proc_map *m, struct elf_file **ef)
{
	char path[PATH_MAX + 64];
	int err;

	err = procs_root_path(pid, m->path, path, sizeof(path));
	if (err)
		return err;
	*ef = elf_file__open(path);
	if (*ef)
		return 0;
	/* The file may be gone or replaced (an upgrade): the mapping itself still has it. */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start,
		 m->end);
	*ef = elf_file__open(path);
	return *ef ? 0 : -errno;
}

enum discover_status discover_ruby(pid_t pid, discover_threads_fn threads, void *threads_ctx,
				   struct ruby_target *t, char *why, size_t whylen)
{
	enum discover_status st = DISCOVER_REFUSED;
	struct rp_thread_tp *tps = NULL;
	struct proc_maps maps = {0};
	struct elf_file *ef = NULL;
	struct elf_sym sym;
	struct tls_loc loc = {0};
	uint64_t vaddr;
	size_t idx, ntps = 0, n;
	int err;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	why[0] = '\0';
	err = procs_read_maps(pid, &maps);
	if (err) {
		say(why, whylen, "cannot read /proc/%d/maps: %s", pid, strerror(-err));
		st = err == -ENOENT || err == -ESRCH   ? DISCOVER_GONE
		     : err == -EACCES || err == -EPERM ? DISCOVER_NO_ACCESS
						       : DISCOVER_REFUSED;
		goto cleanup;
	}
	if (!discover_find_object(pid, &maps, &idx)) {
		st = DISCOVER_NOT_RUBY;
		goto cleanup;
	}
	if (procs_nspid(pid, &t->nspid))
		t->nspid = pid;
	if (container_id_of(pid, t->container_id, sizeof(t->container_id)))
		t->container_id[0] = '\0';
	snprintf(t->object, sizeof(t->object), "%s", maps.v[idx].path);
	err = open_object(pid, &maps.v[idx], &ef);
	if (err) {
		say(why, whylen, "cannot open \"%s\": %s", t->object, strerror(-err));
		goto cleanup;
	}
	if (elf_offset_to_vaddr(ef, maps.v[idx].offset, &vaddr)) {
		say(why, whylen, "\"%s\": mapping offset %#" PRIx64 " is in no segment", t->object,
		    maps.v[idx].offset);
		goto cleanup;
	}
	t->bias = maps.v[idx].start - vaddr;

	/* Version */
	if (elf_find_symbol(ef, "ruby_version", &sym)) {
		if (!is_libruby(t->object)) {
			st = DISCOVER_NOT_RUBY;
			goto cleanup;
		}
		say(why, whylen, "\"%s\" has no ruby_version symbol", t->object);
		goto cleanup;
	}
	n = sym.size && sym.size < sizeof(t->version) ? sym.size : sizeof(t->version) - 1;
	if (elf_read_vaddr(ef, sym.value, t->version, n)) {
		say(why, whylen, "cannot read ruby_version from \"%s\"", t->object);
		goto cleanup;
	}
	t->version[sizeof(t->version) - 1] = '\0';
	t->off = ruby_offsets_find(t->version, &t->exact);
	if (!t->off) {
		say(why, whylen, "Ruby %s is not supported (rubyprofd knows 2.6 to 4.0)",
		    t->version);
		goto cleanup;
	}
	t->bpf.off = t->off->vm;

	/* Thread pointers of the live process */
	tps = calloc(MAX_THREADS, sizeof(*tps));
	if (!tps) {
		say(why, whylen, "out of memory");
		goto cleanup;
	}
	err = threads(threads_ctx, pid, tps, MAX_THREADS, &ntps);
	if (err || !ntps) {
		say(why, whylen, "cannot list its threads: %s", err ? strerror(-err) : "none");
		st = kill(pid, 0) && errno == ESRCH ? DISCOVER_GONE : DISCOVER_REFUSED;
		goto cleanup;
	}

	/* Execution context */
	if (t->off->ec_is_global) {
		err = elf_find_symbol(ef, "ruby_current_execution_context_ptr", &sym);
		if (err) {
			say(why, whylen, "Ruby %s: ruby_current_execution_context_ptr not found",
			    t->version);
			goto cleanup;
		}
		t->bpf.ec_mode = RP_EC_GLOBAL;
		t->bpf.ec_global = t->bias + sym.value;
		say(t->how_ec, sizeof(t->how_ec), "ruby_current_execution_context_ptr (%s)",
		    sym_source(&sym));
		st = validate_global(pid, t->off, t->bpf.ec_global, tps, ntps, why, whylen);
	} else {
		err = find_tls_ec(pid, ef, t->bias, &loc, t->how_ec, sizeof(t->how_ec));
		if (err) {
			say(why, whylen, "Ruby %s: cannot locate ruby_current_ec (%s)", t->version,
			    strerror(-err));
			goto cleanup;
		}
		st = validate_tls(pid, t->off, &loc, tps, ntps, &t->bpf, why, whylen);
		if (st == DISCOVER_READY && t->bpf.ec_mode == RP_EC_TLS_STATIC)
			n = strlen(t->how_ec),
			say(t->how_ec + n, sizeof(t->how_ec) - n, ", static TLS at fsbase%+" PRId64,
			    (int64_t)t->bpf.tls_off);
		else if (st == DISCOVER_READY)
			n = strlen(t->how_ec),
			say(t->how_ec + n, sizeof(t->how_ec) - n, ", through the DTV");
	}
	if (st != DISCOVER_READY)
		goto cleanup;

	find_symbols(pid, ef, t->off, t);
	if (elf_find_symbol(ef, "rb_vm_exec", &sym) == 0) {
		t->vm_exec = t->bias + sym.value;
		say(t->how_vm_exec, sizeof(t->how_vm_exec), "rb_vm_exec (%s)", sym_source(&sym));
	} else {
		say(t->how_vm_exec, sizeof(t->how_vm_exec), "rb_vm_exec not found");
	}

cleanup:
	free(tps);
	elf_file__free(ef);
	procs_maps_free(&maps);
	return st;
}
