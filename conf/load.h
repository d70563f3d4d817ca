/* SPDX-License-Identifier: MIT */
/* A load in progress, shared by config.c (reading the file and the command line), store.c
 * (each value into its key's field) and rules.c (the tables' cross-key rules). */
#ifndef PLUGDISK_CONF_LOAD_H
#define PLUGDISK_CONF_LOAD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <libconfig.h>

#include "conf/config.h"
#include "conf/intwrap.h"
#include "conf/keys/key.h"

/* Where a key got its value: a file line, a command-line option, or neither (default). */
struct origin {
	const char *file;	/* libconfig's copy, valid while the config_t lives */
	unsigned line;
	const char *opt;	/* the option as typed: "--set", "-s"; or a preset's "profile" */
	const char *arg;	/* its argument: "disk.size=1000", "1000"; or "hdd" */
	bool preset;		/* from conf_preset: not set by the user */
};

struct conf_load {
	const struct conf_table *const *tabs;
	const char *file;	/* as the user gave it */
	struct pd_config *c;
	struct origin *origin;	/* one per key, by conf_key_find's index */
	char *err;
	size_t errlen;
	struct intwrap wrap;	/* the last file scanned for wrapped integers */
	bool first_pass;	/* applying the CONF_FIRST keys */
	char *checked_file;	/* the last included file whose permissions were checked */
};

/* --- config.c ------------------------------------------------------------------------- */

/* "ORIGIN: KEY: reason" into ld->err; returns @ret. */
int key_verr(struct conf_load *ld, const struct origin *o, const char *key, int ret,
	     const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
int key_err(struct conf_load *ld, const struct origin *o, const char *key, int ret,
	    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "ORIGIN: NAME: unknown key", with the nearest key or group when one is close. -EINVAL. */
int unknown_key(struct conf_load *ld, const struct origin *o, const char *name,
		const char *more);

/* Where the file's setting @s stands: its file, as the user spelled it, and line. */
struct origin setting_origin(struct conf_load *ld, const config_setting_t *s);

/* A file pulled in by @include must pass the main file's policy too. 0 or -errno. */
int check_include(struct conf_load *ld, const struct origin *o);

/* --- store.c -------------------------------------------------------------------------- */

/* The file's setting @s for the key called @full ("queue.plug"). 0 or -errno. */
int load_setting(struct conf_load *ld, const config_setting_t *s, const char *full);

/* @val, as text (--set, an option, a preset), for @k. 0 or -errno. */
int apply_value(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		const char *val);

/* --- rules.c -------------------------------------------------------------------------- */

/* Every table's validate hook, in order; the first refusal. */
int conf_validate(struct conf_load *ld);

#endif
