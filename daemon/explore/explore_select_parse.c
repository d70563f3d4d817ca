// SPDX-License-Identifier: MIT
/* The options that choose explore's states (explore_select.h): --kinds, --windows, --states,
 * --weights and --sampler, read into a struct xp_select. The choice itself is
 * explore_select.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/parse.h"
#include "daemon/explore/explore.h"
#include "daemon/explore/explore_select.h"

unsigned int xp_nkinds(void)
{
	unsigned int n = 0;

	while (n < XP_MAX_KINDS && ws_kind_names[n])
		n++;
	return n;
}

static int kind_index(const char *name, size_t len)
{
	for (unsigned int k = 0; k < xp_nkinds(); k++)
		if (strlen(ws_kind_names[k]) == len && !strncmp(ws_kind_names[k], name, len))
			return (int)k;
	return -1;
}

static void kinds_list(FILE *f)
{
	for (unsigned int k = 0; k < xp_nkinds(); k++)
		fprintf(f, "%s%s", k ? ", " : "", ws_kind_names[k]);
}

/* "A-B" or "A" into @r; 0 or -EINVAL. */
static int parse_range(const char *s, size_t len, struct xp_range *r)
{
	char buf[64], *dash;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	dash = strchr(buf, '-');
	if (dash)
		*dash = '\0';
	if (conf_parse_u64_whole(buf, &r->lo))
		return -EINVAL;
	r->hi = r->lo;
	if (dash && conf_parse_u64_whole(dash + 1, &r->hi))
		return -EINVAL;
	return r->hi < r->lo ? -EINVAL : 0;
}

int xp_parse_kinds(struct xp_select *sel, const char *arg)
{
	const char *p = arg;

	sel->kinds = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		int k = kind_index(p, len);

		if (k < 0) {
			fprintf(stderr, "plugdisk explore: --kinds: unknown kind '%.*s' (kinds: ",
				(int)len, p);
			kinds_list(stderr);
			fprintf(stderr, ")\n");
			return -EINVAL;
		}
		sel->kinds |= 1u << k;
		p += len + (p[len] == ',');
	}
	if (!sel->kinds) {
		fprintf(stderr, "plugdisk explore: --kinds: name at least one kind\n");
		return -EINVAL;
	}
	sel->chosen = true;
	return 0;
}

int xp_parse_windows(struct xp_select *sel, const char *arg)
{
	if (parse_range(arg, strlen(arg), &sel->windows)) {
		fprintf(stderr, "plugdisk explore: bad --windows (A-B or A, A <= B): %s\n", arg);
		return -EINVAL;
	}
	sel->has_windows = true;
	sel->chosen = true;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct xp_range *p = a, *q = b;

	return p->lo < q->lo ? -1 : p->lo > q->lo;
}

int xp_parse_states(struct xp_select *sel, const char *arg)
{
	const char *p = arg;
	uint64_t n = 0, cap = 0;
	struct xp_range *v = NULL;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (n == cap) {
			struct xp_range *nv = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		if (parse_range(p, len, &v[n])) {
			fprintf(stderr, "plugdisk explore: bad --states (ID,ID,A-B): %s\n", arg);
			free(v);
			return -EINVAL;
		}
		n++;
		p += len + (p[len] == ',');
	}
	if (!n) {
		fprintf(stderr, "plugdisk explore: --states: name at least one state\n");
		return -EINVAL;
	}
	qsort(v, n, sizeof(*v), cmp_range);
	{ /* merge overlapping and adjacent ranges */
		uint64_t m = 0;

		for (uint64_t i = 1; i < n; i++) {
			if (v[i].lo <= v[m].hi || v[i].lo - v[m].hi == 1) {
				if (v[i].hi > v[m].hi)
					v[m].hi = v[i].hi;
			} else {
				v[++m] = v[i];
			}
		}
		n = m + 1;
	}
	free(sel->states);
	sel->states = v;
	sel->nstates = n;
	sel->chosen = true;
	return 0;
}

int xp_parse_weights(struct xp_select *sel, const char *arg)
{
	const char *p = arg;

	while (*p) {
		size_t len = strcspn(p, ","), nl = strcspn(p, "=");
		char num[32];
		uint64_t w;
		int k;

		if (nl >= len || len - nl - 1 >= sizeof(num))
			goto bad;
		k = kind_index(p, nl);
		if (k < 0)
			goto bad;
		memcpy(num, p + nl + 1, len - nl - 1);
		num[len - nl - 1] = '\0';
		if (conf_parse_u64_whole(num, &w) || !w || w > 1000)
			goto bad;
		sel->weight[k] = (unsigned int)w;
		p += len + (p[len] == ',');
	}
	return 0;
bad:
	fprintf(stderr, "plugdisk explore: bad --weights (KIND=N,..., N 1..1000; kinds: ");
	kinds_list(stderr);
	fprintf(stderr, "): %s\n", arg);
	return -EINVAL;
}

int xp_parse_sampler(struct xp_select *sel, const char *arg)
{
	if (!strcmp(arg, "uniform") || !strcmp(arg, "stratified")) {
		sel->uniform = arg[0] == 'u';
		return 0;
	}
	fprintf(stderr, "plugdisk explore: bad --sampler (stratified or uniform): %s\n", arg);
	return -EINVAL;
}

void xp_select_free(struct xp_select *sel)
{
	free(sel->states);
	sel->states = NULL;
}
