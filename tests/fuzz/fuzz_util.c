// SPDX-License-Identifier: MIT
/* Helpers shared by the libFuzzer targets (fuzz.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

void fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

void fuzz_write_file(const char *path, const void *data, size_t size)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		fuzz_fail("open %s: %s", path, strerror(errno));
	while (size) {
		ssize_t n = write(fd, p, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fuzz_fail("write %s: %s", path, strerror(errno));
		p += n;
		size -= (size_t)n;
	}
	close(fd);
}

static char tmpdir[64];

/* The targets make plain files only, in the directory itself. */
static void tmpdir_remove(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(tmpdir);
}

const char *fuzz_tmpdir(void)
{
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");

		/* Memory, where there is a tmpfs for it: a file is rewritten per input. */
		if (!base || strlen(base) >= 32)
			base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(tmpdir, sizeof(tmpdir), "%s/plugdisk-fuzz.XXXXXX", base);
		if (!mkdtemp(tmpdir))
			fuzz_fail("mkdtemp %s: %s", tmpdir, strerror(errno));
		atexit(tmpdir_remove);
	}
	return tmpdir;
}
