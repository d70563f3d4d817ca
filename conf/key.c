/* SPDX-License-Identifier: MIT */
/* Walking the key tables: lookup, field access, range checks, defaults, release and
 * printing. Which keys there are is the tables' business (base_keys.c, tables.c). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "conf/key.h"

#define for_each_key(tabs, t, k)                                                              \
	for (const struct conf_table *const *t = (tabs); *t; t++)                              \
		for (const struct conf_key *k = (*t)->keys, *k##_end = k + (*t)->nkeys;       \
		     k < k##_end; k++)

void conf_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int conf_whyf(struct conf_why *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->text, sizeof(w->text), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const struct conf_key *conf_key_find(const struct conf_table *const *tabs, const char *name,
				     size_t len, size_t *index)
{
	size_t i = 0;

	for_each_key(tabs, t, k) {
		if (strlen(k->name) == len && !strncmp(k->name, name, len)) {
			if (index)
				*index = i;
			return k;
		}
		i++;
	}
	return NULL;
}

static size_t group_len(const struct conf_key *k);

/* The edit distance of @a and @b (Levenshtein, a swap of two letters counting once), at most
 * 64 letters each; longer ones are "far". */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t d[3][65];

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			size_t m = sub < del ? sub : del;

			m = m < ins ? m : ins;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < m)
				m = prev2[j - 2] + 1;
			cur[j] = m;
		}
	}
	return d[la % 3][lb];
}

const char *conf_key_nearest(const struct conf_table *const *tabs, const char *name,
			     size_t len, char *buf, size_t buflen)
{
	const char *best = NULL;
	/* A typo, not another word: one letter wrong in four, and one in any name. */
	size_t best_d = (len / 4 > 1 ? len / 4 : 1) + 1;
	bool best_group = false;

	for_each_key(tabs, t, k) {
		size_t g = group_len(k), d = edit_distance(name, len, k->name, strlen(k->name));

		if (d < best_d) {
			best = k->name;
			best_d = d;
			best_group = false;
		}
		/* The key without its group: "nomerges" for "queue.nomerges". */
		if (g && (d = edit_distance(name, len, k->name + g + 1, strlen(k->name + g + 1))) <
				 best_d) {
			best = k->name;
			best_d = d;
			best_group = false;
		}
		/* A group spelt wrong: "controler" for "controller" (not the group itself, which
		 * is no key). */
		d = g ? edit_distance(name, len, k->name, g) : SIZE_MAX;
		if (d && d < best_d) {
			best = k->name;
			best_d = d;
			best_group = true;
		}
	}
	if (best && best_group) {
		snprintf(buf, buflen, "%.*s", (int)strcspn(best, "."), best);
		return buf;
	}
	return best;
}

size_t conf_key_count(const struct conf_table *const *tabs)
{
	size_t n = 0;

	for (const struct conf_table *const *t = tabs; *t; t++)
		n += (*t)->nkeys;
	return n;
}

/* The length of @k's group ("queue" of "queue.plug"), 0 for a top-level key. */
static size_t group_len(const struct conf_key *k)
{
	const char *dot = strchr(k->name, '.');

	return dot ? (size_t)(dot - k->name) : 0;
}

static bool same_group(const struct conf_key *a, const struct conf_key *b)
{
	size_t n = group_len(a);

	return n && n == group_len(b) && !strncmp(a->name, b->name, n);
}

/* Whether @k is the first key of its group in @tabs (the group's place in the order). */
static bool group_first(const struct conf_table *const *tabs, const struct conf_key *k)
{
	for_each_key(tabs, t, o) {
		if (o == k)
			return true;
		if (same_group(o, k))
			return false;
	}
	return false;
}

bool conf_group_known(const struct conf_table *const *tabs, const char *group)
{
	size_t n = strlen(group);

	for_each_key(tabs, t, k)
		if (group_len(k) == n && !strncmp(k->name, group, n))
			return true;
	return false;
}

void conf_group_list(const struct conf_table *const *tabs, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for_each_key(tabs, t, k) {
		int n;

		if (!group_len(k) || !group_first(tabs, k) || used >= len)
			continue;
		n = snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "", (int)group_len(k),
			     k->name);
		used += n > 0 ? (size_t)n : 0;
	}
}

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

static const char *num_str(const struct conf_key *k, uint64_t v, char *buf, size_t len)
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
				 num_str(k, k->max, b, sizeof(b)), num_str(k, v, g, sizeof(g)));
		else if (k->flags & CONF_ZERO_OK)
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

/* --- defaults and release ------------------------------------------------------------- */

void conf_defaults_of(const struct conf_table *const *tabs, struct pd_config *c)
{
	memset(c, 0, sizeof(*c));
	for (const struct conf_table *const *t = tabs; *t; t++)
		if ((*t)->defaults)
			(*t)->defaults(c);
}

bool conf_defaults_complete(const struct conf_table *const *tabs, const struct pd_config *c)
{
	for_each_key(tabs, t, k)
		if (k->type == CONF_STRING && !*(char *const *)((const char *)c + k->offset))
			return false;
	return true;
}

void conf_free_of(const struct conf_table *const *tabs, struct pd_config *c)
{
	for_each_key(tabs, t, k) {
		if (k->type == CONF_STRING) {
			char **s = conf_field(c, k);

			free(*s);
			*s = NULL;
		} else if (k->type == CONF_CUSTOM && k->custom->release) {
			k->custom->release(c, k);
		}
	}
}

void conf_defaults(struct pd_config *c)
{
	conf_defaults_of(conf_tables, c);
}

void conf_free(struct pd_config *c)
{
	conf_free_of(conf_tables, c);
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

static void print_value(FILE *f, const struct pd_config *c, const struct conf_key *k)
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
	fprintf(f, "%" PRIu64 "%s", v, v > INT32_MAX ? "L" : "");
}

/* "NAME = VALUE;\t# help" with NAME the key's name without its group. */
static void print_key(FILE *f, const struct pd_config *c, const struct conf_key *k,
		      const char *indent)
{
	size_t g = group_len(k);

	fprintf(f, "%s%s = ", indent, k->name + (g ? g + 1 : 0));
	print_value(f, c, k);
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

void conf_list_keys(void *FILE_stream)
{
	static const char *const type_name[] = {
		[CONF_BOOL] = "bool", [CONF_U32] = "integer", [CONF_U64] = "integer",
		[CONF_SIZE] = "size", [CONF_STRING] = "string", [CONF_ENUM] = "enum",
		[CONF_CUSTOM] = "string",
	};
	FILE *f = FILE_stream;

	for_each_key(conf_tables, t, k) {
		fprintf(f, "%s %s", k->name, type_name[k->type]);
		if (k->type == CONF_BOOL)
			fputs(" true false", f);
		for (size_t i = 0; k->type == CONF_ENUM && k->names[i]; i++)
			fprintf(f, " %s", k->names[i]);
		fputc('\n', f);
	}
}

void conf_print(const struct pd_config *c, void *FILE_stream)
{
	conf_print_of(conf_tables, c, FILE_stream);
}
