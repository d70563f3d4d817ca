// SPDX-License-Identifier: MIT
/* btrfs owners, read offline with btrfs-progs' `btrfs inspect-internal dump-tree` (as of the
 * last committed transaction): the chunk tree maps a disk offset to its logical address and
 * tells data from metadata, the extent tree names the inode a data extent belongs to, and the
 * default subvolume's tree (FS_TREE) gives that inode's path through its INODE_REF items.
 * Up to three runs per batch. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/explore/owner/owner_fs.h"

/* the superblock (4 KiB) and its mirrors */
static const uint64_t btrfs_sb[] = { 64ULL << 10, 64ULL << 20, 256ULL << 30 };
#define BTRFS_FS_TREE_ROOT 256ULL	/* the default subvolume's root directory */

/* One stripe of a chunk: disk [phys, phys + len) holds logical [logical, logical + len). */
struct btrfs_stripe {
	uint64_t phys, len, logical;
	bool data, meta;
};

/* What a block asked for is. */
struct btrfs_blk {
	uint64_t logical;	/* 0: in no chunk */
	bool data, meta;
	uint64_t root, ino;	/* a data extent's first backref; root 0: none */
};

/* An inode's name in its parent directory. */
struct btrfs_ref {
	uint64_t ino, parent;
	char *name;
};

struct btrfs_run {
	const char *image;
	const uint64_t *blocks;
	size_t n;
	uint64_t bs;
	struct btrfs_blk *blk;
	struct btrfs_stripe *st;
	size_t nst;
	struct btrfs_ref *refs;
	size_t nrefs;
};

static int dump_tree(const struct btrfs_run *r, const char *tree, char **out)
{
	const char *argv[] = { "btrfs", "inspect-internal", "dump-tree", "-t", tree, r->image,
			       NULL };

	return owner_run(argv, out);
}

static int add_stripe(struct btrfs_run *r, struct btrfs_stripe s)
{
	struct btrfs_stripe *v = realloc(r->st, (r->nst + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->st = v;
	r->st[r->nst++] = s;
	return 0;
}

/* "key (FIRST_CHUNK_TREE CHUNK_ITEM L)", "length N ... type DATA|single", "stripe k devid 1
 * offset P": one device, so every stripe of a chunk (DUP: two) holds the whole chunk. */
static int parse_chunks(struct btrfs_run *r, char *out)
{
	struct btrfs_stripe cur = { 0 };
	char *save, *line;
	int ret = 0;

	for (line = strtok_r(out, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b;
		const char *t;

		if (sscanf(line, " item %*u key (FIRST_CHUNK_TREE CHUNK_ITEM %llu)", &a) == 1) {
			cur = (struct btrfs_stripe){ .logical = a };
		} else if (sscanf(line, " length %llu", &a) == 1 && (t = strstr(line, " type "))) {
			cur.len = a;
			/* "DATA|single", "METADATA|DUP", mixed "DATA|METADATA|single" */
			cur.data = !strncmp(t + 6, "DATA", 4);
			cur.meta = strstr(t, "METADATA") || strstr(t, "SYSTEM");
		} else if (sscanf(line, " stripe %llu devid %*u offset %llu", &b, &a) == 2 &&
			   cur.len) {
			cur.phys = a;
			ret = add_stripe(r, cur);
		}
	}
	return ret;
}

static void map_blocks(struct btrfs_run *r)
{
	for (size_t i = 0; i < r->n; i++) {
		uint64_t phys = r->blocks[i] * r->bs;

		for (size_t k = 0; k < r->nst; k++) {
			const struct btrfs_stripe *s = &r->st[k];

			if (phys >= s->phys && phys - s->phys < s->len) {
				r->blk[i].logical = s->logical + (phys - s->phys);
				r->blk[i].data = s->data;
				r->blk[i].meta = s->meta;
				break;
			}
		}
	}
}

/* "key (X EXTENT_ITEM L)", then "extent data backref root FS_TREE objectid I offset O". */
static void parse_extents(struct btrfs_run *r, char *out)
{
	unsigned long long start = 0, len = 0;
	bool first = false;
	char *save, *line;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b, ino, root;
		char rootname[32];

		if (sscanf(line, " item %*u key (%llu EXTENT_ITEM %llu)", &a, &b) == 2) {
			start = a;
			len = b;
			first = true;
			continue;
		}
		if (!first || sscanf(line, " extent data backref root %31s objectid %llu", rootname,
				     &ino) != 2)
			continue;
		first = false;	/* a shared extent is named by its first backref */
		root = !strcmp(rootname, "FS_TREE") ? 5 : strtoull(rootname, NULL, 10);
		for (size_t i = 0; i < r->n; i++) {
			struct btrfs_blk *k = &r->blk[i];

			if (k->data && k->logical >= start && k->logical - start < len) {
				k->root = root;
				k->ino = ino;
			}
		}
	}
}

/* "key (I INODE_REF P)" then "index N namelen L name: NAME" */
static int parse_refs(struct btrfs_run *r, char *out)
{
	unsigned long long ino = 0, parent = 0;
	char *save, *line, *name;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b;
		struct btrfs_ref *v;

		if (sscanf(line, " item %*u key (%llu INODE_REF %llu)", &a, &b) == 2) {
			ino = a;
			parent = b;
			continue;
		}
		if (!ino || !strstr(line, " namelen ") || !(name = strstr(line, " name: ")))
			continue;
		v = realloc(r->refs, (r->nrefs + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->refs = v;
		r->refs[r->nrefs] = (struct btrfs_ref){ ino, parent, strdup(name + 7) };
		if (!r->refs[r->nrefs++].name)
			return -ENOMEM;
		ino = 0;	/* a hard link's other names: the first will do */
	}
	return 0;
}

static const struct btrfs_ref *find_ref(const struct btrfs_run *r, uint64_t ino)
{
	for (size_t i = 0; i < r->nrefs; i++)
		if (r->refs[i].ino == ino)
			return &r->refs[i];
	return NULL;
}

/* "/d/f" for inode @ino of the default subvolume, or NULL. */
static char *path_of(const struct btrfs_run *r, uint64_t ino)
{
	char *s = strdup(""), *t;
	unsigned int depth = 0;

	while (s && ino != BTRFS_FS_TREE_ROOT) {
		const struct btrfs_ref *ref = find_ref(r, ino);

		if (!ref || ++depth > 256) {	/* unnamed, or a loop */
			free(s);
			return NULL;
		}
		t = s;
		if (asprintf(&s, "/%s%s", ref->name, t) < 0)
			s = NULL;
		free(t);
		ino = ref->parent;
	}
	if (s && !*s) {
		free(s);
		s = strdup("/");
	}
	return s;
}

static char *block_name(const struct btrfs_run *r, size_t i)
{
	const struct btrfs_blk *b = &r->blk[i];
	uint64_t off = r->blocks[i] * r->bs;
	char *p, *s;

	for (size_t k = 0; k < sizeof(btrfs_sb) / sizeof(btrfs_sb[0]); k++)
		if (off < btrfs_sb[k] + 4096 && btrfs_sb[k] < off + r->bs)
			return strdup("[superblock]");
	if (!b->logical)
		return strdup(off < (1ULL << 20) ? "[reserved]" : "[free]");
	if (b->meta && !b->data)
		return strdup("[btrfs metadata]");
	if (!b->root)
		return strdup(b->meta ? "[btrfs metadata]" : "[free]");
	p = b->root == 5 ? path_of(r, b->ino) : NULL;
	if (p) {
		int n = asprintf(&s, "%s (data)", p);

		free(p);
		return n < 0 ? NULL : s;
	}
	return asprintf(&s, "[subvolume %" PRIu64 " inode %" PRIu64 "] (data)", b->root,
			b->ino) < 0 ? NULL : s;
}

static int name_all(struct btrfs_run *r)
{
	char *out = NULL;
	bool data = false, fs = false;
	int ret = dump_tree(r, "chunk", &out);

	if (!ret)
		ret = parse_chunks(r, out);
	free(out);
	out = NULL;
	if (ret)
		return ret;
	map_blocks(r);
	for (size_t i = 0; i < r->n; i++)
		data |= r->blk[i].data;
	if (data && !(ret = dump_tree(r, "extent", &out)))
		parse_extents(r, out);
	free(out);
	out = NULL;
	for (size_t i = 0; i < r->n && !ret; i++)
		fs |= r->blk[i].root == 5;
	if (fs && !ret && !(ret = dump_tree(r, "fs", &out)))
		ret = parse_refs(r, out);
	free(out);
	return ret;
}

int owner_btrfs(const char *image, uint64_t bs, const uint64_t *blocks, size_t n, char **names)
{
	struct btrfs_run r = { .image = image, .blocks = blocks, .n = n, .bs = bs };
	int ret = -ENOMEM;

	memset(names, 0, n * sizeof(*names));
	r.blk = calloc(n ? n : 1, sizeof(*r.blk));
	if (r.blk)
		ret = name_all(&r);
	for (size_t i = 0; i < n && !ret; i++)
		if (!(names[i] = block_name(&r, i)))
			ret = -ENOMEM;
	for (size_t i = 0; i < n && ret; i++) {
		free(names[i]);
		names[i] = NULL;
	}
	for (size_t i = 0; i < r.nrefs; i++)
		free(r.refs[i].name);
	free(r.refs);
	free(r.st);
	free(r.blk);
	return ret;
}
