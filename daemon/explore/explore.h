/* SPDX-License-Identifier: MIT */
/* What `plugdisk explore`'s files share: the run's options and results, the report
 * (daemon/explore/explore_report.c) and the writing of a state's image (daemon/explore/explore_image.c). */
#ifndef PLUGDISK_EXPLORE_H
#define PLUGDISK_EXPLORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/crash/extmap.h"
#include "core/crash/wlog_states.h"

/* A state the checker failed. */
struct xp_fail {
	uint64_t id;
	int status;		/* the checker's exit status, or 128 + signal */
	bool timed_out;		/* killed at --timeout */
	char *output;		/* its output's end (stdout and stderr) */
	char *image;		/* --keep-failing: the image written, or NULL */
};

struct xp {
	/* options */
	const char *log_path, *base_path;
	char **checker;		/* argv, NULL-terminated; NULL with --image */
	uint64_t budget;	/* 0: every state */
	uint64_t seed;
	unsigned int jobs, k;
	bool json, has_state;
	uint64_t state;		/* --state */
	const char *image;	/* --image */
	const char *keep_dir;	/* --keep-failing */
	uint64_t timeout_ns;	/* --timeout: a checker's longest run; 0 = none */

	/* results */
	struct ws_log log;
	uint64_t planned;	/* states chosen (all, or the sample) */
	bool sampled;
	bool bad_checker;	/* the checker could not be started */
	uint64_t checked, passed, dups;
	struct xp_fail *fails;
	uint64_t nfails, capfails;
	double seconds;
};

/* Print the report (text or JSON, by x->json) to @f. The run's timing is not in it: the same
 * log and seed give the same report. */
void xp_report(const struct xp *x, FILE *f);

/* Write @map over a sparse copy of the base image (@base_fd) to @path. 0 or -errno
 * (printed). */
int xp_write_image(const char *path, int base_fd, uint64_t size, const struct extmap *map);

#endif
