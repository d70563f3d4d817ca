// SPDX-License-Identifier: MIT
/* Running a filesystem's tool (debugfs, xfs_db, btrfs) for the owner readers: posix_spawn,
 * stdin from /dev/null, stdout read whole through a pipe; and the readers' small helpers
 * (a string built piece by piece, a block looked up among those asked for). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/explore/owner/owner_fs.h"

extern char **environ;

static int read_all(int fd, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len + 1 == cap) {
			char *p = realloc(buf, cap * 2);

			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int ret = -errno;

			free(buf);
			return ret;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

int owner_run_status(const char *const argv[], char **out, int *status)
{
	posix_spawn_file_actions_t fa;
	int p[2], ret;
	pid_t pid;

	*out = NULL;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	/* debugfs prints its banner on stderr: a failure is told by the exit status. */
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	ret = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (ret) {
		fprintf(stderr, "plugdisk explore: posix_spawn %s: %s\n", argv[0], strerror(ret));
		close(p[0]);
		return -ret;
	}
	ret = read_all(p[0], out);
	close(p[0]);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			ret = -errno;
			break;
		}
	}
	if (ret) {
		free(*out);
		*out = NULL;
	}
	return ret;
}

static int run(const char *const argv[], char **out, bool quiet)
{
	int status = 0, ret = owner_run_status(argv, out, &status);

	if (!ret && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		if (!quiet)
			fprintf(stderr, "plugdisk explore: %s failed (status %d)\n", argv[0], status);
		free(*out);
		*out = NULL;
		ret = -EIO;
	}
	return ret;
}

int owner_run(const char *const argv[], char **out)
{
	return run(argv, out, false);
}

int owner_try(const char *const argv[], char **out)
{
	return run(argv, out, true);
}

int owner_addf(char **s, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *add, *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&add, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	p = realloc(*s, *len + (size_t)n + 1);
	if (!p) {
		free(add);
		return -ENOMEM;
	}
	memcpy(p + *len, add, (size_t)n + 1);
	*s = p;
	*len += (size_t)n;
	free(add);
	return 0;
}

int owner_script(const char *image, const char *script, char *path, size_t size)
{
	size_t len = strlen(script);
	int fd, ret;

	if ((size_t)snprintf(path, size, "%s.cmd", image) >= size)
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "plugdisk explore: open %s: %s\n", path, strerror(-ret));
		return ret;
	}
	ret = write(fd, script, len) == (ssize_t)len ? 0 : -EIO;
	close(fd);
	if (ret) {
		fprintf(stderr, "plugdisk explore: write %s: short\n", path);
		unlink(path);
	}
	return ret;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

size_t owner_sort_distinct(uint64_t *v, size_t n)
{
	size_t u = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!u || v[i] != v[u - 1])
			v[u++] = v[i];
	return u;
}

ssize_t owner_blk_index(const uint64_t *blocks, size_t n, uint64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (blocks[mid] == b)
			return (ssize_t)mid;
		if (blocks[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}
