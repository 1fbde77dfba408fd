/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * view.h - `rubyprofd report`: profiles read by pprofread merged into one call tree (stacks to
 * sample counts), filtered, and written as a flame graph (HTML or SVG), speedscope JSON, folded
 * stacks or a top table.
 *
 * Frames are (kind, name, file, first line); the tree merges equal frames under equal parents,
 * so N files of a service's intervals are one view. Values are sample counts: the "samples" sample
 * type when the profile has one, else its first. Every table is bounded; a bound hit is counted
 * in the stats and named by the writers.
 */
#ifndef RP_VIEW_H
#define RP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "view/pprofread.h"

#define VIEW_MAX_FRAMES                                                                            \
	(1u << 22) /* distinct frames; past it, frames become one "[too many frames]" */
#define VIEW_MAX_NODES	     (1u << 25) /* tree nodes; past it, a stack ends at its deepest known node */
#define VIEW_MAX_LABELS	     8
#define VIEW_MAX_STACKS	     (1u << 20) /* distinct stacks for `top` (aggregate.h's table) */
/* --by frame:/label: groups: at most VIEW_MAX_GROUPS shown (the biggest), the rest summed in one
 * "(other groups)"; at most VIEW_MAX_GROUPS_SEEN told apart while reading (later ones go to
 * "(other groups)" at once); names cut at VIEW_GROUP_NAME_MAX bytes. */
#define VIEW_MAX_GROUPS	     100u
#define VIEW_MAX_GROUPS_SEEN 1000u
#define VIEW_GROUP_NAME_MAX  200
#define VIEW_OTHER_GROUPS    "(other groups)"

enum view_kind {
	VIEW_RUBY = 0,
	VIEW_CFUNC = 1,	 /* a C function called from Ruby ([c]) */
	VIEW_GC = 2,	 /* the garbage collector and its phases */
	VIEW_JIT = 3,	 /* JIT-compiled code */
	VIEW_NATIVE = 4, /* native code: a mapping that is a file */
	VIEW_OTHER = 5,	 /* rubyprofd's own markers: no Ruby context, truncation... */
	VIEW_GROUP = 6,	 /* --by frame:/label: a group, the root's child of its stacks */
	VIEW_NKINDS
};

struct view_frame {
	const char *name;
	const char *file; /* "" when none */
	int64_t line;	  /* the function's first line, 0 when unknown */
	enum view_kind kind;
};

/* Node 0 is the root (no frame); children are linked, sorted by name after view_finish(). */
struct view_node {
	uint32_t frame;			 /* view_frame id */
	uint32_t parent, child, sibling; /* 0: none (the root is never a child) */
	uint32_t depth;			 /* the root's children are at 1 */
	uint64_t self, total;
};

enum view_group_by {
	VIEW_BY_NONE = 0,
	VIEW_BY_FRAME, /* the first frame from the root whose name matches group_arg (a regex) */
	VIEW_BY_LABEL, /* the value of the label group_arg */
};

struct view_filter {
	pid_t pid;	    /* 0: all */
	const char *thread; /* a tid (digits) or a thread name; NULL: all */
	const char *label_key[VIEW_MAX_LABELS], *label_val[VIEW_MAX_LABELS];
	size_t nlabels;	   /* samples must have every label (string or number) */
	const char *focus; /* POSIX extended regex on frame names and files; NULL: none */
	int64_t since_ns,
		until_ns; /* files whose time range misses [since, until] are skipped; 0: open */
	bool want_top;	  /* also keep the stacks for view_write_top() */
	bool by_line;	  /* top: one row per line, not per function */
	enum view_group_by group_by; /* --by frame:REGEX or label:KEY */
	const char *group_arg;	     /* the REGEX or the KEY */
};

struct view_stats {
	uint64_t files, files_skipped;	/* read; skipped by --since/--until */
	uint64_t samples, samples_kept; /* read (value > 0); kept by the filters */
	uint64_t frames, nodes, depth_max;
	uint64_t frames_refused;	  /* past VIEW_MAX_FRAMES */
	uint64_t nodes_truncated;	  /* stacks cut short at VIEW_MAX_NODES */
	uint64_t top_dropped;		  /* stacks left out of `top`: its table was full */
	uint64_t groups;		  /* groups told apart (--by frame:/label:) */
	uint64_t groups_merged;		  /* of them, summed in "(other groups)" at the end */
	uint64_t group_samples_unseen;	  /* samples of groups past VIEW_MAX_GROUPS_SEEN */
	int64_t time_min_ns, time_max_ns; /* the files' time range */
};

struct view;

/*
 * Parses a --by value into f: line or function (top's rows), frame:REGEX or label:KEY (groups).
 * 0, or -EINVAL with a message in err (an unknown kind, an empty REGEX or KEY, a bad REGEX).
 * The strings stay arg's.
 */
int view_parse_by(const char *arg, struct view_filter *f, char *err, size_t errlen);

/*
 * Whether a sample label named key is the label a user names as want: the same name, or want
 * as collectors take label names (every byte but [A-Za-z0-9_] as '_', a leading digit after a
 * '_': the attribute http.route is the label http_route).
 */
bool view_label_key_is(const char *key, const char *want);

/* Compiles the filter (copied); NULL with errno set and a message in err (a bad --focus). */
struct view *view__new(const struct view_filter *f, char *err, size_t errlen);
void view__free(struct view *v);

/* Adds a profile's samples; name is used in messages. 1: skipped by the time range, 0, -errno. */
int view_add_profile(struct view *v, const struct pprofread *r, const char *name, char *err,
		     size_t errlen);
/* Reads path with pprofread and adds it. As view_add_profile; err names the file and the byte. */
int view_add_file(struct view *v, const char *path, char *err, size_t errlen);
/* Sorts every node's children by name (the flame graph's order); with groups, sums those past
 * VIEW_MAX_GROUPS into "(other groups)". Call once, after the adds. */
int view_finish(struct view *v);

uint64_t view_total(const struct view *v);
size_t view_nnodes(const struct view *v);
const struct view_node *view_node(const struct view *v, uint32_t i);
/* The node after i in preorder (children first, then siblings, then an ancestor's sibling;
 * children in view_finish's order); 0 after the last. view_next_node(v, 0) is the first. */
uint32_t view_next_node(const struct view *v, uint32_t i);
const struct view_frame *view_frame(const struct view *v, uint32_t id);
size_t view_nframes(const struct view *v);
void view_stats(const struct view *v, struct view_stats *out);
/* With --by frame:/label:, the text of the grouping ("frame:Controller#"); else NULL. */
const char *view_group_by_text(const struct view *v);
const char *view_kind_name(enum view_kind k);

/* The writers; each 0 or -errno (-EIO: a write error). title: shown by the graphical ones. */
int view_write_collapsed(const struct view *v, FILE *out);
int view_write_top(const struct view *v, FILE *out, unsigned int top);
int view_write_speedscope(const struct view *v, FILE *out, const char *title);
int view_write_flamegraph(const struct view *v, FILE *out, const char *title);
int view_write_svg(const struct view *v, FILE *out, const char *title);

/* Helpers of the writers: a JSON string, quotes included ('<', '>', '&' escaped too, so that
 * it is safe inside <script>); text for XML (&, <, >, quotes escaped, control characters as
 * spaces, bytes that are not UTF-8 as U+FFFD: the document stays XML whatever s holds). */
void view_put_json_string(FILE *out, const char *s);
void view_put_xml_text(FILE *out, const char *s);

/* "flamegraph", "svg", "speedscope", "collapsed", "top"; NULL for others. */
const char *view_format_ext(const char *format); /* ".html", ".svg", ... */
/* Writes v as format to out. 0, -EINVAL (unknown format) or -errno. */
int view_write(const struct view *v, const char *format, FILE *out, const char *title,
	       unsigned int top);

#endif
