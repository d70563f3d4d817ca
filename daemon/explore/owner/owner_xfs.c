// SPDX-License-Identifier: MIT
/* xfs owners, read with xfsprogs' xfs_db, read-only (-r) as a user would: `sb 0` for the
 * geometry, then `blockget -n` (which walks the whole filesystem once) and `blockuse -n` for
 * each run of blocks asked for (its type, owning inode and path), then `ncheck -i` for the
 * inodes an inode chunk block holds. Three runs per batch, whatever its size; a dirty log
 * (which blockget refuses) is first replayed by a mount of explore's copy of the image. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/explore/owner/owner_fs.h"

#define INODES_NAMES_MAX 8	/* names an inode chunk block lists at most */

struct xfs_geo {
	uint64_t agblocks, agblklog, inopblog, dblocks, rootino, blocksize, sectsize;
	uint64_t logstart, logblocks;	/* logstart: an fsblock number; 0: an external log */
};

/* What blockuse says of a block. */
struct xfs_blk {
	char type[16];		/* "" when blockuse said nothing */
	uint64_t ino;		/* the owning inode, or 0 */
	char *path;		/* its path, relative to the root; NULL: none given */
};

/* An inode of an inode chunk block, named by ncheck. */
struct xfs_ino {
	uint64_t ino;
	char *path;
};

struct xfs_run {
	const char *image;
	const uint64_t *blocks;	/* linear: byte offset / block size; sorted */
	size_t n;
	struct xfs_geo geo;
	struct xfs_blk *blk;
	struct xfs_ino *inos;
	size_t ninos;
	bool unreplayed;	/* the log does not replay: blockget cannot run */
};

/* Run xfs_db -r with the commands of @script against @r->image; its stdout in *out, its wait
 * status in *@status: blockget exits non-zero on what it finds inconsistent (as a window's
 * end may be), and still says what each block is. */
static int xfs_db(const struct xfs_run *r, const char *script, char **out, int *status)
{
	char path[4096], cmd[4200];
	int ret = owner_script(r->image, script, path, sizeof(path));

	if (ret)
		return ret;
	snprintf(cmd, sizeof(cmd), "source %s", path);
	{
		const char *argv[] = { "xfs_db", "-r", "-c", cmd, r->image, NULL };

		ret = owner_run_status(argv, out, status);
	}
	unlink(path);
	return ret;
}

static int geometry(struct xfs_run *r)
{
	struct xfs_geo *g = &r->geo;
	char *out = NULL, *save, *line;
	int status, ret = xfs_db(r, "sb 0\np agblocks agblklog inopblog dblocks rootino blocksize "
				 "sectsize logstart logblocks\n", &out, &status);

	if (!ret && status) {
		fprintf(stderr, "plugdisk explore: xfs_db sb 0 failed (status %d)\n", status);
		ret = -EIO;
	}

	for (line = ret ? NULL : strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		static const struct { const char *name; size_t off; } f[] = {
			{ "agblocks = ", offsetof(struct xfs_geo, agblocks) },
			{ "agblklog = ", offsetof(struct xfs_geo, agblklog) },
			{ "inopblog = ", offsetof(struct xfs_geo, inopblog) },
			{ "dblocks = ", offsetof(struct xfs_geo, dblocks) },
			{ "rootino = ", offsetof(struct xfs_geo, rootino) },
			{ "blocksize = ", offsetof(struct xfs_geo, blocksize) },
			{ "sectsize = ", offsetof(struct xfs_geo, sectsize) },
			{ "logstart = ", offsetof(struct xfs_geo, logstart) },
			{ "logblocks = ", offsetof(struct xfs_geo, logblocks) },
		};

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			if (!strncmp(line, f[i].name, strlen(f[i].name)))
				*(uint64_t *)((char *)g + f[i].off) =
					strtoull(line + strlen(f[i].name), NULL, 10);
	}
	free(out);
	if (!ret && (!g->agblocks || !g->agblklog || g->agblklog > 40 || g->inopblog > 16 ||
		     !g->blocksize))
		ret = -EINVAL;
	return ret;
}

/* The xfs fsblock number of linear block @b: the AG in the high bits, from bit agblklog. */
static uint64_t fsblock(const struct xfs_geo *g, uint64_t b)
{
	return (b / g->agblocks) << g->agblklog | b % g->agblocks;
}

/* "block F (A/B) type T[ inode I[ PATH]]" */
static void parse_use(struct xfs_run *r, const char *line)
{
	unsigned long long fsb, ag, agb, ino;
	char type[16];
	int at = 0;
	ssize_t i;

	if (sscanf(line, "block %llu (%llu/%llu) type %15s%n", &fsb, &ag, &agb, type, &at) != 4)
		return;
	if (agb >= r->geo.agblocks || (i = owner_blk_index(r->blocks, r->n, ag * r->geo.agblocks + agb)) < 0)
		return;
	snprintf(r->blk[i].type, sizeof(r->blk[i].type), "%s", type);
	line += at;
	if (sscanf(line, " inode %llu%n", &ino, &at) != 1)
		return;
	r->blk[i].ino = ino;
	line += at;
	if (*line == ' ' && line[1] && !r->blk[i].path)
		r->blk[i].path = strdup(line + 1);
}

/* Replay the image's log as xfs_db asks a user to: mount it and unmount it. blockget refuses
 * a dirty log, and the metadata in it (a rename, say) is the filesystem at the window's end.
 * The image is explore's own copy. 0 or -errno (no root, no loop device: no names). */
static int replay_log(const struct xfs_run *r)
{
	char dir[4096];
	const char *mount[] = { "mount", "-t", "xfs", "-o", "loop,nouuid", r->image, dir, NULL };
	const char *umount[] = { "umount", dir, NULL };
	char *out = NULL;
	int ret;

	if ((size_t)snprintf(dir, sizeof(dir), "%s.mnt", r->image) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700)) {
		ret = -errno;
		fprintf(stderr, "plugdisk explore: mkdir %s: %s\n", dir, strerror(-ret));
		return ret;
	}
	ret = owner_try(mount, &out);
	free(out);
	if (ret)
		fprintf(stderr, "plugdisk explore: mount of %s failed: its xfs log does not replay, "
			"only the log and the AG headers are named\n", r->image);
	if (!ret) {
		ret = owner_run(umount, &out);
		free(out);
	}
	rmdir(dir);
	return ret;
}

/* blockget, then blockuse over each run of consecutive blocks within one AG. */
static int pass_use(struct xfs_run *r)
{
	const struct xfs_geo *g = &r->geo;
	char *script = NULL, *out = NULL, *save, *line;
	size_t len = 0;
	int status, ret = owner_addf(&script, &len, "blockget -n\n");

	for (size_t i = 0, j; i < r->n && !ret; i = j) {
		for (j = i + 1; j < r->n && r->blocks[j] == r->blocks[j - 1] + 1 &&
		     r->blocks[j] % g->agblocks; j++)
			;
		if (r->blocks[i] >= g->dblocks)
			continue;
		if (r->blocks[j - 1] >= g->dblocks)
			j = i + 1;	/* a run that crosses the end: its first alone */
		ret = owner_addf(&script, &len, "fsblock %" PRIu64 "\nblockuse -n -c %zu\n",
				 fsblock(g, r->blocks[i]), j - i);
	}
	if (!ret)
		ret = xfs_db(r, script, &out, &status);
	if (!ret && strstr(out, "needs to\nbe replayed")) {
		free(out);
		out = NULL;
		if (replay_log(r))
			r->unreplayed = true;
		else
			ret = xfs_db(r, script, &out, &status);
	}
	if (!ret && out && status && strncmp(out, "block ", 6) && !strstr(out, "\nblock ")) {
		fprintf(stderr, "plugdisk explore: xfs_db blockget failed (status %d)\n", status);
		ret = -EIO;
	}
	for (line = ret || !out ? NULL : strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		parse_use(r, line);
	free(script);
	free(out);
	return ret;
}

/* The first inode of inode chunk block @b: AG, block and slot, as xfs numbers inodes. */
static uint64_t first_ino(const struct xfs_geo *g, uint64_t b)
{
	return fsblock(g, b) << g->inopblog;
}

static struct xfs_ino *find_ino(const struct xfs_run *r, uint64_t ino)
{
	for (size_t i = 0; i < r->ninos; i++)
		if (r->inos[i].ino == ino)
			return &r->inos[i];
	return NULL;
}

/* "INO PATH" lines of ncheck */
static void parse_ncheck(struct xfs_run *r, char *out)
{
	char *save, *line;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long ino;
		struct xfs_ino *e;
		int at = 0;

		if (sscanf(line, " %llu %n", &ino, &at) != 1 || !at || !line[at])
			continue;
		e = find_ino(r, ino);
		if (e && !e->path)
			e->path = strdup(line + at);
	}
}

/* ncheck for every inode that the inode chunk blocks asked for hold. */
static int pass_inodes(struct xfs_run *r)
{
	uint64_t per = 1ULL << r->geo.inopblog;
	char *script = NULL, *out = NULL;
	size_t len = 0, cap = 0;
	int status, ret = 0;

	for (size_t i = 0; i < r->n; i++)
		cap += !strcmp(r->blk[i].type, "inode") ? per : 0;
	if (!cap)
		return 0;
	r->inos = calloc(cap, sizeof(*r->inos));
	if (!r->inos)
		return -ENOMEM;
	ret = owner_addf(&script, &len, "blockget -n\nncheck");
	for (size_t i = 0; i < r->n && !ret; i++) {
		if (strcmp(r->blk[i].type, "inode"))
			continue;
		for (uint64_t k = 0; k < per && !ret; k++) {
			uint64_t ino = first_ino(&r->geo, r->blocks[i]) + k;

			r->inos[r->ninos++].ino = ino;
			ret = owner_addf(&script, &len, " -i %" PRIu64, ino);
		}
	}
	if (!ret)
		ret = owner_addf(&script, &len, "\n");
	if (!ret)
		ret = xfs_db(r, script, &out, &status);
	if (!ret)
		parse_ncheck(r, out);	/* whatever blockget found wrong on the way */
	free(script);
	free(out);
	return ret;
}

/* "/d/f" from ncheck's or blockuse's "d/f" (a directory's "d/." too); "/" for the root. */
static char *abs_path(const struct xfs_run *r, uint64_t ino, const char *path)
{
	size_t n = path ? strlen(path) : 0;
	char *s;

	if (ino == r->geo.rootino)
		return strdup("/");
	if (!path)
		return NULL;
	if (n >= 2 && !strcmp(path + n - 2, "/."))
		n -= 2;
	return asprintf(&s, "/%.*s", (int)n, path) < 0 ? NULL : s;
}

/* "[inodes: /f /g]" for inode chunk block @i. */
static char *inodes_name(const struct xfs_run *r, size_t i)
{
	uint64_t per = 1ULL << r->geo.inopblog, ino0 = first_ino(&r->geo, r->blocks[i]);
	char *s = NULL;
	size_t len = 0;
	unsigned int named = 0;
	int ret = owner_addf(&s, &len, "[inodes");

	for (uint64_t k = 0; k < per && !ret; k++) {
		const struct xfs_ino *e = find_ino(r, ino0 + k);
		char *p = e ? abs_path(r, e->ino, e->path) : NULL;

		if (!p)
			continue;
		if (named++ == INODES_NAMES_MAX)
			ret = owner_addf(&s, &len, " ...");
		else
			ret = owner_addf(&s, &len, "%s%s", named == 1 ? ": " : " ", p);
		free(p);
		if (named > INODES_NAMES_MAX)
			break;
	}
	if (!ret)
		ret = owner_addf(&s, &len, "]");
	if (ret) {
		free(s);
		return NULL;
	}
	return s;
}

/* A block an inode owns: "/f (data)", "/d (directory)", "[inode 133] (data)" unnamed. */
static char *inode_name(const struct xfs_run *r, const struct xfs_blk *b, const char *kind)
{
	char *p = abs_path(r, b->ino, b->path), *s;
	int n = p ? asprintf(&s, "%s (%s)", p, kind) :
		    asprintf(&s, "[inode %" PRIu64 "] (%s)", b->ino, kind);

	free(p);
	return n < 0 ? NULL : s;
}

static const struct { const char *type, *name; } xfs_meta[] = {
	{ "agf", "[free space header]" },
	{ "agi", "[inode header]" },
	{ "agfl", "[free list]" },
	{ "freelist", "[free list]" },
	{ "btbno", "[free space btree]" },
	{ "btcnt", "[free space btree]" },
	{ "btino", "[inode btree]" },
	{ "btfino", "[inode btree]" },
	{ "btrmap", "[reverse map btree]" },
	{ "btrefcnt", "[refcount btree]" },
	{ "log", "[log]" },
	{ "free1", "[free]" },
	{ "free2", "[free]" },
	{ "quota", "[quota]" },
	{ "rtbitmap", "[realtime bitmap]" },
	{ "rtsum", "[realtime summary]" },
	{ "cowdata", "[copy on write staging]" },
	/* allocated, yet nothing blockget walked owns it: mostly data an inode claims only
	 * later */
	{ "unknown", "[in use]" },
};

static const struct { const char *type, *kind; } xfs_kinds[] = {
	{ "data", "data" },
	{ "rldata", "data" },
	{ "dir", "directory" },
	{ "attr", "attributes" },
	{ "symlink", "symlink" },
	{ "btbmapa", "attribute extent map" },
	{ "btbmapd", "extent map" },
};

static const char *sb_name(const struct xfs_run *r)
{
	/* Below a block's size the AG's headers share its first block. */
	return r->geo.sectsize < r->geo.blocksize ? "[superblock and AG headers]" : "[superblock]";
}

/* A window's end whose log does not replay (the mount fails): what the geometry alone tells,
 * the log and the AG headers. */
static char *unreplayed_name(const struct xfs_run *r, size_t i)
{
	const struct xfs_geo *g = &r->geo;
	uint64_t b = r->blocks[i];
	uint64_t log0 = (g->logstart >> g->agblklog) * g->agblocks +
			(g->logstart & ((1ULL << g->agblklog) - 1));
	if (g->logstart && b >= log0 && b - log0 < g->logblocks)
		return strdup("[log]");
	if (b % g->agblocks == 0)
		return strdup(sb_name(r));
	return strdup("[not named: the log does not replay]");
}

static char *block_name(const struct xfs_run *r, size_t i)
{
	const struct xfs_blk *b = &r->blk[i];

	if (r->blocks[i] >= r->geo.dblocks)
		return strdup("[past the filesystem]");
	if (r->unreplayed)
		return unreplayed_name(r, i);
	if (!strcmp(b->type, "sb"))
		return strdup(sb_name(r));
	if (!strcmp(b->type, "inode"))
		return inodes_name(r, i);
	for (size_t k = 0; k < sizeof(xfs_kinds) / sizeof(xfs_kinds[0]); k++)
		if (!strcmp(b->type, xfs_kinds[k].type))
			return b->ino ? inode_name(r, b, xfs_kinds[k].kind) :
				strdup(!strcmp(xfs_kinds[k].kind, "data") ? "[data]" : "[metadata]");
	for (size_t k = 0; k < sizeof(xfs_meta) / sizeof(xfs_meta[0]); k++)
		if (!strcmp(b->type, xfs_meta[k].type))
			return strdup(xfs_meta[k].name);
	return strdup("[metadata]");
}

int owner_xfs(const char *image, uint64_t bs, const uint64_t *blocks, size_t n, char **names)
{
	struct xfs_run r = { .image = image, .blocks = blocks, .n = n };
	int ret = -ENOMEM;

	(void)bs;	/* xfs_db tells the geometry */

	memset(names, 0, n * sizeof(*names));
	r.blk = calloc(n ? n : 1, sizeof(*r.blk));
	if (!r.blk)
		goto out;
	ret = geometry(&r);
	if (!ret)
		ret = pass_use(&r);
	if (!ret && !r.unreplayed)
		ret = pass_inodes(&r);
	for (size_t i = 0; i < n && !ret; i++)
		if (!(names[i] = block_name(&r, i)))
			ret = -ENOMEM;
out:
	for (size_t i = 0; i < n && ret; i++) {
		free(names[i]);
		names[i] = NULL;
	}
	for (size_t i = 0; r.blk && i < n; i++)
		free(r.blk[i].path);
	for (size_t i = 0; i < r.ninos; i++)
		free(r.inos[i].path);
	free(r.inos);
	free(r.blk);
	return ret;
}
