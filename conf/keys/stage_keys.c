/* SPDX-License-Identifier: MIT */
/* The keys of the chain of stages (stages.*, core/stage/chain.h). */
#include <stdlib.h>
#include <string.h>

#include "conf/keys/key.h"
#include "core/stage/chain.h"

static const struct conf_key stage_keys[] = {
	CONF_KEY("stages.order", CONF_STRING, stages_order, 1, 255, 0, CONF_RESTART,
		 "the stages below the controller, from the top down: \"cache, faults\" or "
		 "\"faults, cache\" (plugdisk.conf(5), STAGES GROUP)"),
};

static void stage_defaults(struct pd_config *c)
{
	c->stages_order = strdup(CHAIN_DEFAULT_ORDER);
}

static int stage_validate(struct conf_load *ld, const struct pd_config *c)
{
	const struct stage_ops *ops[CHAIN_MAX_STAGES];
	unsigned int n;
	char why[256];

	if (chain_order_parse(c->stages_order, ops, &n, why, sizeof(why)))
		return conf_reject(ld, "stages.order", "%s", why);
	return 0;
}

const struct conf_table conf_stage_table = CONF_TABLE(stage_keys, stage_defaults, stage_validate);
