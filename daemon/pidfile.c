// SPDX-License-Identifier: MIT
/* --pidfile: the daemon's PID in a file it holds locked (flock) while it runs, so that a
 * second daemon given the same file is refused before it mounts anything, and a file left by
 * a daemon that died is replaced. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/pidfile.h"

int pd_pidfile_lock(const char *path, int *fdp)
{
	char buf[32];

	/* A stopping daemon unlinks its file before it closes (and unlocks) it: a lock taken on
	 * a file that is no longer at @path is taken again on the one that is. */
	for (int tries = 0; tries < 100; tries++) {
		struct stat fst, pst;
		ssize_t n;
		int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);

		if (fd < 0) {
			fprintf(stderr, "plugdisk: --pidfile %s: %s\n", path, strerror(errno));
			return EXIT_USAGE;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int err = errno;

			n = pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			close(fd);
			if (err == EWOULDBLOCK)
				fprintf(stderr, "plugdisk: --pidfile %s: held by a running plugdisk"
						" (PID %s); stop it first, or choose another file\n",
					path, *buf ? buf : "unknown");
			else
				fprintf(stderr, "plugdisk: --pidfile %s: flock: %s\n", path,
					strerror(err));
			return EXIT_USAGE;
		}
		if (fstat(fd, &fst) == 0 && stat(path, &pst) == 0 && fst.st_dev == pst.st_dev &&
		    fst.st_ino == pst.st_ino) {
			*fdp = fd;
			return 0;
		}
		close(fd);
	}
	fprintf(stderr, "plugdisk: --pidfile %s: keeps being replaced\n", path);
	return EXIT_USAGE;
}

int pd_pidfile_write(int fd, const char *path)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		log_err("--pidfile %s: write: %m", path);
		return -1;
	}
	return 0;
}

void pd_pidfile_remove(int fd, const char *path)
{
	if (fd < 0)
		return;
	unlink(path); /* before the lock goes: see pd_pidfile_lock() */
	close(fd);
}
