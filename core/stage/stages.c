// SPDX-License-Identifier: MIT
/* Every stage the chain can build: one line each (stages.order names them). */
#include <stddef.h>

#include "core/stage/chain.h"

extern const struct stage_ops cache_stage_ops;	/* core/cache/cache_stage.c */
extern const struct stage_ops fault_stage_ops;	/* core/fault/fault_stage.c */
extern const struct stage_ops crc_stage_ops;	/* core/crc/crc.c */

const struct stage_ops *const chain_stages[] = {
	&cache_stage_ops,
	&fault_stage_ops,
	&crc_stage_ops,
	NULL,
};
