// SPDX-License-Identifier: GPL-2.0-only
/* pbread.c - the protobuf wire format, read by hand (pbread.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "lib/pbread.h"

void pbread_fail_msg(struct pbread_dec *d, size_t at, int err, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	if (d->ret)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (d->err && d->errlen)
		snprintf(d->err, d->errlen, "%s: byte %zu: %s", d->name, at, msg);
	d->ret = err;
}

int pbread_varint(struct pbread_dec *d, uint64_t *v)
{
	size_t start = d->pos;
	unsigned int shift = 0;
	uint64_t x = 0;
	uint8_t b;

	*v = 0;
	do {
		if (d->pos >= d->end)
			return pbread_fail(d, start, -EINVAL, "truncated varint");
		if (shift > 63)
			return pbread_fail(d, start, -EINVAL, "varint longer than 10 bytes");
		b = d->buf[d->pos++];
		x |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*v = x;
	return 0;
}

bool pbread_next_field(struct pbread_dec *d, struct pbread_field *f)
{
	uint64_t tag, n;

	if (d->ret || d->pos >= d->end)
		return false;
	f->at = d->pos;
	f->v = 0;
	f->start = f->end = d->pos;
	if (pbread_varint(d, &tag))
		return false;
	if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
		pbread_fail_msg(d, f->at, -EINVAL, "invalid field number %llu",
				(unsigned long long)(tag >> 3));
		return false;
	}
	f->num = (unsigned int)(tag >> 3);
	f->wt = (unsigned int)(tag & 7);
	switch (f->wt) {
	case PB_WT_VARINT:
		return !pbread_varint(d, &f->v);
	case PB_WT_I64:
	case PB_WT_I32:
		n = f->wt == PB_WT_I64 ? 8 : 4;
		if (d->end - d->pos < n) {
			pbread_fail_msg(d, f->at, -EINVAL, "truncated fixed-width field %u",
					f->num);
			return false;
		}
		/* little-endian, as the wire writes them (a double's bits, a fixed64) */
		for (unsigned int i = 0; i < n; i++)
			f->v |= (uint64_t)d->buf[d->pos + i] << (8 * i);
		d->pos += n;
		return true;
	case PB_WT_LEN:
		if (pbread_varint(d, &n))
			return false;
		if (n > d->end - d->pos) {
			pbread_fail_msg(d, f->at, -EINVAL,
					"field %u: length %llu past the end of its message", f->num,
					(unsigned long long)n);
			return false;
		}
		f->start = d->pos;
		f->end = d->pos + n;
		d->pos += n;
		return true;
	default:
		pbread_fail_msg(d, f->at, -EINVAL, "field %u: unsupported wire type %u", f->num,
				f->wt);
		return false;
	}
}

int pbread_sub(struct pbread_dec *d, size_t start, size_t end, pbread_fn fn, void *obj)
{
	size_t pos = d->pos, oend = d->end;

	d->pos = start;
	d->end = end;
	fn(d, obj);
	d->pos = pos;
	d->end = oend;
	return d->ret;
}
