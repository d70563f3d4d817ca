/* SPDX-License-Identifier: MIT */
/* pdio: a small I/O driver for plugdisk's mount tests. It opens one file and runs a list of
 * commands on that one descriptor, printing one result line per command: a byte count, "0",
 * "ok", or the errno name (ENOSPC, EIO, ...), so that scripts can assert exact outcomes.
 *
 * usage: pdio [-r|-w] [-d] [-s] FILE CMD ARGS... [CMD ARGS...]...
 *   -r read-only, -w write-only (default read-write), -d O_DIRECT, -s O_SYNC
 *   pwrite OFF LEN SEED    one pwrite of the pattern SEED; prints bytes written or errno
 *   pread OFF LEN          one pread; prints bytes read or errno
 *   write OFF LEN SEED     pwrite until done or error; prints total, then ":ERRNO" if any
 *   verify OFF LEN SEED    pread until LEN or EOF, check the pattern; "N ok" or "N bad@X"
 *   zeros OFF LEN          the same, checking that the range reads as zeroes
 *   fsync | fdatasync      prints 0 or errno
 *   ftruncate LEN          prints 0 or errno
 *   punch OFF LEN          fallocate(PUNCH_HOLE|KEEP_SIZE); zero OFF LEN: ZERO_RANGE
 *   size                   fstat size
 *   mmapw OFF LEN SEED     write the pattern through a shared mapping, msync; 0 or errno
 *   mmapv OFF LEN SEED     check the pattern through a mapping; "ok" or "bad@X"
 *   statread               stats-style file: one big read, then preads at odd offsets and
 *                          lengths compared with it; prints "SIZE ok" or "bad@OFF"
 *   waitin                 wait for a line on standard input (the script's go-ahead, the
 *                          descriptor held meanwhile); prints "ok", or "eof"
 *   opens N                open FILE N more times at once, pread 512 B from each, close
 *                          all; prints N or errno
 * The pattern byte at absolute offset X depends only on SEED and X, so any range can be
 * checked on its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void *xbuf(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len ? len : 1) != 0) {
		perror("posix_memalign");
		exit(2);
	}
	return p;
}

static uint8_t pat(uint64_t seed, uint64_t x)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + (x >> 3) + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint8_t)(z >> ((x & 7) * 8));
}

static void fill(uint8_t *b, uint64_t off, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(seed, off + i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static long long check(const uint8_t *b, uint64_t off, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(seed, off + i))
			return (long long)i;
	return -1;
}

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s) {
		fprintf(stderr, "pdio: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static void need(int argc, int i, int n, const char *cmd)
{
	if (i + n >= argc) {
		fprintf(stderr, "pdio: %s needs %d argument(s)\n", cmd, n);
		exit(2);
	}
}

static void cmd_statread(int fd)
{
	size_t cap = 4 << 20, n = 0;
	uint8_t *all = xbuf(cap), *b = xbuf(cap);
	ssize_t r;

	r = pread(fd, all, cap, 0);
	if (r < 0) {
		printf("%s\n", ename(errno));
		goto out;
	}
	n = (size_t)r;
	/* Odd offsets and lengths, including ranges that run past the end. */
	for (size_t off = 0; off <= n + 10; off += 7) {
		size_t len = 1 + (off * 13) % 97, want;

		r = pread(fd, b, len, (off_t)off);
		want = off >= n ? 0 : (n - off < len ? n - off : len);
		if (r < 0 || (size_t)r != want || memcmp(b, all + off, want) != 0) {
			printf("bad@%zu\n", off);
			goto out;
		}
	}
	printf("%zu ok\n", n);
out:
	free(all);
	free(b);
}

static void cmd_opens(const char *file, int flags, int n)
{
	int *fds = calloc((size_t)n, sizeof(*fds));
	uint8_t *b = xbuf(4096);
	int i, opened = 0, err = 0;

	for (i = 0; i < n; i++) {
		fds[i] = open(file, flags);
		if (fds[i] < 0) {
			err = errno;
			break;
		}
		opened++;
	}
	for (i = 0; i < opened && !err; i++)
		if (pread(fds[i], b, 512, (off_t)i * 512) < 0)
			err = errno;
	for (i = 0; i < opened; i++)
		if (close(fds[i]) < 0 && !err)
			err = errno;
	if (err)
		printf("%s\n", ename(err));
	else
		printf("%d\n", n);
	free(fds);
	free(b);
}

static void cmd_mmap(int fd, int writing, uint64_t off, size_t len, uint64_t seed)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t base = off & ~(uint64_t)(pg - 1);
	size_t mlen = (size_t)(off - base) + len;
	uint8_t *m;
	long long bad;

	m = mmap(NULL, mlen, writing ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
		 (off_t)base);
	if (m == MAP_FAILED) {
		printf("%s\n", ename(errno));
		return;
	}
	if (writing) {
		fill(m + (off - base), off, len, seed);
		if (msync(m, mlen, MS_SYNC) < 0)
			printf("%s\n", ename(errno));
		else
			printf("0\n");
	} else {
		bad = check(m + (off - base), off, len, seed);
		if (bad < 0)
			printf("ok\n");
		else
			printf("bad@%llu\n", (unsigned long long)off + (unsigned long long)bad);
	}
	munmap(m, mlen);
}

int main(int argc, char **argv)
{
	int flags = O_RDWR, i = 1, fd;
	const char *file;

	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "-r"))
			flags = (flags & ~O_ACCMODE) | O_RDONLY;
		else if (!strcmp(argv[i], "-w"))
			flags = (flags & ~O_ACCMODE) | O_WRONLY;
		else if (!strcmp(argv[i], "-d"))
			flags |= O_DIRECT;
		else if (!strcmp(argv[i], "-s"))
			flags |= O_SYNC;
		else {
			fprintf(stderr, "pdio: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: pdio [-r|-w] [-d] [-s] FILE CMD ARGS...\n");
		return 2;
	}
	file = argv[i++];
	fd = open(file, flags);
	if (fd < 0) {
		printf("open %s\n", ename(errno));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	while (i < argc) {
		const char *c = argv[i];

		if (!strcmp(c, "pwrite") || !strcmp(c, "write")) {
			need(argc, i, 3, c);
			uint64_t off = num(argv[i + 1]), seed = num(argv[i + 3]);
			size_t len = num(argv[i + 2]), done = 0;
			uint8_t *b = xbuf(len);
			int err = 0;

			fill(b, off, len, seed);
			do {
				ssize_t r = pwrite(fd, b + done, len - done, (off_t)(off + done));

				if (r < 0) {
					err = errno;
					break;
				}
				done += (size_t)r;
				if (r == 0)
					break;
			} while (c[0] == 'w' && done < len);
			if (c[0] == 'p' && err)
				printf("%s\n", ename(err));
			else if (c[0] == 'p')
				printf("%zu\n", done);
			else if (err)
				printf("%zu:%s\n", done, ename(err));
			else
				printf("%zu\n", done);
			free(b);
			i += 4;
		} else if (!strcmp(c, "pread")) {
			need(argc, i, 2, c);
			size_t len = num(argv[i + 2]);
			uint8_t *b = xbuf(len);
			ssize_t r = pread(fd, b, len, (off_t)num(argv[i + 1]));

			if (r < 0)
				printf("%s\n", ename(errno));
			else
				printf("%zd\n", r);
			free(b);
			i += 3;
		} else if (!strcmp(c, "verify") || !strcmp(c, "zeros")) {
			int zeros = c[0] == 'z';

			need(argc, i, zeros ? 2 : 3, c);
			uint64_t off = num(argv[i + 1]), seed = zeros ? 0 : num(argv[i + 3]);
			size_t len = num(argv[i + 2]), done = 0;
			uint8_t *b = xbuf(len);
			long long bad;
			int err = 0;

			while (done < len) {
				ssize_t r = pread(fd, b + done, len - done, (off_t)(off + done));

				if (r < 0) {
					err = errno;
					break;
				}
				if (r == 0)
					break;
				done += (size_t)r;
			}
			bad = -1;
			if (zeros) {
				for (size_t k = 0; k < done && bad < 0; k++)
					if (b[k])
						bad = (long long)k;
			} else {
				bad = check(b, off, done, seed);
			}
			if (err)
				printf("%zu %s\n", done, ename(err));
			else if (bad >= 0)
				printf("%zu bad@%llu\n", done, (unsigned long long)(off + (uint64_t)bad));
			else
				printf("%zu ok\n", done);
			free(b);
			i += zeros ? 3 : 4;
		} else if (!strcmp(c, "waitin")) {
			char line[256];

			printf("%s\n", fgets(line, sizeof(line), stdin) ? "ok" : "eof");
			i += 1;
		} else if (!strcmp(c, "fsync") || !strcmp(c, "fdatasync")) {
			int r = c[1] == 's' ? fsync(fd) : fdatasync(fd);

			printf("%s\n", r < 0 ? ename(errno) : "0");
			i += 1;
		} else if (!strcmp(c, "ftruncate")) {
			need(argc, i, 1, c);
			int r = ftruncate(fd, (off_t)num(argv[i + 1]));

			printf("%s\n", r < 0 ? ename(errno) : "0");
			i += 2;
		} else if (!strcmp(c, "punch") || !strcmp(c, "zero")) {
			need(argc, i, 2, c);
			int mode = c[0] == 'p' ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
					       : FALLOC_FL_ZERO_RANGE;
			int r = fallocate(fd, mode, (off_t)num(argv[i + 1]), (off_t)num(argv[i + 2]));

			printf("%s\n", r < 0 ? ename(errno) : "0");
			i += 3;
		} else if (!strcmp(c, "size")) {
			struct stat st;

			if (fstat(fd, &st) < 0)
				printf("%s\n", ename(errno));
			else
				printf("%jd\n", (intmax_t)st.st_size);
			i += 1;
		} else if (!strcmp(c, "mmapw") || !strcmp(c, "mmapv")) {
			need(argc, i, 3, c);
			cmd_mmap(fd, c[4] == 'w', num(argv[i + 1]), num(argv[i + 2]), num(argv[i + 3]));
			i += 4;
		} else if (!strcmp(c, "statread")) {
			cmd_statread(fd);
			i += 1;
		} else if (!strcmp(c, "opens")) {
			need(argc, i, 1, c);
			cmd_opens(file, flags & ~O_CREAT, (int)num(argv[i + 1]));
			i += 2;
		} else {
			fprintf(stderr, "pdio: unknown command %s\n", c);
			return 2;
		}
	}
	if (close(fd) < 0) {
		printf("close %s\n", ename(errno));
		return 1;
	}
	return 0;
}
