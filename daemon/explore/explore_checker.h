/* SPDX-License-Identifier: MIT */
/* Finding explore's checker by its short name among the ready checkers installed with
 * plugdisk (daemon/explore/explore_checker.c). */
#ifndef PLUGDISK_EXPLORE_CHECKER_H
#define PLUGDISK_EXPLORE_CHECKER_H

/* The path of ready checker @name (BINDIR/../libexec/plugdisk/@name, BINDIR the directory
 * of the running plugdisk) when @name has no '/', is not a program on PATH, and that file
 * is executable; NULL otherwise (run @name as given). The caller frees it. */
char *xp_ready_checker(const char *name);

#endif
