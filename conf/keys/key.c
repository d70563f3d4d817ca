/* SPDX-License-Identifier: MIT */
/* Walking the key tables: lookup, the nearest key for "did you mean", groups, defaults and
 * release. Which keys there are is the tables' business (base_keys.c, tables.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "conf/keys/key.h"
#include "conf/keys/keywalk.h"

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
