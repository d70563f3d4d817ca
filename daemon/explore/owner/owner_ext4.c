// SPDX-License-Identifier: MIT
/* ext4 owners, read with e2fsprogs' debugfs in batch mode (-f): `stats` for the layout
 * (bitmaps and inode tables by group), `icheck` for the inode owning a block, `testb` for
 * free blocks, then `stat` for an owner's type and `ncheck` for its path and for the inodes an
 * inode table block holds. A block of the journal inode is named by the filesystem block it
 * copies (owner_jbd2_names()), "[journal: /d (directory)]", or "[journal]" when it copies
 * none. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/explore/owner/owner_fs.h"

#define ITABLE_NAMES_MAX 8	/* names an inode table block lists at most */

struct ext4_group {
	uint64_t bb, ib, it;	/* block bitmap, inode bitmap, inode table */
};

struct ext4_geo {
	uint64_t bs, first, bpg, ipg, isz, itb;	/* itb: inode table blocks per group */
	struct ext4_group *g;
	size_t ng;
};

/* What pass 1 says of a block. */
struct ext4_blk {
	uint64_t ino;		/* the owning inode, or 0 */
	bool used;		/* marked in use in the block bitmap */
};

/* An inode pass 2 named. */
struct ext4_ino {
	uint64_t ino;
	char *path;		/* NULL: no name found */
	const char *kind;	/* "data", "directory", "symlink" */
};

struct ext4_run {
	const char *image;
	const uint64_t *blocks;	/* the blocks asked for, sorted */
	size_t n;
	struct ext4_geo geo;
	struct ext4_blk *blk;
	struct ext4_ino *inos;
	size_t ninos, capinos;
};

/* Run debugfs -f on @script against @r->image; its stdout in *out. -n: at a window's end a
 * bitmap's checksum can lag its bitmap (the journal holds the rest), and debugfs would not
 * open the image at all. */
static int debugfs(const struct ext4_run *r, const char *script, char **out)
{
	char path[4096];
	int ret = owner_script(r->image, script, path, sizeof(path));

	if (!ret) {
		const char *argv[] = { "debugfs", "-n", "-f", path, r->image, NULL };

		ret = owner_run(argv, out);
		unlink(path);
	}
	return ret;
}

static bool field(const char *line, const char *name, uint64_t *v)
{
	size_t n = strlen(name);

	if (strncmp(line, name, n))
		return false;
	*v = strtoull(line + n, NULL, 10);
	return true;
}

static int parse_group(struct ext4_geo *g, const char *line)
{
	struct ext4_group e;
	unsigned long long n, bb, ib, it;
	struct ext4_group *v;

	if (sscanf(line, " Group %llu: block bitmap at %llu, inode bitmap at %llu, inode table at %llu",
		   &n, &bb, &ib, &it) != 4)
		return 0;
	e = (struct ext4_group){ bb, ib, it };
	v = realloc(g->g, (g->ng + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	g->g = v;
	g->g[g->ng++] = e;
	return 0;
}

/* Pass 1's output: stats, icheck and testb. */
static int parse_pass1(struct ext4_run *r, char *out)
{
	struct ext4_geo *g = &r->geo;
	char *save, *line;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long b, ino;
		ssize_t i;
		uint64_t v;

		if (field(line, "Block size:", &v))
			g->bs = v;
		else if (field(line, "First block:", &v))
			g->first = v;
		else if (field(line, "Blocks per group:", &v))
			g->bpg = v;
		else if (field(line, "Inodes per group:", &v))
			g->ipg = v;
		else if (field(line, "Inode size:", &v))
			g->isz = v;
		else if (field(line, "Inode blocks per group:", &v))
			g->itb = v;
		else if (!strncmp(line, " Group ", 7)) {
			if (parse_group(g, line))
				return -ENOMEM;
		} else if (sscanf(line, "%llu\t%llu", &b, &ino) == 2) {
			if ((i = owner_blk_index(r->blocks, r->n, b)) >= 0)
				r->blk[i].ino = ino;
		} else if (sscanf(line, "Block %llu marked in use", &b) == 1) {
			if ((i = owner_blk_index(r->blocks, r->n, b)) >= 0)
				r->blk[i].used = true;
		}
	}
	return g->bs && g->bpg && g->ipg && g->isz ? 0 : -EINVAL;
}

static int pass1(struct ext4_run *r)
{
	char *script = NULL, *out = NULL;
	size_t len = 0;
	int ret = owner_addf(&script, &len, "stats\n");

	for (size_t i = 0; i < r->n && !ret; i++)
		ret = owner_addf(&script, &len, "%s%" PRIu64 "%s", i % 128 ? " " : "icheck ",
			   r->blocks[i], i % 128 == 127 || i + 1 == r->n ? "\n" : "");
	for (size_t i = 0; i < r->n && !ret; i++)
		ret = owner_addf(&script, &len, "testb %" PRIu64 "\n", r->blocks[i]);
	if (!ret)
		ret = debugfs(r, script, &out);
	if (!ret)
		ret = parse_pass1(r, out);
	free(script);
	free(out);
	return ret;
}

static struct ext4_ino *find_ino(struct ext4_run *r, uint64_t ino)
{
	for (size_t i = 0; i < r->ninos; i++)
		if (r->inos[i].ino == ino)
			return &r->inos[i];
	return NULL;
}

static int want_ino(struct ext4_run *r, uint64_t ino)
{
	if (find_ino(r, ino))
		return 0;
	if (r->ninos == r->capinos) {
		size_t cap = r->capinos ? 2 * r->capinos : 16;
		struct ext4_ino *v = realloc(r->inos, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->inos = v;
		r->capinos = cap;
	}
	r->inos[r->ninos++] = (struct ext4_ino){ .ino = ino, .kind = "data" };
	return 0;
}

/* The inode table block @b's group and first inode, or false. */
static bool in_itable(const struct ext4_run *r, uint64_t b, uint64_t *ino0)
{
	const struct ext4_geo *g = &r->geo;
	uint64_t itb = g->itb ? g->itb : (g->ipg * g->isz + g->bs - 1) / g->bs;

	for (size_t i = 0; i < g->ng; i++) {
		if (b >= g->g[i].it && b < g->g[i].it + itb) {
			*ino0 = i * g->ipg + (b - g->g[i].it) * (g->bs / g->isz) + 1;
			return true;
		}
	}
	return false;
}

static void parse_pass2(struct ext4_run *r, char *out)
{
	struct ext4_ino *cur = NULL;
	char *save, *line;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long ino;
		char type[32];
		int at;

		if (sscanf(line, "Inode: %llu Type: %31s", &ino, type) == 2) {
			cur = find_ino(r, ino);
			if (cur)
				cur->kind = !strcmp(type, "directory") ? "directory" :
					    !strcmp(type, "symlink") ? "symlink" : "data";
		} else if (sscanf(line, "%llu\t%n", &ino, &at) == 1 && at > 0 && line[at] == '/') {
			const char *p = line + at;

			cur = find_ino(r, ino);
			while (p[0] == '/' && p[1] == '/')
				p++;
			if (cur && !cur->path)
				cur->path = strdup(p);
		}
	}
}

static int pass2(struct ext4_run *r)
{
	char *script = NULL, *out = NULL;
	size_t len = 0;
	int ret = 0;

	for (size_t i = 0; i < r->n && !ret; i++) {
		uint64_t ino0;

		if (r->blk[i].ino)
			ret = want_ino(r, r->blk[i].ino);
		else if (in_itable(r, r->blocks[i], &ino0))
			for (uint64_t j = 0; j < r->geo.bs / r->geo.isz && !ret; j++)
				ret = want_ino(r, ino0 + j);
	}
	if (ret || !r->ninos)
		return ret;
	for (size_t i = 0; i < r->ninos && !ret; i++)
		ret = owner_addf(&script, &len, "%s%" PRIu64, i ? " " : "ncheck ", r->inos[i].ino);
	if (!ret)
		ret = owner_addf(&script, &len, "\n");
	for (size_t i = 0; i < r->n && !ret; i++)
		if (r->blk[i].ino)
			ret = owner_addf(&script, &len, "stat <%" PRIu64 ">\n", r->blk[i].ino);
	if (!ret)
		ret = debugfs(r, script, &out);
	if (!ret)
		parse_pass2(r, out);
	if (!ret && find_ino(r, 2) && !find_ino(r, 2)->path)
		find_ino(r, 2)->path = strdup("/");
	free(script);
	free(out);
	return ret;
}

/* "[inode table: /f /tmp]" for the block whose first inode is @ino0. */
static char *itable_name(struct ext4_run *r, uint64_t ino0)
{
	char *s = NULL;
	size_t len = 0;
	unsigned int named = 0;
	int ret = owner_addf(&s, &len, "[inode table");

	for (uint64_t j = 0; j < r->geo.bs / r->geo.isz && !ret; j++) {
		const struct ext4_ino *e = find_ino(r, ino0 + j);

		if (!e || !e->path)
			continue;
		if (named++ == ITABLE_NAMES_MAX) {
			ret = owner_addf(&s, &len, " ...");
			break;
		}
		ret = owner_addf(&s, &len, "%s%s", named == 1 ? ": " : " ", e->path);
	}
	if (!ret)
		ret = owner_addf(&s, &len, "]");
	if (ret) {
		free(s);
		return NULL;
	}
	return s;
}

static char *inode_name(struct ext4_run *r, uint64_t ino)
{
	const struct ext4_ino *e = find_ino(r, ino);
	char *s;

	switch (ino) {
	case 7:
		return strdup("[group descriptors]");	/* the resize inode: reserved GDT */
	case 8:
		return strdup("[journal]");
	default:
		break;
	}
	if (e && e->path)
		return asprintf(&s, "%s (%s)", e->path, e->kind) < 0 ? NULL : s;
	return asprintf(&s, "[inode %" PRIu64 "]", ino) < 0 ? NULL : s;
}

/* A block no inode owns. */
static char *meta_name(struct ext4_run *r, size_t i)
{
	const struct ext4_geo *g = &r->geo;
	uint64_t b = r->blocks[i], ino0;

	if (in_itable(r, b, &ino0))
		return itable_name(r, ino0);
	for (size_t k = 0; k < g->ng; k++) {
		if (b == g->g[k].bb)
			return strdup("[block bitmap]");
		if (b == g->g[k].ib)
			return strdup("[inode bitmap]");
	}
	if (b * g->bs <= 1024 && 1024 < (b + 1) * g->bs)
		return strdup("[superblock]");
	if (!r->blk[i].used)
		return strdup("[free]");
	if (b >= g->first && (b - g->first) % g->bpg == 0)
		return strdup("[superblock]");	/* a backup */
	if (b >= g->first && (b - g->first) % g->bpg < g->bpg && g->ng &&
	    b < g->g[0].bb)
		return strdup("[group descriptors]");
	/* in use, yet no inode on disk owns it: mostly data whose extent is still only in
	 * the journal */
	return strdup("[in use]");
}

static int ext4_names(const char *image, const uint64_t *blocks, size_t n, char **names,
		      bool journal);

/* The names of blocks outside the journal, for owner_jbd2_names(). */
static int ext4_names_plain(const char *image, const uint64_t *blocks, size_t n, char **names)
{
	return ext4_names(image, blocks, n, names, false);
}

/* Rename the journal's blocks among @r's by the filesystem block each copies, named as any
 * other block is; the others stay "[journal]". */
static int name_journal(struct ext4_run *r, char **names)
{
	uint64_t *jb = calloc(r->n, sizeof(*jb));
	size_t *at = calloc(r->n, sizeof(*at)), k = 0;
	char **jnames = calloc(r->n, sizeof(*jnames));
	int ret = -ENOMEM;

	if (!jb || !at || !jnames)
		goto out;
	for (size_t i = 0; i < r->n; i++)
		if (r->blk[i].ino == 8) {
			at[k] = i;
			jb[k++] = r->blocks[i];
		}
	ret = k ? owner_jbd2_names(r->image, jb, k, jnames, ext4_names_plain) : 0;
	for (size_t i = 0; i < k && !ret; i++) {
		if (!jnames[i])
			continue;
		free(names[at[i]]);
		names[at[i]] = jnames[i];
		jnames[i] = NULL;
	}
out:
	for (size_t i = 0; jnames && i < k; i++)
		free(jnames[i]);
	free(jnames);
	free(at);
	free(jb);
	return ret;
}

static int ext4_names(const char *image, const uint64_t *blocks, size_t n, char **names,
		      bool journal)
{
	struct ext4_run r = { .image = image, .blocks = blocks, .n = n };
	int ret = -ENOMEM;

	memset(names, 0, n * sizeof(*names));
	r.blk = calloc(n ? n : 1, sizeof(*r.blk));
	if (!r.blk)
		goto out;
	ret = pass1(&r);
	if (!ret)
		ret = pass2(&r);
	for (size_t i = 0; i < n && !ret; i++) {
		names[i] = r.blk[i].ino ? inode_name(&r, r.blk[i].ino) : meta_name(&r, i);
		if (!names[i])
			ret = -ENOMEM;
	}
	/* a journal that cannot be read leaves its blocks "[journal]" */
	if (!ret && journal && name_journal(&r, names) == -ENOMEM)
		ret = -ENOMEM;
out:
	for (size_t i = 0; i < n && ret; i++) {
		free(names[i]);
		names[i] = NULL;
	}
	for (size_t i = 0; i < r.ninos; i++)
		free(r.inos[i].path);
	free(r.inos);
	free(r.blk);
	free(r.geo.g);
	return ret;
}

int owner_ext4(const char *image, uint64_t bs, const uint64_t *blocks, size_t n, char **names)
{
	(void)bs;	/* debugfs tells the geometry */
	return ext4_names(image, blocks, n, names, true);
}
