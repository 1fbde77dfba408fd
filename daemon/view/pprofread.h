/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pprofread.h - reads a perftools.profiles.Profile (gzip'd or not) without a protobuf library:
 * the reader of `rubyprofd report`, for the profiles rubyprofd writes (pprof.h) and any other
 * well-formed pprof file.
 *
 * The input is untrusted (a spool directory, a file from a ticket): every table has a bound, and
 * a profile past one is refused with an error naming the bound. After decoding, every reference
 * is checked: string indices are inside the string table, location and function ids resolve, and
 * each sample has one value per sample type. A reader's errors say where: "byte N" is an offset
 * in the decompressed message.
 */
#ifndef RP_PPROFREAD_H
#define RP_PPROFREAD_H

#include <stddef.h>
#include <stdint.h>

/* Bounds: a profile past one is refused (EFBIG) rather than read in part. */
#define PPROFREAD_MAX_BYTES	  (1ULL << 30) /* decompressed message */
#define PPROFREAD_MAX_STRINGS	  (1u << 24)
#define PPROFREAD_MAX_SAMPLES	  (1u << 24)
#define PPROFREAD_MAX_TABLE	  (1u << 24)   /* mappings, locations, functions each */
#define PPROFREAD_MAX_STACK	  65536	       /* locations per sample */
#define PPROFREAD_MAX_VALUES	  16	       /* sample types */
#define PPROFREAD_MAX_LABELS	  64	       /* labels per sample */
#define PPROFREAD_MAX_LINES	  64	       /* lines (inlined frames) per location */
#define PPROFREAD_MAX_STACK_TOTAL (1ULL << 28) /* location ids over all samples */

struct pprofread_value_type {
	uint64_t type, unit; /* string indices */
};

struct pprofread_label {
	uint64_t key, str; /* string indices; str 0: a numeric label */
	int64_t num;
	uint64_t num_unit;
};

struct pprofread_sample {
	const uint64_t *location_ids; /* leaf first */
	size_t nlocations;
	const int64_t *values; /* nsample_types values */
	const struct pprofread_label *labels;
	size_t nlabels;
};

struct pprofread_line {
	uint64_t function_id; /* 0: none */
	int64_t line;
};

struct pprofread_location {
	uint64_t id, mapping_id, address;
	const struct pprofread_line *lines; /* innermost (inlined) first */
	size_t nlines;
};

struct pprofread_function {
	uint64_t id, name, system_name, filename; /* string indices but id */
	int64_t start_line;
};

struct pprofread_mapping {
	uint64_t id, start, limit, offset, filename, build_id;
};

struct pprofread;

/* The decoded profile, valid while the reader lives. */
struct pprofread_profile {
	const char *const *strings; /* NUL-terminated copies; strings[0] is "" */
	size_t nstrings;
	const struct pprofread_value_type *sample_types;
	size_t nsample_types;
	const struct pprofread_sample *samples;
	size_t nsamples;
	const struct pprofread_mapping *mappings;
	size_t nmappings;
	const struct pprofread_location *locations;
	size_t nlocations;
	const struct pprofread_function *functions;
	size_t nfunctions;
	const uint64_t *comments; /* string indices */
	size_t ncomments;
	struct pprofread_value_type period_type;
	int64_t period, time_ns, duration_ns;
};

/*
 * Decodes data[0..len): a gzip stream (by its magic) or a bare message. name is used in error
 * messages (a path). NULL with errno set and a message in err[errlen]: EINVAL malformed, EFBIG
 * past a bound, ENOMEM.
 */
struct pprofread *pprofread__new(const uint8_t *data, size_t len, const char *name, char *err,
				 size_t errlen);
/* Reads and decodes a file; as pprofread__new, plus the errors of open/read. */
struct pprofread *pprofread__open(const char *path, char *err, size_t errlen);
void pprofread__free(struct pprofread *r);

const struct pprofread_profile *pprofread_profile(const struct pprofread *r);
/* By id; NULL when absent (id 0 included). */
const struct pprofread_location *pprofread_location(const struct pprofread *r, uint64_t id);
/* The location's index in the profile's locations + 1; 0 when absent. */
size_t pprofread_location_index(const struct pprofread *r, uint64_t id);
const struct pprofread_function *pprofread_function(const struct pprofread *r, uint64_t id);
const struct pprofread_mapping *pprofread_mapping(const struct pprofread *r, uint64_t id);
/* strings[idx], "" when out of range (never after validation, but callers need not care). */
const char *pprofread_str(const struct pprofread *r, uint64_t idx);

#endif
