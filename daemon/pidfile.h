/* SPDX-License-Identifier: MIT */
/* --pidfile: a locked PID file (daemon/pidfile.c). */
#ifndef PLUGDISK_PIDFILE_H
#define PLUGDISK_PIDFILE_H

/* Open @path (created 0644 if missing) and take its lock, held as long as *@fdp is open in
 * this process or a child forked after. 0 with *@fdp set, or EXIT_USAGE with the reason on
 * stderr: the directory is missing, or a running daemon holds the lock (its PID named). */
int pd_pidfile_lock(const char *path, int *fdp);

/* Write this process's PID into the locked file @fd. 0, or -1 with the reason logged. */
int pd_pidfile_write(int fd, const char *path);

/* Remove @path and drop its lock (nothing when @fd < 0). */
void pd_pidfile_remove(int fd, const char *path);

#endif
