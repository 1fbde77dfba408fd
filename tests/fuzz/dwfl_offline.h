/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dwfl_offline.h - one object file in a Dwfl of its own, reported offline, no debug file looked
 * for: what the native unwinder's readers get for an object a process maps, for fuzz_native
 * (its input, a memfd) and test_ehframe (a fixture).
 */
#ifndef RP_DWFL_OFFLINE_H
#define RP_DWFL_OFFLINE_H

#include <elfutils/libdwfl.h>

static int offline_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
				Dwarf_Addr base, const char *file_name, const char *debuglink_file,
				GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_debuginfo = offline_no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* A Dwfl holding path as the module name (*mod; NULL when path is no object libdwfl takes), to
 * be freed with dwfl_end. NULL when libdwfl cannot make one. */
static inline Dwfl *offline_open(const char *name, const char *path, Dwfl_Module **mod)
{
	Dwfl *dwfl = dwfl_begin(&offline_callbacks);

	*mod = NULL;
	if (!dwfl)
		return NULL;
	dwfl_report_begin(dwfl);
	*mod = dwfl_report_offline(dwfl, name, path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	return dwfl;
}

#endif
