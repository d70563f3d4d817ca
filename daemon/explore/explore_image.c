// SPDX-License-Identifier: MIT
/* `plugdisk explore --image` and --keep-failing: one crash state written out as a sparse
 * image, the base's data ranges copied (holes stay holes) and the state's overlay on top. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/full_rw.h"
#include "daemon/explore/explore.h"

static int copy_range(int in, int out, uint64_t off, uint64_t len)
{
	while (len) {
		off_t a = (off_t)off, b = (off_t)off;
		ssize_t n = copy_file_range(in, &a, out, &b, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* Write @len bytes of @p (zeros if NULL) at @off, in full (full_rw()). */
static int write_all(int fd, const uint8_t *p, uint64_t len, uint64_t off)
{
	static const uint8_t zeros[65536];
	const char *call;

	while (len) {
		uint64_t n = p || len < sizeof(zeros) ? len : sizeof(zeros);
		struct iovec iov = { .iov_base = (void *)(p ? p : zeros), .iov_len = (size_t)n };
		int ret = full_rw(fd, true, &iov, 1, off, &call);

		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

int xp_write_image(const char *path, int base_fd, uint64_t size, const struct extmap *map)
{
	struct stat st;
	uint64_t end, off = 0;
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "plugdisk explore: open %s: %s\n", path, strerror(-ret));
		return ret;
	}
	if (fstat(base_fd, &st) || ftruncate(fd, (off_t)size)) {
		ret = -errno;
		fprintf(stderr, "plugdisk explore: %s: %s\n", path, strerror(-ret));
		goto out;
	}
	end = (uint64_t)st.st_size < size ? (uint64_t)st.st_size : size;
	/* The base's data, extent by extent: a hole needs no copy. */
	while (off < end) {
		off_t d = lseek(base_fd, (off_t)off, SEEK_DATA), h;

		if (d < 0 || (uint64_t)d >= end)
			break;
		h = lseek(base_fd, d, SEEK_HOLE);
		if (h < 0 || (uint64_t)h > end)
			h = (off_t)end;
		ret = copy_range(base_fd, fd, (uint64_t)d, (uint64_t)(h - d));
		if (ret) {
			fprintf(stderr, "plugdisk explore: copy_file_range to %s: %s\n", path,
				strerror(-ret));
			goto out;
		}
		off = (uint64_t)h;
	}
	for (size_t i = 0; i < map->n && !ret; i++) {
		const struct extent *e = &map->v[i];

		if (e->src || fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					(off_t)e->off, (off_t)e->len))
			ret = write_all(fd, e->src, e->len, e->off);
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (ret)
		fprintf(stderr, "plugdisk explore: writing %s: %s\n", path, strerror(-ret));
out:
	close(fd);
	return ret;
}
