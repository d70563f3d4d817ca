/* SPDX-License-Identifier: MIT */
/* Loading and validation of the plugdisk configuration: a libconfig file, then the command
 * line's settings, then the tables' cross-key rules. Which keys there are is up to the key
 * tables (key.h, tables.c); this file only walks them. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libconfig.h>

#include "conf/config.h"
#include "conf/intwrap.h"
#include "conf/key.h"
#include "conf/parse.h"
#include "core/units.h"

/*
 * Notes on the design.
 *
 * Loading builds a private struct pd_config from the tables' defaults, applies the file,
 * then each command-line setting in order, and checks each value against its key's range
 * the moment it is set, so that the message can name where it came from. Cross-key rules
 * (each table's validate hook) run last; for those the origin of every key (file and line,
 * or the option and its argument) is remembered. @out is only written once everything
 * passed.
 *
 * libconfig wraps integer literals that do not fit in 32 bits; intwrap.c finds them.
 */

#define PATH_LEN 4095

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

/* --- messages ---------------------------------------------------------------------- */

static const char *origin_str(const struct origin *o, const char *file, char *buf, size_t len)
{
	if (o->opt)
		snprintf(buf, len, "%s %s", o->opt, *o->arg ? o->arg : "''");
	else if (o->line)
		snprintf(buf, len, "%s:%u", o->file ? o->file : file, o->line);
	else
		snprintf(buf, len, "%s", file ? file : "defaults");
	return buf;
}

static int key_verr(struct conf_load *ld, const struct origin *o, const char *key, int ret,
		    const char *fmt, va_list ap)
{
	char where[PATH_LEN + 64], why[512];

	vsnprintf(why, sizeof(why), fmt, ap);
	conf_errf(ld->err, ld->errlen, "%s: %s: %s",
		  origin_str(o, ld->file, where, sizeof(where)), key, why);
	return ret;
}

/* "ORIGIN: KEY: reason" into ld->err; returns @ret. */
static int key_err(struct conf_load *ld, const struct origin *o, const char *key, int ret,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int key_err(struct conf_load *ld, const struct origin *o, const char *key, int ret,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	key_verr(ld, o, key, ret, fmt, ap);
	va_end(ap);
	return ret;
}

/* "ORIGIN: NAME: unknown key", with the nearest key or group when one is close. */
static int unknown_key(struct conf_load *ld, const struct origin *o, const char *name,
		       const char *more)
{
	char buf[128];
	const char *near = conf_key_nearest(ld->tabs, name, strlen(name), buf, sizeof(buf));

	if (near)
		return key_err(ld, o, name, -EINVAL, "unknown key (did you mean %s?)", near);
	return key_err(ld, o, name, -EINVAL, "unknown key%s", more);
}

/* --- storing values ------------------------------------------------------------------ */

static void set_origin(struct conf_load *ld, const struct conf_key *k, const struct origin *o)
{
	size_t i;

	conf_key_find(ld->tabs, k->name, strlen(k->name), &i);
	ld->origin[i] = *o;
}

static int set_num(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		   uint64_t v)
{
	char why[256];

	if (conf_num_check(k, v, why, sizeof(why)))
		return key_err(ld, o, k->name, -EINVAL, "%s", why);
	conf_num_put(ld->c, k, v);
	set_origin(ld, k, o);
	return 0;
}

static int set_str(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		   const char *s)
{
	char **slot = conf_field(ld->c, k), *copy, why[256];

	if (conf_str_check(k, s, why, sizeof(why)))
		return key_err(ld, o, k->name, -EINVAL, "%s", why);
	copy = strdup(s);
	if (!copy)
		return key_err(ld, o, k->name, -ENOMEM, "out of memory");
	free(*slot);
	*slot = copy;
	set_origin(ld, k, o);
	return 0;
}

static void set_bool(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		     bool b)
{
	*(bool *)conf_field(ld->c, k) = b;
	set_origin(ld, k, o);
}

/* A size string: "1G", "4096", "1.5GiB"; a rate's may end in "/s" ("100MB/s"). */
static int set_size_str(struct conf_load *ld, const struct conf_key *k,
			const struct origin *o, const char *s)
{
	char num[64];
	size_t n = strlen(s);
	uint64_t v;
	int ret;

	if (*s == '-')
		return key_err(ld, o, k->name, -EINVAL, "must not be negative (got \"%s\")", s);
	if ((k->flags & CONF_PER_SEC) && n > 2 && n < sizeof(num) && !strcmp(s + n - 2, "/s")) {
		snprintf(num, sizeof(num), "%.*s", (int)(n - 2), s);
		ret = conf_parse_size(num, &v);
	} else {
		ret = conf_parse_size(s, &v);
	}
	if (ret == -ERANGE)
		return key_err(ld, o, k->name, -EINVAL, "overflow: \"%s\" does not fit in 64 bits",
			       s);
	if (ret)
		return key_err(ld, o, k->name, -EINVAL,
			       "not a %s: \"%s\" (bytes%s, with an optional suffix: K, M, G, T, P, "
			       "E or KiB, MiB... binary, KB, MB... decimal)",
			       k->flags & CONF_PER_SEC ? "rate" : "size", s,
			       k->flags & CONF_PER_SEC ? " per second" : "");
	return set_num(ld, k, o, v);
}

/* The nanoseconds in one unit of @k when it is a duration, named so: "..._us", "..._ms".
 * 0 for any other key. */
static uint64_t key_time_unit(const struct conf_key *k)
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

/* A duration key's value written with its unit: "2ms", "1.5s", "250us". */
static int set_duration_str(struct conf_load *ld, const struct conf_key *k,
			    const struct origin *o, const char *s)
{
	uint64_t unit = key_time_unit(k), ns;
	const char *uname = unit == 1000 ? "microseconds" : "milliseconds";
	int ret;

	if (*s == '-')
		return key_err(ld, o, k->name, -EINVAL, "must not be negative (got \"%s\")", s);
	ret = units_parse_duration(s, unit, &ns);
	if (ret == -ERANGE)
		return key_err(ld, o, k->name, -EINVAL, "overflow: \"%s\" does not fit in 64 bits",
			       s);
	if (ret)
		return key_err(ld, o, k->name, -EINVAL,
			       "not a duration: \"%s\" (%s, or a number with a unit: 2ms, 1.5s, "
			       "250us, 1min)", s, uname);
	if (ns % unit)
		return key_err(ld, o, k->name, -EINVAL, "\"%s\" is not a whole number of %s", s,
			       uname);
	return set_num(ld, k, o, ns / unit);
}

static struct origin setting_origin(struct conf_load *ld, const config_setting_t *s);

/* A CONF_CUSTOM key: @text for its parser, or the file's setting @s for its loader. */
static int set_custom(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		      const char *text, const config_setting_t *s)
{
	struct conf_why why = { .text = "invalid value" };
	struct origin at;
	char key[160];
	int ret;

	conf_errf(ld->err, ld->errlen, "%s", "");
	if (s)
		ret = k->custom->load(ld, k, s, &why);
	else
		ret = k->custom->parse(ld, k, text, &why);
	if (!ret) {
		set_origin(ld, k, o);
		return 0;
	}
	if (ld->err && ld->errlen && ld->err[0])
		return ret;	/* a key the hook set (conf_preset) said what was wrong */
	if (why.at) {
		at = setting_origin(ld, why.at);
		o = &at;
	}
	snprintf(key, sizeof(key), "%s%s", k->name, why.suffix);
	if (ret == -ENOMEM)
		return key_err(ld, o, key, ret, "out of memory");
	return key_err(ld, o, key, ret, "%s", why.text);
}

/* A CONF_ENUM key: one of its words. */
static int set_enum(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		    const char *s)
{
	char list[256];
	size_t n = 0;

	/* Other spellings of a word: the key's own word is what --dump-config prints. */
	static const char *const alias[][2] = { { "honor", "honour" } };

	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(s, alias[i][0]))
			s = alias[i][1];
	for (uint32_t i = 0; k->names[i]; i++) {
		if (!strcmp(s, k->names[i])) {
			conf_num_put(ld->c, k, i);
			set_origin(ld, k, o);
			return 0;
		}
	}
	list[0] = '\0';
	for (uint32_t i = 0; k->names[i] && n < sizeof(list); i++) {
		int w = snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", k->names[i]);

		n += w > 0 ? (size_t)w : 0;
	}
	return key_err(ld, o, k->name, -EINVAL, "must be one of %s (got \"%s\")", list, s);
}

/* A number as the command line gives it. */
static int set_num_str(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		       const char *val)
{
	uint64_t v;
	int ret;

	if (*val == '-' && isdigit((unsigned char)val[1]))
		return key_err(ld, o, k->name, -EINVAL, "must not be negative (got %s)", val);
	if (key_time_unit(k) && !units_is_bare(val))
		return set_duration_str(ld, k, o, val);
	ret = conf_parse_u64_whole(val, &v);
	if (ret == -ERANGE)
		return key_err(ld, o, k->name, -EINVAL, "overflow: %s does not fit in 64 bits", val);
	if (ret)
		return key_err(ld, o, k->name, -EINVAL, "not a number");
	return set_num(ld, k, o, v);
}

/* --- the file ------------------------------------------------------------------------- */

static const char *type_name(int type)
{
	switch (type) {
	case CONFIG_TYPE_GROUP: return "a group";
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64: return "an integer";
	case CONFIG_TYPE_FLOAT: return "a floating-point number";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL: return "a boolean";
	case CONFIG_TYPE_ARRAY: return "an array";
	case CONFIG_TYPE_LIST: return "a list";
	default: return "an unknown type";
	}
}

static const char *expected(const struct conf_key *k)
{
	switch (k->type) {
	case CONF_BOOL: return "true or false";
	case CONF_U32:
	case CONF_U64:
		return key_time_unit(k) ? "an integer or a duration string such as \"2ms\""
					: "an integer";
	case CONF_SIZE: return "an integer or a size string such as \"1G\"";
	case CONF_STRING:
	case CONF_ENUM: return "a string";
	case CONF_CUSTOM: return k->custom->expected ? k->custom->expected : "a string";
	}
	return "?";
}

const char *conf_setting_type_name(const config_setting_t *s)
{
	return type_name(config_setting_type(s));
}

static struct origin setting_origin(struct conf_load *ld, const config_setting_t *s)
{
	const char *f = config_setting_source_file(s);
	struct origin o = { .file = f ? f : ld->file, .line = config_setting_source_line(s) };

	/* Messages name the file the way the user spelled it */
	if (f && !strcmp(f, ld->file))
		o.file = ld->file;
	return o;
}

/* A file pulled in by @include must pass the main file's policy too. */
static int check_include(struct conf_load *ld, const struct origin *o)
{
	int ret;

	if (geteuid() != 0 || !strcmp(o->file, ld->file))
		return 0;
	if (ld->checked_file && !strcmp(ld->checked_file, o->file))
		return 0;
	ret = conf_check_file_safe(o->file, 0, ld->err, ld->errlen);
	if (ret)
		return ret;
	free(ld->checked_file);
	ld->checked_file = strdup(o->file);
	return ld->checked_file ? 0 : -ENOMEM;
}

/* An integer setting of the file. */
static int load_int(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		    const config_setting_t *s)
{
	long long v;

	if (config_setting_type(s) == CONFIG_TYPE_INT) {
		bool wrapped;
		int ret = intwrap_check(&ld->wrap, o->file, config_setting_name(s), o->line, &wrapped);
		if (ret)
			return key_err(ld, o, k->name, ret, "out of memory");
		if (wrapped)
			return key_err(ld, o, k->name, -EINVAL,
				       "overflow: the integer does not fit in 32 bits "
				       "(append L for a 64-bit integer%s)",
				       k->type == CONF_SIZE ? ", or write a size string like \"4G\"" : "");
	}
	v = config_setting_get_int64(s);
	if (v == LLONG_MAX || v == LLONG_MIN)
		return key_err(ld, o, k->name, -EINVAL, "overflow: the integer does not fit in 64 bits");
	if (v < 0)
		return key_err(ld, o, k->name, -EINVAL, "must not be negative (got %lld)", v);
	return set_num(ld, k, o, (uint64_t)v);
}

static int load_setting(struct conf_load *ld, const config_setting_t *s, const char *full)
{
	const struct conf_key *k = conf_key_find(ld->tabs, full, strlen(full), NULL);
	struct origin o = setting_origin(ld, s);
	int type = config_setting_type(s);
	int ret;

	ret = check_include(ld, &o);
	if (ret)
		return ret;
	if (!k)
		return unknown_key(ld, &o, full, "");
	if ((k->flags & CONF_FIRST) && !ld->first_pass)
		return 0;	/* applied already */

	switch (k->type) {
	case CONF_BOOL:
		if (type != CONFIG_TYPE_BOOL)
			break;
		set_bool(ld, k, &o, config_setting_get_bool(s));
		return 0;
	case CONF_STRING:
		if (type != CONFIG_TYPE_STRING)
			break;
		return set_str(ld, k, &o, config_setting_get_string(s));
	case CONF_ENUM:
		if (type != CONFIG_TYPE_STRING)
			break;
		return set_enum(ld, k, &o, config_setting_get_string(s));
	case CONF_CUSTOM:
		if (k->custom->load)
			return set_custom(ld, k, &o, NULL, s);
		if (type != CONFIG_TYPE_STRING)
			break;
		return set_custom(ld, k, &o, config_setting_get_string(s), NULL);
	case CONF_SIZE:
		if (type == CONFIG_TYPE_STRING)
			return set_size_str(ld, k, &o, config_setting_get_string(s));
		/* fall through */
	case CONF_U32:
	case CONF_U64:
		if (type == CONFIG_TYPE_STRING && key_time_unit(k))
			return set_duration_str(ld, k, &o, config_setting_get_string(s));
		if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
			break;
		return load_int(ld, k, &o, s);
	}
	return key_err(ld, &o, full, -EINVAL, "expected %s, got %s", expected(k), type_name(type));
}

/* A setting at the top of the file: a group of keys, or a top-level key. */
static int load_top(struct conf_load *ld, const config_setting_t *g)
{
	const char *gname = config_setting_name(g);
	bool known = conf_group_known(ld->tabs, gname);
	char full[256];

	if (conf_key_find(ld->tabs, gname, strlen(gname), NULL))
		return load_setting(ld, g, gname);
	if (!known || !config_setting_is_group(g)) {
		struct origin o = setting_origin(ld, g);
		char groups[256];
		int ret = check_include(ld, &o);

		if (ret)
			return ret;
		conf_group_list(ld->tabs, groups, sizeof(groups));
		if (!known) {
			char more[300];

			snprintf(more, sizeof(more), " (groups are %s)", groups);
			return unknown_key(ld, &o, gname, more);
		}
		return key_err(ld, &o, gname, -EINVAL, "expected a group { ... }, got %s",
			       type_name(config_setting_type(g)));
	}
	for (int i = 0; i < config_setting_length(g); i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		int ret;

		snprintf(full, sizeof(full), "%s.%s", gname, config_setting_name(s));
		ret = load_setting(ld, s, full);
		if (ret)
			return ret;
	}
	return 0;
}

/* Check and parse the file. */
static int load_file(struct conf_load *ld, config_t *cfg)
{
	int ret;

	ret = conf_check_file_safe(ld->file, geteuid(), ld->err, ld->errlen);
	if (ret)
		return ret;
	if (!config_read_file(cfg, ld->file)) {
		const char *ef = config_error_file(cfg), *text;

		if (config_error_type(cfg) == CONFIG_ERR_FILE_IO) {
			conf_errf(ld->err, ld->errlen, "%s: cannot read: %s", ef ? ef : ld->file,
				  config_error_text(cfg));
			return -EIO;
		}
		if (!ef || !strcmp(ef, ld->file))
			ef = ld->file;
		text = config_error_text(cfg);
		if (!text || !strcmp(text, "syntax error"))	/* libconfig's text for most */
			conf_errf(ld->err, ld->errlen, "%s:%d: syntax error", ef,
				  config_error_line(cfg));
		else
			conf_errf(ld->err, ld->errlen, "%s:%d: syntax error: %s", ef,
				  config_error_line(cfg), text);
		return -EINVAL;
	}
	return 0;
}

/* Every setting of the file read by load_file. */
static int load_settings(struct conf_load *ld, config_t *cfg)
{
	const config_setting_t *root = config_root_setting(cfg);

	for (int i = 0; i < config_setting_length(root); i++) {
		int ret = load_top(ld, config_setting_get_elem(root, (unsigned)i));

		if (ret)
			return ret;
	}
	return 0;
}

/* --- the command line ----------------------------------------------------------------- */

/* @val, as text, for @k. */
static int apply_value(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
		       const char *val)
{
	switch (k->type) {
	case CONF_BOOL: {
		bool b;
		if (conf_parse_bool(val, &b))
			return key_err(ld, o, k->name, -EINVAL,
				       "expected true/false, 1/0, yes/no or on/off (got \"%s\")", val);
		set_bool(ld, k, o, b);
		return 0;
	}
	case CONF_STRING:
		return set_str(ld, k, o, val);
	case CONF_ENUM:
		return set_enum(ld, k, o, val);
	case CONF_CUSTOM:
		return set_custom(ld, k, o, val, NULL);
	case CONF_SIZE:
		return set_size_str(ld, k, o, val);
	case CONF_U32:
	case CONF_U64:
		return set_num_str(ld, k, o, val);
	}
	return -EINVAL;
}

/* "KEY=VALUE" @set: its key into *@kp, its value into *@valp. */
static int split_set(struct conf_load *ld, const struct origin *o, const char *set,
		     const struct conf_key **kp, const char **valp)
{
	const char *eq = strchr(set, '=');
	char name[128];

	if (!eq || eq == set) {
		conf_errf(ld->err, ld->errlen, "%s %s: expected KEY=VALUE", o->opt, o->arg);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(eq - set), set);
	*kp = conf_key_find(ld->tabs, set, (size_t)(eq - set), NULL);
	if (!*kp)
		return unknown_key(ld, o, name, "");
	*valp = eq + 1;
	return 0;
}

/* One setting: "--set KEY=VALUE", or an option for one key ("-s SIZE"). */
static int apply_arg(struct conf_load *ld, const struct conf_arg *a)
{
	struct origin o = { .opt = a->opt, .arg = a->arg };
	const struct conf_key *k;
	const char *val = a->arg;

	if (a->key) {
		k = conf_key_find(ld->tabs, a->key, strlen(a->key), NULL);
		if (!k)
			return unknown_key(ld, &o, a->key, "");
	} else {
		int ret = split_set(ld, &o, a->arg, &k, &val);

		if (ret)
			return ret;
	}
	if ((k->flags & CONF_FIRST) && !ld->first_pass)
		return 0;	/* the last one was applied first */
	return apply_value(ld, k, &o, val);
}

int conf_preset(struct conf_load *ld, const char *opt, const char *arg, const char *set)
{
	struct origin o = { .opt = opt, .arg = arg, .preset = true };
	const struct conf_key *k = NULL;
	const char *val = NULL;
	int ret = split_set(ld, &o, set, &k, &val);

	return ret ? ret : apply_value(ld, k, &o, val);
}

struct pd_config *conf_loading(struct conf_load *ld)
{
	return ld->c;
}

void *conf_value(struct conf_load *ld, const struct conf_key *k)
{
	return conf_field(ld->c, k);
}

/* The name of the key "--set" @a sets, in @buf; or a->key. */
static const char *arg_key(const struct conf_arg *a, char *buf, size_t len)
{
	const char *eq;

	if (a->key)
		return a->key;
	eq = strchr(a->arg, '=');
	snprintf(buf, len, "%.*s", eq ? (int)(eq - a->arg) : 0, a->arg);
	return buf;
}

/* The CONF_FIRST keys, before anything else: the last given on the command line, else the
 * file's. */
static int apply_first(struct conf_load *ld, config_t *cfg, const struct conf_arg *args,
		       size_t n)
{
	int ret = 0;

	ld->first_pass = true;
	for (const struct conf_table *const *t = ld->tabs; *t && !ret; t++) {
		for (size_t i = 0; i < (*t)->nkeys && !ret; i++) {
			const struct conf_key *k = &(*t)->keys[i];
			const struct conf_arg *last = NULL;
			const config_setting_t *s;
			char name[128];

			if (!(k->flags & CONF_FIRST))
				continue;
			for (size_t j = 0; j < n; j++)
				if (!strcmp(arg_key(&args[j], name, sizeof(name)), k->name))
					last = &args[j];
			if (last)
				ret = apply_arg(ld, last);
			else if (cfg && (s = config_lookup(cfg, k->name)))
				ret = load_setting(ld, s, k->name);
		}
	}
	ld->first_pass = false;
	return ret;
}

/* --- cross-key rules ------------------------------------------------------------------ */

static const struct origin *key_origin(const struct conf_load *ld, const char *key,
				       const struct conf_key **kp)
{
	size_t i;
	const struct conf_key *k = conf_key_find(ld->tabs, key, strlen(key), &i);

	if (kp)
		*kp = k;
	return k ? &ld->origin[i] : NULL;
}

bool conf_key_is_set(const struct conf_load *ld, const char *key)
{
	const struct origin *o = key_origin(ld, key, NULL);

	return o && (o->line || (o->opt && !o->preset));
}

int conf_reject(struct conf_load *ld, const char *key, const char *fmt, ...)
{
	static const struct origin none;
	const struct origin *o = key_origin(ld, key, NULL);
	va_list ap;

	va_start(ap, fmt);
	key_verr(ld, o ? o : &none, key, -EINVAL, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int conf_check_not_above(struct conf_load *ld, const char *a, const char *b)
{
	const struct conf_key *ka, *kb;
	uint64_t va, vb;

	key_origin(ld, a, &ka);
	key_origin(ld, b, &kb);
	va = conf_num_get(ld->c, ka);
	vb = conf_num_get(ld->c, kb);
	if (va <= vb)
		return 0;
	if (conf_key_is_set(ld, a) || !conf_key_is_set(ld, b))
		return conf_reject(ld, a, "%" PRIu64 " is larger than %s (%" PRIu64 ")", va, b, vb);
	return conf_reject(ld, b, "%" PRIu64 " is smaller than %s (%" PRIu64 ")", vb, a, va);
}

static int validate(struct conf_load *ld)
{
	for (const struct conf_table *const *t = ld->tabs; *t; t++) {
		int ret = (*t)->validate ? (*t)->validate(ld, ld->c) : 0;

		if (ret)
			return ret;
	}
	return 0;
}

/* --- public ----------------------------------------------------------------------------- */

static int load(const struct conf_table *const *tabs, const char *file,
		const struct conf_arg *args, size_t n, struct pd_config *out, char *err,
		size_t errlen)
{
	struct pd_config c;
	struct conf_load ld = { .tabs = tabs, .file = file, .c = &c, .err = err, .errlen = errlen };
	config_t cfg;
	int ret = 0;

	conf_errf(err, errlen, "%s", "");
	conf_defaults_of(tabs, &c);
	config_init(&cfg);
	ld.origin = calloc(conf_key_count(tabs) + 1, sizeof(*ld.origin));
	if (!ld.origin || !conf_defaults_complete(tabs, &c)) {
		conf_errf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (file) {
		ret = load_file(&ld, &cfg);
		if (ret)
			goto out;
	}
	ret = apply_first(&ld, file ? &cfg : NULL, args, n);
	if (!ret && file)
		ret = load_settings(&ld, &cfg);
	for (size_t i = 0; i < n && !ret; i++)
		ret = apply_arg(&ld, &args[i]);
	if (!ret)
		ret = validate(&ld);
	c.disk_size_given = conf_key_is_set(&ld, "disk.size");
out:
	/* origins point into cfg: messages are written, so it may go now */
	config_destroy(&cfg);
	intwrap_release(&ld.wrap);
	free(ld.checked_file);
	free(ld.origin);
	if (ret) {
		conf_free_of(tabs, &c);
		return ret;
	}
	*out = c;
	return 0;
}

int conf_load(const char *file, char *const *sets, size_t nsets, struct pd_config *out,
	      char *err, size_t errlen)
{
	struct conf_arg *args = calloc(nsets + 1, sizeof(*args));
	int ret;

	if (!args) {
		conf_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < nsets; i++)
		args[i] = (struct conf_arg){ .opt = "--set", .arg = sets[i] };
	ret = conf_load_args(file, args, nsets, out, err, errlen);
	free(args);
	return ret;
}

int conf_load_args(const char *file, const struct conf_arg *args, size_t nargs,
		   struct pd_config *out, char *err, size_t errlen)
{
	return load(conf_tables, file, args, nargs, out, err, errlen);
}

int conf_load_with(const struct conf_table *const *tabs, const char *file,
		   const struct conf_arg *args, size_t nargs, struct pd_config *out, char *err,
		   size_t errlen)
{
	return load(tabs, file, args, nargs, out, err, errlen);
}
