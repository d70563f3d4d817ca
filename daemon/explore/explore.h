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
#include "daemon/explore/explore_groups.h"
#include "daemon/explore/explore_minimize.h"
#include "daemon/explore/explore_select.h"
#include "daemon/explore/explore_shard.h"
#include "daemon/explore/owner/owner.h"

/* A state the checker failed. */
struct xp_fail {
	uint64_t id;
	int status;		/* the checker's exit status, or 128 + signal */
	bool timed_out;		/* killed at --timeout */
	char *output;		/* its output's end (stdout and stderr) */
	char *image;		/* --keep-failing: the image written, or NULL */
	bool has_culprit;	/* --minimize ran on it */
	struct xp_culprit culprit;
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
	uint64_t keep_max;	/* --keep-max: images kept at most per group; 0 = no cap */
	uint64_t kept;		/* images written */
	bool minimize;		/* --minimize */
	uint64_t minimize_budget;	/* --minimize-budget: checker runs per state; 0 = none */
	uint64_t timeout_ns;	/* --timeout: a checker's longest run; 0 = none */
	struct xp_select sel;	/* --kinds, --windows, --states, --weights, --list-states */
	struct xp_shard shard;	/* --shard I/N */

	/* results */
	struct ws_log log;
	struct xp_print print;	/* the inputs' fingerprints, in --json and for --merge */
	uint64_t planned;	/* states chosen (all, or the sample) */
	bool sampled;
	bool bad_checker;	/* the checker could not be started */
	uint64_t checked, passed, dups;
	struct xp_kind_count kinds[XP_MAX_KINDS];	/* by enum ws_kind */
	struct xp_fail *fails;
	uint64_t nfails, capfails;
	struct xp_groups groups;	/* the failures by cause, keyed by state id */
	struct xp_owner *owner;	/* names what writes belong to (failures' windows only) */
	bool owners_shown;	/* the report and listing name owners (not the checker's file) */
	double seconds;
};

/* A finished run's exit status: 1 some state failed (a log cut short changes nothing in
 * that: the failures are real states); EXIT_INCOMPLETE (daemon/exit.h) every state checked
 * passed but a write error cut the log short, so the states after the cut are unknown and a
 * script that reads 0 as "every state passed" must not get it; or 0. */
int xp_status(const struct xp *x);

/* Print the report (text or JSON, by x->json) to @f. The run's timing is not in it: the same
 * log and seed give the same report. */
void xp_report(const struct xp *x, FILE *f);

/* State @s's fields as the report gives them, as an unclosed JSON object: "{"id":...,
 * "marks_acknowledged":N" (the caller adds fields and the brace). */
void xp_put_state_json(FILE *f, const struct xp *x, const struct ws_state *s);

/* State @s on one line of text, as --list-states prints it. */
void xp_put_state_line(FILE *f, const struct xp *x, const struct ws_state *s);

/* Write @map over a sparse copy of the base image (@base_fd) to @path. 0 or -errno
 * (printed). */
int xp_write_image(const char *path, int base_fd, uint64_t size, const struct extmap *map);

#endif
