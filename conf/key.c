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

/* --- the key reference (--doc-keys) ------------------------------------------------------ */

/* The section of plugdisk.conf(5) that documents @k: its table's, else its group, else the
 * key itself (a top-level key such as "faults" has a section of its own). */
static void key_section(const struct conf_table *t, const struct conf_key *k, char *buf,
			size_t len)
{
	size_t g = group_len(k);

	if (t->section)
		snprintf(buf, len, "%s", t->section);
	else
		snprintf(buf, len, "%.*s", g ? (int)g : (int)strlen(k->name), k->name);
}

/* Whether @k is the first key of section @sec. */
static bool section_first(const struct conf_key *k, const char *sec)
{
	char other[64];

	for_each_key(conf_tables, t, o) {
		if (o == k)
			return true;
		key_section(*t, o, other, sizeof(other));
		if (!strcmp(sec, other))
			return false;
	}
	return false;
}

static const char *doc_type(const struct conf_key *k)
{
	static const char *const name[] = {
		[CONF_BOOL] = "bool", [CONF_U32] = "integer", [CONF_U64] = "integer",
		[CONF_SIZE] = "size", [CONF_STRING] = "string", [CONF_ENUM] = "string",
	};

	if (k->type == CONF_CUSTOM)
		return k->custom->expected && !strcmp(k->custom->expected, "a list of strings")
			       ? "list of strings" : "string";
	return name[k->type];
}

/* The unit a number of @k is counted in, for its range. */
static const char *doc_unit(const struct conf_key *k)
{
	size_t n = strlen(k->name);

	if (k->type == CONF_SIZE)
		return k->flags & CONF_PER_SEC ? " bytes/s" : " bytes";
	if (n > 3 && !strcmp(k->name + n - 3, "_us"))
		return " us";
	if (n > 3 && !strcmp(k->name + n - 3, "_ms"))
		return " ms";
	if (n > 3 && !strcmp(k->name + n - 3, "_kb"))
		return " KiB";
	return "";
}

/* What values @k takes: "0, or 512 to 1T bytes/s", "1 to 64 characters", "\"auto\", ...". */
static void doc_range(const struct conf_key *k, char *buf, size_t len)
{
	char a[32], b[32];
	size_t used;

	switch (k->type) {
	case CONF_BOOL:
		snprintf(buf, len, "true or false");
		return;
	case CONF_STRING:
		if (k->min)
			snprintf(buf, len, "%" PRIu64 " to %" PRIu64 " characters", k->min, k->max);
		else
			snprintf(buf, len, "at most %" PRIu64 " characters", k->max);
		if (k->flags & CONF_NAME_CHARS) {
			used = strlen(buf);
			snprintf(buf + used, len - used, " of A-Z a-z 0-9 . _ -");
		}
		return;
	case CONF_ENUM:
		buf[0] = '\0';
		for (size_t i = 0, n = 0; k->names[i] && n < len; i++) {
			int w = snprintf(buf + n, len - n, "%s\"%s\"", i ? ", " : "", k->names[i]);

			n += w > 0 ? (size_t)w : 0;
		}
		return;
	case CONF_CUSTOM:
		snprintf(buf, len, "%s", k->custom->expected ? k->custom->expected : "a string");
		return;
	case CONF_U32:
	case CONF_U64:
	case CONF_SIZE:
		break;
	}
	if (k->max == UINT64_MAX && !k->min)
		snprintf(buf, len, "any 64-bit integer");
	else
		snprintf(buf, len, "%s%s to %s%s", (k->flags & CONF_ZERO_OK) && k->min ? "0, or " : "",
			 num_str(k, k->min, a, sizeof(a)), num_str(k, k->max, b, sizeof(b)),
			 doc_unit(k));
	used = strlen(buf);
	if (k->align && used < len)
		snprintf(buf + used, len - used, ", a multiple of %" PRIu64, k->align);
}

static const char *doc_reload(const struct conf_key *k)
{
	return k->flags & CONF_RESTART ? "at the next start" : "applied live";
}

/* @s as roff text: backslashes and minus signs escaped, a leading '.' or '\'' guarded. */
static void man_text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

/* @s in a Markdown table cell: '|' escaped. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else
			fputc(*s, f);
	}
}

/* A value printed by print_value, into @buf. */
static void doc_default(const struct pd_config *c, const struct conf_key *k, char *buf,
			size_t len)
{
	FILE *m = fmemopen(buf, len, "w");

	buf[0] = '\0';
	if (!m)
		return;
	print_value(m, c, k);
	fclose(m);
}

static void doc_man_key(FILE *f, const struct pd_config *c, const struct conf_key *k)
{
	char def[256], range[512], help[512];

	doc_default(c, k, def, sizeof(def));
	doc_range(k, range, sizeof(range));
	fprintf(f, ".TP\n.BR %s \" (%s)\"\nDefault: ", k->name, doc_type(k));
	man_text(f, def);
	fputs(". Takes: ", f);
	man_text(f, range);
	fprintf(f, ". Reload: %s.\n.br\n", doc_reload(k));
	/* The help as a sentence: "Path of the backing image." */
	snprintf(help, sizeof(help), "%s.", k->help);
	/* (not a name such as "io_uring") */
	if (strcspn(help, "_. ") == strcspn(help, " "))
		help[0] = (char)toupper((unsigned char)help[0]);
	man_text(f, help);
	fputc('\n', f);
}

static void doc_md_key(FILE *f, const struct pd_config *c, const struct conf_key *k)
{
	char def[256], range[512];

	doc_default(c, k, def, sizeof(def));
	doc_range(k, range, sizeof(range));
	fprintf(f, "| `%s` | %s | `", k->name, doc_type(k));
	md_text(f, def);
	fputs("` | ", f);
	md_text(f, range);
	fprintf(f, " | %s | ", doc_reload(k));
	md_text(f, k->help);
	fputs(" |\n", f);
}

static void doc_conf_key(FILE *f, const struct pd_config *c, const struct conf_key *k)
{
	size_t g = group_len(k);
	const char *in = g ? "\t" : "";
	char range[512];

	doc_range(k, range, sizeof(range));
	fprintf(f, "%s# %s\n%s# Takes %s. Reload: %s.\n%s# %s = ", in, k->help, in, range,
		doc_reload(k), in, k->name + (g ? g + 1 : 0));
	print_value(f, c, k);
	fputs(";\n", f);
}

/* The conf format: as conf_print_of, top-level keys first, then each group once. */
static void doc_conf(FILE *f, const struct pd_config *c)
{
	for_each_key(conf_tables, t, k)
		if (!group_len(k))
			doc_conf_key(f, c, k);
	for_each_key(conf_tables, t, k) {
		if (!group_len(k) || !group_first(conf_tables, k))
			continue;
		fprintf(f, "\n%.*s = {\n", (int)group_len(k), k->name);
		for_each_key(conf_tables, t2, m)
			if (same_group(m, k))
				doc_conf_key(f, c, m);
		fputs("};\n", f);
	}
}

int conf_doc_keys(const char *format, void *FILE_stream)
{
	bool man = !strcmp(format, "man");
	FILE *f = FILE_stream;
	struct pd_config c;
	char sec[64], other[64];

	if (!man && strcmp(format, "md") && strcmp(format, "conf"))
		return -EINVAL;
	conf_defaults(&c);
	if (!strcmp(format, "conf")) {
		doc_conf(f, &c);
		conf_free(&c);
		return 0;
	}
	if (!man)
		fputs("| Key | Type | Default | Takes | Reload | Meaning |\n"
		      "|---|---|---|---|---|---|\n", f);
	/* Each section once, at its first key, with every key of it from every table. */
	for_each_key(conf_tables, t, k) {
		key_section(*t, k, sec, sizeof(sec));
		if (!section_first(k, sec))
			continue;
		if (man)
			fprintf(f, ".\\\" BEGIN GENERATED KEYS %s\n", sec);
		for_each_key(conf_tables, t2, m) {
			key_section(*t2, m, other, sizeof(other));
			if (strcmp(sec, other))
				continue;
			if (man)
				doc_man_key(f, &c, m);
			else
				doc_md_key(f, &c, m);
		}
		if (man)
			fputs(".\\\" END GENERATED KEYS\n", f);
	}
	conf_free(&c);
	return 0;
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
