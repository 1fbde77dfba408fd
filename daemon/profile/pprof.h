/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pprof.h - builds a perftools.profiles.Profile and writes it gzip'd.
 *
 * Strings, mappings, functions and locations are deduplicated as they are added; ids start at 1.
 * Sample types are fixed: [samples/count, cpu/nanoseconds], period type cpu/nanoseconds.
 */
#ifndef RP_PPROF_H
#define RP_PPROF_H

#include <stddef.h>
#include <stdint.h>

struct pprof;

struct pprof_label {
	const char *key;
	const char *str; /* NULL: a numeric label */
	int64_t num;
	const char *num_unit; /* optional, numeric labels only */
};

/* NULL with errno set on failure. */
struct pprof *pprof__new(void);
void pprof__free(struct pprof *p);

/* Wall-clock profile: the second sample type and the period type are wall/nanoseconds. 0 or
 * -ENOMEM. */
int pprof_set_wall(struct pprof *p);
/* period in ns per sample (1e9 / Hz); time_ns: wall-clock start (ns since the epoch). */
void pprof_set_period(struct pprof *p, int64_t period_ns);
void pprof_set_time(struct pprof *p, int64_t time_ns, int64_t duration_ns);
/* Adds a comment string to the profile. 0 or -errno. */
int pprof_add_comment(struct pprof *p, const char *comment);

/* Each returns an id > 0, or 0 with errno set (ENOMEM). Equal arguments return the same id. */
uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
		       const char *filename, const char *build_id);
uint64_t pprof_function(struct pprof *p, const char *name, const char *system_name,
			const char *filename, int64_t start_line);
/* A location with one Line {function_id, line}; mapping_id and address may be 0. */
uint64_t pprof_location(struct pprof *p, uint64_t mapping_id, uint64_t address,
			uint64_t function_id, int64_t line);

/*
 * Adds a sample: location ids leaf first, values[0] = count, values[1] = cpu ns. Labels are
 * copied. 0 or -errno.
 */
int pprof_add_sample(struct pprof *p, const uint64_t *location_ids, size_t nlocations,
		     const int64_t values[2], const struct pprof_label *labels, size_t nlabels);

/* Encodes the profile; *out is malloc'd. gzip != 0: gzip'd (what pprof files hold). 0 or -errno. */
int pprof_encode(struct pprof *p, int gzip, uint8_t **out, size_t *out_len);
/*
 * Writes the gzip'd profile to path atomically, never through a link, mode FILEIO_MODE
 * (fileio_write_file: its errors, fileio_strerror's words). 0 or -errno.
 */
int pprof_write_file(struct pprof *p, const char *path);

#endif
