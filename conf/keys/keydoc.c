/* SPDX-License-Identifier: MIT */
/* The key reference generated from the tables: --doc-keys (plugdisk.conf(5), Markdown, an
 * annotated config) and --list-keys (names, types and words, for shell completion). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "conf/keys/key.h"
#include "conf/keys/keywalk.h"

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

/* --- the key reference (--doc-keys) ------------------------------------------------------ */

/* The section of plugdisk.conf(5) that documents @k: its table's (@tsection), else its group, else the
 * key itself (a top-level key such as "faults" has a section of its own). */
static void key_section(const char *tsection, const struct conf_key *k, char *buf, size_t len)
{
	size_t g = group_len(k);

	if (tsection)
		snprintf(buf, len, "%s", tsection);
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
		key_section((*t)->section, o, other, sizeof(other));
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
	if (conf_key_time_unit(k))
		return conf_key_time_unit(k) == 1000 ? " us" : " ms";
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
			 conf_num_str(k, k->min, a, sizeof(a)),
			 conf_num_str(k, k->max, b, sizeof(b)), doc_unit(k));
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

/* A value printed by conf_print_value, into @buf. */
static void doc_default(const struct pd_config *c, const struct conf_key *k, char *buf,
			size_t len)
{
	FILE *m = fmemopen(buf, len, "w");

	buf[0] = '\0';
	if (!m)
		return;
	conf_print_value(m, c, k);
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
	conf_print_value(f, c, k);
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

/* Every key of section @sec, from every table. */
static void doc_section(FILE *f, const struct pd_config *c, bool man, const char *sec)
{
	char other[64];

	if (man)
		fprintf(f, ".\\\" BEGIN GENERATED KEYS %s\n", sec);
	for_each_key(conf_tables, t, m) {
		key_section((*t)->section, m, other, sizeof(other));
		if (strcmp(sec, other))
			continue;
		if (man)
			doc_man_key(f, c, m);
		else
			doc_md_key(f, c, m);
	}
	if (man)
		fputs(".\\\" END GENERATED KEYS\n", f);
}

int conf_doc_keys(const char *format, void *FILE_stream)
{
	bool man = !strcmp(format, "man");
	FILE *f = FILE_stream;
	struct pd_config c;
	char sec[64];

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
	/* Each section once, at its first key. */
	for (const struct conf_table *const *t = conf_tables; *t; t++) {
		const struct conf_table *tab = *t;

		for (size_t i = 0; i < tab->nkeys; i++) {
			key_section(tab->section, &tab->keys[i], sec, sizeof(sec));
			if (section_first(&tab->keys[i], sec))
				doc_section(f, &c, man, sec);
		}
	}
	conf_free(&c);
	return 0;
}
