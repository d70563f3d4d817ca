/* SPDX-License-Identifier: MIT */
/* MOUNTPOINT/control: one command per write, answered synchronously; a read lists the state.
 *
 * A command is a line of words: "stop", "fault add op=write error=EIO", "powercut". The
 * first word names a handler in control.c's table; each feature (queue state, faults, the
 * write cache) owns its handler and its part of the listing. A handler either takes effect
 * and returns 0, possibly appending an answer to @out, or changes nothing and returns
 * -EINVAL (or another -errno) with one line in @out saying why; control.c logs that line
 * and fails the write with the errno. A write returns only when its command has taken
 * effect. */
#ifndef PLUGDISK_CONTROL_H
#define PLUGDISK_CONTROL_H

#include <fuse_lowlevel.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct pd;

/* The answer to a command, or the listing of a read: text that grows as needed. */
struct ctl_out {
	char *buf;
	size_t len, cap;
	int oom;	/* an append failed: the text is cut short */
};

/* Append printf-style text to @out. */
void ctl_printf(struct ctl_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A command handler: @argv[0] is the command's name, @argc >= 1. Returns 0 or -errno (see
 * above). Runs in a FUSE receive thread; it may block until the command has taken effect. */
typedef int (*ctl_cmd_fn)(struct pd *pd, int argc, char **argv, struct ctl_out *out);

/* A feature's part of the state listing, in the words its commands use. */
typedef void (*ctl_show_fn)(struct pd *pd, struct ctl_out *out);

struct ctl_cmd {
	const char *name;	/* first word */
	const char *usage;	/* one line, for "help" and for errors */
	ctl_cmd_fn run;
	/* It may wait for requests in flight (freeze, poweron): a write that holds it runs in a
	 * thread of its own, which answers it, so that no receive thread waits. */
	bool waits;
};

/* The most a write to the control file may hold, and the size the file reports: the kernel
 * then sees a write at its start as inside the file, so that writes from several opens
 * (without O_TRUNC, as `plugdisk ctl` opens) go to the daemon side by side (FUSE's parallel
 * direct writes) instead of one after the other behind the inode's lock. */
#define PD_CONTROL_SIZE (64 * 1024)

/* At the stop, after the drain (which ends every freeze and lets every stalled request go)
 * and before the FUSE session goes: wait for the commands still running in threads of their
 * own to answer. */
void control_jobs_wait(void);

/* Run a write to the control file: its lines in order, one command each, skipping blank
 * lines and '#' comments (a listing written back), up to the first that fails. Returns 0
 * or that line's -errno; @out gets the answers, or the reason. */
int control_run(struct pd *pd, const char *text, size_t len, struct ctl_out *out);

/* The commands' usage lines, as "help" answers them, for `plugdisk ctl help` without a
 * mount; and their names alone, one a line (shell completion). */
void control_help(FILE *f);
void control_list_commands(FILE *f);

/* The listing a read of the control file returns. */
void control_show(struct pd *pd, struct ctl_out *out);

/* The file: open, read (the answer to this descriptor's last command, else the listing),
 * write (one command) and release. Each replies. */
void control_file_open(fuse_req_t req, struct fuse_file_info *fi);
void control_file_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void control_file_write(fuse_req_t req, struct fuse_bufvec *bufv, struct fuse_file_info *fi);
void control_file_release(fuse_req_t req, struct fuse_file_info *fi);

/* Free the opens whose release never came. At the stop, once no FUSE thread runs. */
void control_file_free_all(void);

#endif
