/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sidecar.h - a spool sidecar (docs/spool.md): the JSON file beside each profile in the spool
 * that holds what the collector's side needs (service, interval, rate, labels). The spool writes
 * it (sidecar_write), the shipper reads it back (sidecar__read).
 */
#ifndef RP_SIDECAR_H
#define RP_SIDECAR_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "output/spool.h"

/* A sidecar file larger than this is refused (64 labels of 4 KiB keys and values fit). */
#define SIDECAR_MAX_BYTES (1u << 20)

struct sidecar_label {
	char *key;
	char *value;
};

/* A sidecar (docs/spool.md, version 1) read back. Strings are NUL-terminated, owned by it. */
struct sidecar {
	int version;
	char *service;
	int64_t from_ns, until_ns;
	unsigned int sample_rate;
	int64_t period_ns;
	char *spy_name;
	struct sidecar_label *labels;
	size_t nlabels;
	char *profile; /* the profile's file name */
	uint64_t bytes;
	char *profile_name; /* __name__ of the series ("wall"); NULL: "process_cpu" (optional) */
};

/*
 * Parses a sidecar's JSON text (len bytes, need not be NUL-terminated). Unknown fields are
 * skipped (fields may be added within a version); a missing field, a wrong type, a version other
 * than 1, a string with a NUL (\u0000) or a malformed document is refused. NULL with errno set
 * (EINVAL: not a valid sidecar, ENOMEM) and, on EINVAL, a reason in err ("field \"from_ns\": not
 * an integer", "at byte 17: expected ':'").
 */
struct sidecar *sidecar__parse(const char *json, size_t len, char *err, size_t errlen);
/* Reads and parses a file (at most SIDECAR_MAX_BYTES: else EFBIG). NULL with errno set. */
struct sidecar *sidecar__read(const char *path, char *err, size_t errlen);
void sidecar__free(struct sidecar *sc);

/*
 * Writes m's sidecar into b: profile is the profile's file name, len its size. Valid JSON and
 * valid UTF-8 whatever the labels hold (text_json). b's sticky error, or 0.
 */
int sidecar_write(struct buf *b, const struct spool_meta *m, const char *profile, size_t len);

#endif
