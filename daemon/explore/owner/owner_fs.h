/* SPDX-License-Identifier: MIT */
/* What the owner dispatcher (owner.c) and the per-filesystem readers share. */
#ifndef PLUGDISK_EXPLORE_OWNER_FS_H
#define PLUGDISK_EXPLORE_OWNER_FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Run @argv (argv[0] found on PATH), stdin from /dev/null, and return its stdout in *@out
 * (NUL-terminated, free it). 0 (the tool ran and exited 0) or -errno; -EIO when it failed
 * (its stderr goes to /dev/null). */
int owner_run(const char *const argv[], char **out);
/* owner_run for a run that may fail as expected: its failure is not logged. */
int owner_try(const char *const argv[], char **out);
/* owner_run whatever the exit status, given in *@status (waitpid's): for a tool whose output
 * is of use when it also reports errors. 0 (*@out set) or -errno. */
int owner_run_status(const char *const argv[], char **out, int *status);

/* The index of block @b in the sorted @blocks[0..@n-1], or -1 (owner_run.c). */
ssize_t owner_blk_index(const uint64_t *blocks, size_t n, uint64_t b);

/* Sort the @n blocks of @v and drop the repeats; returns how many are left (owner_run.c). */
size_t owner_sort_distinct(uint64_t *v, size_t n);

/* Append printf(@fmt) to the string *@s of *@len bytes (both grown). 0 or -ENOMEM. */
int owner_addf(char **s, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Write @script to "@image.cmd" (its name in @path, @size bytes), for a tool that reads its
 * commands from a file; the caller unlinks it. 0 or -errno. */
int owner_script(const char *image, const char *script, char *path, size_t size);

/* The readers: names[i] (a new string; free it) for the block @blocks[i] of the image at
 * @image, for @n blocks of @bs bytes (the filesystem's block size) numbered from the disk's
 * start, sorted and distinct. 0 (every name set) or -errno (none set). */
int owner_ext4(const char *image, uint64_t bs, const uint64_t *blocks, size_t n, char **names);
int owner_xfs(const char *image, uint64_t bs, const uint64_t *blocks, size_t n, char **names);
int owner_btrfs(const char *image, uint64_t bs, const uint64_t *blocks, size_t n, char **names);

/* For @n blocks of the ext4 image's journal (disk block numbers, any order), the filesystem
 * block each copies as the journal's live transactions list it, or 0 (a descriptor, commit
 * or revoke block, or none listed) in @copied[i]. 0 or -errno. */
int owner_jbd2(const char *image, const uint64_t *blocks, size_t n, uint64_t *copied);

/* A reader's names for @n sorted, distinct blocks (as owner_ext4(), without the block size). */
typedef int owner_names_fn(const char *image, const uint64_t *blocks, size_t n, char **names);

/* For @n journal blocks, names[i]: "[journal: WHAT of WHO]" from @fs_names' name of the block
 * it copies, or NULL when it copies none. 0 (names set) or -errno (none set). */
int owner_jbd2_names(const char *image, const uint64_t *blocks, size_t n, char **names,
		     owner_names_fn *fs_names);

#endif
