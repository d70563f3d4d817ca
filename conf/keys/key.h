/* SPDX-License-Identifier: MIT */
/* The configuration's keys: how a module declares the keys it owns (struct conf_table), and
 * the helpers the loader (config.c, store.c) uses to walk them. Only conf/ includes this file;
 * the rest of plugdisk sees struct pd_config (config.h). How to add a key: see config.h. */
#ifndef PLUGDISK_CONF_KEY_H
#define PLUGDISK_CONF_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libconfig.h>

#include "conf/config.h"

enum conf_type {
	CONF_BOOL,	/* true/false in the file; --set also takes 1/0, yes/no, on/off */
	CONF_U32,	/* a plain integer, stored in a 32- or 64-bit field (width); a key named
			 * "..._us" or "..._ms" also takes a duration string, "2ms" (units.h) */
	CONF_U64,
	CONF_SIZE,	/* an integer, or a size string ("4G", "1.5GiB", "1GB": core/util/units.h) */
	CONF_STRING,	/* a char * owned by struct pd_config; min/max bound its length */
	CONF_ENUM,	/* one word of the key's names, stored as its index in a uint32_t */
	CONF_CUSTOM,	/* anything else: the key's struct conf_custom parses and prints it */
};

enum {
	CONF_ZERO_OK = 1 << 0,		/* numbers: 0 is allowed besides min..max (unlimited) */
	CONF_NAME_CHARS = 1 << 1,	/* strings: [A-Za-z0-9._-] only */
	/* Applied before every other key, wherever it stands: the last one on the command
	 * line, else the file's. For a preset (profile) whose parser sets other keys with
	 * conf_preset(), so that whatever the user sets wins over it. */
	CONF_FIRST = 1 << 2,
	CONF_PER_SEC = 1 << 3,		/* sizes: a rate, "100MB/s" as well as "100MB" */
	/* A reload (SIGHUP) leaves the key as it was: a change takes effect at the next start.
	 * Documentation only (--doc-keys); daemon/main.c decides, and says so in its log. */
	CONF_RESTART = 1 << 4,
};

struct conf_key;
/* A load in progress: what the hooks and cross-key rules are given. */
struct conf_load;

/* Why a custom hook refused a value. The loader's message is
 * "ORIGIN: KEY<suffix>: text", ORIGIN being @at's file and line when set. */
struct conf_why {
	char text[512];			/* the reason alone: "not an NBD URI" */
	char suffix[32];		/* optional, after the key's name: "[2]" */
	const config_setting_t *at;	/* optional (load): the element it is about */
};

/* Fill @w->text from @fmt; returns -EINVAL, for "return conf_whyf(w, ...);". */
int conf_whyf(struct conf_why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The parser of a CONF_CUSTOM key; parse and print are required. A hook reaches the value it
 * sets with conf_value(ld, k) and the whole config being built with conf_loading(ld). A load
 * hook that reads integers out of a list or group gets libconfig's values, which wrap above
 * 32 bits without an L suffix (intwrap.h): take 64-bit or string values. */
struct conf_custom {
	/* Parse @text (a string setting of the file, or the VALUE of --set KEY=VALUE),
	 * releasing what the value held before. 0, -EINVAL (reason in @why), -ENOMEM. */
	int (*parse)(struct conf_load *ld, const struct conf_key *k, const char *text,
		     struct conf_why *why);
	/* Optional: a file setting that is not a string (a list, a group). Without it the
	 * file's value must be a string, handed to parse. Same returns as parse. */
	int (*load)(struct conf_load *ld, const struct conf_key *k, const config_setting_t *s,
		    struct conf_why *why);
	/* Print the value in libconfig syntax, as it follows "name = " (no ';'). */
	void (*print)(const struct pd_config *c, const struct conf_key *k, FILE *f);
	/* Optional: release what parse, load or the table's defaults allocated. */
	void (*release)(struct pd_config *c, const struct conf_key *k);
	/* What the file's value should be, for "expected ..., got ..." ("a string"). */
	const char *expected;
};

struct conf_key {
	const char *name;	/* "group.key", or "key" for a setting at the file's top level */
	enum conf_type type;
	size_t offset;		/* of its field in struct pd_config (CONF_KEY fills it) */
	size_t width;		/* sizeof that field: 4 or 8 for numbers */
	uint64_t min, max;	/* numbers: the value; strings: the length */
	uint64_t align;		/* numbers: must be a multiple of this (0 = any) */
	unsigned flags;		/* CONF_ZERO_OK, CONF_NAME_CHARS, CONF_FIRST, CONF_PER_SEC,
				 * CONF_RESTART */
	const char *help;	/* one line, meaning and unit, printed by --dump-config and
				 * --doc-keys (plugdisk.conf(5)) */
	const char *const *names;		/* CONF_ENUM: the words, NULL-terminated */
	const struct conf_custom *custom;	/* CONF_CUSTOM only */
};

/* A key of a built-in type whose value lives in struct pd_config's member @fld. */
#define CONF_KEY(nm, ty, fld, mn, mx, al, fl, hlp)                                            \
	{ .name = (nm), .type = (ty), .offset = offsetof(struct pd_config, fld),               \
	  .width = sizeof(((struct pd_config *)0)->fld), .min = (mn), .max = (mx),            \
	  .align = (al), .flags = (fl), .help = (hlp) }

/* One of the words @nms (a NULL-terminated array), kept as its index in uint32_t @fld;
 * @fl: CONF_RESTART or 0. */
#define CONF_ENUM_KEY_FLAGS(nm, fld, nms, fl, hlp)                                            \
	{ .name = (nm), .type = CONF_ENUM, .offset = offsetof(struct pd_config, fld),          \
	  .width = sizeof(((struct pd_config *)0)->fld), .flags = (fl), .help = (hlp),         \
	  .names = (nms) }
#define CONF_ENUM_KEY(nm, fld, nms, hlp) CONF_ENUM_KEY_FLAGS(nm, fld, nms, 0, hlp)

/* A key parsed by @cust (a struct conf_custom) into member @fld; @fl: CONF_FIRST or 0. */
#define CONF_CUSTOM_KEY(nm, fld, cust, fl, hlp)                                               \
	{ .name = (nm), .type = CONF_CUSTOM, .offset = offsetof(struct pd_config, fld),        \
	  .width = sizeof(((struct pd_config *)0)->fld), .flags = (fl), .help = (hlp),         \
	  .custom = &(cust) }

/* The keys one module owns. */
struct conf_table {
	const struct conf_key *keys;
	size_t nkeys;
	/* Optional: set this table's fields of @c to their defaults. Strings and other heap
	 * values are allocated here; a CONF_STRING left NULL means out of memory. */
	void (*defaults)(struct pd_config *c);
	/* Optional: rules across keys, run once the file and every option are applied.
	 * 0, or what conf_reject() or conf_check_not_above() returned. */
	int (*validate)(struct conf_load *ld, const struct pd_config *c);
	/* Optional: the section of plugdisk.conf(5) that documents these keys ("backend"),
	 * when it is not their group's. */
	const char *section;
};

#define CONF_TABLE(keys_, defaults_, validate_)                                               \
	{ .keys = (keys_), .nkeys = sizeof(keys_) / sizeof((keys_)[0]),                         \
	  .defaults = (defaults_), .validate = (validate_) }

/* A table documented in section @sec of plugdisk.conf(5). */
#define CONF_TABLE_SECTION(keys_, defaults_, validate_, sec_)                                 \
	{ .keys = (keys_), .nkeys = sizeof(keys_) / sizeof((keys_)[0]),                         \
	  .defaults = (defaults_), .validate = (validate_), .section = (sec_) }

/* Every table, in the order --dump-config prints their groups; NULL-terminated (tables.c). */
extern const struct conf_table *const conf_tables[];

/* --- for hooks and validate ----------------------------------------------------------- */

/* The config being built, and @k's value in it. */
struct pd_config *conf_loading(struct conf_load *ld);
void *conf_value(struct conf_load *ld, const struct conf_key *k);

/* Apply "KEY=VALUE" @set as a preset: checked like --set, named "OPT ARG" in messages
 * ("profile hdd: controller.iops: ..."), and not counted as set by the user
 * (conf_key_is_set). @opt and @arg must outlive the load. 0 or -errno. */
int conf_preset(struct conf_load *ld, const char *opt, const char *arg, const char *set);

/* "a list", "an integer": the libconfig type of @s, for "expected ..., got ..." messages. */
const char *conf_setting_type_name(const config_setting_t *s);

/* Refuse the load because of @key: "ORIGIN: KEY: reason", where ORIGIN is where @key got
 * its value (file:line, the option, or the file when it is a default). Returns -EINVAL. */
int conf_reject(struct conf_load *ld, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Whether @key got its value from the file or an option: not its default, not a preset. */
bool conf_key_is_set(const struct conf_load *ld, const char *key);

/* Numeric keys @a must not exceed @b. The message points at whichever the user set, @a
 * first, and names both. 0 or -EINVAL. */
int conf_check_not_above(struct conf_load *ld, const char *a, const char *b);

/* --- for the loader and the printer (key.c, keyvalue.c) ------------------------------ */

/* The key called @name (@len bytes, not NUL-terminated) in @tabs, and its index among all
 * of them (for per-key state), or NULL. */
const struct conf_key *conf_key_find(const struct conf_table *const *tabs, const char *name,
				     size_t len, size_t *index);

/* The key or group of @tabs nearest to the unknown @name (@len bytes), for "did you mean":
 * a key, a key without its group, or a group, with at most one letter in four wrong (one
 * in a short name); or NULL. A group is written into @buf (@buflen). */
const char *conf_key_nearest(const struct conf_table *const *tabs, const char *name,
			     size_t len, char *buf, size_t buflen);

/* How many keys @tabs hold. */
size_t conf_key_count(const struct conf_table *const *tabs);

/* Whether some key of @tabs is "@group.something". */
bool conf_group_known(const struct conf_table *const *tabs, const char *group);

/* "disk, mount, queue, controller": every group of @tabs, in order. */
void conf_group_list(const struct conf_table *const *tabs, char *buf, size_t len);

void *conf_field(struct pd_config *c, const struct conf_key *k);
uint64_t conf_num_get(const struct pd_config *c, const struct conf_key *k);
/* The caller has checked @v against k->max, which fits the field. */
void conf_num_put(struct pd_config *c, const struct conf_key *k, uint64_t v);

/* Check a value against @k's range (numbers) or length and characters (strings). 0, or
 * -EINVAL with the reason in @why. */
int conf_num_check(const struct conf_key *k, uint64_t v, char *why, size_t len);
int conf_str_check(const struct conf_key *k, const char *s, char *why, size_t len);

/* Defaults, release and printing over @tabs (conf_defaults & co. use conf_tables). */
void conf_defaults_of(const struct conf_table *const *tabs, struct pd_config *c);
bool conf_defaults_complete(const struct conf_table *const *tabs, const struct pd_config *c);
void conf_free_of(const struct conf_table *const *tabs, struct pd_config *c);
void conf_print_of(const struct conf_table *const *tabs, const struct pd_config *c, FILE *f);
/* @s as a libconfig string literal: quoted, with quotes, backslashes and control characters
 * escaped (a custom key's print callback). */
void conf_print_string(FILE *f, const char *s);

/* Load with the keys of @tabs instead of conf_tables (tests of the table interface). */
int conf_load_with(const struct conf_table *const *tabs, const char *file,
		   const struct conf_arg *args, size_t nargs, struct pd_config *out, char *err,
		   size_t errlen);

/* vsnprintf into @err unless it is NULL or @errlen is 0. */
void conf_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
