// SPDX-License-Identifier: MIT
/* The chain of stages (see chain.h): the order, building the chain, and the operations that
 * walk it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/stage/chain.h"
#include "core/util/log.h"

/* ---- the order ---- */

static const struct stage_ops *stage_by_name(const char *name, size_t len)
{
	for (unsigned int i = 0; chain_stages[i]; i++)
		if (strlen(chain_stages[i]->name) == len && !strncmp(chain_stages[i]->name, name, len))
			return chain_stages[i];
	return NULL;
}

int chain_order_parse(const char *text, const struct stage_ops **ops, unsigned int *n,
		      char *why, size_t whylen)
{
	const char *p = text;
	unsigned int k = 0;

	for (;;) {
		const struct stage_ops *o;
		size_t len;

		while (*p == ' ' || *p == '\t')
			p++;
		len = strcspn(p, ", \t");
		if (!len) {
			snprintf(why, whylen, "%s", *p ? "an empty stage name" : "no stage named");
			return -EINVAL;
		}
		if (len == 7 && !strncmp(p, "backend", 7)) {
			snprintf(why, whylen, "the backend is always the bottom stage: leave it out");
			return -EINVAL;
		}
		o = stage_by_name(p, len);
		if (!o) {
			snprintf(why, whylen, "unknown stage \"%.*s\"", (int)len, p);
			return -EINVAL;
		}
		for (unsigned int i = 0; i < k; i++)
			if (ops[i] == o) {
				snprintf(why, whylen, "stage \"%s\" is named twice", o->name);
				return -EINVAL;
			}
		if (k == CHAIN_MAX_STAGES - 1) {
			snprintf(why, whylen, "more than %d stages", CHAIN_MAX_STAGES - 1);
			return -EINVAL;
		}
		ops[k++] = o;
		p += len;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (*p != ',') {
			snprintf(why, whylen, "stage names are separated by commas");
			return -EINVAL;
		}
		p++;
	}
	/* The cache and the faults have keys and control commands of their own: an order
	 * without one would leave them acting on nothing. */
	for (const char *const *must = (const char *const[]){ "cache", "faults", NULL }; *must;
	     must++) {
		bool found = false;

		for (unsigned int i = 0; i < k; i++)
			found |= !strcmp(ops[i]->name, *must);
		if (!found) {
			snprintf(why, whylen, "\"%s\" is missing: every order names the cache and "
				 "the faults", *must);
			return -EINVAL;
		}
	}
	*n = k;
	return 0;
}

/* ---- building ---- */

/* What calls the stage @s, the @k-th from the bottom: in the checking builds, a checking
 * stage in front of it, ch->chk[@k]. */
static struct stage chain_link(struct chain *ch, unsigned int k, const struct stage *s,
			       const struct chain_params *p)
{
#ifdef PLUGDISK_CHECKS
	return stage_check_wrap(&ch->chk[k], s, p->disk_size);
#else
	(void)ch;
	(void)k;
	(void)p;
	return *s;
#endif
}

int chain_build(struct chain *ch, const struct stage *bottom, const struct chain_params *p,
		char *err, size_t errlen)
{
	const struct stage_ops *order[CHAIN_MAX_STAGES];
	struct stage up[CHAIN_MAX_STAGES];	/* bottom first */
	struct stage link[CHAIN_MAX_STAGES];	/* what calls up[i]: up[i] or its check */
	struct chain_params q = *p;
	unsigned int norder, n = 0;
	int ret;

	memset(ch, 0, sizeof(*ch));
	q.power_gen = chain_power_gen; /* read only once the chain is built and runs */
	q.power_gen_arg = ch;
	ret = chain_order_parse(p->order ? p->order : CHAIN_DEFAULT_ORDER, order, &norder, err,
				errlen);
	if (ret) {
		ch->failed = "stages.order";
		return ret;
	}
	for (unsigned int i = 0; i < norder; i++)
		if (order[i]->check && (ret = order[i]->check(p, err, errlen))) {
			ch->failed = order[i]->name;
			return ret;
		}
	up[n] = *bottom;
	link[n] = chain_link(ch, n, &up[n], p);
	n++;
	for (unsigned int i = norder; i-- > 0;) {
		unsigned int image = n - 1;
		void *self = NULL;

		/* The image: the first stage below that does not let a cut's data pass by. */
		while (image > 0 && up[image].ops->image_skip)
			image--;
		ret = order[i]->init(&self, &q, &link[n - 1], &link[image], err, errlen);
		if (ret) {
			ch->failed = order[i]->name;
			goto err;
		}
		if (self) {
			up[n] = (struct stage){ .ops = order[i], .self = self };
			link[n] = chain_link(ch, n, &up[n], p);
			n++;
		}
	}
	for (unsigned int i = 0; i < n; i++)
		ch->st[i] = up[n - 1 - i];
	ch->top = link[n - 1];
	ch->n = n;
	return 0;

err:
	/* Those built, top down, as chain_destroy() does; not the bottom (the caller's). */
	while (n-- > 1)
		if (up[n].ops->destroy)
			up[n].ops->destroy(up[n].self);
	return ret;
}

void *chain_find(const struct chain *ch, const char *name)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (!strcmp(ch->st[i].ops->name, name))
			return ch->st[i].self;
	return NULL;
}

/* ---- walking ---- */

uint64_t chain_admit_ns(void *arg, const struct request *rq)
{
	struct chain *ch = arg;
	uint64_t ns = 0;

	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->admit_ns)
			ns += ch->st[i].ops->admit_ns(ch->st[i].self, rq);
	return ns;
}

int chain_freeze(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];
		int ret;

		if (!s->ops->freeze)
			continue;
		ret = s->ops->freeze(s->self);
		if (ret) {
			/* This stage and those above it, bottom up. */
			for (unsigned int j = i + 1; j-- > 0;)
				if (ch->st[j].ops->thaw)
					ch->st[j].ops->thaw(ch->st[j].self);
			return ret;
		}
	}
	return 0;
}

void chain_thaw(struct chain *ch)
{
	for (unsigned int i = ch->n; i-- > 0;)
		if (ch->st[i].ops->thaw)
			ch->st[i].ops->thaw(ch->st[i].self);
}

int chain_powercut(struct chain *ch, int mode, uint64_t seed, const char *why)
{
	int ret = -EOPNOTSUPP;

	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];

		if (s->ops->powercut) {
			int r = s->ops->powercut(s->self, mode, seed, why);

			if (ret == -EOPNOTSUPP)
				ret = r;
		}
	}
	return ret;
}

int chain_poweron(struct chain *ch)
{
	int ret = -EOPNOTSUPP;

	/* Bottom up: a stage serves again only over stages that already do. */
	for (unsigned int i = ch->n; i-- > 0;) {
		const struct stage *s = &ch->st[i];

		if (s->ops->poweron) {
			int r = s->ops->poweron(s->self);

			if (ret == -EOPNOTSUPP)
				ret = r;
		}
	}
	return ret;
}

uint64_t chain_power_gen(void *arg)
{
	struct chain *ch = arg;
	uint64_t gen = 0;

	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->power_gen)
			gen += ch->st[i].ops->power_gen(ch->st[i].self);
	return gen;
}

void chain_stop(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->stop)
			ch->st[i].ops->stop(ch->st[i].self);
}

int chain_writeout(struct chain *ch)
{
	int ret = 0;

	if (ch->written_out)
		return 0;
	ch->written_out = true;
	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];

		if (s->ops->writeout) {
			int r = s->ops->writeout(s->self);

			if (!ret)
				ret = r;
		}
	}
	return ret;
}

int chain_reconfigure(struct chain *ch, const struct chain_params *p, char *err,
		      size_t errlen)
{
	int ret = 0;

	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];
		int r;

		if (!s->ops->reconfigure)
			continue;
		/* Every stage takes its part; the first refusal's message is kept. */
		r = s->ops->reconfigure(s->self, p, ret ? NULL : err, ret ? 0 : errlen);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

size_t chain_stats(struct chain *ch, char *buf, size_t len)
{
	size_t used = 0;

	for (unsigned int i = ch->n; i-- > 0;) {
		const struct stage *s = &ch->st[i];

		if (s->ops->stats && used < len)
			used += s->ops->stats(s->self, buf + used, len - used);
	}
	for (unsigned int k = 0; chain_stages[k]; k++) {
		const struct stage_ops *o = chain_stages[k];
		bool held = false;

		for (unsigned int i = 0; i < ch->n; i++)
			held |= ch->st[i].ops == o;
		if (!held && o->stats_absent && used < len)
			used += o->stats(NULL, buf + used, len - used);
	}
	return used;
}

bool chain_may_hold(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->may_hold && ch->st[i].ops->may_hold(ch->st[i].self))
			return true;
	return false;
}

unsigned int chain_held(struct chain *ch)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->held)
			n += ch->st[i].ops->held(ch->st[i].self);
	return n;
}

bool chain_any_held(void *arg)
{
	return chain_held(arg) != 0;
}

bool chain_may_block(void *arg)
{
	struct chain *ch = arg;
	bool waits = false;

	for (unsigned int i = 0; i < ch->n; i++) {
		if (waits && ch->st[i].ops->may_hold && ch->st[i].ops->may_hold(ch->st[i].self))
			return true;
		waits = waits || ch->st[i].ops->waits_below;
	}
	return false;
}

void chain_stats_reset(struct chain *ch)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->st[i].ops->stats_reset)
			ch->st[i].ops->stats_reset(ch->st[i].self);
}

void chain_destroy(struct chain *ch)
{
	/* Top down: a stage goes before the stage it sends requests to. */
	for (unsigned int i = 0; i < ch->n; i++) {
		const struct stage *s = &ch->st[i];

		if (s->ops->destroy)
			s->ops->destroy(s->self);
	}
#ifdef PLUGDISK_CHECKS
	for (unsigned int i = 0; i < ch->n; i++)
		stage_check_end(&ch->chk[i]);
#endif
	ch->n = 0;
}
