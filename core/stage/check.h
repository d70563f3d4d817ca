/* SPDX-License-Identifier: MIT */
/* The checking stage (core/stage/check.c): a stage's exec, with its contract checked. */
#ifndef PLUGDISK_STAGE_CHECK_H
#define PLUGDISK_STAGE_CHECK_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/stage/stage.h"

struct stage_check {
	struct stage inner;	/* read-only after stage_check_wrap() */
	uint64_t disk_size;	/* bytes; 0: ranges are not checked */
	atomic_int in_flight;	/* requests that returned IO_ASYNC and have not ended */
};

/* A stage that checks every request into @inner, then runs it there. @sc must outlive it. */
struct stage stage_check_wrap(struct stage_check *sc, const struct stage *inner,
			      uint64_t disk_size);

/* Abort when a request that went through @sc never ended. Nothing may be in flight. */
void stage_check_end(struct stage_check *sc);

#endif
