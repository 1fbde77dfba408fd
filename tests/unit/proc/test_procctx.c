// SPDX-License-Identifier: GPL-2.0-only
/*
 * The OpenTelemetry process context (daemon/proc/procctx.c) over crafted bytes: a Resource payload
 * encoded here by hand (not by the daemon's writer), headers in this process's own memory read
 * through procmem_read, and a writer that moves the header while it is read (procmem_read is
 * the link-time seam of procmem.h: this file's strong definition lets a test act between two
 * reads). Then a real memfd mapping named OTEL_CTX, found in /proc/self/maps.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc/procctx.h"
#include "proc/procmem.h"
#include "proc/procs.h"

/* ---- the seam: a hook that runs before each read of this process's memory ------------------ */

static void (*before_read)(uint64_t addr, size_t len);
static unsigned int reads;

int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	reads++;
	if (before_read)
		before_read(addr, len);
	return procmem_vm_read(pid, addr, buf, len);
}

/* ---- a protobuf encoder of our own (varints and length-delimited fields) -------------------- */

struct enc {
	uint8_t b[200000];
	size_t n;
};

static void put_varint(struct enc *e, uint64_t v)
{
	do {
		e->b[e->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void put_bytes(struct enc *e, unsigned int field, const void *p, size_t len)
{
	put_varint(e, (uint64_t)field << 3 | 2);
	put_varint(e, len);
	memcpy(e->b + e->n, p, len);
	e->n += len;
}

/* KeyValue{key, AnyValue{string_value}} as a Resource attribute (field 1). */
static void put_attr(struct enc *e, const char *key, const void *val, size_t vlen)
{
	struct enc any = {0}, kv = {0};

	put_bytes(&any, 1, val, vlen);
	put_bytes(&kv, 1, key, strlen(key));
	put_bytes(&kv, 2, any.b, any.n);
	put_bytes(e, 1, kv.b, kv.n);
}

static void put_str(struct enc *e, const char *key, const char *val)
{
	put_attr(e, key, val, strlen(val));
}

/* threadlocal.attribute_key_map: AnyValue{array_value = 5: ArrayValue{values = 1...}} */
static void put_keymap(struct enc *e, const char *const *names, size_t n)
{
	static struct enc arr, any, kv, one;
	size_t i;

	memset(&arr, 0, sizeof(arr));
	for (i = 0; i < n; i++) {
		memset(&one, 0, sizeof(one));
		put_bytes(&one, 1, names[i], strlen(names[i]));
		put_bytes(&arr, 1, one.b, one.n);
	}
	memset(&any, 0, sizeof(any));
	put_bytes(&any, 5, arr.b, arr.n);
	memset(&kv, 0, sizeof(kv));
	put_bytes(&kv, 1, "threadlocal.attribute_key_map", 29);
	put_bytes(&kv, 2, any.b, any.n);
	put_bytes(e, 1, kv.b, kv.n);
}

static struct enc payload;

static void full_payload(struct enc *e, const char *name)
{
	static const char *const keys[] = {"http.route", "http.method"};

	memset(e, 0, sizeof(*e));
	put_str(e, "service.name", name);
	put_str(e, "service.version", "1.2.3");
	put_str(e, "deployment.environment.name", "staging");
	put_str(e, "service.instance.id", "0b5f0c7e-9d7a-4c1e-8a57-2f9a1b2c3d4e");
	put_str(e, "telemetry.sdk.language", "ruby");
	put_str(e, "threadlocal.schema_version", "tlsdesc_v1_dev");
	put_keymap(e, keys, 2);
}

/* The resource attributes that procctx_decode kept, as these strings ("" where refused or absent). */
static void expect_attrs(const struct procctx_attrs *a, const char *name, const char *version,
			 const char *environment, const char *instance_id, const char *schema)
{
	cr_assert_str_eq(a->service_name, name);
	cr_assert_str_eq(a->service_version, version);
	cr_assert_str_eq(a->environment, environment);
	cr_assert_str_eq(a->instance_id, instance_id);
	cr_assert_str_eq(a->schema_version, schema);
}

Test(procctx, decodes_what_it_uses)
{
	struct procctx_attrs a = {0};
	char why[200];

	full_payload(&payload, "shop");
	cr_assert_eq(procctx_decode(payload.b, payload.n, &a, why, sizeof(why)), 0, "%s", why);
	expect_attrs(&a, "shop", "1.2.3", "staging", "0b5f0c7e-9d7a-4c1e-8a57-2f9a1b2c3d4e",
		     "tlsdesc_v1_dev");
	cr_assert_eq(a.nkeys, 2);
	cr_assert_str_eq(procctx_key(&a, 0), "http.route");
	cr_assert_str_eq(procctx_key(&a, 1), "http.method");
	cr_assert_null(procctx_key(&a, 2));
	cr_assert_eq(a.refused_values, 0);
	procctx_attrs_release(&a);
	/* an empty Resource is a context without attributes */
	cr_assert_eq(procctx_decode(payload.b, 0, &a, why, sizeof(why)), 0);
	cr_assert_str_eq(a.service_name, "");
}

Test(procctx, truncated_payloads_are_refused_or_read_in_whole_fields)
{
	struct procctx_attrs a = {0};
	char why[200];
	size_t cut;
	int err;

	full_payload(&payload, "shop");
	for (cut = 0; cut < payload.n; cut++) {
		err = procctx_decode(payload.b, cut, &a, why, sizeof(why));
		cr_assert(err == 0 || err == -EINVAL, "cut at %zu: %d", cut, err);
		/* a value is never read from a field cut short */
		cr_assert(a.service_name[0] == '\0' || strcmp(a.service_name, "shop") == 0);
		if (err)
			cr_assert(why[0], "cut at %zu: no reason", cut);
		procctx_attrs_release(&a);
	}
	/* one byte short of the last field: the message is broken, nothing is kept */
	cr_assert_eq(procctx_decode(payload.b, payload.n - 1, &a, why, sizeof(why)), -EINVAL);
	cr_assert_str_eq(a.service_name, "");
	cr_assert_eq(a.nkeys, 0);
	cr_assert_eq(procctx_decode(payload.b, PROCCTX_PAYLOAD_MAX + 1, &a, why, sizeof(why)),
		     -EINVAL);
}

Test(procctx, values_not_clean_short_utf8_are_refused_alone)
{
	struct procctx_attrs a = {0};
	struct enc e = {0};
	char big[PROCCTX_VALUE_MAX + 2];
	char why[200];

	put_attr(&e, "service.name", "sh\xffop", 5);		/* not UTF-8 */
	put_attr(&e, "service.version", "1\n2", 3);		/* a control character */
	put_attr(&e, "deployment.environment.name", "a\0b", 3); /* a NUL */
	memset(big, 'x', sizeof(big));
	put_attr(&e, "service.instance.id", big, PROCCTX_VALUE_MAX + 1); /* too long */
	put_attr(&e, "threadlocal.schema_version", "caf\xc3\xa9", 5);	 /* UTF-8: kept */
	cr_assert_eq(procctx_decode(e.b, e.n, &a, why, sizeof(why)), 0, "%s", why);
	expect_attrs(&a, "", "", "", "", "caf\xc3\xa9");
	cr_assert_eq(a.refused_values, 4);
	procctx_attrs_release(&a);

	/* exactly PROCCTX_VALUE_MAX bytes is kept */
	memset(&e, 0, sizeof(e));
	put_attr(&e, "service.instance.id", big, PROCCTX_VALUE_MAX);
	/* an int where a string is expected: AnyValue{int_value = 3} */
	put_bytes(&e, 1, "\x0a\x0cservice.name\x12\x02\x18\x07", 18);
	cr_assert_eq(procctx_decode(e.b, e.n, &a, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(strlen(a.instance_id), PROCCTX_VALUE_MAX);
	cr_assert_str_eq(a.service_name, "");
	cr_assert_eq(a.refused_values, 1);
	procctx_attrs_release(&a);
}

Test(procctx, key_map_bounded_and_indexes_kept)
{
	static char names[300][8];
	const char *v[300];
	struct procctx_attrs a = {0};
	struct enc *e = calloc(1, sizeof(*e));
	char why[200];
	size_t i;

	for (i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "k%zu", i);
		v[i] = names[i];
	}
	names[3][0] = '\x80'; /* not UTF-8: the entry is "" and index 4 is still k4 */
	put_keymap(e, v, 300);
	cr_assert_eq(procctx_decode(e->b, e->n, &a, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(a.nkeys, PROCCTX_KEYS_MAX);
	cr_assert_str_eq(procctx_key(&a, 3), "");
	cr_assert_str_eq(procctx_key(&a, 4), "k4");
	cr_assert_str_eq(procctx_key(&a, 255), "k255");
	cr_assert_eq(a.refused_values, 2); /* the bad entry, and the entries past 256 */
	procctx_attrs_release(&a);
	free(e);
}

/* ---- the header and the reading protocol, in this process's memory --------------------------- */

static uint8_t hdr[PROCCTX_HEADER_SIZE] __attribute__((aligned(8)));

static void set_header(const char *sig, uint32_t version, uint32_t size, uint64_t published,
		       const void *p)
{
	uint64_t ptr = (uint64_t)(uintptr_t)p;

	memcpy(hdr, sig, 8);
	memcpy(hdr + 8, &version, 4);
	memcpy(hdr + 12, &size, 4);
	memcpy(hdr + 16, &published, 8);
	memcpy(hdr + 24, &ptr, 8);
}

static uint64_t self_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void reset(void)
{
	before_read = NULL;
	reads = 0;
}

Test(procctx, header_signature_version_size, .init = reset)
{
	struct procctx pc = {0};
	struct procctx_stats st = {0};

	full_payload(&payload, "shop");
	set_header("OTEL_CTX", 2, (uint32_t)payload.n, 1000, payload.b);
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_CHANGED, "%s",
		     pc.why);
	cr_assert_str_eq(pc.attrs.service_name, "shop");
	cr_assert_eq(pc.published_at_ns, 1000);
	cr_assert_eq(st.reads, 1);
	procctx_release(&pc);

	/* the development version */
	set_header("OTEL_CTX", 1, (uint32_t)payload.n, 1000, payload.b);
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_CHANGED);
	procctx_release(&pc);

	set_header("OTEL_CTX", 3, (uint32_t)payload.n, 1000, payload.b);
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_HEADER);
	set_header("OTEL_CTY", 2, (uint32_t)payload.n, 1000, payload.b);
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_HEADER);
	cr_assert_eq(st.refused[PROCCTX_REFUSED_HEADER], 2);

	/* oversize: refused before anything is allocated or read */
	set_header("OTEL_CTX", 2, PROCCTX_PAYLOAD_MAX + 1, 1000, payload.b);
	reads = 0;
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_SIZE);
	cr_assert_eq(reads, 1, "%u reads: the payload was read", reads);
	set_header("OTEL_CTX", 2, 0xffffffffu, 1000, payload.b);
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_SIZE);

	/* a payload pointer into unmapped memory, and a header there */
	set_header("OTEL_CTX", 2, 64, 1000, (void *)(uintptr_t)0x10);
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_MEMORY);
	cr_assert_eq(procctx_read_at(&pc, getpid(), 0x10, &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_MEMORY);

	/* a payload that is no Resource */
	set_header("OTEL_CTX", 2, 4, 1000, "\x0a\x7f\x01\x02");
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_PAYLOAD);
	cr_assert(strstr(pc.why, "past the end"), "%s", pc.why);
	procctx_release(&pc);
}

/* A writer in the middle of an update: published_at_ns 0 while it is read. */
static void always_updating(uint64_t addr, size_t len)
{
	uint64_t zero = 0;

	if (addr == self_addr(hdr))
		memcpy(hdr + 16, &zero, 8);
}

static struct enc second;
static unsigned int moves;

/* A writer that publishes a new payload between the reader's first header and its re-read,
 * once: the first try is torn, the second reads the new payload whole. */
static void update_once(uint64_t addr, size_t len)
{
	uint64_t published = 2000, ptr = self_addr(second.b);
	uint32_t size = (uint32_t)second.n;

	if (addr == self_addr(hdr) || moves++ != 1)
		return;
	/* the updating protocol: 0, pointer and size, the new time */
	memset(hdr + 16, 0, 8);
	memcpy(hdr + 24, &ptr, 8);
	memcpy(hdr + 12, &size, 4);
	memcpy(hdr + 16, &published, 8);
}

/* One that publishes again before every re-read. */
static void update_always(uint64_t addr, size_t len)
{
	uint64_t published;

	if (addr == self_addr(hdr))
		return;
	memcpy(&published, hdr + 16, 8);
	published++;
	memcpy(hdr + 16, &published, 8);
}

Test(procctx, torn_updates_are_read_again_bounded, .init = reset)
{
	struct procctx pc = {0};
	struct procctx_stats st = {0};

	full_payload(&payload, "old");
	full_payload(&second, "new");
	set_header("OTEL_CTX", 2, (uint32_t)payload.n, 1000, payload.b);
	before_read = always_updating;
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_TORN);
	cr_assert_eq(reads, PROCCTX_TRIES, "%u reads", reads);
	cr_assert_str_eq(pc.attrs.service_name, "");

	set_header("OTEL_CTX", 2, (uint32_t)payload.n, 1000, payload.b);
	before_read = update_once;
	moves = 1;
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_CHANGED, "%s",
		     pc.why);
	cr_assert_str_eq(pc.attrs.service_name, "new");
	cr_assert_eq(pc.published_at_ns, 2000);

	set_header("OTEL_CTX", 2, (uint32_t)payload.n, 1000, payload.b);
	before_read = update_always;
	reads = 0;
	cr_assert_eq(procctx_read_at(&pc, getpid(), self_addr(hdr), &st), PROCCTX_REFUSED);
	cr_assert_eq(pc.last, PROCCTX_REFUSED_TORN);
	cr_assert_leq(reads, 3 * PROCCTX_TRIES);
	/* what was read before stays */
	cr_assert_str_eq(pc.attrs.service_name, "new");
	cr_assert_eq(st.refused[PROCCTX_REFUSED_TORN], 2);
	procctx_release(&pc);
}

/* ---- a real mapping, found in /proc/self/maps -------------------------------------------------- */

Test(procctx, memfd_mapping_found_polled_updated_and_gone, .init = reset)
{
	struct procctx pc = {0};
	struct procctx_stats st = {0};
	struct proc_map m;
	uint8_t *map;
	uint64_t published = 5000, ptr;
	uint32_t size, version = 2;
	int fd;

	/* the two names the OTEP's readers look for */
	cr_assert_eq(procs_parse_maps_line("7f0000000000-7f0000001000 rw-s 00000000 00:01 1234  "
					   "                 /memfd:OTEL_CTX (deleted)\n",
					   &m),
		     0);
	cr_assert(m.otel_ctx && m.deleted);
	free(m.path);
	cr_assert_eq(procs_parse_maps_line("7f0000000000-7f0000001000 rw-s 00000000 00:01 1234  "
					   "                 [anon_shmem:OTEL_CTX]\n",
					   &m),
		     0);
	cr_assert(m.otel_ctx && !m.path);
	cr_assert_eq(procs_parse_maps_line("7f0000000000-7f0000001000 rw-s 00000000 00:01 1234  "
					   "                 /memfd:OTHER (deleted)\n",
					   &m),
		     0);
	cr_assert(!m.otel_ctx);
	free(m.path);

	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(map, MAP_FAILED);
	close(fd);
	full_payload(&payload, "memfd-app");
	memcpy(map + 32, payload.b, payload.n);
	size = (uint32_t)payload.n;
	ptr = self_addr(map + 32);
	memcpy(map + 8, &version, 4);
	memcpy(map + 12, &size, 4);
	memcpy(map + 16, &published, 8);
	memcpy(map + 24, &ptr, 8);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(map, "OTEL_CTX", 8);

	cr_assert_eq(procctx_poll(&pc, getpid(), NULL, 0, &st), PROCCTX_CHANGED, "%s", pc.why);
	cr_assert_eq(pc.addr, self_addr(map));
	cr_assert_str_eq(pc.attrs.service_name, "memfd-app");
	cr_assert_eq(st.maps_scans, 1);
	/* the same published_at_ns: the header alone is read */
	reads = 0;
	cr_assert_eq(procctx_poll(&pc, getpid(), NULL, 0, &st), PROCCTX_NONE);
	cr_assert_eq(reads, 1);
	cr_assert_eq(st.unchanged, 1);
	/* an update, after the updating protocol */
	full_payload(&second, "renamed");
	memset(map + 16, 0, 8);
	ptr = self_addr(second.b);
	size = (uint32_t)second.n;
	memcpy(map + 24, &ptr, 8);
	memcpy(map + 12, &size, 4);
	published = 6000;
	memcpy(map + 16, &published, 8);
	cr_assert_eq(procctx_poll(&pc, getpid(), NULL, 0, &st), PROCCTX_CHANGED);
	cr_assert_str_eq(pc.attrs.service_name, "renamed");
	/* unmapped: the context is gone, and looked for again later */
	cr_assert_eq(munmap(map, 4096), 0);
	cr_assert_eq(procctx_poll(&pc, getpid(), NULL, 0, &st), PROCCTX_GONE);
	cr_assert_str_eq(pc.attrs.service_name, "");
	cr_assert_eq(pc.addr, 0);
	cr_assert_eq(st.refused[PROCCTX_REFUSED_MEMORY], 0);
	/* no mapping: /proc/self/maps is read at each of the first 8 polls, the 16th, 32nd, 64th */
	st.maps_scans = 0;
	for (int i = 0; i < 64; i++)
		cr_assert_eq(procctx_poll(&pc, getpid(), NULL, 0, &st), PROCCTX_NONE);
	cr_assert_eq(st.maps_scans, 11, "%llu scans", (unsigned long long)st.maps_scans);
	procctx_release(&pc);
}
