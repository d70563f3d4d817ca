// SPDX-License-Identifier: MIT
/* The fault set as a stage of the chain (core/stage/stage.h): its ops. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault/fault.h"
#include "core/stage/chain.h"
#include "core/util/log.h"

/* Every configured fault parses: a refused one must leave nothing done (a write log
 * truncated, a thread started) by any stage. */
static int faults_check(const struct chain_params *p, char *err, size_t errlen)
{
	for (size_t i = 0; i < p->nfaults; i++) {
		struct fault_spec s;

		if (fault_spec_parse(p->faults[i], &s, err, errlen))
			return -EINVAL;
		fault_spec_free(&s);
	}
	return 0;
}

static int faults_init(void **self, const struct chain_params *p, const struct stage *below,
		       const struct stage *image, char *err, size_t errlen)
{
	struct fault_set *fs = calloc(1, sizeof(*fs));
	int ret;

	(void)image;
	if (!fs)
		return -ENOMEM;
	ret = fault_set_init(fs, below->ops->exec, below->self, p->timer, p->clock, p->clock_arg);
	if (ret) {
		log_err("fault_set_init: %s", strerror(-ret));
		snprintf(err, errlen, "the fault stage could not start: %s", strerror(-ret));
		free(fs);
		return ret;
	}
	fs->power_gen = p->power_gen;
	fs->power_gen_arg = p->power_gen_arg;
	if (!p->keep_faults && fault_replace_configured(fs, p->faults, p->nfaults, err, errlen)) {
		fault_set_destroy(fs);
		free(fs);
		return -EINVAL;
	}
	*self = fs;
	return 0;
}

static uint64_t faults_admit_ns(void *self, const struct request *rq)
{
	return fault_latency_ns(self, rq);
}

static bool faults_may_hold(void *self)
{
	return fault_any(self);
}

static unsigned int faults_held(void *self)
{
	return fault_nr_held(self);
}

static void faults_stop(void *self)
{
	unsigned int held = fault_nr_held(self);

	if (held)
		log_info("stopping: releasing %u stalled requests", held);
	fault_close(self); /* and none added through control from now on */
}

static int faults_reconfigure(void *self, const struct chain_params *p, char *err,
			      size_t errlen)
{
	if (p->keep_faults)
		return 0;
	return fault_replace_configured(self, p->faults, p->nfaults, err, errlen) ? -EINVAL : 0;
}

static size_t faults_stats(void *self, char *buf, size_t len)
{
	return fault_stats_format(self, buf, len);
}

static void faults_stats_reset(void *self)
{
	fault_stats_reset(self);
}

static void faults_destroy(void *self)
{
	fault_set_destroy(self);
	free(self);
}

const struct stage_ops fault_stage_ops = {
	.name = "faults",
	/* A fault stands for the device misbehaving while it runs: what a power cut keeps had
	 * already reached the media, and a stall must not hold the cut. */
	.image_skip = true,
	.stats_absent = true,
	.stats_table = &fault_stats_table,
	.check = faults_check,
	.init = faults_init,
	.exec = fault_exec,
	.admit_ns = faults_admit_ns,
	.may_hold = faults_may_hold,
	.held = faults_held,
	.stop = faults_stop,
	.reconfigure = faults_reconfigure,
	.stats = faults_stats,
	.stats_reset = faults_stats_reset,
	.destroy = faults_destroy,
};
