// SPDX-License-Identifier: GPL-2.0-only
/* threadctx.c - a sample's OpenTelemetry thread-context record turned into its labels. */
#include <string.h>

#include "lib/text.h"
#include "proc/threadctx.h"
#include "rubyprof.h"

static const char *const bad_names[THREADCTX_BAD_MAX] = {
	[THREADCTX_BAD_SIZE] = "size",	 [THREADCTX_BAD_READ] = "read",
	[THREADCTX_BAD_ENTRY] = "entry", [THREADCTX_BAD_KEY] = "key",
	[THREADCTX_BAD_VALUE] = "value", [THREADCTX_BAD_MANY] = "many",
};

const char *threadctx_bad_name(enum threadctx_bad b)
{
	return b < THREADCTX_BAD_MAX ? bad_names[b] : "?";
}

/* the sample labels of daemon/profile/aggregate.c, and the two of this reader */
static const char *const reserved[] = {
	"pid",	       "ns_pid",	   "tid",	   "container_id", "thread_name",
	"ruby_thread", "ruby_thread_name", "thread_state", "syscall",	   "service_instance_id",
	"trace_id",    "span_id",
};

int threadctx_reserved(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strcmp(name, reserved[i]) == 0)
			return 1;
	return 0;
}

static size_t put(char *out, size_t n, const char *s, size_t len)
{
	if (n + len + 1 > THREADCTX_LABELS_MAX)
		return n;
	memcpy(out + n, s, len);
	out[n + len] = '\0';
	return n + len + 1;
}

/* bytes as lowercase hex, "" when they are all zero (the OTEP: none active) */
static size_t put_hex(char *out, size_t n, const char *name, const uint8_t *b, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char hex[33];
	size_t i, zero = 0;

	for (i = 0; i < len; i++) {
		zero |= b[i];
		hex[2 * i] = digits[b[i] >> 4];
		hex[2 * i + 1] = digits[b[i] & 15];
	}
	if (!zero || n + strlen(name) + 2 * len + 2 > THREADCTX_LABELS_MAX)
		return n;
	n = put(out, n, name, strlen(name));
	return put(out, n, hex, 2 * len);
}

size_t threadctx_labels(const uint8_t *rec, size_t len, uint32_t flags,
			const struct procctx_attrs *keys, char *out, struct threadctx_stats *st)
{
	/* per key index: where its last value is in rec (+ 1), 0: none */
	uint16_t at[PROCCTX_KEYS_MAX] = {0};
	uint8_t vlen[PROCCTX_KEYS_MAX];
	char name[PROCCTX_VALUE_MAX + 2], value[256];
	size_t n = 0, i, size, kept = 0;
	const char *key;

	if (len < RP_TCTX_HDR || len > RP_TCTX_MAX || rec[24] != 1)
		return 0;
	st->records++;
	n = put_hex(out, n, "trace_id", rec, 16);
	n = put_hex(out, n, "span_id", rec + 16, 8);
	if (flags & RP_TCTX_F_OVERSIZE)
		st->bad[THREADCTX_BAD_SIZE]++;
	if (flags & RP_TCTX_F_ATTRS_FAIL)
		st->bad[THREADCTX_BAD_READ]++;
	size = (size_t)rec[26] | (size_t)rec[27] << 8;
	/* the BPF side copied attrs-data-size bytes, or none (counted above) */
	if (size != len - RP_TCTX_HDR)
		size = 0;
	/* the OTEP: stop at an entry the rest cannot hold; a key seen again takes its last value */
	for (i = 0; i < size;) {
		if (i + 2 > size || i + 2 + rec[RP_TCTX_HDR + i + 1] > size) {
			st->bad[THREADCTX_BAD_ENTRY]++;
			break;
		}
		at[rec[RP_TCTX_HDR + i]] = (uint16_t)(RP_TCTX_HDR + i + 2 + 1);
		vlen[rec[RP_TCTX_HDR + i]] = rec[RP_TCTX_HDR + i + 1];
		i += 2 + (size_t)rec[RP_TCTX_HDR + i + 1];
	}
	for (i = 0; i < PROCCTX_KEYS_MAX; i++) {
		if (!at[i])
			continue;
		key = keys ? procctx_key(keys, (unsigned int)i) : NULL;
		/* outside the map (the OTEP: ignored), a refused name, or one of ours */
		if (!key || !key[0] ||
		    (text_label_name(key, name, sizeof(name)), threadctx_reserved(name))) {
			st->bad[THREADCTX_BAD_KEY]++;
			continue;
		}
		memcpy(value, rec + at[i] - 1, vlen[i]);
		value[vlen[i]] = '\0';
		if (strlen(value) != vlen[i] || !text_is_clean(value)) {
			st->bad[THREADCTX_BAD_VALUE]++;
			continue;
		}
		if (kept == THREADCTX_ATTRS_MAX ||
		    n + strlen(name) + vlen[i] + 2 > THREADCTX_LABELS_MAX) {
			st->bad[THREADCTX_BAD_MANY]++;
			continue;
		}
		kept++;
		n = put(out, n, name, strlen(name));
		n = put(out, n, value, vlen[i]);
	}
	return n;
}
