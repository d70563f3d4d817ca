/* SPDX-License-Identifier: MIT */
/* Loading and validation of the plugdisk configuration: a libconfig file, then --set
 * overrides, then cross-key checks. Every key lives in one table (conf_keys) that drives
 * loading, --set, range checks and conf_print. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libconfig.h>

#include "conf/config.h"

/*
 * Notes on the design.
 *
 * A key is {name, type, offset and width of its field in struct pd_config, min, max, flags,
 * help}. Types: bool, u32/u64 (plain integers), size (integer, or a string with a binary
 * K/M/G/T suffix; stored in a 32- or 64-bit field) and string (min/max bound its length).
 *
 * Loading builds a private struct pd_config from the defaults, applies the file, then each
 * --set in order, and checks each value against its key's range the moment it is set, so
 * that the message can name where it came from. Cross-key rules run last; for those the
 * origin of every key (file and line, or the --set argument) is remembered. @out is only
 * written once everything passed.
 *
 * libconfig 1.5 silently wraps integer literals that do not fit in 32 bits (4294967296
 * reads as 0) and saturates 64-bit ones (an L suffix) at INT64_MAX. A wrapped value
 * cannot be told from a real one, so the file text is scanned for integer literals without
 * L that do not fit in 32 bits, remembering the name and line of the setting each belongs
 * to; such a setting is then refused as an overflow.
 */

enum key_type {
	KT_BOOL,
	KT_U32,
	KT_U64,
	KT_SIZE,
	KT_STRING,
};

enum {
	KF_ZERO_OK = 1 << 0,	/* 0 is allowed besides min..max (0 = unlimited) */
	KF_NAME_CHARS = 1 << 1,	/* string of [A-Za-z0-9._-] only */
};

struct conf_key {
	const char *name;	/* "group.key" */
	enum key_type type;
	size_t offset;		/* into struct pd_config */
	size_t width;		/* sizeof the field: 4 or 8 for numbers */
	uint64_t min, max;	/* numbers: the value; strings: the length */
	uint64_t align;		/* numbers: must be a multiple of this (0 = any) */
	unsigned flags;
	const char *help;	/* one line: meaning and unit, for conf_print */
};

#define KEY(nm, ty, field, mn, mx, al, fl, hlp)                                                   \
	{ nm, ty, offsetof(struct pd_config, field), sizeof(((struct pd_config *)0)->field), mn,  \
	  mx, al, fl, hlp }

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)
#define PATH_LEN 4095		/* PATH_MAX - 1 */
#define MAX_LATENCY_US 3600000000ull	/* one hour */

static const struct conf_key conf_keys[] = {
	KEY("disk.image", KT_STRING, disk_image, 1, PATH_LEN, 0, 0,
	    "path of the backing image; created sparse if missing"),
	KEY("disk.size", KT_SIZE, disk_size, 512, 1ull << 60, 512, 0,
	    "bytes (K/M/G/T suffixes), multiple of 512"),
	KEY("disk.name", KT_STRING, disk_name, 1, 64, 0, KF_NAME_CHARS,
	    "name shown in stats and logs: [A-Za-z0-9._-]"),
	KEY("mount.point", KT_STRING, mount_point, 0, PATH_LEN, 0, 0,
	    "mountpoint; \"\" = given on the command line"),
	KEY("mount.options", KT_STRING, mount_options, 0, PATH_LEN, 0, 0,
	    "extra FUSE -o options, comma separated"),
	KEY("mount.allow_other", KT_BOOL, mount_allow_other, 0, 1, 0, 0,
	    "let other users access the mount (with default_permissions)"),
	KEY("mount.threads", KT_U32, mount_threads, 1, CONF_MAX_THREADS, 0, 0,
	    "threads that receive FUSE requests"),
	KEY("queue.plug", KT_BOOL, queue.plug, 0, 1, 0, 0,
	    "plug an idle queue when a bio arrives"),
	KEY("queue.unplug_threshold", KT_U32, queue.unplug_threshold, 1, 65536, 0, 0,
	    "unplug when this many requests are queued"),
	KEY("queue.unplug_delay_us", KT_U32, queue.unplug_delay_us, 1, 1000000, 0, 0,
	    "unplug at the latest this many microseconds after plugging"),
	KEY("queue.nomerges", KT_U32, queue.nomerges, 0, 2, 0, 0,
	    "0 all merges, 1 only the last-merge hit, 2 no merging"),
	KEY("queue.max_request_size", KT_SIZE, queue.max_request_size, 4 * KiB, 16 * MiB, 512, 0,
	    "bytes, largest request after merging"),
	KEY("queue.nr_requests", KT_U32, queue.nr_requests, 1, 65536, 0, 0,
	    "queued requests before submitters wait"),
	KEY("controller.queue_depth", KT_U32, ctrl.queue_depth, 1, 4096, 0, 0,
	    "command slots (commands in flight)"),
	KEY("controller.workers", KT_U32, ctrl.workers, 1, 256, 0, 0,
	    "backend I/O threads"),
	KEY("controller.bandwidth", KT_SIZE, ctrl.bandwidth, 512, TiB, 0, KF_ZERO_OK,
	    "bytes/s for reads and writes together, 0 = unlimited"),
	KEY("controller.read_bandwidth", KT_SIZE, ctrl.read_bandwidth, 512, TiB, 0, KF_ZERO_OK,
	    "bytes/s for reads, 0 = unlimited"),
	KEY("controller.write_bandwidth", KT_SIZE, ctrl.write_bandwidth, 512, TiB, 0, KF_ZERO_OK,
	    "bytes/s for writes, 0 = unlimited"),
	KEY("controller.iops", KT_U64, ctrl.iops, 0, 10000000, 0, 0,
	    "commands/s of every kind, 0 = unlimited"),
	KEY("controller.read_iops", KT_U64, ctrl.read_iops, 0, 10000000, 0, 0,
	    "read commands/s, 0 = unlimited"),
	KEY("controller.write_iops", KT_U64, ctrl.write_iops, 0, 10000000, 0, 0,
	    "write commands/s, 0 = unlimited"),
	KEY("controller.burst_ms", KT_U32, ctrl.burst_ms, 0, 10000, 0, 0,
	    "each bucket holds rate x burst_ms of budget"),
	KEY("controller.latency_us", KT_U64, ctrl.latency_us, 0, MAX_LATENCY_US, 0, 0,
	    "service time of every command, microseconds"),
	KEY("controller.read_latency_us", KT_U64, ctrl.read_latency_us, 0, MAX_LATENCY_US, 0, 0,
	    "service time of a read, 0 = latency_us"),
	KEY("controller.write_latency_us", KT_U64, ctrl.write_latency_us, 0, MAX_LATENCY_US, 0, 0,
	    "service time of a write, 0 = latency_us"),
	KEY("controller.flush_latency_us", KT_U64, ctrl.flush_latency_us, 0, MAX_LATENCY_US, 0, 0,
	    "service time of a flush, 0 = latency_us"),
};

#define NKEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

static const char *const conf_groups[] = { "disk", "mount", "queue", "controller" };
#define NGROUPS (sizeof(conf_groups) / sizeof(conf_groups[0]))

/* Where a key got its value: a file line, a --set argument, or neither (default). */
struct origin {
	const char *file;	/* libconfig's copy, valid while the config_t lives */
	unsigned line;
	const char *set;	/* the caller's "KEY=VALUE" */
};

/* An integer literal of the file that libconfig wrapped to 32 bits. */
struct overflow {
	char *name;
	unsigned line;
};

struct load_ctx {
	const char *file;	/* as the user gave it */
	struct pd_config *c;
	struct origin origin[NKEYS];
	char *err;
	size_t errlen;
	/* overflow scan of the last file looked at */
	char *scanned_file;
	struct overflow *ovf;
	size_t novf;
	/* last included file whose permissions were checked */
	char *checked_file;
};

static void put_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const struct conf_key *key_find(const char *name, size_t len)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strlen(conf_keys[i].name) == len && !strncmp(conf_keys[i].name, name, len))
			return &conf_keys[i];
	return NULL;
}

static size_t key_index(const struct conf_key *k)
{
	return (size_t)(k - conf_keys);
}

static void *field(struct pd_config *c, const struct conf_key *k)
{
	return (char *)c + k->offset;
}

static uint64_t num_get(const struct pd_config *c, const struct conf_key *k)
{
	const char *p = (const char *)c + k->offset;

	if (k->width == sizeof(uint32_t)) {
		uint32_t v;
		memcpy(&v, p, sizeof(v));
		return v;
	}
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* The caller has checked @v against k->max, which fits the field. */
static void num_put(struct pd_config *c, const struct conf_key *k, uint64_t v)
{
	char *p = field(c, k);

	if (k->width == sizeof(uint32_t)) {
		uint32_t v32 = (uint32_t)v;
		memcpy(p, &v32, sizeof(v32));
	} else {
		memcpy(p, &v, sizeof(v));
	}
}

/* "1G" when @v is an exact multiple of a binary unit, else the plain number. */
static const char *size_str(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v && u < 3 && !(v & 1023)) {
		v >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

static const char *num_str(const struct conf_key *k, uint64_t v, char *buf, size_t len)
{
	if (k->type == KT_SIZE)
		return size_str(v, buf, len);
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

int conf_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0':
		break;
	case 'k': case 'K': mult = KiB; p++; break;
	case 'm': case 'M': mult = MiB; p++; break;
	case 'g': case 'G': mult = GiB; p++; break;
	case 't': case 'T': mult = TiB; p++; break;
	default:
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

/* --- messages ---------------------------------------------------------------------- */

static const char *origin_str(const struct origin *o, const char *file, char *buf, size_t len)
{
	if (o->set)
		snprintf(buf, len, "--set %s", o->set);
	else if (o->line)
		snprintf(buf, len, "%s:%u", o->file ? o->file : file, o->line);
	else
		snprintf(buf, len, "%s", file ? file : "defaults");
	return buf;
}

/* "ORIGIN: KEY: reason" into ctx->err; returns @ret. */
static int key_err(struct load_ctx *ctx, const struct origin *o, const char *key, int ret,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int key_err(struct load_ctx *ctx, const struct origin *o, const char *key, int ret,
		   const char *fmt, ...)
{
	char where[PATH_LEN + 64], why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	put_err(ctx->err, ctx->errlen, "%s: %s: %s", origin_str(o, ctx->file, where, sizeof(where)),
		key, why);
	return ret;
}

/* Check @v against @k's range; on failure write the reason into @why and return -EINVAL. */
static int num_check(const struct conf_key *k, uint64_t v, char *why, size_t len)
{
	char a[32], b[32], g[32];

	if (v == 0 && (k->flags & KF_ZERO_OK))
		return 0;
	if (v < k->min || v > k->max) {
		if (k->min == 0)
			snprintf(why, len, "must be at most %s (got %s)",
				 num_str(k, k->max, b, sizeof(b)), num_str(k, v, g, sizeof(g)));
		else if (k->flags & KF_ZERO_OK)
			snprintf(why, len, "must be 0 (unlimited) or between %s and %s (got %s)",
				 num_str(k, k->min, a, sizeof(a)), num_str(k, k->max, b, sizeof(b)),
				 num_str(k, v, g, sizeof(g)));
		else
			snprintf(why, len, "must be between %s and %s (got %s)",
				 num_str(k, k->min, a, sizeof(a)), num_str(k, k->max, b, sizeof(b)),
				 num_str(k, v, g, sizeof(g)));
		return -EINVAL;
	}
	if (k->align && v % k->align) {
		snprintf(why, len, "must be a multiple of %" PRIu64 " (got %" PRIu64 ")", k->align, v);
		return -EINVAL;
	}
	return 0;
}

static int str_check(const struct conf_key *k, const char *s, char *why, size_t len)
{
	size_t n = strlen(s);

	if (n < k->min) {
		snprintf(why, len, "must not be empty");
		return -EINVAL;
	}
	if (n > k->max) {
		snprintf(why, len, "longer than %" PRIu64 " characters", k->max);
		return -EINVAL;
	}
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if ((k->flags & KF_NAME_CHARS) && !isalnum(ch) && ch != '.' && ch != '_' &&
		    ch != '-') {
			snprintf(why, len, "may only hold letters, digits, '.', '_' and '-' (got \"%s\")",
				 s);
			return -EINVAL;
		}
		if (iscntrl(ch)) {
			snprintf(why, len, "must not hold control characters");
			return -EINVAL;
		}
	}
	return 0;
}

/* --- storing values ------------------------------------------------------------------ */

static int set_num(struct load_ctx *ctx, const struct conf_key *k, const struct origin *o,
		   uint64_t v)
{
	char why[256];

	if (num_check(k, v, why, sizeof(why)))
		return key_err(ctx, o, k->name, -EINVAL, "%s", why);
	num_put(ctx->c, k, v);
	ctx->origin[key_index(k)] = *o;
	return 0;
}

static int set_str(struct load_ctx *ctx, const struct conf_key *k, const struct origin *o,
		   const char *s)
{
	char **slot = field(ctx->c, k), *copy, why[256];

	if (str_check(k, s, why, sizeof(why)))
		return key_err(ctx, o, k->name, -EINVAL, "%s", why);
	copy = strdup(s);
	if (!copy)
		return key_err(ctx, o, k->name, -ENOMEM, "out of memory");
	free(*slot);
	*slot = copy;
	ctx->origin[key_index(k)] = *o;
	return 0;
}

static void set_bool(struct load_ctx *ctx, const struct conf_key *k, const struct origin *o,
		     bool b)
{
	*(bool *)field(ctx->c, k) = b;
	ctx->origin[key_index(k)] = *o;
}

/* A size string: "1G", "4096". */
static int set_size_str(struct load_ctx *ctx, const struct conf_key *k, const struct origin *o,
			const char *s)
{
	uint64_t v;
	int ret;

	if (*s == '-')
		return key_err(ctx, o, k->name, -EINVAL, "must not be negative (got \"%s\")", s);
	ret = conf_parse_size(s, &v);
	if (ret == -ERANGE)
		return key_err(ctx, o, k->name, -EINVAL, "overflow: \"%s\" does not fit in 64 bits",
			       s);
	if (ret)
		return key_err(ctx, o, k->name, -EINVAL,
			       "not a size: \"%s\" (an integer with an optional K, M, G or T suffix)",
			       s);
	return set_num(ctx, k, o, v);
}

/* --- the file: overflow scan ----------------------------------------------------------- */

static void ovf_clear(struct load_ctx *ctx)
{
	for (size_t i = 0; i < ctx->novf; i++)
		free(ctx->ovf[i].name);
	free(ctx->ovf);
	free(ctx->scanned_file);
	ctx->ovf = NULL;
	ctx->novf = 0;
	ctx->scanned_file = NULL;
}

static bool is_name_start(int ch)
{
	return isalpha(ch) || ch == '*';
}

static bool is_name_char(int ch)
{
	return isalnum(ch) || ch == '-' || ch == '_' || ch == '*';
}

/* Does the number token [s, e) (no L suffix, not a float) fit in libconfig's 32-bit int? */
static bool int_token_fits(const char *s, const char *e)
{
	bool neg = false, hex = false;
	uint64_t v = 0;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		hex = true;
		s += 2;
	}
	for (; s < e; s++) {
		unsigned d = isdigit((unsigned char)*s) ? (unsigned)(*s - '0')
							: (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
		v = v * (hex ? 16 : 10) + d;
		if (v > (uint64_t)INT32_MAX + 1)
			return false;
	}
	return neg ? v <= (uint64_t)INT32_MAX + 1 : v <= INT32_MAX;
}

static int ovf_add(struct load_ctx *ctx, const char *name, size_t nlen, unsigned line)
{
	struct overflow *n = realloc(ctx->ovf, (ctx->novf + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	ctx->ovf = n;
	n[ctx->novf].name = strndup(name, nlen);
	if (!n[ctx->novf].name)
		return -ENOMEM;
	n[ctx->novf].line = line;
	ctx->novf++;
	return 0;
}

/* Tokenize @text the way libconfig does, just enough to skip comments and strings, and
 * record each 32-bit integer literal that does not fit, with the setting name before it. */
static int ovf_scan_text(struct load_ctx *ctx, const char *text)
{
	const char *p = text, *name = NULL;
	size_t nlen = 0;
	unsigned line = 1, name_line = 0;

	while (*p) {
		if (*p == '\n') {
			line++;
			p++;
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
				if (*p == '\n')
					line++;
			if (*p)
				p += 2;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				if (*p == '\n')
					line++;
			}
			if (*p)
				p++;
		} else if (is_name_start((unsigned char)*p)) {
			name = p;
			name_line = line;
			while (is_name_char((unsigned char)*p))
				p++;
			nlen = (size_t)(p - name);
		} else if (isdigit((unsigned char)*p) ||
			   ((*p == '-' || *p == '+' || *p == '.') &&
			    (isdigit((unsigned char)p[1]) || p[1] == '.'))) {
			const char *s = p, *e;
			bool hex, flt;

			p++;
			while (isalnum((unsigned char)*p) || *p == '.' ||
			       ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E')))
				p++;
			e = p;
			hex = strcspn(s, "xX") < (size_t)(e - s);
			flt = strcspn(s, ".") < (size_t)(e - s) ||
			      (!hex && strcspn(s, "eE") < (size_t)(e - s));
			if (flt || e[-1] == 'L' || e[-1] == 'l' || !name)
				continue;
			if (!int_token_fits(s, e)) {
				int ret = ovf_add(ctx, name, nlen, name_line);
				if (ret)
					return ret;
			}
		} else {
			p++;
		}
	}
	return 0;
}

static int ovf_scan_file(struct load_ctx *ctx, const char *file)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	ovf_clear(ctx);
	ctx->scanned_file = strdup(file);
	if (!ctx->scanned_file)
		return -ENOMEM;
	f = fopen(file, "re");
	if (!f)
		return 0;	/* libconfig read it; a racing change cannot be scanned, accept */
	{
		FILE *m = open_memstream(&text, &len);
		char buf[4096];
		size_t n;

		if (!m) {
			fclose(f);
			return -ENOMEM;
		}
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, m);
		fclose(f);
		if (fclose(m)) {
			free(text);
			return -ENOMEM;
		}
	}
	ret = ovf_scan_text(ctx, text);
	free(text);
	return ret;
}

/* Was the integer of setting @name at @file:@line wrapped by libconfig? */
static int int_overflowed(struct load_ctx *ctx, const char *file, const char *name,
			  unsigned line, bool *out)
{
	*out = false;
	if (!ctx->scanned_file || strcmp(ctx->scanned_file, file)) {
		int ret = ovf_scan_file(ctx, file);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < ctx->novf; i++)
		if (ctx->ovf[i].line == line && !strcmp(ctx->ovf[i].name, name))
			*out = true;
	return 0;
}

/* --- the file: settings ------------------------------------------------------------- */

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

static const char *expected(enum key_type t)
{
	switch (t) {
	case KT_BOOL: return "true or false";
	case KT_U32:
	case KT_U64: return "an integer";
	case KT_SIZE: return "an integer or a size string such as \"1G\"";
	case KT_STRING: return "a string";
	}
	return "?";
}

static struct origin setting_origin(struct load_ctx *ctx, const config_setting_t *s)
{
	const char *f = config_setting_source_file(s);
	struct origin o = { .file = f ? f : ctx->file, .line = config_setting_source_line(s) };

	/* Messages name the file the way the user spelled it */
	if (f && !strcmp(f, ctx->file))
		o.file = ctx->file;
	return o;
}

static int check_include(struct load_ctx *ctx, const struct origin *o)
{
	int ret;

	if (geteuid() != 0 || !strcmp(o->file, ctx->file))
		return 0;
	if (ctx->checked_file && !strcmp(ctx->checked_file, o->file))
		return 0;
	ret = conf_check_file_safe(o->file, 0, ctx->err, ctx->errlen);
	if (ret)
		return ret;
	free(ctx->checked_file);
	ctx->checked_file = strdup(o->file);
	return ctx->checked_file ? 0 : -ENOMEM;
}

static int load_setting(struct load_ctx *ctx, const config_setting_t *s, const char *full)
{
	const struct conf_key *k = key_find(full, strlen(full));
	struct origin o = setting_origin(ctx, s);
	int type = config_setting_type(s);
	long long v;
	bool wrapped;
	int ret;

	ret = check_include(ctx, &o);
	if (ret)
		return ret;
	if (!k)
		return key_err(ctx, &o, full, -EINVAL, "unknown key");

	if (k->type == KT_BOOL) {
		if (type != CONFIG_TYPE_BOOL)
			goto wrong_type;
		set_bool(ctx, k, &o, config_setting_get_bool(s));
		return 0;
	}
	if (k->type == KT_STRING) {
		if (type != CONFIG_TYPE_STRING)
			goto wrong_type;
		return set_str(ctx, k, &o, config_setting_get_string(s));
	}
	if (k->type == KT_SIZE && type == CONFIG_TYPE_STRING)
		return set_size_str(ctx, k, &o, config_setting_get_string(s));
	if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
		goto wrong_type;

	if (type == CONFIG_TYPE_INT) {
		ret = int_overflowed(ctx, o.file, config_setting_name(s), o.line, &wrapped);
		if (ret)
			return key_err(ctx, &o, full, ret, "out of memory");
		if (wrapped)
			return key_err(ctx, &o, full, -EINVAL,
				       "overflow: the integer does not fit in 32 bits "
				       "(append L for a 64-bit integer%s)",
				       k->type == KT_SIZE ? ", or write a size string like \"4G\"" : "");
	}
	v = config_setting_get_int64(s);
	if (v == LLONG_MAX || v == LLONG_MIN)
		return key_err(ctx, &o, full, -EINVAL, "overflow: the integer does not fit in 64 bits");
	if (v < 0)
		return key_err(ctx, &o, full, -EINVAL, "must not be negative (got %lld)", v);
	return set_num(ctx, k, &o, (uint64_t)v);

wrong_type:
	return key_err(ctx, &o, full, -EINVAL, "expected %s, got %s", expected(k->type),
		       type_name(type));
}

/* faults = ( "SPEC", ... ): each string is checked by the core's fault parser. */
static int load_faults(struct load_ctx *ctx, const config_setting_t *s)
{
	struct origin o = setting_origin(ctx, s);
	struct conf_faults nf = { 0 };
	int ret = check_include(ctx, &o);

	if (ret)
		return ret;
	if (!config_setting_is_list(s) && !config_setting_is_array(s))
		return key_err(ctx, &o, "faults", -EINVAL, "expected a list of strings ( \"...\" ), got %s",
			       type_name(config_setting_type(s)));
	for (int i = 0; i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		struct origin eo = setting_origin(ctx, e);
		const char *spec;
		char key[32], why[512];

		snprintf(key, sizeof(key), "faults[%d]", i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			ret = key_err(ctx, &eo, key, -EINVAL, "expected a string, got %s",
				      type_name(config_setting_type(e)));
			goto err;
		}
		spec = config_setting_get_string(e);
		ret = conf_fault_check(spec, why, sizeof(why));
		if (!ret)
			ret = conf_faults_append(&nf, spec, strlen(spec));
		if (ret) {
			ret = key_err(ctx, &eo, key, ret, "%s",
				      ret == -EINVAL ? why : ret == -ENOSPC ? "too many faults" : "out of memory");
			goto err;
		}
	}
	conf_faults_free(&ctx->c->faults);
	ctx->c->faults = nf;
	return 0;
err:
	conf_faults_free(&nf);
	return ret;
}

static int load_group(struct load_ctx *ctx, const config_setting_t *g)
{
	const char *gname = config_setting_name(g);
	bool known = false;
	char full[256];

	if (!strcmp(gname, "faults"))
		return load_faults(ctx, g);

	for (size_t i = 0; i < NGROUPS; i++)
		if (!strcmp(gname, conf_groups[i]))
			known = true;
	if (!known || !config_setting_is_group(g)) {
		struct origin o = setting_origin(ctx, g);
		int ret = check_include(ctx, &o);
		if (ret)
			return ret;
		if (!known)
			return key_err(ctx, &o, gname, -EINVAL,
				       "unknown key (groups are disk, mount, queue, controller)");
		return key_err(ctx, &o, gname, -EINVAL, "expected a group { ... }, got %s",
			       type_name(config_setting_type(g)));
	}
	for (int i = 0; i < config_setting_length(g); i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		int ret;

		snprintf(full, sizeof(full), "%s.%s", gname, config_setting_name(s));
		ret = load_setting(ctx, s, full);
		if (ret)
			return ret;
	}
	return 0;
}

/* Open @file only to check it: readable, a regular file, safe for a root daemon. */
static int check_file(struct load_ctx *ctx)
{
	struct stat st;
	int fd, ret = 0;

	fd = open(ctx->file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		put_err(ctx->err, ctx->errlen, "%s: cannot open: %s", ctx->file, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		put_err(ctx->err, ctx->errlen, "%s: cannot stat: %s", ctx->file, strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		put_err(ctx->err, ctx->errlen, "%s: not a regular file", ctx->file);
		goto out;
	}
	if (geteuid() == 0) {
		if (st.st_mode & (S_IWGRP | S_IWOTH)) {
			ret = -EPERM;
			put_err(ctx->err, ctx->errlen,
				"%s: refusing a config file that others can write (mode %04o) for a "
				"root daemon", ctx->file, (unsigned)(st.st_mode & 07777));
		} else if (st.st_uid != 0) {
			ret = -EPERM;
			put_err(ctx->err, ctx->errlen,
				"%s: refusing a config file owned by uid %u for a root daemon",
				ctx->file, (unsigned)st.st_uid);
		}
	}
out:
	close(fd);
	return ret;
}

int conf_check_file_safe(const char *file, uid_t euid, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	if (stat(file, &st)) {
		ret = -errno;
		put_err(err, errlen, "%s: cannot stat: %s", file, strerror(-ret));
		return ret;
	}
	if (euid != 0)
		return 0;
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		put_err(err, errlen,
			"%s: refusing a config file that others can write (mode %04o) for a root "
			"daemon", file, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (st.st_uid != 0) {
		put_err(err, errlen, "%s: refusing a config file owned by uid %u for a root daemon",
			file, (unsigned)st.st_uid);
		return -EPERM;
	}
	return 0;
}

static int load_file(struct load_ctx *ctx, config_t *cfg)
{
	const config_setting_t *root;
	int ret;

	ret = check_file(ctx);
	if (ret)
		return ret;
	if (!config_read_file(cfg, ctx->file)) {
		const char *ef = config_error_file(cfg), *text;

		if (config_error_type(cfg) == CONFIG_ERR_FILE_IO) {
			put_err(ctx->err, ctx->errlen, "%s: cannot read: %s", ef ? ef : ctx->file,
				config_error_text(cfg));
			return -EIO;
		}
		if (!ef || !strcmp(ef, ctx->file))
			ef = ctx->file;
		text = config_error_text(cfg);
		if (!text || !strcmp(text, "syntax error"))	/* libconfig's text for most */
			put_err(ctx->err, ctx->errlen, "%s:%d: syntax error", ef, config_error_line(cfg));
		else
			put_err(ctx->err, ctx->errlen, "%s:%d: syntax error: %s", ef,
				config_error_line(cfg), text);
		return -EINVAL;
	}
	root = config_root_setting(cfg);
	for (int i = 0; i < config_setting_length(root); i++) {
		ret = load_group(ctx, config_setting_get_elem(root, (unsigned)i));
		if (ret)
			return ret;
	}
	return 0;
}

/* --- --set -------------------------------------------------------------------------- */

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* --set faults="SPEC; SPEC": replaces the list ("" empties it). */
static int apply_set_faults(struct load_ctx *ctx, const char *set, const char *val)
{
	struct origin o = { .set = set };
	struct conf_faults nf;
	char key[32], why[512];
	int ret = conf_faults_split(val, &nf);

	if (ret)
		return key_err(ctx, &o, "faults", ret,
			       ret == -ENOSPC ? "too many faults" : "out of memory");
	for (size_t i = 0; i < nf.n; i++) {
		ret = conf_fault_check(nf.spec[i], why, sizeof(why));
		if (ret) {
			snprintf(key, sizeof(key), "faults[%zu]", i);
			conf_faults_free(&nf);
			return key_err(ctx, &o, key, ret, "%s", why);
		}
	}
	conf_faults_free(&ctx->c->faults);
	ctx->c->faults = nf;
	return 0;
}

static int apply_set(struct load_ctx *ctx, const char *set)
{
	const char *eq = strchr(set, '='), *val;
	struct origin o = { .set = set };
	const struct conf_key *k;
	char name[128];

	if (!eq || eq == set) {
		put_err(ctx->err, ctx->errlen, "--set %s: expected KEY=VALUE", set);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(eq - set), set);
	if (!strcmp(name, "faults"))
		return apply_set_faults(ctx, set, eq + 1);
	k = key_find(set, (size_t)(eq - set));
	if (!k)
		return key_err(ctx, &o, name, -EINVAL, "unknown key");
	val = eq + 1;

	switch (k->type) {
	case KT_BOOL: {
		bool b;
		if (parse_bool(val, &b))
			return key_err(ctx, &o, k->name, -EINVAL,
				       "expected true/false, 1/0, yes/no or on/off (got \"%s\")", val);
		set_bool(ctx, k, &o, b);
		return 0;
	}
	case KT_STRING:
		return set_str(ctx, k, &o, val);
	case KT_SIZE:
		return set_size_str(ctx, k, &o, val);
	case KT_U32:
	case KT_U64: {
		uint64_t v = 0;
		const char *p = val;

		if (*p == '-' && isdigit((unsigned char)p[1]))
			return key_err(ctx, &o, k->name, -EINVAL, "must not be negative (got %s)", val);
		if (!isdigit((unsigned char)*p))
			return key_err(ctx, &o, k->name, -EINVAL, "not a number");
		for (; isdigit((unsigned char)*p); p++) {
			unsigned d = (unsigned)(*p - '0');
			if (v > (UINT64_MAX - d) / 10)
				return key_err(ctx, &o, k->name, -EINVAL,
					       "overflow: %s does not fit in 64 bits", val);
			v = v * 10 + d;
		}
		if (*p)
			return key_err(ctx, &o, k->name, -EINVAL, "not a number");
		return set_num(ctx, k, &o, v);
	}
	}
	return -EINVAL;
}

/* --- cross-key rules ------------------------------------------------------------------ */

static bool key_is_set(const struct load_ctx *ctx, const struct conf_key *k)
{
	const struct origin *o = &ctx->origin[key_index(k)];
	return o->set || o->line;
}

/* Keys @a must not exceed @b. The message points at whichever was set by the user,
 * @a first, and names both. */
static int check_not_above(struct load_ctx *ctx, const char *a, const char *b)
{
	const struct conf_key *ka = key_find(a, strlen(a)), *kb = key_find(b, strlen(b));
	uint64_t va = num_get(ctx->c, ka), vb = num_get(ctx->c, kb);

	if (va <= vb)
		return 0;
	if (key_is_set(ctx, ka) || !key_is_set(ctx, kb))
		return key_err(ctx, &ctx->origin[key_index(ka)], a, -EINVAL,
			       "%" PRIu64 " is larger than %s (%" PRIu64 ")", va, b, vb);
	return key_err(ctx, &ctx->origin[key_index(kb)], b, -EINVAL,
		       "%" PRIu64 " is smaller than %s (%" PRIu64 ")", vb, a, va);
}

static int validate(struct load_ctx *ctx)
{
	/* The unplug threshold could never be reached: the submitter waits at nr_requests */
	return check_not_above(ctx, "queue.unplug_threshold", "queue.nr_requests");
}

/* --- public ----------------------------------------------------------------------------- */

void conf_defaults(struct pd_config *c)
{
	memset(c, 0, sizeof(*c));
	c->disk_image = strdup(CONF_DEFAULT_IMAGE);
	c->disk_size = CONF_DEFAULT_SIZE;
	c->disk_name = strdup(CONF_DEFAULT_NAME);
	c->mount_point = strdup("");
	c->mount_options = strdup("");
	c->mount_allow_other = false;
	c->mount_threads = CONF_DEFAULT_THREADS;
	queue_params_default(&c->queue);
	ctrl_params_default(&c->ctrl);
}

void conf_free(struct pd_config *c)
{
	free(c->disk_image);
	free(c->disk_name);
	free(c->mount_point);
	free(c->mount_options);
	c->disk_image = c->disk_name = c->mount_point = c->mount_options = NULL;
	conf_faults_free(&c->faults);
}

int conf_load(const char *file, char *const *sets, size_t nsets, struct pd_config *out,
	      char *err, size_t errlen)
{
	struct pd_config c;
	struct load_ctx ctx = { .file = file, .c = &c, .err = err, .errlen = errlen };
	config_t cfg;
	int ret = 0;

	put_err(err, errlen, "%s", "");
	conf_defaults(&c);
	config_init(&cfg);
	if (!c.disk_image || !c.disk_name || !c.mount_point || !c.mount_options) {
		put_err(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (file) {
		ret = load_file(&ctx, &cfg);
		if (ret)
			goto out;
	}
	for (size_t i = 0; i < nsets; i++) {
		ret = apply_set(&ctx, sets[i]);
		if (ret)
			goto out;
	}
	ret = validate(&ctx);
	c.disk_size_given = key_is_set(&ctx, key_find("disk.size", strlen("disk.size")));
out:
	/* origins point into cfg: messages are written, so it may go now */
	config_destroy(&cfg);
	ovf_clear(&ctx);
	free(ctx.checked_file);
	if (ret) {
		conf_free(&c);
		return ret;
	}
	*out = c;
	return 0;
}

static void print_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (iscntrl(ch))
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void conf_print(const struct pd_config *c, void *FILE_stream)
{
	FILE *f = FILE_stream;
	const char *group = NULL;
	size_t glen = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		const struct conf_key *k = &conf_keys[i];
		const char *dot = strchr(k->name, '.');
		const char *p = (const char *)c + k->offset;

		if (!group || (size_t)(dot - k->name) != glen || strncmp(group, k->name, glen)) {
			if (group)
				fputs("};\n\n", f);
			group = k->name;
			glen = (size_t)(dot - k->name);
			fprintf(f, "%.*s = {\n", (int)glen, group);
		}
		fprintf(f, "\t%s = ", dot + 1);
		switch (k->type) {
		case KT_BOOL:
			fputs(*(const bool *)p ? "true" : "false", f);
			break;
		case KT_STRING:
			print_string(f, *(char *const *)p ? *(char *const *)p : "");
			break;
		case KT_SIZE: {
			char buf[32];
			uint64_t v = num_get(c, k);
			if (!v || (v & 1023))
				fprintf(f, "%" PRIu64 "%s", v, v > INT32_MAX ? "L" : "");
			else
				fprintf(f, "\"%s\"", size_str(v, buf, sizeof(buf)));
			break;
		}
		case KT_U32:
		case KT_U64: {
			uint64_t v = num_get(c, k);
			fprintf(f, "%" PRIu64 "%s", v, v > INT32_MAX ? "L" : "");
			break;
		}
		}
		fprintf(f, ";\t# %s\n", k->help);
	}
	if (group)
		fputs("};\n", f);
	fputs("\n# injected faults, one string each (see plugdisk.conf(5))\nfaults = (", f);
	for (size_t i = 0; i < c->faults.n; i++) {
		fputs(i ? ",\n\t" : "\n\t", f);
		print_string(f, c->faults.spec[i]);
	}
	fputs(c->faults.n ? "\n);\n" : " );\n", f);
}
