/* SPDX-License-Identifier: MIT */
/* The exit statuses of the daemon and of every subcommand: one table (daemon/exit.c), printed
 * by --help and `plugdisk --list-exit-codes`, and the same in plugdisk(8) (tests/shell/man-pages.sh
 * checks it). */
#ifndef PLUGDISK_EXIT_H
#define PLUGDISK_EXIT_H

#include <stdio.h>

enum {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1,	/* failure while running, or the command's own failure */
	EXIT_USAGE = 2,		/* bad option, configuration or input */
	EXIT_IMAGE = 3,		/* an image (or NBD export) cannot be used */
	EXIT_MOUNT = 4,		/* a mountpoint cannot be used, or is not a plugdisk mount */
	EXIT_INCOMPLETE = 5,	/* explore: every state checked passed, but the log is cut short */
};

struct pd_exit {
	int status;
	const char *name;	/* one word */
	const char *meaning;	/* one line */
};

extern const struct pd_exit pd_exits[];
extern const unsigned int pd_nr_exits;

/* "Exit status: 0 ok, 1 ..., 4 ...", the table in one sentence for a --help text. */
void pd_exit_help(FILE *f);

/* The table, one status a line: "STATUS NAME MEANING". */
void pd_exit_list(FILE *f);

#endif
