/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * spool.h - the service's on-disk spool: one gzip'd pprof per service and interval, each with a
 * JSON sidecar holding what the collector's ingest needs (docs/spool.md describes the layout).
 * Writes are atomic (temporary file, fsync, rename); the spool is bounded by total bytes, by age
 * and by the number of pairs, survives restarts, and is read back by the shipper in time order.
 * Every function takes the spool's mutex, so a shipper thread may share it with the writer.
 */
#ifndef RP_SPOOL_H
#define RP_SPOOL_H

#include <stddef.h>
#include <stdint.h>

/* The in-memory index mirrors the directory; past this many pairs the oldest go (counted). */
#define SPOOL_MAX_FILES_DEFAULT 100000
/* Limits of what one write may carry; past them spool_write returns -EINVAL. */
#define SPOOL_MAX_LABELS	64
#define SPOOL_MAX_STRING	4096
/* Bytes of the service name kept in a file name (after sanitizing). */
#define SPOOL_MAX_SERVICE_NAME	100

struct spool;

struct spool_label {
	const char *key;
	const char *value;
};

struct spool_meta {
	const char *service;
	int64_t from_ns, until_ns; /* wall clock, ns since the epoch */
	unsigned int sample_rate;  /* Hz */
	int64_t period_ns;
	const char *spy_name; /* "rubyprofd"; NULL means that */
	/* the series' __name__ when shipped: "wall" in wall-clock mode; NULL: none written (the
	 * reader takes "process_cpu") */
	const char *profile_name;
	const struct spool_label *labels;
	size_t nlabels;
};

struct spool_stats {
	uint64_t files;		  /* pairs in the spool now */
	uint64_t bytes;		  /* profiles + sidecars now */
	uint64_t written;	  /* pairs written by this process */
	uint64_t write_errors;	  /* writes that failed (nothing of them stays) */
	uint64_t evicted_bytes;	  /* pairs removed for room: max_bytes, or a full disk */
	uint64_t evicted_age;	  /* pairs removed as older than max_age */
	uint64_t refused_too_big; /* writes larger than max_bytes by themselves */
	uint64_t temp_removed;	  /* temporary files of a crashed writer removed at startup */
	uint64_t orphans_removed; /* half pairs removed at startup (crash between the renames) */
	uint64_t evicted_files;	  /* pairs removed because the index reached its maximum */
	uint64_t remove_errors;	  /* unlinks that failed (the entry stays, or half of it) */
	uint64_t not_regular;	  /* named as ours, no regular file, at startup: left alone */
	int64_t oldest_from_ns;	  /* start of the oldest pair in the spool now; 0: empty */
};

struct spool_entry {
	char stem[160];	 /* file name without ".pb.gz" / ".json" */
	int64_t from_ns; /* start of the profile, to the millisecond (from the name) */
	uint64_t bytes;	 /* profile + sidecar */
};

/*
 * Opens (creating it and its parents with mode 0750 if missing) and locks the spool directory,
 * removes leftover temporary files and half pairs, indexes the pairs found and applies the bounds.
 * max_bytes 0 and max_age_ns <= 0 mean no such bound. A directory that anyone but root or the
 * daemon's user can write, or one above it, is refused (safepath.h: EPERM). NULL with errno set
 * (EBUSY: another spool holds the directory) and err saying why (naming, for EPERM, the
 * directory, its owner and mode; err may be NULL when errlen is 0).
 */
struct spool *spool__new(const char *dir, uint64_t max_bytes, int64_t max_age_ns, char *err,
			 size_t errlen);
void spool__free(struct spool *s);

/*
 * Writes one profile and its sidecar, making room first (age, then oldest pairs for bytes); on a
 * full disk evicts the oldest pair and retries once. The profile's path goes to path (if not
 * NULL). 0, -EINVAL (bad meta, a label key given twice), -EFBIG (larger than max_bytes), -ENAMETOOLONG (pathlen too
 * small), or the error of the write (-ENOSPC ...); on error nothing of this write stays.
 */
int spool_write(struct spool *s, const struct spool_meta *m, const void *profile, size_t len,
		char *path, size_t pathlen);
/* Removes the pairs that started before now_ns - max_age. 0 or the first unlink's -errno. */
int spool_expire(struct spool *s, int64_t now_ns);
/* New bounds (SIGHUP), applied at once against the wall clock; failures count remove_errors. */
void spool_set_bounds(struct spool *s, uint64_t max_bytes, int64_t max_age_ns);
/* Maximum number of pairs in the index (default SPOOL_MAX_FILES_DEFAULT), applied at once. */
void spool_set_max_files(struct spool *s, size_t max_files);
void spool_stats(const struct spool *s, struct spool_stats *out);

/*
 * A malloc'd copy of the index's oldest `max` entries (all of them when max is 0), oldest first
 * (*out NULL when empty). 0 or -ENOMEM.
 */
int spool_list(struct spool *s, struct spool_entry **out, size_t *n, size_t max);
/* Removes a pair (profile first, so a crash leaves only an orphan sidecar). 0, -ENOENT, -errno. */
int spool_remove(struct spool *s, const char *stem);
/* Paths of a stem's files: "<dir>/<stem>.pb.gz" and "<dir>/<stem>.json". 0 or -ENAMETOOLONG. */
int spool_profile_path(const struct spool *s, const char *stem, char *buf, size_t len);
int spool_sidecar_path(const struct spool *s, const char *stem, char *buf, size_t len);
const char *spool_dir(const struct spool *s);

#endif
