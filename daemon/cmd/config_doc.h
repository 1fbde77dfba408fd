/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * config_doc.h - what is written from the key table (config_keys.h): --help, and the documents
 * that `make gen` writes into the tree.
 */
#ifndef RP_CONFIG_DOC_H
#define RP_CONFIG_DOC_H

#include <stddef.h>
#include <stdio.h>

/* --help, generated from the table. */
void config_doc_help(FILE *out);

/*
 * The generated documents (scripts/gendocs.c writes them into the tree, make gen; the unit
 * tests compare): the table of docs/configuration.md, the OPTIONS section of rubyprofd(8),
 * systemd/rubyprofd.conf and README.md's Usage.
 */
void config_doc_markdown(FILE *out);
void config_doc_man(FILE *out);
void config_doc_conf(FILE *out);
/* config_doc_help in a fenced code block (docs/usage.md). */
void config_doc_usage(FILE *out);

/* A bound as the configuration spells it: "8K", "1048576G"; "1s", "10m", "3650d". */
const char *config_doc_size_text(double v, char *buf, size_t len);
const char *config_doc_duration_text(double v, char *buf, size_t len);

#endif
