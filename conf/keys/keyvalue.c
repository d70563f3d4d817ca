/* SPDX-License-Identifier: MIT */
/* A key's typed value in struct pd_config: field access, range and length checks, comparison
 * across a reload, and printing in libconfig syntax (--dump-config). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "conf/keys/key.h"
#include "conf/keys/keywalk.h"

void *conf_field(struct pd_config *c, const struct conf_key *k)
{
	return (char *)c + k->offset;
}

uint64_t conf_num_get(const struct pd_config *c, const struct conf_key *k)
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

void conf_num_put(struct pd_config *c, const struct conf_key *k, uint64_t v)
{
	char *p = conf_field(c, k);

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
	static const char units[] = "KMGTPE";
	int u = -1;

	while (v && u < 5 && !(v & 1023)) {
		v >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

const char *conf_num_str(const struct conf_key *k, uint64_t v, char *buf, size_t len)
{
	if (k->type == CONF_SIZE)
		return size_str(v, buf, len);
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

int conf_num_check(const struct conf_key *k, uint64_t v, char *why, size_t len)
{
	char a[32], b[32], g[32];

	if (v == 0 && (k->flags & CONF_ZERO_OK))
		return 0;
	if (v < k->min || v > k->max) {
		if (k->min == 0)
			snprintf(why, len, "must be at most %s (got %s)",
				 conf_num_str(k, k->max, b, sizeof(b)),
				 conf_num_str(k, v, g, sizeof(g)));
		else if (k->flags & CONF_ZERO_OK)
			snprintf(why, len, "must be 0 (unlimited) or between %s and %s (got %s)",
				 conf_num_str(k, k->min, a, sizeof(a)),
				 conf_num_str(k, k->max, b, sizeof(b)),
				 conf_num_str(k, v, g, sizeof(g)));
		else
			snprintf(why, len, "must be between %s and %s (got %s)",
				 conf_num_str(k, k->min, a, sizeof(a)),
				 conf_num_str(k, k->max, b, sizeof(b)),
				 conf_num_str(k, v, g, sizeof(g)));
		return -EINVAL;
	}
	if (k->align && v % k->align) {
		uint64_t lo = v - v % k->align, hi = lo + k->align;

		/* name the sizes the user may have meant */
		if (lo)
			snprintf(why, len, "must be a multiple of %" PRIu64 " (got %" PRIu64
				 "; the nearest are %" PRIu64 " and %" PRIu64 ")", k->align, v, lo, hi);
		else
			snprintf(why, len, "must be a multiple of %" PRIu64 " (got %" PRIu64
				 "; the nearest is %" PRIu64 ")", k->align, v, hi);
		return -EINVAL;
	}
	return 0;
}

int conf_str_check(const struct conf_key *k, const char *s, char *why, size_t len)
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
		if ((k->flags & CONF_NAME_CHARS) && !isalnum(ch) && ch != '.' && ch != '_' &&
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

/* --- printing ------------------------------------------------------------------------- */

void conf_print_string(FILE *f, const char *s)
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

void conf_print_value(FILE *f, const struct pd_config *c, const struct conf_key *k)
{
	const char *p = (const char *)c + k->offset;
	uint64_t v;

	switch (k->type) {
	case CONF_BOOL:
		fputs(*(const bool *)p ? "true" : "false", f);
		return;
	case CONF_STRING:
		conf_print_string(f, *(char *const *)p ? *(char *const *)p : "");
		return;
	case CONF_CUSTOM:
		k->custom->print(c, k, f);
		return;
	case CONF_ENUM:
		conf_print_string(f, k->names[conf_num_get(c, k)]);
		return;
	case CONF_SIZE:
		v = conf_num_get(c, k);
		if (v && !(v & 1023)) {
			char buf[32];

			fprintf(f, "\"%s\"", size_str(v, buf, sizeof(buf)));
			return;
		}
		break;
	case CONF_U32:
	case CONF_U64:
		v = conf_num_get(c, k);
		break;
	default:
		return;
	}
	/* libconfig reads a 64-bit literal as a signed long long, and INT64_MAX is also what
	 * it makes of one that overflows: from there on the number is written as a string,
	 * which the loader reads as an unsigned 64-bit decimal. */
	if (v >= INT64_MAX)
		fprintf(f, "\"%" PRIu64 "\"", v);
	else
		fprintf(f, "%" PRIu64 "%s", v, v > INT32_MAX ? "L" : "");
}

/* "NAME = VALUE;\t# help" with NAME the key's name without its group. */
static void print_key(FILE *f, const struct pd_config *c, const struct conf_key *k,
		      const char *indent)
{
	size_t g = group_len(k);

	fprintf(f, "%s%s = ", indent, k->name + (g ? g + 1 : 0));
	conf_print_value(f, c, k);
	fprintf(f, ";\t# %s\n", k->help);
}

/* Top-level keys first, then each group once (its keys may come from several tables), in
 * the order the groups first appear. */
void conf_print_of(const struct conf_table *const *tabs, const struct pd_config *c, FILE *f)
{
	bool any = false;

	for_each_key(tabs, t, k) {
		if (!group_len(k)) {
			print_key(f, c, k, "");
			any = true;
		}
	}
	for_each_key(tabs, t, k) {
		if (!group_len(k) || !group_first(tabs, k))
			continue;
		if (any)
			fputc('\n', f);
		any = true;
		fprintf(f, "%.*s = {\n", (int)group_len(k), k->name);
		for_each_key(tabs, t2, m)
			if (same_group(m, k))
				print_key(f, c, m, "\t");
		fputs("};\n", f);
	}
}

void conf_print(const struct pd_config *c, void *FILE_stream)
{
	conf_print_of(conf_tables, c, FILE_stream);
}

/* --- what a reload leaves ----------------------------------------------------------------- */

static bool key_differs(const struct pd_config *a, const struct pd_config *b,
			const struct conf_key *k)
{
	const char *pa = (const char *)a + k->offset, *pb = (const char *)b + k->offset;

	switch (k->type) {
	case CONF_BOOL:
		return *(const bool *)pa != *(const bool *)pb;
	case CONF_STRING: {
		const char *sa = *(char *const *)pa, *sb = *(char *const *)pb;

		return strcmp(sa ? sa : "", sb ? sb : "");
	}
	case CONF_CUSTOM:
		return false;	/* none is CONF_RESTART: their keys say how they reload */
	case CONF_U32:
	case CONF_U64:
	case CONF_SIZE:
	case CONF_ENUM:
		break;
	}
	return conf_num_get(a, k) != conf_num_get(b, k);
}

size_t conf_restart_changed(const struct pd_config *old, const struct pd_config *new,
			    char *buf, size_t len)
{
	size_t n = 0, used = 0;

	if (len)
		buf[0] = '\0';
	for_each_key(conf_tables, t, k) {
		int w;

		if (!(k->flags & CONF_RESTART) || !key_differs(old, new, k))
			continue;
		n++;
		if (used >= len)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", k->name);
		used += w > 0 ? (size_t)w : 0;
	}
	return n;
}
