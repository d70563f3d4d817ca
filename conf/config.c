/* SPDX-License-Identifier: MIT */
/* Loading the plugdisk configuration: the tables' defaults, a libconfig file, then the
 * command line's settings in order, then the cross-key rules (rules.c); store.c turns each
 * value into its key's field. Which keys there are is up to the key tables (key.h, tables.c). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libconfig.h>

#include "conf/config.h"
#include "conf/intwrap.h"
#include "conf/keys/key.h"
#include "conf/load.h"

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
 * libconfig wraps integer literals that do not fit in 32 bits; intwrap.c finds them (for
 * store.c).
 */

#define PATH_LEN 4095

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

int key_verr(struct conf_load *ld, const struct origin *o, const char *key, int ret,
	     const char *fmt, va_list ap)
{
	char where[PATH_LEN + 64], why[512];

	vsnprintf(why, sizeof(why), fmt, ap);
	conf_errf(ld->err, ld->errlen, "%s: %s: %s",
		  origin_str(o, ld->file, where, sizeof(where)), key, why);
	return ret;
}

int key_err(struct conf_load *ld, const struct origin *o, const char *key, int ret,
	    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	key_verr(ld, o, key, ret, fmt, ap);
	va_end(ap);
	return ret;
}

int unknown_key(struct conf_load *ld, const struct origin *o, const char *name,
		const char *more)
{
	char buf[128];
	const char *near = conf_key_nearest(ld->tabs, name, strlen(name), buf, sizeof(buf));

	if (near)
		return key_err(ld, o, name, -EINVAL, "unknown key (did you mean %s?)", near);
	return key_err(ld, o, name, -EINVAL, "unknown key%s", more);
}

/* --- the file ------------------------------------------------------------------------- */

struct origin setting_origin(struct conf_load *ld, const config_setting_t *s)
{
	const char *f = config_setting_source_file(s);
	struct origin o = { .file = f ? f : ld->file, .line = config_setting_source_line(s) };

	/* Messages name the file the way the user spelled it */
	if (f && !strcmp(f, ld->file))
		o.file = ld->file;
	return o;
}

int check_include(struct conf_load *ld, const struct origin *o)
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
			       conf_setting_type_name(g));
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

/* Whether line @lineno of @file holds a number with a unit left unquoted ("= 64M", ": 2ms"):
 * libconfig calls it a syntax error without saying why. */
static bool line_has_bare_unit(const char *file, int lineno)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen(file, "re");

	if (!f)
		return false;
	for (int n = 1; fgets(line, sizeof(line), f); n++) {
		if (n < lineno)
			continue;
		for (char *p = line; *p && !found; p++) {
			char *q;

			if (*p != '=' && *p != ':')
				continue;
			q = p + 1;
			while (*q == ' ' || *q == '\t')
				q++;
			if (!isdigit((unsigned char)*q))
				continue;
			while (isdigit((unsigned char)*q) || *q == '.')
				q++;
			found = isalpha((unsigned char)*q) && *q != 'e' && *q != 'E' && *q != 'L';
		}
		break;
	}
	fclose(f);
	return found;
}

/* Check and parse the file. */
static int load_file(struct conf_load *ld, config_t *cfg)
{
	int ret;

	ret = conf_check_file_safe(ld->file, geteuid(), ld->err, ld->errlen);
	if (!ret)
		ret = conf_check_includes(ld->file, geteuid(), ld->err, ld->errlen);
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
		if ((!text || !strcmp(text, "syntax error")) &&
		    line_has_bare_unit(ef, config_error_line(cfg)))
			conf_errf(ld->err, ld->errlen, "%s:%d: syntax error: quote sizes and durations "
				  "(size = \"64M\"; latency = \"2ms\";)", ef, config_error_line(cfg));
		else if (!text || !strcmp(text, "syntax error"))	/* libconfig's text for most */
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
		ret = conf_validate(&ld);
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
