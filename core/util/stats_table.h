/* SPDX-License-Identifier: MIT */
/* A producer's stats names, said once: each name's pattern, kind, unit and meaning, and where
 * its value is. The same table writes the producer's lines of MOUNTPOINT/stats
 * (stats_table_write()) and tells every reader what they are: `plugdisk stats --list-names`,
 * the Prometheus names and HELP text, `plugdisk top` and doc/stats.md (generated from it).
 *
 * A pattern is a name with brace groups and N: "{read,write}_bios" stands for read_bios and
 * write_bios ({a,b,} may hold an empty alternative), "nbd_connN_state" for nbd_conn0_state,
 * nbd_conn1_state..., N being one of the numbers the table's producer gives for its snapshot
 * (its connections, its faults). A pattern is written name by name, leftmost group slowest,
 * so that the stats file's lines come in the table's order.
 *
 * A value is a field of the producer's snapshot, named with STATS_FIELD() (its type is read off
 * the field; a group steps through an array with .step), or what a function computes from it
 * (.fn) when it is not a field as it is. */
#ifndef PLUGDISK_STATS_TABLE_H
#define PLUGDISK_STATS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A counter only grows, between resets of the stats; a gauge is a figure of the moment. */
enum stats_kind { STATS_GAUGE, STATS_COUNTER };

/* How a value is written: an unsigned or signed integer, or a word (stop_reason). */
enum stats_type { STATS_U64, STATS_I64, STATS_U32, STATS_INT, STATS_BOOL, STATS_WORD };

struct stats_value {
	enum stats_type type;	/* STATS_U64, STATS_I64 or STATS_WORD */
	union {
		uint64_t u;
		int64_t i;
		const char *word;
	};
};

#define STATS_MAX_GROUPS 2

/* The value of a name at @alt: one index per brace group or N of its pattern, leftmost
 * first (for N, the index of the number among those the table's numbers() gives). */
typedef struct stats_value stats_value_fn(const void *snap, const unsigned int *alt);

struct stats_name {
	const char *pattern;	/* "{read,write}_bios": {a,b,} alternatives, N a number */
	enum stats_kind kind;
	const char *unit;	/* as doc/stats.md gives it: bytes, µs, 0/1, count... */
	const char *help;	/* one line: Prometheus' HELP */
	const char *doc;	/* its meaning in doc/stats.md's tables (markdown) */
	const char *section;	/* non-NULL: a "# SECTION" comment line comes before it */
	/* Where the value is: .fn, or the field at .off in the snapshot, of .type, the
	 * value at alternative k of group g being .step[g] * k bytes further on. */
	stats_value_fn *fn;
	enum stats_type type;
	size_t off;
	size_t step[STATS_MAX_GROUPS];
	uint32_t div;		/* divided by this, when not 0 (nanoseconds to µs) */
};

/* The field MEMBER of snapshot type T: its offset and, from its C type, how it is written. */
#define STATS_FIELD(T, member)                                                                 \
	.off = offsetof(T, member),                                                            \
	.type = _Generic(((T *)0)->member,                                                     \
			 uint64_t: STATS_U64,                                                  \
			 int64_t: STATS_I64,                                                   \
			 uint32_t: STATS_U32,                                                  \
			 int: STATS_INT,                                                       \
			 bool: STATS_BOOL,                                                     \
			 const char *: STATS_WORD)

struct stats_table {
	const char *producer;	/* "queue", "cache", "nbd": --list-names says whose names */
	const struct stats_name *names;
	size_t nr;
	/* For patterns with N: how many numbers @snap has, and the k-th of them, and what a
	 * number is, as a label of the Prometheus names ("conn": nbd_conn_state{conn="2"}). */
	const char *number_label;
	unsigned int (*nr_numbers)(const void *snap);
	unsigned int (*number)(const void *snap, unsigned int k);
};

#define STATS_TABLE_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline struct stats_value stats_u64(uint64_t v)
{
	return (struct stats_value){ .type = STATS_U64, .u = v };
}

static inline struct stats_value stats_i64(int64_t v)
{
	return (struct stats_value){ .type = STATS_I64, .i = v };
}

static inline struct stats_value stats_word(const char *w)
{
	return (struct stats_value){ .type = STATS_WORD, .word = w };
}

/* Append the `name value` lines of every name of @t, with their sections' comments, for the
 * producer's snapshot @snap, to @buf at *@pos (stats_put()'s rules: never past @len). */
void stats_table_write(const struct stats_table *t, const void *snap, char *buf, size_t len,
		       size_t *pos);

/* stats_table_write() into an empty @buf: returns the length written (< @len). */
size_t stats_table_format(const struct stats_table *t, const void *snap, char *buf, size_t len);

/* Whether @pattern matches the whole of @name ("N" matching one or more digits). */
bool stats_pattern_match(const char *pattern, const char *name);

/* Check @t: every pattern well formed (at most STATS_MAX_GROUPS groups, N only with
 * numbers()), a value source for each, a help and a doc. 0, or -EINVAL naming the first bad
 * name in @err. */
int stats_table_check(const struct stats_table *t, char *err, size_t errlen);

#endif
