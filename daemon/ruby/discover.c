// SPDX-License-Identifier: GPL-2.0-only
/* discover.c - Ruby process discovery and live validation. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/bounds.h"
#include "lib/text.h"
#include "native/debugfile.h"
#include "native/elf.h"
#include "proc/procmem.h"
#include "ruby/discover.h"
#include "ruby/gcstate.h"
#include "ruby/rvalue.h"

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

/*
 * A process run by musl's loader, which is also its libc: /lib/ld-musl-<arch>.so.1 on Alpine
 * (libc.musl-<arch>.so.1 links to it), /usr/lib/<arch>-linux-musl/libc.so on Debian.
 */
static bool uses_musl(const struct proc_maps *maps)
{
	const char *p, *b;
	size_t i;

	for (i = 0; i < maps->n; i++) {
		p = maps->v[i].path;
		if (!p)
			continue;
		b = base_name(p);
		if (strncmp(b, "ld-musl-", 8) == 0 || strncmp(b, "libc.musl-", 10) == 0 ||
		    (strncmp(b, "libc.so", 7) == 0 && strstr(p, "-linux-musl/")))
			return true;
	}
	return false;
}

static bool is_loader(const char *path)
{
	const char *b = base_name(path);

	return strncmp(b, "ld-linux", 8) == 0 || strncmp(b, "ld-musl-", 8) == 0 ||
	       strncmp(b, "ld.so", 5) == 0;
}

bool discover_loader_pending(const struct proc_maps *maps)
{
	const char *program = NULL, *p;
	bool loader = false;
	size_t i;

	for (i = 0; i < maps->n; i++) {
		p = maps->v[i].path;
		/* files only: not [stack], [vdso], a memfd or an anonymous mapping */
		if (!p || p[0] != '/' || strncmp(p, "/memfd:", 7) == 0)
			continue;
		if (is_loader(p))
			loader = true;
		else if (!program)
			program = p;
		else if (strcmp(program, p) != 0)
			return false;
	}
	return loader;
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

/* The base register of a ModRM byte with mod 00 (+REX.B), or -1 for SIB/RIP forms. */
static int modrm_base(uint8_t rex, uint8_t modrm)
{
	if ((modrm & 0xc0) != 0 || (modrm & 7) == 4 || (modrm & 7) == 5)
		return -1;
	return (modrm & 7) | (rex & 1 ? 8 : 0);
}

/* The register a ModRM byte's reg field names (+REX.R). */
static int modrm_reg(uint8_t rex, uint8_t modrm)
{
	return ((modrm >> 3) & 7) | (rex & 4 ? 8 : 0);
}

/*
 * The displacement the instruction at code adds to register reg: mov/lea DISP8/DISP32(%reg),
 * or add $IMM32,%reg. -ENOENT for anything else.
 */
static int tcb_plus(const uint8_t *code, size_t len, int reg, int64_t *disp)
{
	int32_t d32;

	if (len < 3 || (code[0] & 0xf8) != 0x48)
		return -ENOENT;
	if ((code[1] == 0x8b || code[1] == 0x8d) && modrm_base(code[0], code[2] & 0x3f) == reg) {
		if ((code[2] & 0xc0) == 0x40 && len >= 4) {
			*disp = code[3] < 0x80 ? (int64_t)code[3]
					       : (int64_t)code[3] - 256; /* disp8 */
			return 0;
		}
		if ((code[2] & 0xc0) == 0x80 && len >= 7) {
			memcpy(&d32, code + 3, sizeof(d32));
			*disp = d32;
			return 0;
		}
		return -ENOENT;
	}
	/* add $IMM32,%rax has its own opcode; other registers: 81 /0 */
	if (code[1] == 0x05 && reg == 0 && len >= 6) {
		memcpy(&d32, code + 2, sizeof(d32));
		*disp = d32;
		return 0;
	}
	if (code[1] == 0x81 && (code[2] & 0xf8) == 0xc0 &&
	    ((code[2] & 7) | (code[0] & 1 ? 8 : 0)) == reg && len >= 7) {
		memcpy(&d32, code + 3, sizeof(d32));
		*disp = d32;
		return 0;
	}
	return -ENOENT;
}

int discover_static_tls(const uint8_t *code, size_t len, uint64_t vaddr, int64_t *tp_off,
			uint64_t *got_slot)
{
	int32_t d32;
	int64_t d64;
	size_t i, j;
	int base;

	for (i = 0; i + 4 <= len; i++) {
		/* %fs prefix, REX.W: a 64-bit load relative to the thread pointer */
		if (code[i] != 0x64 || (code[i + 1] & 0xf8) != 0x48)
			continue;
		/* local-exec: mov %fs:DISP32,%reg (ModRM mod 00 rm 100, SIB 0x25: no base) */
		if (code[i + 2] == 0x8b && i + 9 <= len && (code[i + 3] & 0xc7) == 0x04 &&
		    code[i + 4] == 0x25) {
			memcpy(&d32, code + i + 5, sizeof(d32));
			if (d32 < 0) {
				*tp_off = d32;
				return DISCOVER_TLS_LOCAL_EXEC;
			}
			/* mov %fs:0,%reg (the TCB's self pointer), then DISP(%reg) or add $DISP */
			if (d32 == 0 &&
			    tcb_plus(code + i + 9, len - i - 9, modrm_reg(code[i + 1], code[i + 3]),
				     tp_off) == 0 &&
			    *tp_off < 0)
				return DISCOVER_TLS_LOCAL_EXEC;
			continue;
		}
		/* local-exec, moffs form: mov %fs:MOFFS64,%rax */
		if (code[i + 2] == 0xa1 && i + 11 <= len) {
			memcpy(&d64, code + i + 3, sizeof(d64));
			if (d64 < 0) {
				*tp_off = d64;
				return DISCOVER_TLS_LOCAL_EXEC;
			}
			continue;
		}
		/* initial-exec: mov GOT(%rip),%reg ... mov %fs:(%reg),%reg */
		base = code[i + 2] == 0x8b ? modrm_base(code[i + 1], code[i + 3]) : -1;
		if (base < 0 || i < 7)
			continue;
		for (j = i >= 7 ? i - 7 : 0;; j--) {
			if ((code[j] & 0xf8) == 0x48 && code[j + 1] == 0x8b &&
			    (code[j + 2] & 0xc7) == 0x05 &&
			    modrm_reg(code[j], code[j + 2]) == base) {
				memcpy(&d32, code + j + 3, sizeof(d32));
				*got_slot = vaddr + j + 7 + (int64_t)d32;
				return DISCOVER_TLS_INITIAL_EXEC;
			}
			if (j == 0 || j + 32 < i)
				break;
		}
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

/*
 * Where the Ruby object's symbols come from: its own .dynsym and .symtab, then its separate debug
 * file, looked up inside the process's root the first time a symbol is missing.
 */
struct symbols_src {
	struct elf_file *ef;
	const char *root; /* "/proc/PID/root" */
	const char *path; /* the object as the process sees it */
	struct elf_file *dbg;
	bool dbg_tried;
	bool dbg_pending; /* a candidate's checksum is being computed: discovery tries again */
	const char *dbg_how;
	char dbg_path[PATH_MAX];
};

/* Finds `name`; `from` says where (".dynsym", or ".symtab of debug file ..."). 0 or -ENOENT. */
static int lookup(struct symbols_src *src, const char *name, struct elf_sym *sym, char *from,
		  size_t fromlen)
{
	if (elf_find_symbol(src->ef, name, sym) == 0) {
		say(from, fromlen, "%s", sym_source(sym));
		return 0;
	}
	if (!src->dbg_tried) {
		src->dbg_tried = true;
		src->dbg = debugfile_find(src->root, src->path, src->ef, src->dbg_path,
					  sizeof(src->dbg_path), &src->dbg_how);
		src->dbg_pending = !src->dbg && (errno == EINPROGRESS || errno == EAGAIN);
	}
	if (src->dbg && elf_find_symbol(src->dbg, name, sym) == 0) {
		say(from, fromlen, "%s of debug file \"%s\", found by %s", sym_source(sym),
		    src->dbg_path, src->dbg_how);
		return 0;
	}
	return -ENOENT;
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
	/* Known to be in the static TLS area at tp_off from the thread pointer (the code says so). */
	bool static_tp;
	int64_t tp_off;
	bool musl; /* musl's DTV: 8-byte entries, no record of how a block was allocated */
};

/*
 * A static Ruby (libruby-static linked into the executable) reads its own TLS with local-exec or
 * initial-exec code: the EC is at a fixed offset from every thread's thread pointer.
 */
static int static_tls_ec(pid_t pid, uint64_t bias, const uint8_t *code, size_t len, uint64_t vaddr,
			 struct tls_loc *loc, char *how, size_t howlen)
{
	uint64_t slot = 0, val;
	int64_t off = 0;
	int kind, err;

	kind = discover_static_tls(code, len, vaddr, &off, &slot);
	if (kind < 0)
		return kind;
	if (kind == DISCOVER_TLS_INITIAL_EXEC) {
		/* R_X86_64_TPOFF64: the loader writes the offset into the GOT slot */
		err = procmem_u64(pid, bias + slot, &val);
		if (err)
			return err;
		off = (int64_t)val;
	}
	if (off >= 0 || off < -(int64_t)STATIC_TLS_SPAN)
		return -ENOENT;
	loc->static_tp = true;
	loc->tp_off = off;
	if (kind == DISCOVER_TLS_LOCAL_EXEC)
		say(how, howlen, "rb_thread_current code (local-exec TLS, fsbase%+" PRId64 ")",
		    off);
	else
		say(how, howlen,
		    "rb_thread_current code (initial-exec TLS, GOT slot %#" PRIx64
		    ", fsbase%+" PRId64 ")",
		    slot, off);
	return 0;
}

/* The TLS module id and offset of ruby_current_ec, from the symbol or recognized in code. */
static int find_tls_ec(pid_t pid, struct symbols_src *src, uint64_t bias, struct tls_loc *loc,
		       char *how, size_t howlen)
{
	struct elf_file *ef = src->ef;
	struct elf_sym sym, fn;
	uint8_t code[SCAN_BYTES];
	uint64_t slot, ti[2];
	char from[PATH_MAX + 64];
	size_t len;
	int err;

	err = lookup(src, "ruby_current_ec", &sym, from, sizeof(from));
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
		    "ruby_current_ec (%s, TLS module %" PRIu64 ", offset %#" PRIx64 ")", from,
		    loc->modid, loc->block_off);
		return 0;
	}
	/* Stripped 3.3+: rb_thread_current() reads the EC with a general-dynamic TLS access. */
	err = lookup(src, "rb_thread_current", &fn, from, sizeof(from));
	if (err)
		return -ENOENT;
	len = fn.size && fn.size < sizeof(code) ? fn.size : sizeof(code);
	err = elf_read_vaddr(ef, fn.value, code, len);
	if (err)
		return err;
	err = discover_gd_tls_index(code, len, fn.value, &slot);
	if (err)
		return static_tls_ec(pid, bias, code, len, fn.value, loc, how, howlen);
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

/* No thread validated: none has an EC yet (retry), or `bad` had one that failed (refuse). */
static enum discover_status tls_verdict(pid_t pid, size_t bad, char *why, size_t whylen)
{
	if (!bad) {
		say(why, whylen, "no thread has a Ruby execution context yet");
		return kill(pid, 0) && errno == ESRCH ? DISCOVER_GONE : DISCOVER_RETRY;
	}
	say(why, whylen,
	    "execution context failed validation on all %zu threads that have one (offsets do not "
	    "match this build)",
	    bad);
	return DISCOVER_REFUSED;
}

/* The EC at a fixed offset from the thread pointer: validated as validate_tls() does. */
static enum discover_status validate_static_tp(pid_t pid, const struct ruby_offsets *off,
					       int64_t tp_off, const struct rp_thread_tp *tps,
					       size_t ntps, struct rp_proc *bp, char *why,
					       size_t whylen)
{
	uint64_t ec, ptid;
	size_t i, good = 0, bad = 0;

	for (i = 0; i < ntps; i++) {
		if (!tps[i].fsbase || procmem_u64(pid, tps[i].fsbase + tp_off, &ec) || !ec)
			continue;
		if (check_ec(pid, off, ec, &ptid) || ptid != tps[i].fsbase)
			bad++;
		else
			good++;
	}
	if (!good)
		return tls_verdict(pid, bad, why, whylen);
	bp->ec_mode = RP_EC_TLS_STATIC;
	bp->tls_off = tp_off;
	return DISCOVER_READY;
}

/* Validates the TLS location on every thread and picks static or DTV mode. */
static enum discover_status validate_tls(pid_t pid, const struct ruby_offsets *off,
					 const struct tls_loc *loc, const struct rp_thread_tp *tps,
					 size_t ntps, struct rp_proc *bp, char *why, size_t whylen)
{
	uint64_t dtv, block, ec, ptid, to_free;
	int64_t tls_off = 0;
	size_t i, good = 0, bad = 0;
	bool varying = false, allocated = false;

	if (loc->static_tp)
		return validate_static_tp(pid, off, loc->tp_off, tps, ntps, bp, why, whylen);
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
		    procmem_u64(pid, dtv + loc->modid * (loc->musl ? 8 : 16), &block) || !block ||
		    block == (uint64_t)-1 || procmem_u64(pid, block + loc->block_off, &ec) || !ec)
			continue;
		if (check_ec(pid, off, ec, &ptid) || ptid != tps[i].fsbase) {
			bad++;
			continue;
		}
		/*
		 * glibc's dtv entry is {val, to_free}: to_free is the block's own allocation when the
		 * block was allocated on first use (a dlopen'ed module), NULL when the block lies in
		 * the static TLS area next to the thread pointer.
		 */
		if (loc->musl || procmem_u64(pid, dtv + loc->modid * 16 + 8, &to_free) || to_free)
			allocated = true;
		if (good && tls_off != (int64_t)(block + loc->block_off - tps[i].fsbase))
			varying = true;
		tls_off = (int64_t)(block + loc->block_off - tps[i].fsbase);
		good++;
	}
	/*
	 * One thread whose context points back to it is proof enough that the offsets are right:
	 * by chance, wrong offsets never land on that thread's own pthread id. Other threads can
	 * hold a stale context: Ruby keeps the native threads of finished Ruby threads for reuse,
	 * and their TLS still points to the old context. They are idle (never sampled while they
	 * wait), so they do not stop the process from being profiled.
	 */
	if (!good)
		return tls_verdict(pid, bad, why, whylen);
	bp->tls_modid = loc->modid;
	bp->tls_block_off = loc->block_off;
	if (!varying && !allocated && tls_off < 0 && tls_off > -STATIC_TLS_SPAN) {
		bp->ec_mode = RP_EC_TLS_STATIC;
		bp->tls_off = tls_off;
	} else {
		/* musl gives no sign of a block's allocation: its DTV is always right */
		bp->ec_mode = loc->musl ? RP_EC_TLS_DTV_MUSL : RP_EC_TLS_DTV;
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
		/* right after an exec the loader may not have mapped libruby's data yet: try again
		 * (the tracker gives up after its tries, with this reason) */
		say(why, whylen, "cannot read ruby_current_execution_context_ptr");
		return kill(pid, 0) && errno == ESRCH ? DISCOVER_GONE : DISCOVER_RETRY;
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
static void find_symbols(pid_t pid, struct symbols_src *src, const struct ruby_offsets *off,
			 struct ruby_target *t)
{
	static const char *const names[] = {"ruby_global_symbols", "global_symbols"};
	uint8_t code[SCAN_BYTES];
	uint64_t targets[8];
	struct elf_sym sym;
	char from[PATH_MAX + 64];
	size_t i, j, n, len;
	const char *how = NULL;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (lookup(src, names[i], &sym, from, sizeof(from)) == 0) {
			add_symbols_candidate(t, t->bias + sym.value);
			say(t->how_symbols, sizeof(t->how_symbols), "%s (%s)", names[i], from);
			how = t->how_symbols;
			break;
		}
	}
	if (!how && lookup(src, "rb_sym_all_symbols", &sym, from, sizeof(from)) == 0) {
		len = sym.size && sym.size < sizeof(code) ? sym.size : sizeof(code);
		if (elf_read_vaddr(src->ef, sym.value, code, len) == 0) {
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

/*
 * The path of a mapping as the process sees it. /proc/PID/maps prints paths relative to *our* root:
 * a chrooted process's files carry its root's path in front, which is stripped here.
 */
static void view_path(const char *root_link, const char *maps_path, char *out, size_t len)
{
	char root[PATH_MAX];
	ssize_t n;

	n = readlink(root_link, root, sizeof(root) - 1);
	if (n > 1) {
		root[n] = '\0';
		if (!strncmp(maps_path, root, (size_t)n) && maps_path[n] == '/') {
			snprintf(out, len, "%s", maps_path + n);
			return;
		}
	}
	snprintf(out, len, "%s", maps_path);
}

/* Target of the last `jmp rel32` in a function's code. */
static int last_tail_jump(struct elf_file *ef, const char *name, uint64_t *target)
{
	uint8_t code[SCAN_BYTES * 2];
	struct elf_sym fn;
	size_t len, i;
	int32_t disp;
	int found = 0;

	if (elf_find_symbol(ef, name, &fn) || !fn.size)
		return -ENOENT;
	len = fn.size < sizeof(code) ? fn.size : sizeof(code);
	if (elf_read_vaddr(ef, fn.value, code, len))
		return -EFAULT;
	for (i = 0; i + 5 <= len; i++) {
		if (code[i] != 0xe9)
			continue;
		memcpy(&disp, code + i + 1, sizeof(disp));
		*target = fn.value + i + 5 + (int64_t)disp;
		found = 1;
	}
	return found ? 0 : -ENOENT;
}

/*
 * rb_vm_exec is hidden from 3.3 on; rb_iseq_eval and rb_iseq_eval_main both end with a tail
 * jump to it (docs/internals/ruby-internals.md, section 12.4). Their common target, inside .text.
 */
static int vm_exec_from_tail_jumps(struct elf_file *ef, uint64_t *vm_exec)
{
	uint64_t a, b, text, size;

	if (last_tail_jump(ef, "rb_iseq_eval", &a) || last_tail_jump(ef, "rb_iseq_eval_main", &b) ||
	    a != b || elf_section(ef, ".text", &text, &size) || a < text || a >= text + size)
		return -ENOENT;
	*vm_exec = a;
	return 0;
}

/*
 * The mapped object, through its path in the process's root when that still names the mapped
 * file, else through /proc/PID/map_files (the mapping itself: it needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE). A mapping maps calls "(deleted)" was certainly replaced or removed:
 * without map_files it is refused (-ESTALE). A mere device or inode mismatch may be overlayfs
 * (maps may have the layer's device, stat the overlay's): without map_files the path's file
 * is read, as before. *replaced says that the path named another file.
 */
static int open_object(pid_t pid, const char *root, const char *path, const struct proc_map *m,
		       struct elf_file **ef, bool *replaced, bool *from_map_files)
{
	int fd, mfd, err;

	*replaced = false;
	*from_map_files = false;
	fd = procs_open_in_root(root, path);
	if (fd >= 0 && !m->deleted && procs_is_mapped_file(fd, m, false)) {
		*ef = elf_file__open_fd(fd, path);
		close(fd);
		if (*ef)
			return 0;
		fd = -1;
	}
	/* The file may be gone or replaced (an upgrade): the mapping itself still has it. */
	mfd = procs_open_mapped(pid, m);
	*ef = mfd >= 0 ? elf_file__open_fd(mfd, path) : NULL;
	err = mfd >= 0 ? -errno : mfd;
	if (mfd >= 0)
		close(mfd);
	if (*ef) {
		*replaced = fd >= 0;
		*from_map_files = true;
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (fd >= 0 && m->deleted) {
		close(fd);
		*replaced = true;
		return -ESTALE;
	}
	if (fd >= 0) {
		*ef = elf_file__open_fd(fd, path);
		close(fd);
		return *ef ? 0 : -errno;
	}
	return err;
}

/* No Ruby in the maps: none for now, or none yet. */
static enum discover_status not_ruby_yet(const struct proc_maps *maps, char *why, size_t whylen)
{
	if (!discover_loader_pending(maps))
		return DISCOVER_NOT_RUBY;
	say(why, whylen, "its dynamic loader has mapped no library yet");
	return DISCOVER_LOADING;
}

enum discover_status discover_ruby(pid_t pid, discover_threads_fn threads, void *threads_ctx,
				   struct ruby_target *t, char *why, size_t whylen)
{
	enum discover_status st = DISCOVER_REFUSED;
	struct rp_thread_tp *tps = NULL;
	struct proc_maps maps = {0};
	struct symbols_src src = {0};
	struct elf_file *ef = NULL;
	struct elf_sym sym;
	struct tls_loc loc = {0};
	struct gcstate gc;
	uint64_t vaddr;
	char root[64], from[PATH_MAX + 64];
	size_t idx, ntps = 0, n;
	bool replaced, from_map_files;
	int err;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	why[0] = '\0';
	bounds_set_pid(pid);
	err = procs_read_maps(pid, &maps);
	if (err) {
		if (err == -EFBIG)
			say(why, whylen, "its /proc/%d/maps is longer than the bound of %llu MiB",
			    pid, (unsigned long long)(BOUND_MAPS_BYTES >> 20));
		else
			say(why, whylen, "cannot read /proc/%d/maps: %s", pid, strerror(-err));
		st = err == -ENOENT || err == -ESRCH   ? DISCOVER_GONE
		     : err == -EACCES || err == -EPERM ? DISCOVER_NO_ACCESS
						       : DISCOVER_REFUSED;
		goto cleanup;
	}
	if (!discover_find_object(pid, &maps, &idx)) {
		st = not_ruby_yet(&maps, why, whylen);
		goto cleanup;
	}
	loc.musl = uses_musl(&maps);
	t->notel_ctx = (unsigned int)procctx_find(&maps, t->otel_ctx, PROCCTX_MAPPINGS_MAX);
	if (procs_nspid(pid, &t->nspid))
		t->nspid = pid;
	if (container_id_of(pid, t->container_id, sizeof(t->container_id)))
		t->container_id[0] = '\0';
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	view_path(root, maps.v[idx].path, t->object, sizeof(t->object));
	err = open_object(pid, root, t->object, &maps.v[idx], &ef, &replaced, &from_map_files);
	if (err == -ESTALE) {
		say(why, whylen,
		    "\"%s\" is no longer the file it mapped (/proc/%d/maps says deleted) and "
		    "/proc/%d/map_files is not readable",
		    t->object, pid, pid);
		goto cleanup;
	}
	if (err) {
		say(why, whylen, "cannot open \"%s\": %s", t->object, strerror(-err));
		goto cleanup;
	}
	t->object_replaced = replaced;
	t->object_from_map_files = from_map_files;
	if (elf_offset_to_vaddr(ef, maps.v[idx].offset, &vaddr)) {
		say(why, whylen, "\"%s\": mapping offset %#" PRIx64 " is in no segment", t->object,
		    maps.v[idx].offset);
		goto cleanup;
	}
	t->bias = maps.v[idx].start - vaddr;
	src.ef = ef;
	src.root = root;
	src.path = t->object;

	/* Version */
	if (lookup(&src, "ruby_version", &sym, from, sizeof(from))) {
		if (!is_libruby(t->object)) {
			st = not_ruby_yet(&maps, why, whylen);
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
	/* the target's bytes: a log line and a label get no newline or escape from it */
	text_clean(t->version);
	t->off = offsets_find(t->version, &t->exact);
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
		err = lookup(&src, "ruby_current_execution_context_ptr", &sym, from, sizeof(from));
		if (err) {
			say(why, whylen, "Ruby %s: ruby_current_execution_context_ptr not found",
			    t->version);
			goto cleanup;
		}
		t->bpf.ec_mode = RP_EC_GLOBAL;
		t->bpf.ec_global = t->bias + sym.value;
		say(t->how_ec, sizeof(t->how_ec), "ruby_current_execution_context_ptr (%s)", from);
		st = validate_global(pid, t->off, t->bpf.ec_global, tps, ntps, why, whylen);
	} else {
		err = find_tls_ec(pid, &src, t->bias, &loc, t->how_ec, sizeof(t->how_ec));
		if (err == -ENOENT) {
			say(why, whylen,
			    "Ruby %s: cannot locate ruby_current_ec (no symbol in the file or "
			    "a debug file, and rb_thread_current's code is not recognized)",
			    t->version);
			goto cleanup;
		} else if (err) {
			say(why, whylen, "Ruby %s: cannot locate ruby_current_ec (%s)", t->version,
			    strerror(-err));
			goto cleanup;
		}
		st = validate_tls(pid, t->off, &loc, tps, ntps, &t->bpf, why, whylen);
		n = strlen(t->how_ec);
		if (st == DISCOVER_READY && t->bpf.ec_mode == RP_EC_TLS_STATIC)
			say(t->how_ec + n, sizeof(t->how_ec) - n, ", static TLS at fsbase%+" PRId64,
			    (int64_t)t->bpf.tls_off);
		else if (st == DISCOVER_READY)
			say(t->how_ec + n, sizeof(t->how_ec) - n, ", through %s DTV",
			    loc.musl ? "musl's" : "the");
	}
	if (st != DISCOVER_READY)
		goto cleanup;

	find_symbols(pid, &src, t->off, t);
	if (gcstate_find(pid, ef, t->bias, t->off, &gc, t->how_gc, sizeof(t->how_gc)) == 0) {
		t->bpf.gc_flags = gc.flags;
		t->bpf.gc_running_ec = gc.running_ec;
		t->vm_ptr = gc.vm_ptr;
	}
	if (lookup(&src, "rb_vm_exec", &sym, from, sizeof(from)) == 0) {
		t->vm_exec = t->bias + sym.value;
		say(t->how_vm_exec, sizeof(t->how_vm_exec), "rb_vm_exec (%s)", from);
	} else if (vm_exec_from_tail_jumps(ef, &vaddr) == 0) {
		t->vm_exec = t->bias + vaddr;
		say(t->how_vm_exec, sizeof(t->how_vm_exec),
		    "rb_vm_exec (tail jump of rb_iseq_eval and rb_iseq_eval_main)");
	} else {
		say(t->how_vm_exec, sizeof(t->how_vm_exec), "rb_vm_exec not found");
	}

cleanup:
	/* what the debug file would have told is not known yet: the same discovery, a little later
	 * (a process is never profiled on the symbols found without it, then again with them) */
	if (src.dbg_pending && st != DISCOVER_GONE && st != DISCOVER_NO_ACCESS) {
		st = DISCOVER_RETRY;
		say(why, whylen, "waiting for the checksum of its debug file \"%s\"", src.dbg_path);
	}
	free(tps);
	elf_file__free(src.dbg);
	elf_file__free(ef);
	procs_maps_free(&maps);
	bounds_set_pid(0);
	return st;
}

/* ---- the OpenTelemetry thread context (OTEP 4947, docs/trace-context.md) ------------------ */

#define TCTX_SYMBOL	 "otel_thread_ctx_v1"
/* Objects of one process looked at for the symbol at most (each one's .dynsym lookup is a hash
 * lookup: the cost is opening it). */
#define TCTX_OBJECTS_MAX 512

/* Whether thread tp's otel_thread_ctx_v1 can be read at the location found (static, or
 * through the DTV: a thread that never touched the object's TLS has none and reads fine). */
static bool tctx_readable(pid_t pid, const struct rp_proc *loc, uint64_t tp)
{
	uint64_t v, dtv, n, block;

	if (loc->tctx_mode == RP_TCTX_STATIC)
		return procmem_u64(pid, tp + (uint64_t)loc->tctx_off, &v) == 0;
	if (procmem_u64(pid, tp + 8, &dtv) || !dtv || procmem_u64(pid, dtv - 16, &n))
		return false;
	if (loc->tctx_modid > n)
		return true;
	if (procmem_u64(pid, dtv + loc->tctx_modid * 16, &block))
		return false;
	return block == 0 || block == (uint64_t)-1 ||
	       procmem_u64(pid, block + loc->tctx_block_off, &v) == 0;
}

/* Where otel_thread_ctx_v1 of object ef (loaded at bias) is, by the access its code makes: the
 * loader's answer in the GOT, read from the live process. */
static int tctx_resolve(pid_t pid, struct elf_file *ef, uint64_t bias, const struct elf_sym *sym,
			bool is_exe, struct rp_proc *out, char *how, size_t howlen)
{
	uint64_t slot, desc[2], arg[2];

	out->tctx_block_off = sym->value;
	if (elf_tlsdesc_slot(ef, TCTX_SYMBOL, &slot) == 0) {
		/* {resolver, argument}: glibc's static resolver takes the offset from the thread
		 * pointer, its dynamic one a tls_index {module, offset} (a block allocated later) */
		if (procmem_read(pid, bias + slot, desc, sizeof(desc)))
			return -EFAULT;
		if (!desc[0])
			return -EAGAIN;
		if ((int64_t)desc[1] < 0 && (int64_t)desc[1] > -(int64_t)STATIC_TLS_SPAN) {
			out->tctx_mode = RP_TCTX_STATIC;
			out->tctx_off = (int64_t)desc[1];
			say(how, howlen, "TLSDESC, static TLS at fsbase%+" PRId64,
			    (int64_t)out->tctx_off);
			return 0;
		}
		if (procmem_read(pid, desc[1], arg, sizeof(arg)) || arg[1] != sym->value ||
		    !arg[0] || arg[0] > 1 << 16)
			return -EINVAL;
		out->tctx_mode = RP_TCTX_DTV;
		out->tctx_modid = arg[0];
		say(how, howlen, "TLSDESC, TLS module %" PRIu64 " through the DTV", arg[0]);
		return 0;
	}
	if (elf_tpoff_slot(ef, TCTX_SYMBOL, &slot) == 0) {
		if (procmem_u64(pid, bias + slot, &slot))
			return -EFAULT;
		if ((int64_t)slot >= 0 || (int64_t)slot < -(int64_t)STATIC_TLS_SPAN)
			return -EINVAL;
		out->tctx_mode = RP_TCTX_STATIC;
		out->tctx_off = (int64_t)slot;
		say(how, howlen, "initial-exec, static TLS at fsbase%+" PRId64,
		    (int64_t)out->tctx_off);
		return 0;
	}
	if (elf_dtpmod_slot(ef, TCTX_SYMBOL, &slot) == 0) {
		if (procmem_u64(pid, bias + slot, &arg[0]))
			return -EFAULT;
		if (!arg[0])
			return -EAGAIN;
		if (arg[0] > 1 << 16)
			return -EINVAL;
		out->tctx_mode = RP_TCTX_DTV;
		out->tctx_modid = arg[0];
		say(how, howlen, "general-dynamic, TLS module %" PRIu64 " through the DTV", arg[0]);
		return 0;
	}
	/* no relocation: the program's own TLS (local-exec), module 1 */
	if (!is_exe)
		return -ENOENT;
	out->tctx_mode = RP_TCTX_DTV;
	out->tctx_modid = 1;
	say(how, howlen, "the program's own TLS (module 1) through the DTV");
	return 0;
}

int discover_thread_ctx(pid_t pid, discover_threads_fn threads, void *threads_ctx,
			struct rp_proc *out, char *how, size_t howlen)
{
	struct proc_maps maps = {0};
	struct rp_thread_tp tps[16];
	char root[64], path[PATH_MAX], detail[160], exe[PATH_MAX] = "";
	size_t i, j, ntps = 0, looked = 0;
	int err = -ENOENT;
	ssize_t n;

	out->tctx_mode = RP_TCTX_NONE;
	how[0] = '\0';
	bounds_set_pid(pid);
	err = procs_read_maps(pid, &maps);
	if (err) {
		say(how, howlen, "cannot read its maps: %s", strerror(-err));
		goto out;
	}
	snprintf(root, sizeof(root), "/proc/%d/exe", pid);
	n = readlink(root, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	err = -ENOENT;
	for (i = 0; i < maps.n && looked < TCTX_OBJECTS_MAX; i++) {
		const struct proc_map *m = &maps.v[i];
		struct elf_file *ef = NULL;
		struct elf_sym sym;
		bool replaced, from_mf, seen = false;
		uint64_t vaddr;
		int r;

		/* an object's first mapping (its ELF header), once per file */
		if (!m->path || m->path[0] != '/' || m->offset != 0 || !m->inode)
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = maps.v[j].inode == m->inode && maps.v[j].dev == m->dev &&
			       maps.v[j].offset == 0;
		if (seen)
			continue;
		looked++;
		view_path(root, m->path, path, sizeof(path));
		if (open_object(pid, root, path, m, &ef, &replaced, &from_mf))
			continue;
		if (elf_find_symbol_in(ef, ELF_SYM_DYNSYM, TCTX_SYMBOL, &sym) ||
		    sym.type != STT_TLS || elf_offset_to_vaddr(ef, m->offset, &vaddr)) {
			elf_file__free(ef);
			continue;
		}
		r = tctx_resolve(pid, ef, m->start - vaddr, &sym, strcmp(m->path, exe) == 0, out,
				 detail, sizeof(detail));
		elf_file__free(ef);
		if (r) {
			say(how, howlen, "%s in \"%s\": %s", TCTX_SYMBOL, path,
			    r == -EAGAIN   ? "not relocated yet"
			    : r == -EINVAL ? "the loader's TLS data is not understood"
					   : strerror(-r));
			err = r == -EAGAIN ? -EAGAIN : -EINVAL;
			out->tctx_mode = RP_TCTX_NONE;
			goto out;
		}
		say(how, howlen, "%s (\"%s\", offset %#" PRIx64 ": %s)", TCTX_SYMBOL, path,
		    sym.value, detail);
		err = 0;
		break;
	}
	if (err) {
		say(how, howlen, "no loaded object exports %s (%zu looked at)", TCTX_SYMBOL,
		    looked);
		goto out;
	}
	/* the location must read on a thread of the process */
	err = threads(threads_ctx, pid, tps, sizeof(tps) / sizeof(tps[0]), &ntps);
	for (i = 0; !err && i < ntps; i++)
		if (tps[i].fsbase && tctx_readable(pid, out, tps[i].fsbase))
			break;
	if (err || i == ntps) {
		n = (ssize_t)strlen(how);
		say(how + n, howlen - (size_t)n, ", not readable on any of its %zu threads", ntps);
		out->tctx_mode = RP_TCTX_NONE;
		err = -EINVAL;
	}
out:
	procs_maps_free(&maps);
	bounds_set_pid(0);
	return err;
}
