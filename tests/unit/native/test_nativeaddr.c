// SPDX-License-Identifier: GPL-2.0-only
/*
 * Native frames in pprof carry their address: each Location the function's entry in its process,
 * each Mapping the object's range there and its build id, read back with the decoder.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../aggread.h"
#include "profile/aggregate.h"
#include "profile/pprof.h"
#include "view/pprofread.h"

Test(nativeaddr, locations_and_mappings_carry_addresses)
{
	struct aggregate_proc_info i1 = {.pid = 1, .nspid = 1, .service = "s"};
	struct aggregate_proc_info i2 = {.pid = 2, .nspid = 2, .service = "s"};
	const char *libz = "/usr/lib/libz.so.1", *bid = "0123456789abcdef0123456789abcdef01234567";
	const struct pprofread_profile *prof;
	const struct pprofread_location *l;
	const struct pprofread_mapping *m;
	struct aggregate *a = aggregate__new(2, 100);
	const int64_t one[2] = {1, 10};
	struct aggregate_proc *p1, *p2;
	struct pprofread *r;
	uint32_t f1, f2;
	size_t i, found = 0;

	p1 = aggregate_proc__new(a, &i1);
	p2 = aggregate_proc__new(a, &i2);
	cr_assert(p1 && p2);
	/* the same function of libz in two processes that mapped it at different addresses */
	f1 = aggregate_native_frame_id(p1, "deflate", libz, bid);
	aggregate_native_frame_at(p1, f1,
				  &(struct aggregate_native_addr){.addr = 0x7f0000004970,
								  .map_start = 0x7f0000000000,
								  .map_limit = 0x7f0000020000});
	/* its other addresses are the same frame: the first entry stays */
	aggregate_native_frame_at(p1, f1, &(struct aggregate_native_addr){.addr = 0x7f0000004999});
	f2 = aggregate_native_frame_id(p2, "deflate", libz, bid);
	aggregate_native_frame_at(p2, f2,
				  &(struct aggregate_native_addr){.addr = 0x7e0000004970,
								  .map_start = 0x7e0000000000,
								  .map_limit = 0x7e0000020000});
	cr_assert_eq(aggregate_add(a, p1, 1, "", &f1, 1, one), 0);
	cr_assert_eq(aggregate_add(a, p2, 2, "", &f2, 1, one), 0);

	r = aggread(a, 0, false);
	prof = pprofread_profile(r);
	cr_assert_eq(prof->nlocations, 2, "one location per function and process");
	cr_assert_eq(prof->nmappings, 2, "one mapping per object and load address");
	for (i = 0; i < prof->nlocations; i++) {
		l = &prof->locations[i];
		m = pprofread_mapping(r, l->mapping_id);
		cr_assert_not_null(m);
		cr_assert_str_eq(pprofread_str(r, m->filename), libz);
		cr_assert_str_eq(pprofread_str(r, m->build_id), bid);
		cr_assert_eq(l->address - m->start, 0x4970, "address %#lx in mapping at %#lx",
			     (unsigned long)l->address, (unsigned long)m->start);
		cr_assert_eq(m->limit - m->start, 0x20000);
		cr_assert_eq(m->offset, 0);
		found += l->address == 0x7f0000004970 || l->address == 0x7e0000004970;
	}
	cr_assert_eq(found, 2);
	pprofread__free(r);
	aggregate__free(a);
}
