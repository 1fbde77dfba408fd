// SPDX-License-Identifier: GPL-2.0-only
/*
 * otelctx.c - an OpenTelemetry thread-context WRITER built by the end-to-end tests, independent of
 * the profiler's reader (written from the OTEP text alone: OTEP 4947 "Thread Context",
 * open-telemetry/opentelemetry-specification oteps/profiles/4947-thread-ctx.md at commit
 * 009fafa5e9f252f098697d929cc7faa84dcc5ff7).
 *
 * It exports the TLS pointer otel_thread_ctx_v1 (default visibility: it lands in .dynsym) and
 * follows the OTEP's pointer-swapping writer protocol: each request (a Ruby object here, owned by
 * the thread or fiber that runs it) has its own record, built completely with valid = 1 before the
 * TLS pointer is set to it; a switch sets the pointer to the next record; a detach sets it to NULL.
 * The pointer is only ever written by its own thread, with compiler fences around it (the OTEP's
 * signal-handler semantics: no CPU barriers needed). Records are never mutated once published.
 *
 * The TLS access model is chosen at build time, as the OTEP lists them:
 *   -mtls-dialect=gnu2                 TLSDESC (R_X86_64_TLSDESC in the .so)
 *   (default, -fPIC)                   general dynamic, legacy GNU (R_X86_64_DTPMOD64/DTPOFF64)
 *   -DOTELCTX_INITIAL_EXEC             initial exec (R_X86_64_TPOFF64)
 *
 * Record layout (byte-packed, host endian): trace-id[16], span-id[8], valid u8, trace-flags u8,
 * attrs-data-size u16, then (key index u8, length u8, value[length]) entries.
 *
 * Ruby API (module OtelCtx):
 *   OtelCtx.record(trace_hex32, span_hex16, flags, {key_index => "value", ...}) -> Record
 *   OtelCtx.attach(record_or_nil)   set this thread's pointer (nil: detach)
 *   OtelCtx.raw_record(bytes)       a Record of exactly these bytes (a broken writer's)
 *   OtelCtx.attach_address(addr)    this thread's pointer set to any address
 *   OtelCtx.current                 this thread's pointer, as an Integer (0: none)
 *   OtelCtx.tls_address             &otel_thread_ctx_v1 on this thread, as an Integer
 *   OtelCtx.tls_model               the model this build was compiled for ("tlsdesc", ...)
 *   Record#address, Record#bytes    the record's address and its published bytes (self-check)
 *   OtelCtx.fiber_record = rec      this fiber's record (a fiber-local), attached now and again
 *                                   on every switch back to this fiber once hooked
 *   OtelCtx.hook_fiber_switch       installs the RUBY_EVENT_FIBER_SWITCH hook that re-attaches
 *                                   the fiber-local record of the fiber switched to (what
 *                                   Datadog's Ruby writer does); false where the Ruby lacks it
 *   OtelCtx.publish_process(payload) the OTEP 4719 process context: payload (an encoded
 *                                   Resource) behind its header in a memfd named OTEL_CTX
 *
 * The process context follows OTEP 4719 (commit 02e55db8b3c0edbf785640fd79bf9a3d6ea79bb6 of the
 * same repository): memfd_create("OTEL_CTX"), ftruncate, mmap, close, MADV_DONTFORK, payload,
 * header fields, a CPU memory barrier, the signature last, then prctl(PR_SET_VMA_ANON_NAME)
 * (refused by kernels without CONFIG_ANON_VMA_NAME, which the OTEP says to ignore).
 */
#define _GNU_SOURCE 1 /* memfd_create (ruby/config.h defines it the same) */
#include <ruby.h>
#include <ruby/debug.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OTELCTX_MAX 640 /* the OTEP's recommended bound on the whole record */
#define OTELCTX_HDR 28

#ifdef OTELCTX_INITIAL_EXEC
#define OTELCTX_TLS __attribute__((tls_model("initial-exec")))
#define OTELCTX_MODEL "initial-exec"
#elif defined(OTELCTX_TLSDESC)
#define OTELCTX_TLS
#define OTELCTX_MODEL "tlsdesc"
#else
#define OTELCTX_TLS
#define OTELCTX_MODEL "general-dynamic"
#endif

__attribute__((visibility("default"))) OTELCTX_TLS __thread void *volatile otel_thread_ctx_v1;

struct otelctx_rec {
	uint8_t *buf; /* 2-byte aligned (malloc) */
	size_t len;
};

static void otelctx_rec_free(void *p)
{
	struct otelctx_rec *r = p;

	/* A record is only dropped by the app after it detached it (the app keeps its requests). */
	free(r->buf);
	free(r);
}

static size_t otelctx_rec_size(const void *p)
{
	return sizeof(struct otelctx_rec) + ((const struct otelctx_rec *)p)->len;
}

static const rb_data_type_t otelctx_rec_type = {
	.wrap_struct_name = "OtelCtx::Record",
	.function = { .dfree = otelctx_rec_free, .dsize = otelctx_rec_size },
};

static VALUE cRecord;

static void otelctx_hex(const char *what, VALUE s, uint8_t *out, long n)
{
	const char *p;
	long i;

	StringValue(s);
	if (RSTRING_LEN(s) != 2 * n)
		rb_raise(rb_eArgError, "%s: %ld hex digits wanted", what, 2 * n);
	p = RSTRING_PTR(s);
	for (i = 0; i < 2 * n; i++) {
		int c = p[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else
			rb_raise(rb_eArgError, "%s: not lowercase hex", what);
		out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
	}
}

struct otelctx_fill {
	uint8_t *buf;
	size_t len;
};

static int otelctx_attr(VALUE k, VALUE v, VALUE arg)
{
	struct otelctx_fill *f = (struct otelctx_fill *)arg;
	long idx = NUM2LONG(k), n;

	StringValue(v);
	n = RSTRING_LEN(v);
	if (idx < 0 || idx > 255 || n > 255)
		rb_raise(rb_eArgError, "key index 0..255, value up to 255 bytes");
	if (f->len + 2 + (size_t)n > OTELCTX_MAX)
		rb_raise(rb_eArgError, "record over %d bytes", OTELCTX_MAX);
	f->buf[f->len++] = (uint8_t)idx;
	f->buf[f->len++] = (uint8_t)n;
	memcpy(f->buf + f->len, RSTRING_PTR(v), (size_t)n);
	f->len += (size_t)n;
	return ST_CONTINUE;
}

/* OtelCtx.record(trace_hex, span_hex, flags, attrs): builds a complete record, valid = 1. */
static VALUE otelctx_record(VALUE self, VALUE trace, VALUE span, VALUE flags, VALUE attrs)
{
	struct otelctx_rec *r;
	struct otelctx_fill f;
	uint8_t tmp[OTELCTX_MAX];
	uint16_t asz;
	VALUE obj;

	(void)self;
	memset(tmp, 0, sizeof(tmp));
	otelctx_hex("trace_id", trace, tmp, 16);
	otelctx_hex("span_id", span, tmp + 16, 8);
	tmp[25] = (uint8_t)NUM2UINT(flags);
	f.buf = tmp;
	f.len = OTELCTX_HDR;
	if (!NIL_P(attrs))
		rb_hash_foreach(rb_convert_type(attrs, T_HASH, "Hash", "to_hash"), otelctx_attr, (VALUE)&f);
	asz = (uint16_t)(f.len - OTELCTX_HDR);
	memcpy(tmp + 26, &asz, 2);
	tmp[24] = 1; /* valid: the record is complete before anyone can point at it */

	r = malloc(sizeof(*r));
	if (!r)
		rb_raise(rb_eNoMemError, "record");
	r->buf = malloc(f.len);
	if (!r->buf) {
		free(r);
		rb_raise(rb_eNoMemError, "record");
	}
	memcpy(r->buf, tmp, f.len);
	r->len = f.len;
	obj = TypedData_Wrap_Struct(cRecord, &otelctx_rec_type, r);
	return obj;
}

/* OtelCtx.attach(record or nil): the pointer swap, fenced against compiler reordering. */
static VALUE otelctx_attach(VALUE self, VALUE rec)
{
	void *p = NULL;

	(void)self;
	if (!NIL_P(rec))
		p = ((struct otelctx_rec *)rb_check_typeddata(rec, &otelctx_rec_type))->buf;
	atomic_signal_fence(memory_order_seq_cst);
	otel_thread_ctx_v1 = p;
	atomic_signal_fence(memory_order_seq_cst);
	return rec;
}

/* OtelCtx.raw_record(bytes): a Record of exactly these bytes, unchecked (a broken or hostile
 * writer, for the reader's bad-input tests). */
static VALUE otelctx_raw_record(VALUE self, VALUE bytes)
{
	struct otelctx_rec *r;

	(void)self;
	StringValue(bytes);
	r = malloc(sizeof(*r));
	if (!r)
		rb_raise(rb_eNoMemError, "record");
	r->len = (size_t)RSTRING_LEN(bytes);
	r->buf = malloc(r->len + 2);
	if (!r->buf) {
		free(r);
		rb_raise(rb_eNoMemError, "record");
	}
	memcpy(r->buf, RSTRING_PTR(bytes), r->len);
	return TypedData_Wrap_Struct(cRecord, &otelctx_rec_type, r);
}

/* OtelCtx.attach_address(addr): this thread's pointer set to any address (bad-input tests). */
static VALUE otelctx_attach_address(VALUE self, VALUE addr)
{
	(void)self;
	atomic_signal_fence(memory_order_seq_cst);
	otel_thread_ctx_v1 = (void *)(uintptr_t)NUM2ULL(addr);
	atomic_signal_fence(memory_order_seq_cst);
	return addr;
}

static VALUE otelctx_current(VALUE self)
{
	(void)self;
	return ULL2NUM((uintptr_t)otel_thread_ctx_v1);
}

static VALUE otelctx_tls_address(VALUE self)
{
	(void)self;
	return ULL2NUM((uintptr_t)&otel_thread_ctx_v1);
}

static VALUE otelctx_tls_model(VALUE self)
{
	(void)self;
	return rb_str_new_cstr(OTELCTX_MODEL);
}

static VALUE otelctx_rec_address(VALUE self)
{
	return ULL2NUM((uintptr_t)((struct otelctx_rec *)rb_check_typeddata(self, &otelctx_rec_type))->buf);
}

static VALUE otelctx_rec_bytes(VALUE self)
{
	struct otelctx_rec *r = rb_check_typeddata(self, &otelctx_rec_type);

	return rb_str_new((const char *)r->buf, (long)r->len);
}

/* The fiber-local record: Thread#[] storage is per fiber. */
static ID id_fiber_rec;

static void otelctx_attach_fiber_local(void)
{
	VALUE rec = rb_thread_local_aref(rb_thread_current(), id_fiber_rec);

	otelctx_attach(Qnil, NIL_P(rec) ? Qnil : rec);
}

static VALUE otelctx_set_fiber_record(VALUE self, VALUE rec)
{
	(void)self;
	if (!NIL_P(rec))
		rb_check_typeddata(rec, &otelctx_rec_type);
	rb_thread_local_aset(rb_thread_current(), id_fiber_rec, rec);
	otelctx_attach_fiber_local();
	return rec;
}

#ifdef RUBY_EVENT_FIBER_SWITCH
static void otelctx_on_fiber_switch(rb_event_flag_t ev, VALUE data, VALUE self, ID mid, VALUE klass)
{
	(void)ev, (void)data, (void)self, (void)mid, (void)klass;
	otelctx_attach_fiber_local();
}
#endif

static VALUE otelctx_hook_fiber_switch(VALUE self)
{
	(void)self;
#ifdef RUBY_EVENT_FIBER_SWITCH
	rb_add_event_hook(otelctx_on_fiber_switch, RUBY_EVENT_FIBER_SWITCH, Qnil);
	return Qtrue;
#else
	return Qfalse;
#endif
}

#define OTELCTX_PAGE 4096
#define OTELCTX_HEADER 32

/* OtelCtx.publish_process(payload) -> the mapping's address */
static VALUE otelctx_publish_process(VALUE self, VALUE payload)
{
	static uint8_t *map;
	struct timespec ts;
	uint64_t now, ptr;
	uint32_t version = 2, size;
	int fd;

	(void)self;
	StringValue(payload);
	if (map)
		rb_raise(rb_eRuntimeError, "already published (this writer does not update)");
	if (RSTRING_LEN(payload) > OTELCTX_PAGE - OTELCTX_HEADER)
		rb_raise(rb_eArgError, "payload over a page");
	size = (uint32_t)RSTRING_LEN(payload);
	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	if (fd < 0)
		rb_sys_fail("memfd_create");
	if (ftruncate(fd, OTELCTX_PAGE) != 0) {
		close(fd);
		rb_sys_fail("ftruncate");
	}
	map = mmap(NULL, OTELCTX_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		map = NULL;
		rb_sys_fail("mmap");
	}
	if (madvise(map, OTELCTX_PAGE, MADV_DONTFORK) != 0)
		rb_sys_fail("madvise");
	memcpy(map + OTELCTX_HEADER, RSTRING_PTR(payload), size);
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	ptr = (uint64_t)(uintptr_t)(map + OTELCTX_HEADER);
	memcpy(map + 8, &version, 4);
	memcpy(map + 12, &size, 4);
	memcpy(map + 16, &now, 8);
	memcpy(map + 24, &ptr, 8);
	atomic_thread_fence(memory_order_seq_cst);
	memcpy(map, "OTEL_CTX", 8);
	(void)prctl(0x53564d41 /* PR_SET_VMA */, 0 /* PR_SET_VMA_ANON_NAME */, (unsigned long)map,
		    (unsigned long)OTELCTX_PAGE, (unsigned long)"OTEL_CTX");
	return ULL2NUM((uintptr_t)map);
}

void Init_otelctx(void)
{
	VALUE m = rb_define_module("OtelCtx");

	cRecord = rb_define_class_under(m, "Record", rb_cObject);
	rb_undef_alloc_func(cRecord);
	rb_define_module_function(m, "record", otelctx_record, 4);
	rb_define_module_function(m, "attach", otelctx_attach, 1);
	rb_define_module_function(m, "raw_record", otelctx_raw_record, 1);
	rb_define_module_function(m, "attach_address", otelctx_attach_address, 1);
	rb_define_module_function(m, "current", otelctx_current, 0);
	rb_define_module_function(m, "tls_address", otelctx_tls_address, 0);
	rb_define_module_function(m, "tls_model", otelctx_tls_model, 0);
	id_fiber_rec = rb_intern("__otelctx_fiber_record");
	rb_define_module_function(m, "fiber_record=", otelctx_set_fiber_record, 1);
	rb_define_module_function(m, "hook_fiber_switch", otelctx_hook_fiber_switch, 0);
	rb_define_module_function(m, "publish_process", otelctx_publish_process, 1);
	rb_define_method(cRecord, "address", otelctx_rec_address, 0);
	rb_define_method(cRecord, "bytes", otelctx_rec_bytes, 0);
}
