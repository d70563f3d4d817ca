/* SPDX-License-Identifier: MIT */
/* A key's value from the file's setting or from command-line text: parsed by the key's type,
 * checked against its range, length or words, and stored with where it came from. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "conf/intwrap.h"
#include "conf/keys/key.h"
#include "conf/keys/keywalk.h"
#include "conf/load.h"
#include "conf/parse.h"
#include "core/util/units.h"

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


/* A duration key's value written with its unit: "2ms", "1.5s", "250us". */
static int set_duration_str(struct conf_load *ld, const struct conf_key *k,
			    const struct origin *o, uint64_t unit, const char *s)
{
	uint64_t ns;
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
	uint64_t v, unit = conf_key_time_unit(k);
	int ret;

	if (*val == '-' && isdigit((unsigned char)val[1]))
		return key_err(ld, o, k->name, -EINVAL, "must not be negative (got %s)", val);
	if (unit && !units_is_bare(val))
		return set_duration_str(ld, k, o, unit, val);
	ret = conf_parse_u64_whole(val, &v);
	if (ret == -ERANGE)
		return key_err(ld, o, k->name, -EINVAL, "overflow: %s does not fit in 64 bits", val);
	if (ret)
		return key_err(ld, o, k->name, -EINVAL, "not a number");
	return set_num(ld, k, o, v);
}

/* --- settings of the file ---------------------------------------------------------- */

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
		if (conf_key_time_unit(k))
			return "an integer or a duration string such as \"2ms\"";
		return k->type == CONF_U64 ? "an integer, or a string of its decimal digits"
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
	if (v == LLONG_MAX)
		return key_err(ld, o, k->name, -EINVAL,
			       "overflow: the integer does not fit in 64 bits (from %lld on, write "
			       "it as a string: \"%lld\")", LLONG_MAX, LLONG_MAX);
	if (v < 0)
		return key_err(ld, o, k->name, -EINVAL, "must not be negative (got %lld)", v);
	return set_num(ld, k, o, (uint64_t)v);
}

int load_setting(struct conf_load *ld, const config_setting_t *s, const char *full)
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
		/* A string: a duration with its unit; for a 64-bit key also a decimal of up to
		 * 64 bits unsigned (what --dump-config writes from INT64_MAX on, which libconfig
		 * cannot read as a number). */
		if (type == CONFIG_TYPE_STRING && (conf_key_time_unit(k) || k->type == CONF_U64))
			return set_num_str(ld, k, &o, config_setting_get_string(s));
		if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
			break;
		return load_int(ld, k, &o, s);
	}
	return key_err(ld, &o, full, -EINVAL, "expected %s, got %s", expected(k), type_name(type));
}

/* --- text: the command line and presets ---------------------------------------------- */

int apply_value(struct conf_load *ld, const struct conf_key *k, const struct origin *o,
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
