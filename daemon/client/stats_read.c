// SPDX-License-Identifier: MIT
/* Reading a mount's stats file whole, for the client tools (top, stats). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/client/mount_file.h"
#include "daemon/client/stats_read.h"

int stats_read_file(const char *path, char **buf, size_t *cap)
{
	size_t len = 0;
	int fd = pd_mount_file_open(path, O_RDONLY), ret = 0;

	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t n;

		if (!*buf || len + 1 >= *cap) {
			size_t want = *buf ? *cap * 2 : 16384;
			char *nb;

			if (want > STATS_READ_MAX) {
				ret = -EFBIG;
				break;
			}
			nb = realloc(*buf, want);
			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			*buf = nb;
			*cap = want;
		}
		n = read(fd, *buf + len, *cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!ret)
		(*buf)[len] = '\0';
	return ret;
}
