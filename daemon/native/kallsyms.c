// SPDX-License-Identifier: GPL-2.0-only
/* kallsyms.c - kernel text symbols from /proc/kallsyms, sorted for address lookups. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/buf.h"
#include "lib/lines.h"
#include "native/kallsyms.h"

/*
 * An address this far above the nearest symbol is not in that function (the gap after the last
 * symbol of the kernel or of a module): kernel functions are far shorter.
 */
#define MAX_FUNC_SIZE (1u << 20)

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in names */
	uint32_t seq;  /* order in the file: ties sort stably */
};

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	struct kallsyms_stats stats;
};

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

/* "ADDRESS TYPE NAME[\t[MODULE]]": 0 and the fields, or -EINVAL. name is cut at its end. */
static int parse_line(char *line, uint64_t *addr, char *type, char **name)
{
	uint64_t a = 0;
	char *p = line, *end;
	int d, digits = 0;

	while ((d = buf_hexval((unsigned char)*p)) >= 0 && digits < 16) {
		a = a << 4 | (uint64_t)d;
		p++;
		digits++;
	}
	if (!digits || *p != ' ' || !p[1] || p[2] != ' ' || !p[3])
		return -EINVAL;
	*addr = a;
	*type = p[1];
	*name = p + 3;
	end = *name + strcspn(*name, " \t\n");
	if (end == *name)
		return -EINVAL;
	*end = '\0';
	return 0;
}

static int add_name(struct kallsyms *k, const char *name, uint32_t *off)
{
	size_t len = strlen(name);

	if (len >= KALLSYMS_MAX_NAME) {
		len = KALLSYMS_MAX_NAME - 1;
		k->stats.cut++;
	}
	if (k->names_len + len + 1 > UINT32_MAX)
		return -ENOSPC;
	if (array_reserve(k->names, k->names_cap, k->names_len + len + 1, 1u << 16))
		return -ENOMEM;
	*off = (uint32_t)k->names_len;
	memcpy(k->names + k->names_len, name, len);
	k->names[k->names_len + len] = '\0';
	k->names_len += len + 1;
	return 0;
}

static int add_sym(struct kallsyms *k, uint64_t addr, const char *name)
{
	uint32_t off;
	int err;

	if (k->n >= KALLSYMS_MAX_SYMS) {
		k->stats.over++;
		return 0;
	}
	if (array_reserve(k->syms, k->cap, k->n + 1, 4096))
		return -ENOMEM;
	err = add_name(k, name, &off);
	if (err)
		return err;
	k->syms[k->n] = (struct ksym){.addr = addr, .name = off, .seq = (uint32_t)k->n};
	k->n++;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct kallsyms *kallsyms__new(const char *path)
{
	struct kallsyms *k = calloc(1, sizeof(*k));
	struct lines l = {0};
	uint64_t addr;
	int err = 0, r;
	char *name;
	char type;

	if (!k)
		return NULL;
	/* the kernel's own list: no bound but the kernel's */
	err = lines_open(&l, path ? path : "/proc/kallsyms", UINT64_MAX);
	if (err)
		goto cleanup;
	while ((r = lines_next(&l)) > 0) {
		if (parse_line(l.line, &addr, &type, &name)) {
			k->stats.bad++;
			continue;
		}
		/* functions: text (t, T) and weak (w, W) symbols */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (!addr) {
			k->stats.zero++;
			continue;
		}
		err = add_sym(k, addr, name);
		if (err)
			goto cleanup;
	}
	if (r < 0) {
		err = r;
		goto cleanup;
	}
	if (k->n)
		qsort(k->syms, k->n, sizeof(*k->syms), cmp_sym);
	k->stats.syms = k->n;
cleanup:
	lines_close(&l);
	if (err) {
		kallsyms__free(k);
		errno = -err;
		return NULL;
	}
	return k;
}

bool kallsyms_hidden(const struct kallsyms *k)
{
	return k->n == 0 && k->stats.zero > 0;
}

const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi = k->n, mid;
	const struct ksym *s;

	/* the first symbol above addr; the one before it holds addr */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &k->syms[lo - 1];
	if (addr - s->addr >= MAX_FUNC_SIZE)
		return NULL;
	if (offset)
		*offset = addr - s->addr;
	return k->names + s->name;
}

void kallsyms_stats(const struct kallsyms *k, struct kallsyms_stats *out)
{
	*out = k->stats;
}
