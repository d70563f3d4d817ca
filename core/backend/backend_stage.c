// SPDX-License-Identifier: MIT
/* A backend as the bottom stage of the chain (core/stage/stage.h): its ops. */
#include "core/backend/backend.h"
#include "core/stage/chain.h"

static int backend_writeout(void *self)
{
	return backend_sync(self);
}

static size_t backend_stats_lines(void *self, char *buf, size_t len)
{
	return backend_stats(self, buf, len);
}

static bool backend_may_hold(void *self)
{
	const struct backend *be = self;

	return be->ops->remote;
}

static const struct stage_ops backend_stage_ops = {
	.name = "backend",
	.exec = backend_exec,
	.may_hold = backend_may_hold,
	.writeout = backend_writeout,
	.stats = backend_stats_lines,
};

struct stage backend_stage(struct backend *be)
{
	return (struct stage){ .ops = &backend_stage_ops, .self = be };
}
