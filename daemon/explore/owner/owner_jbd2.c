// SPDX-License-Identifier: MIT
/* What an ext4 journal block holds, read with debugfs: `stat <8>` maps the journal inode's
 * blocks to the disk, and `logdump -a` lists, from each descriptor block of the journal's live
 * transactions, the filesystem block that each following journal block copies ("FS block X
 * logged at journal block Y"). A descriptor, commit or revoke block, the journal's superblock,
 * or a block of a transaction already checkpointed copies nothing that logdump lists.
 * owner_jbd2_names() names a journal block by the block it copies: "[journal: inode table of
 * /f]". */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/explore/owner/owner_fs.h"

/* One extent of the journal inode: journal blocks [lblk, lblk + len) at disk block pblk. */
struct jbd2_extent {
	uint64_t lblk, len, pblk;
};

struct jbd2_map {
	struct jbd2_extent *ext;
	size_t n;
};

static int add_extent(struct jbd2_map *m, uint64_t lblk, uint64_t lend, uint64_t pblk)
{
	struct jbd2_extent *v;

	if (lend < lblk)
		return 0;
	v = realloc(m->ext, (m->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->ext = v;
	m->ext[m->n++] = (struct jbd2_extent){ lblk, lend - lblk + 1, pblk };
	return 0;
}

/* stat's "EXTENTS:" line: "(0-4095):16385-20480, (4096):30000, (ETB0):1234" */
static int parse_extents(struct jbd2_map *m, const char *line)
{
	const char *p = line;
	int ret = 0;

	while (!ret && (p = strchr(p, '('))) {
		unsigned long long a, b, pa;
		int k;

		if (sscanf(p, "(%llu-%llu):%llu%n", &a, &b, &pa, &k) == 3)
			ret = add_extent(m, a, b, pa);
		else if (sscanf(p, "(%llu):%llu%n", &a, &pa, &k) == 2)
			ret = add_extent(m, a, a, pa);
		p++;
	}
	return ret;
}

/* The journal block at disk block @pblk, or -1. */
static int64_t journal_block(const struct jbd2_map *m, uint64_t pblk)
{
	for (size_t i = 0; i < m->n; i++)
		if (pblk >= m->ext[i].pblk && pblk - m->ext[i].pblk < m->ext[i].len)
			return (int64_t)(m->ext[i].lblk + pblk - m->ext[i].pblk);
	return -1;
}

static int parse(char *out, const uint64_t *blocks, size_t n, uint64_t *copied)
{
	struct jbd2_map m = { 0 };
	int64_t *jblk = NULL;
	char *save, *line;
	int ret = 0;

	/* the extents come first (stat, then logdump): a first pass maps them */
	for (line = strtok_r(out, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long fs, j;

		if (!strncmp(line, "EXTENTS:", 8) || !strncmp(line, "(", 1)) {
			ret = parse_extents(&m, line);
			continue;
		}
		if (sscanf(line, " FS block %llu logged at journal block %llu", &fs, &j) != 2)
			continue;
		if (!jblk) {
			jblk = malloc(n * sizeof(*jblk));
			if (!jblk) {
				ret = -ENOMEM;
				break;
			}
			for (size_t i = 0; i < n; i++)
				jblk[i] = journal_block(&m, blocks[i]);
		}
		/* later transactions reuse the circular journal's blocks: the last one listed
		 * is the one on disk */
		for (size_t i = 0; i < n; i++)
			if (jblk[i] == (int64_t)j)
				copied[i] = fs;
	}
	free(jblk);
	free(m.ext);
	return ret;
}

int owner_jbd2(const char *image, const uint64_t *blocks, size_t n, uint64_t *copied)
{
	char path[4096], *out = NULL;
	int ret;

	memset(copied, 0, n * sizeof(*copied));
	ret = owner_script(image, "stat <8>\nlogdump -a\n", path, sizeof(path));
	if (ret)
		return ret;
	{
		const char *argv[] = { "debugfs", "-n", "-f", path, image, NULL };

		ret = owner_run(argv, &out);
	}
	unlink(path);
	if (!ret)
		ret = parse(out, blocks, n, copied);
	free(out);
	return ret;
}

/* "[journal: inode table of /f]" from the copied block's name "[inode table: /f]". */
static char *journal_name(const char *inner)
{
	size_t n = strlen(inner);
	const char *colon;
	char *s;
	int ret;

	if (n >= 2 && inner[0] == '[' && inner[n - 1] == ']') {
		inner++;
		n -= 2;
	}
	colon = memmem(inner, n, ": ", 2);
	if (colon)
		ret = asprintf(&s, "[journal: %.*s of %.*s]", (int)(colon - inner), inner,
			       (int)(n - (size_t)(colon - inner) - 2), colon + 2);
	else
		ret = asprintf(&s, "[journal: %.*s]", (int)n, inner);
	return ret < 0 ? NULL : s;
}

int owner_jbd2_names(const char *image, const uint64_t *blocks, size_t n, char **names,
		     owner_names_fn *fs_names)
{
	uint64_t *copied = calloc(n ? n : 1, sizeof(*copied));
	uint64_t *fsb = calloc(n ? n : 1, sizeof(*fsb));
	size_t u = 0;
	char **inner = NULL;
	int ret = -ENOMEM;

	memset(names, 0, n * sizeof(*names));
	if (!copied || !fsb)
		goto out;
	ret = owner_jbd2(image, blocks, n, copied);
	for (size_t i = 0; i < n && !ret; i++)
		if (copied[i])
			fsb[u++] = copied[i];
	if (ret || !u)
		goto out;
	/* each copied block named once, however many copies the journal holds */
	u = owner_sort_distinct(fsb, u);
	inner = calloc(u, sizeof(*inner));
	ret = inner ? fs_names(image, fsb, u, inner) : -ENOMEM;
	for (size_t i = 0; i < n && !ret; i++) {
		ssize_t k = copied[i] ? owner_blk_index(fsb, u, copied[i]) : -1;

		if (k >= 0 && !(names[i] = journal_name(inner[k])))
			ret = -ENOMEM;
	}
out:
	for (size_t i = 0; ret && i < n; i++) {
		free(names[i]);
		names[i] = NULL;
	}
	for (size_t i = 0; inner && i < u; i++)
		free(inner[i]);
	free(inner);
	free(fsb);
	free(copied);
	return ret;
}
