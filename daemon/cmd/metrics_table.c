// SPDX-License-Identifier: GPL-2.0-only
/*
 * metrics_table.c - the metric table (metrics_table.h) rendered as Prometheus text, read by id,
 * and written up as docs/metrics.md.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/metrics_table.h"

enum metric_entry_kind { ENTRY_FAMILY, ENTRY_VALUE };

struct metric_entry {
	enum metric_entry_kind kind;
	const char *name, *type, *help; /* a family */
	unsigned int when;
	enum metric_id id; /* a value */
	const char *label_key, *label_value;
};

#define FAMILY_ENTRY(name, type, when, help)                                                       \
	{                                                                                          \
		ENTRY_FAMILY, name,	     (type) == METRIC_COUNTER ? "counter" : "gauge",       \
		help,	      METRIC_##when, 0,                                                    \
		NULL,	      NULL},
#define VALUE_ENTRY(id, key, value, expr) {ENTRY_VALUE, NULL, NULL, NULL, 0, id, key, value},

enum { METRIC_COUNTER, METRIC_GAUGE };
#define COUNTER METRIC_COUNTER
#define GAUGE	METRIC_GAUGE

static const struct metric_entry entries[] = {RP_METRICS(FAMILY_ENTRY, VALUE_ENTRY)};

#undef COUNTER
#undef GAUGE

#define NO_FAMILY(name, type, when, help)
#define VALUE_CASE(id, key, value, expr)                                                           \
	case id:                                                                                   \
		return (double)(expr);

double metrics_table_value(const struct metric_snapshot *S, enum metric_id id)
{
	switch (id) {
		RP_METRICS(NO_FAMILY, VALUE_CASE)
	case M_COUNT:
		break;
	}
	return 0;
}

void metrics_table_render(const struct metric_snapshot *S, struct metrics_buf *b)
{
	const struct metric_entry *family = NULL;
	char labels[128];
	size_t i;

	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		const struct metric_entry *e = &entries[i];

		if (e->kind == ENTRY_FAMILY) {
			family = e->when & S->modes ? e : NULL;
			if (family)
				metrics_buf_family(b, e->name, e->type, e->help);
			continue;
		}
		if (!family)
			continue;
		labels[0] = '\0';
		if (e->label_key)
			metrics_buf_label(labels, sizeof(labels), e->label_key, e->label_value);
		metrics_buf_sample(b, family->name, labels[0] ? labels : NULL,
				   metrics_table_value(S, e->id));
	}
}

static const char *when_text(unsigned int when)
{
	switch (when) {
	case METRIC_NATIVE:
		return "`stacks = mixed`";
	case METRIC_KERNEL:
		return "`stacks = mixed`, `kernel_stacks = yes`";
	case METRIC_ALONE:
		return "`stacks = mixed`, `native_processes` not `ruby`";
	case METRIC_WALL:
		return "`clock = wall`";
	case METRIC_SHIP:
		return "`upload_url` set";
	case METRIC_ENDPOINT:
		return "the service";
	default:
		return "always";
	}
}

void metrics_table_doc(FILE *out)
{
	const struct metric_entry *family = NULL;
	size_t i, nlabels = 0;

	fputs("<!-- generated from daemon/cmd/metrics_table.h by `make gen`: edit the table, not "
	      "this "
	      "-->\n"
	      "| Metric | Type | Labels | When | What it counts |\n"
	      "|---|---|---|---|---|\n",
	      out);
	for (i = 0; i <= sizeof(entries) / sizeof(entries[0]); i++) {
		const struct metric_entry *e =
			i < sizeof(entries) / sizeof(entries[0]) ? &entries[i] : NULL;

		if (family && (!e || e->kind == ENTRY_FAMILY)) {
			fprintf(out, "%s | %s | %s |\n", nlabels ? "" : "—",
				when_text(family->when), family->help);
			family = NULL;
		}
		if (!e)
			break;
		if (e->kind == ENTRY_FAMILY) {
			family = e;
			nlabels = 0;
			fprintf(out, "| `%s` | %s | ", e->name, e->type);
		} else if (e->label_key) {
			fprintf(out, "%s`%s=\"%s\"`", nlabels++ ? ", " : "", e->label_key,
				e->label_value);
		}
	}
}

const char *metrics_table_label_value(enum metric_id id)
{
	size_t i;

	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (entries[i].kind == ENTRY_VALUE && entries[i].id == id)
			return entries[i].label_value;
	return NULL;
}
