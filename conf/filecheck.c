/* SPDX-License-Identifier: MIT */
/* Which configuration files a daemon may read: one policy for the main file and every file
 * it @includes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/keys/key.h"

/* The file is opened, not just stat'ed, so that "cannot open" is told before libconfig's
 * vaguer error, and so that what is checked is what a read would get. O_NONBLOCK: a FIFO
 * must be refused, not waited on. */
int conf_check_file_safe(const char *file, uid_t euid, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret = 0;

	fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		conf_errf(err, errlen, "%s: cannot open: %s", file, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		conf_errf(err, errlen, "%s: cannot stat: %s", file, strerror(-ret));
	} else if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		conf_errf(err, errlen, "%s: not a regular file", file);
	} else if (euid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		ret = -EPERM;
		conf_errf(err, errlen,
			"%s: refusing a config file that others can write (mode %04o) for a root "
			"daemon", file, (unsigned)(st.st_mode & 07777));
	} else if (euid == 0 && st.st_uid != 0) {
		ret = -EPERM;
		conf_errf(err, errlen, "%s: refusing a config file owned by uid %u for a root daemon",
			file, (unsigned)st.st_uid);
	}
	close(fd);
	return ret;
}
