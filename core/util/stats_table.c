// SPDX-License-Identifier: MIT
/* Writing a stats table's names (core/util/stats_table.h), and matching a name to a pattern. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util/stats_table.h"
#include "core/util/text.h"

#define MAX_ALTS 32
#define NAME_MAX_LEN 128	/* a name written, its NUL included */

/* A pattern taken apart: literal text, a group, literal text, a group... literal text. */
struct group {
	bool number;			/* N */
	unsigned int n;			/* alternatives (for N: set per snapshot) */
	const char *alt[MAX_ALTS];
	size_t alt_len[MAX_ALTS];
};

struct parsed {
	unsigned int ngroups;
	const char *lit[STATS_MAX_GROUPS + 1];
	size_t lit_len[STATS_MAX_GROUPS + 1];
	struct group g[STATS_MAX_GROUPS];
};

static int parse(const char *p, struct parsed *pp)
{
	const char *lit = p;

	memset(pp, 0, sizeof(*pp));
	for (; *p; p++) {
		struct group *g;

		if (*p != '{' && *p != 'N')
			continue;
		if (pp->ngroups == STATS_MAX_GROUPS)
			return -EINVAL;
		pp->lit[pp->ngroups] = lit;
		pp->lit_len[pp->ngroups] = (size_t)(p - lit);
		g = &pp->g[pp->ngroups++];
		if (*p == 'N') {
			g->number = true;
			lit = p + 1;
			continue;
		}
		for (const char *a = p + 1;; ) {
			const char *end = a;

			while (*end && *end != ',' && *end != '}')
				end++;
			if (!*end || g->n == MAX_ALTS)
				return -EINVAL;
			g->alt[g->n] = a;
			g->alt_len[g->n++] = (size_t)(end - a);
			a = end + 1;
			if (*end == '}') {
				p = end;
				break;
			}
		}
		lit = p + 1;
	}
	pp->lit[pp->ngroups] = lit;
	pp->lit_len[pp->ngroups] = strlen(lit);
	return 0;
}

static struct stats_value field_value(const struct stats_name *sn, const void *snap,
				      const unsigned int *alt, unsigned int ngroups)
{
	const char *at = (const char *)snap + sn->off;
	struct stats_value v = { .type = STATS_U64 };

	for (unsigned int g = 0; g < ngroups; g++)
		at += sn->step[g] * alt[g];
	switch (sn->type) {
	case STATS_U64:
		memcpy(&v.u, at, sizeof(v.u));
		break;
	case STATS_I64:
		v.type = STATS_I64;
		memcpy(&v.i, at, sizeof(v.i));
		break;
	case STATS_U32: {
		uint32_t u;

		memcpy(&u, at, sizeof(u));
		v.u = u;
		break;
	}
	case STATS_INT: {
		int i;

		memcpy(&i, at, sizeof(i));
		v.type = STATS_I64;
		v.i = i;
		break;
	}
	case STATS_BOOL: {
		bool b;

		memcpy(&b, at, sizeof(b));
		v.u = b;
		break;
	}
	case STATS_WORD:
		v.type = STATS_WORD;
		memcpy(&v.word, at, sizeof(v.word));
		break;
	}
	if (sn->div && v.type == STATS_U64)
		v.u /= sn->div;
	else if (sn->div && v.type == STATS_I64)
		v.i /= (int64_t)sn->div;
	return v;
}

/* Write every name of @sn from group @g on, the groups before it set in @alt, the name so far
 * in @name (@nlen bytes). */
static void expand(const struct stats_table *t, const struct stats_name *sn,
		   const struct parsed *pp, unsigned int g, unsigned int *alt, const void *snap,
		   char *name, size_t nlen, char *buf, size_t len, size_t *pos)
{
	const struct group *gr = &pp->g[g];
	unsigned int n;

	if (nlen + pp->lit_len[g] >= NAME_MAX_LEN)
		return;
	memcpy(name + nlen, pp->lit[g], pp->lit_len[g]);
	nlen += pp->lit_len[g];
	if (g == pp->ngroups) {
		struct stats_value v = sn->fn ? sn->fn(snap, alt) : field_value(sn, snap, alt, g);

		name[nlen] = '\0';
		if (v.type == STATS_WORD)
			stats_put(buf, len, pos, "%s %s\n", name, v.word ? v.word : "");
		else if (v.type == STATS_I64)
			stats_put(buf, len, pos, "%s %" PRId64 "\n", name, v.i);
		else
			stats_put(buf, len, pos, "%s %" PRIu64 "\n", name, v.u);
		return;
	}
	n = gr->number ? (t->nr_numbers ? t->nr_numbers(snap) : 0) : gr->n;
	for (unsigned int k = 0; k < n; k++) {
		char num[16];
		const char *a = num;
		size_t alen;

		if (gr->number) {
			alen = (size_t)snprintf(num, sizeof(num), "%u", t->number(snap, k));
		} else {
			a = gr->alt[k];
			alen = gr->alt_len[k];
		}
		if (nlen + alen >= NAME_MAX_LEN)
			continue;
		memcpy(name + nlen, a, alen);
		alt[g] = k;
		expand(t, sn, pp, g + 1, alt, snap, name, nlen + alen, buf, len, pos);
	}
}

void stats_table_write(const struct stats_table *t, const void *snap, char *buf, size_t len,
		       size_t *pos)
{
	for (size_t i = 0; i < t->nr; i++) {
		const struct stats_name *sn = &t->names[i];
		unsigned int alt[STATS_MAX_GROUPS] = { 0 };
		struct parsed pp;
		char name[NAME_MAX_LEN];

		if (sn->section)
			stats_put(buf, len, pos, "\n# %s\n", sn->section);
		/* stats_table_check() refuses a pattern parse() cannot take */
		if (parse(sn->pattern, &pp))
			continue;
		expand(t, sn, &pp, 0, alt, snap, name, 0, buf, len, pos);
	}
}

size_t stats_table_format(const struct stats_table *t, const void *snap, char *buf, size_t len)
{
	size_t pos = 0;

	if (len)
		buf[0] = '\0';
	stats_table_write(t, snap, buf, len, &pos);
	return pos;
}

/* The longest name @pp expands to, N taking 10 digits. */
static size_t longest(const struct parsed *pp)
{
	size_t n = pp->lit_len[pp->ngroups];

	for (unsigned int g = 0; g < pp->ngroups; g++) {
		size_t most = pp->g[g].number ? 10 : 0;

		for (unsigned int k = 0; k < pp->g[g].n; k++)
			if (pp->g[g].alt_len[k] > most)
				most = pp->g[g].alt_len[k];
		n += pp->lit_len[g] + most;
	}
	return n;
}

/* Whether pattern @p matches all of @s. */
static bool match(const char *p, const char *s)
{
	for (; *p; p++) {
		if (*p == '{') {
			const char *close = strchr(p, '}'), *alt = p + 1;

			if (!close)
				return false;
			for (;;) {
				const char *end = alt;
				char buf[256];
				size_t n;

				while (end < close && *end != ',')
					end++;
				/* this alternative, then the rest of the pattern */
				n = (size_t)(end - alt);
				if (n + strlen(close + 1) < sizeof(buf)) {
					memcpy(buf, alt, n);
					strcpy(buf + n, close + 1);
					if (match(buf, s))
						return true;
				}
				if (end >= close)
					return false;
				alt = end + 1;
			}
		}
		if (*p == 'N') {
			if (*s < '0' || *s > '9')
				return false;
			while (s[1] >= '0' && s[1] <= '9')
				s++;
			s++;
			continue;
		}
		if (*p != *s)
			return false;
		s++;
	}
	return !*s;
}

bool stats_pattern_match(const char *pattern, const char *name)
{
	return match(pattern, name);
}

/* What is wrong with @sn of @t, or NULL. */
static const char *name_fault(const struct stats_table *t, const struct stats_name *sn)
{
	struct parsed pp;

	if (!sn->pattern || !*sn->pattern)
		return "no pattern";
	if (parse(sn->pattern, &pp))
		return "a pattern with more groups or alternatives than a table takes";
	if (longest(&pp) >= NAME_MAX_LEN)
		return "a pattern whose names may be too long";
	if (!sn->unit || !sn->help || !sn->doc || !*sn->help || !*sn->doc)
		return "no unit, help or doc";
	for (unsigned int g = 0; g < pp.ngroups; g++) {
		if (!pp.g[g].number)
			continue;
		if (!t->nr_numbers || !t->number || !t->number_label)
			return "N without the table's numbers and their label";
		if (g > 0 || strchr(sn->pattern, '{'))
			return "N with a brace group: N must be a pattern's only group";
	}
	return NULL;
}

int stats_table_check(const struct stats_table *t, char *err, size_t errlen)
{
	for (size_t i = 0; i < t->nr; i++) {
		const struct stats_name *sn = &t->names[i];
		const char *why = name_fault(t, sn);

		if (why) {
			snprintf(err, errlen, "%s stats name %u (%s): %s", t->producer,
				 (unsigned int)i, sn->pattern ? sn->pattern : "", why);
			return -EINVAL;
		}
	}
	return 0;
}
