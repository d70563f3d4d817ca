/* SPDX-License-Identifier: MIT */
/* How key.c, keyvalue.c and keydoc.c walk the key tables: every key in order, a key's group,
 * and the value printers the documentation reuses. Internal to those three files. */
#ifndef PLUGDISK_CONF_KEYWALK_H
#define PLUGDISK_CONF_KEYWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conf/keys/key.h"

#define for_each_key(tabs, t, k)                                                              \
	for (const struct conf_table *const *t = (tabs); *t; t++)                              \
		for (const struct conf_key *k = (*t)->keys, *k##_end = k + (*t)->nkeys;       \
		     k < k##_end; k++)

/* The length of @k's group ("queue" of "queue.plug"), 0 for a top-level key. */
static inline size_t group_len(const struct conf_key *k)
{
	const char *dot = strchr(k->name, '.');

	return dot ? (size_t)(dot - k->name) : 0;
}

static inline bool same_group(const struct conf_key *a, const struct conf_key *b)
{
	size_t n = group_len(a);

	return n && n == group_len(b) && !strncmp(a->name, b->name, n);
}

/* Whether @k is the first key of its group in @tabs (the group's place in the order). */
static inline bool group_first(const struct conf_table *const *tabs, const struct conf_key *k)
{
	for_each_key(tabs, t, o) {
		if (o == k)
			return true;
		if (same_group(o, k))
			return false;
	}
	return false;
}

/* @v as --dump-config writes a number of @k: a size as "1G" when it is an exact multiple of a
 * binary unit, else the plain number (keyvalue.c). */
const char *conf_num_str(const struct conf_key *k, uint64_t v, char *buf, size_t len);

/* @k's value in @c as it follows "name = " in libconfig syntax, no ';' (keyvalue.c). */
void conf_print_value(FILE *f, const struct pd_config *c, const struct conf_key *k);

/* The nanoseconds in one unit of @k when it is a duration, named so: "..._us", "..._ms".
 * 0 for any other key. */
static inline uint64_t conf_key_time_unit(const struct conf_key *k)
{
	size_t n = strlen(k->name);

	if (k->type != CONF_U32 && k->type != CONF_U64)
		return 0;
	if (n > 3 && !strcmp(k->name + n - 3, "_us"))
		return 1000;
	if (n > 3 && !strcmp(k->name + n - 3, "_ms"))
		return 1000000;
	return 0;
}

#endif
