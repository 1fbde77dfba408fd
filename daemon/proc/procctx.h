/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * procctx.h - the OpenTelemetry process context (OTEP 4719, followed at
 * open-telemetry/opentelemetry-specification commit 02e55db8b3c0edbf785640fd79bf9a3d6ea79bb6):
 * a mapping named OTEL_CTX ("/memfd:OTEL_CTX (deleted)" in /proc/PID/maps, or
 * "[anon_shmem:OTEL_CTX]" where the kernel names anonymous mappings) holding a 32-byte header
 * (signature "OTEL_CTX", version u32, payload_size u32, published_at_ns u64, payload pointer
 * u64) and, where the pointer says, a protobuf opentelemetry.proto.resource.v1.Resource: the
 * resource attributes an app publishes (service.name, service.version, ...) and the thread
 * context's key map (OTEP 4947).
 *
 * Every byte is the target's: read through procmem_read (never mapped), the payload bounded
 * before it is read, every value checked to be UTF-8 and bounded, the reading protocol's retry
 * bounded. docs/trace-context.md says what is read and why each bound is what it is.
 */
#ifndef RP_PROCCTX_H
#define RP_PROCCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_maps;

#define PROCCTX_HEADER_SIZE  32
/* Versions read: 2, and 1 ("can be used for development", the OTEP says). */
#define PROCCTX_VERSION	     2
/* The payload read at most: the OTEP expects "the KB range" (one page and its payload); the
 * thread context's key map holds at most 256 names. 64 KiB holds 256 keys of 200 bytes and the
 * resource's attributes, and is one process_vm_readv of a few microseconds per update. */
#define PROCCTX_PAYLOAD_MAX  (64u << 10)
/* Bytes kept of an attribute value that becomes a name or a label (the NUL besides): a label
 * value is cut at 128 bytes elsewhere (appname.h); a longer value is refused, not cut, so that
 * two different contexts never read the same. */
#define PROCCTX_VALUE_MAX    128
/* The key map: the OTEP's uint8 key index; a name up to PROCCTX_VALUE_MAX bytes. */
#define PROCCTX_KEYS_MAX     256
/* Readings of a header torn by a concurrent update before the process is left for the next
 * turn (the reading protocol's "restart at 2", bounded). */
#define PROCCTX_TRIES	     4
/* OTEL_CTX mappings looked at in one process (the OTEP's context is a singleton). */
#define PROCCTX_MAPPINGS_MAX 4

/* Why a context was not taken (the metric's reason). */
enum procctx_refusal {
	PROCCTX_REFUSED_HEADER,	 /* no OTEL_CTX signature, or a version other than 1 and 2 */
	PROCCTX_REFUSED_SIZE,	 /* payload_size past PROCCTX_PAYLOAD_MAX */
	PROCCTX_REFUSED_TORN,	 /* published_at_ns 0 or changing at every one of PROCCTX_TRIES */
	PROCCTX_REFUSED_MEMORY,	 /* the header or the payload is not readable memory */
	PROCCTX_REFUSED_PAYLOAD, /* not a Resource message */
	PROCCTX_REFUSED_VALUE,	 /* an attribute used is not UTF-8, too long, or of another type */
	PROCCTX_REFUSED_MAX,
};

struct procctx_stats {
	uint64_t reads;	     /* payloads read and decoded (the first, and every update) */
	uint64_t unchanged;  /* header checks that found the same published_at_ns */
	uint64_t maps_scans; /* /proc/PID/maps read again to look for a context */
	uint64_t refused[PROCCTX_REFUSED_MAX];
	/* the thread context its key map is for (OTEP 4947): processes whose otel_thread_ctx_v1
	 * was located, looked for and not found (yet), found but not understood or readable, and
	 * whose schema is not one rubyprofd reads */
	uint64_t tctx_located, tctx_not_found, tctx_refused, tctx_schema;
};

/* The attributes rubyprofd uses; "" when the context has none (or it was refused). */
struct procctx_attrs {
	char service_name[PROCCTX_VALUE_MAX + 1];
	char service_version[PROCCTX_VALUE_MAX + 1];
	char environment[PROCCTX_VALUE_MAX + 1]; /* deployment.environment.name */
	char instance_id[PROCCTX_VALUE_MAX + 1]; /* service.instance.id */
	/* For the thread-context reader (OTEP 4947: threadctx.h, discover_thread_ctx). */
	char schema_version[PROCCTX_VALUE_MAX + 1]; /* threadlocal.schema_version */
	/* threadlocal.attribute_key_map: name of key index i at keys + key_off[i], NUL-ended; ""
	 * for an entry refused (not a string, not UTF-8, too long), so indexes stay in place.
	 * malloc'd (procctx_attrs_release). */
	char *keys;
	uint32_t key_off[PROCCTX_KEYS_MAX];
	unsigned int nkeys;
	unsigned int refused_values; /* attributes used but refused (PROCCTX_REFUSED_VALUE) */
};

void procctx_attrs_release(struct procctx_attrs *a);
/* Name of key index i, NULL past the map. */
const char *procctx_key(const struct procctx_attrs *a, unsigned int i);

/*
 * Decodes a Resource payload (len <= PROCCTX_PAYLOAD_MAX) into *out (released first). An
 * attribute used whose value is refused is left "" and counted in out->refused_values. 0,
 * -EINVAL (not a Resource: why says where), -ENOMEM.
 */
int procctx_decode(const uint8_t *buf, size_t len, struct procctx_attrs *out, char *why,
		   size_t whylen);

/* The header's fields (native endianness, as the writer stored them). */
struct procctx_header {
	uint32_t version, payload_size;
	uint64_t published_at_ns, payload;
};
/* 0, or -EINVAL: not the signature or an unknown version. */
int procctx_parse_header(const uint8_t *raw, struct procctx_header *h);

/* Start addresses of the OTEL_CTX mappings in maps (readable, at least a header long), in the
 * maps' order; how many (<= max). */
size_t procctx_find(const struct proc_maps *maps, uint64_t *addrs, size_t max);

/* One process's context: where it is, what it said, when it was last looked for. */
struct procctx {
	uint64_t addr;		  /* the established header, 0: none */
	uint64_t published_at_ns; /* of `attrs` (0: nothing read) */
	struct procctx_attrs attrs;
	uint32_t polls; /* procctx_poll calls without an established mapping */
	bool logged;	/* a refusal of this process was logged */
	/* its thread context (session.c): located (the BPF side reads it), looks made, logged */
	bool tctx_located, tctx_logged;
	uint32_t tctx_looks, tctx_polls;
	enum procctx_refusal last; /* the last refusal (when procctx_poll returned < 0) */
	char why[160];		   /* and what it was */
};

enum procctx_result {
	PROCCTX_NONE = 0, /* no context (yet), or the same as before */
	PROCCTX_CHANGED,  /* attrs were read anew (first read, or an update) */
	PROCCTX_GONE,	  /* the context held before is no longer there: attrs cleared */
	PROCCTX_REFUSED,  /* a context is there but was refused: pc->last, pc->why */
};

/*
 * Looks at pid's context (the reading protocol of the OTEP): at the first of addrs (n of them,
 * from discovery's maps; n 0 and no mapping established: /proc/PID/maps is read again, at most
 * at each of the first 8 calls, the 16th, 32nd and then every 64th), else at the established one, whose
 * header alone is read while published_at_ns stays the same. Counts into st.
 */
enum procctx_result procctx_poll(struct procctx *pc, pid_t pid, const uint64_t *addrs, size_t n,
				 struct procctx_stats *st);
/* Reads pid's context at addr, fully, whatever was known. For tests. */
enum procctx_result procctx_read_at(struct procctx *pc, pid_t pid, uint64_t addr,
				    struct procctx_stats *st);

void procctx_release(struct procctx *pc);
const char *procctx_refusal_name(enum procctx_refusal r);

#endif
