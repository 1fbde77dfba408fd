/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kallsyms.h - kernel function names for the kernel frames of a sample (--kernel-stacks), from
 * /proc/kallsyms: read once, text symbols only, sorted by address, bounded.
 *
 * With kernel.kptr_restrict (1, or 2), a reader without CAP_SYSLOG sees every address as 0:
 * the table is then "hidden" (kallsyms_hidden) and names nothing; the caller says why.
 */
#ifndef RP_KALLSYMS_H
#define RP_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Text symbols kept at most (a distribution kernel with its modules has about 150 000). */
#define KALLSYMS_MAX_SYMS (1u << 21)
/* Bytes of one symbol's name kept at most (longer names are cut, counted). */
#define KALLSYMS_MAX_NAME 128

struct kallsyms;

struct kallsyms_stats {
	size_t syms;   /* text symbols kept */
	uint64_t zero; /* text symbols whose address read 0 (kptr_restrict) */
	uint64_t over; /* text symbols left out at KALLSYMS_MAX_SYMS */
	uint64_t cut;  /* names cut at KALLSYMS_MAX_NAME */
	uint64_t bad;  /* lines that are not "ADDRESS TYPE NAME [MODULE]" */
};

/* Reads path (NULL: /proc/kallsyms). NULL with errno set (the file could not be read). */
struct kallsyms *kallsyms__new(const char *path);
void kallsyms__free(struct kallsyms *k);

/* Whether every text symbol's address read as 0: the reader lacks CAP_SYSLOG (kptr_restrict). */
bool kallsyms_hidden(const struct kallsyms *k);

/*
 * The function that holds addr: the text symbol at or below it (NULL when none, or the table is
 * hidden); *offset (may be NULL) is addr's distance from its start. The string lives as long as k.
 */
const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr, uint64_t *offset);

void kallsyms_stats(const struct kallsyms *k, struct kallsyms_stats *out);

#endif
