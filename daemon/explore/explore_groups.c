// SPDX-License-Identifier: MIT
/* Failures grouped by signature (see explore_groups.h). A hash is a whole word of 2 or more
 * hex digits with a digit among them (Git's object ids and their fan-out directories,
 * ".git/objects/3d/2f9a...", checksums), or 0x and hex digits; a number is any other run of
 * digits. Both become '#', so that "object 3f2a9c1e... missing" and "line 42" match their kin
 * from other states. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/explore/explore.h"
#include "daemon/explore/explore_groups.h"

#define XP_HASH_MIN 2	/* hex digits that make a word a hash */

/* The length of the run of hex digits at @p, if it is a whole word of XP_HASH_MIN or more
 * with a digit in it; else 0. */
static size_t hash_len(const char *p, const char *start)
{
	size_t n = 0;
	bool digit = false;

	if (p > start && isalnum((unsigned char)p[-1]))
		return 0;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
		n = 2; /* 0x...: a number in hex, whatever its length */
		while (isxdigit((unsigned char)p[n]))
			n++;
		return isalnum((unsigned char)p[n]) ? 0 : n;
	}
	while (isxdigit((unsigned char)p[n])) {
		digit |= isdigit((unsigned char)p[n]) != 0;
		n++;
	}
	if (n < XP_HASH_MIN || !digit || isalnum((unsigned char)p[n]) || p[n] == '_')
		return 0;
	return n;
}

char *xp_group_blank_line(const char *output)
{
	const char *p = output ? output : "";
	size_t len = strcspn(p, "\n"), o = 0;
	char *s = malloc(len + 1);

	if (!s)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t h = hash_len(p + i, p);

		if (h && i + h <= len) {
			s[o++] = '#';
			i += h;
		} else if (isdigit((unsigned char)p[i])) {
			s[o++] = '#';
			while (i < len && isdigit((unsigned char)p[i]))
				i++;
		} else {
			s[o++] = p[i++];
		}
	}
	s[o] = '\0';
	return s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *xp_group_signature(const char *const *owners, size_t nowners, const char *output)
{
	const char **v = NULL;
	char *line = xp_group_blank_line(output), *sig = NULL;
	size_t len = 0, o = 0;

	if (!line)
		return NULL;
	if (nowners) {
		v = malloc(nowners * sizeof(*v));
		if (!v)
			goto out;
		memcpy(v, owners, nowners * sizeof(*v));
		qsort(v, nowners, sizeof(*v), cmp_str);
	}
	for (size_t i = 0; i < nowners; i++)
		len += strlen(v[i]) + 2;
	/* the owners or "(no lost writes)", " | ", the line or "(no output)", the NUL */
	sig = malloc(len + sizeof("(no lost writes)") + 3 + strlen(line) + sizeof("(no output)"));
	if (!sig)
		goto out;
	for (size_t i = 0; i < nowners; i++) {
		if (i && !strcmp(v[i], v[i - 1]))
			continue;
		o += (size_t)sprintf(sig + o, "%s%s", o ? ", " : "", v[i]);
	}
	if (!o)
		o += (size_t)sprintf(sig, "(no lost writes)");
	sprintf(sig + o, " | %s", *line ? line : "(no output)");
out:
	free(v);
	free(line);
	return sig;
}

static int group_push(struct xp_group *g, uint64_t member)
{
	if (g->count == g->cap) {
		uint64_t cap = g->cap ? 2 * g->cap : 8;
		uint64_t *nv = realloc(g->members, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		g->members = nv;
		g->cap = cap;
	}
	g->members[g->count++] = member;
	return 0;
}

int64_t xp_groups_add(struct xp_groups *gs, const char *signature, uint64_t member)
{
	struct xp_group *g;

	/* A run has few causes: a linear search over them is the cheap part of a checker run. */
	for (uint64_t i = 0; i < gs->n; i++)
		if (!strcmp(gs->g[i].signature, signature))
			return group_push(&gs->g[i], member) ? -ENOMEM : (int64_t)i;
	if (gs->n == gs->cap) {
		uint64_t cap = gs->cap ? 2 * gs->cap : 8;
		struct xp_group *nv = realloc(gs->g, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		gs->g = nv;
		gs->cap = cap;
	}
	g = &gs->g[gs->n];
	*g = (struct xp_group){ .signature = strdup(signature) };
	if (!g->signature || group_push(g, member)) {
		free(g->signature);
		return -ENOMEM;
	}
	return (int64_t)gs->n++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;

	return p < q ? -1 : p > q;
}

static int cmp_group(const void *a, const void *b)
{
	const struct xp_group *p = a, *q = b;

	if (p->count != q->count)
		return p->count > q->count ? -1 : 1;
	return cmp_u64(&p->members[0], &q->members[0]);
}

void xp_groups_sort(struct xp_groups *gs)
{
	for (uint64_t i = 0; i < gs->n; i++)
		qsort(gs->g[i].members, gs->g[i].count, sizeof(uint64_t), cmp_u64);
	if (gs->n) /* no failure, no array: qsort must not be given NULL */
		qsort(gs->g, gs->n, sizeof(*gs->g), cmp_group);
}

void xp_groups_free(struct xp_groups *gs)
{
	for (uint64_t i = 0; i < gs->n; i++) {
		free(gs->g[i].signature);
		free(gs->g[i].members);
	}
	free(gs->g);
	*gs = (struct xp_groups){ 0 };
}

/* What write @op of window @win belongs to, as a new string: its owner on the image's
 * filesystem (daemon/explore/owner/), or offset+length when no filesystem is known. */
char *xp_write_owner(const struct xp *x, uint64_t win, const struct ws_op *op)
{
	const char *o = x->owner ? xp_owner_name(x->owner, win, op->off, op->len) : NULL;
	char *s;

	if (o && strcmp(o, "offsets only"))
		return strdup(o);
	if (asprintf(&s, "%" PRIu64 "+%" PRIu64, op->off, op->len) < 0)
		return NULL;
	return s;
}

char *xp_state_signature(const struct xp *x, const struct ws_state *s, const uint64_t *culprit,
			 uint64_t nculprit, const char *output)
{
	const struct ws_log *l = &x->log;
	const struct ws_window *w = &l->win[s->win];
	char **owners = calloc(s->n ? s->n : 1, sizeof(*owners)), *sig = NULL;
	size_t n = 0;

	if (!owners)
		return NULL;
	for (uint64_t i = 0; i < (culprit ? nculprit : s->n); i++) {
		uint64_t op = culprit ? culprit[i] : i;

		if (!culprit && ws_state_keeps(l, s, i) == 1)
			continue;
		owners[n] = xp_write_owner(x, s->win, &l->ops[w->durable + op]);
		if (!owners[n++])
			goto out;
	}
	sig = xp_group_signature((const char *const *)owners, n, output);
out:
	for (size_t i = 0; i < n; i++)
		free(owners[i]);
	free(owners);
	return sig;
}
