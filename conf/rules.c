/* SPDX-License-Identifier: MIT */
/* The helpers each table's validate hook writes its cross-key rules with, and the pass that
 * runs those hooks once the file and every option are applied. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "conf/keys/key.h"
#include "conf/load.h"

static const struct origin *key_origin(const struct conf_load *ld, const char *key,
				       const struct conf_key **kp)
{
	size_t i;
	const struct conf_key *k = conf_key_find(ld->tabs, key, strlen(key), &i);

	if (kp)
		*kp = k;
	return k ? &ld->origin[i] : NULL;
}

bool conf_key_is_set(const struct conf_load *ld, const char *key)
{
	const struct origin *o = key_origin(ld, key, NULL);

	return o && (o->line || (o->opt && !o->preset));
}

int conf_reject(struct conf_load *ld, const char *key, const char *fmt, ...)
{
	static const struct origin none;
	const struct origin *o = key_origin(ld, key, NULL);
	va_list ap;

	va_start(ap, fmt);
	key_verr(ld, o ? o : &none, key, -EINVAL, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int conf_check_not_above(struct conf_load *ld, const char *a, const char *b)
{
	const struct conf_key *ka, *kb;
	uint64_t va, vb;

	key_origin(ld, a, &ka);
	key_origin(ld, b, &kb);
	va = conf_num_get(ld->c, ka);
	vb = conf_num_get(ld->c, kb);
	if (va <= vb)
		return 0;
	if (conf_key_is_set(ld, a) || !conf_key_is_set(ld, b))
		return conf_reject(ld, a, "%" PRIu64 " is larger than %s (%" PRIu64 ")", va, b, vb);
	return conf_reject(ld, b, "%" PRIu64 " is smaller than %s (%" PRIu64 ")", vb, a, va);
}

int conf_validate(struct conf_load *ld)
{
	for (const struct conf_table *const *t = ld->tabs; *t; t++) {
		int ret = (*t)->validate ? (*t)->validate(ld, ld->c) : 0;

		if (ret)
			return ret;
	}
	return 0;
}
