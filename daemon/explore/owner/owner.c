// SPDX-License-Identifier: MIT
/* The owner dispatcher: builds the image at a window's end once, tells its filesystem by the
 * superblock's magic, asks that filesystem's reader once for every block the window's writes
 * cover (one batch of tool runs per window), and caches the names by window and range. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/explore/explore.h"
#include "daemon/explore/owner/owner.h"
#include "daemon/explore/owner/owner_fs.h"

/* Blocks one reader call names at most: a window's batch, or a range outside it. Past it a
 * range's name ends in "...", so that a huge write costs no more than a bounded run. */
#define OWNER_BLOCKS_MAX 4096

enum owner_fs { FS_NONE, FS_EXT4, FS_XFS, FS_BTRFS };

/* A filesystem's reader: names[i] for blocks[i] (block numbers of @bs bytes from the disk's
 * start, sorted, distinct). */
typedef int (*owner_reader_fn)(const char *image, uint64_t bs, const uint64_t *blocks,
			       size_t n, char **names);

static const owner_reader_fn readers[] = {
	[FS_EXT4] = owner_ext4,
	[FS_XFS] = owner_xfs,
	[FS_BTRFS] = owner_btrfs,
};

#define EXT4_INCOMPAT_RECOVER 0x4	/* s_feature_incompat: the journal needs replaying */

struct owner_win {
	uint64_t win;
	char path[64];		/* the image at the window's end; "" when not written */
	enum owner_fs fs;
	uint64_t bs;		/* the filesystem's block size */
	bool needs_recovery;	/* ext4: its journal holds transactions to replay */
	bool batch_failed;	/* the window's batch could not be named: ranges go alone */
	uint64_t *blocks;	/* the window's writes' blocks, named in one batch; sorted */
	char **names;		/* names[i] for blocks[i] */
	size_t nblocks;
};

struct owner_name {
	uint64_t win, off, len;
	char *name;
};

struct xp_owner {
	const struct ws_log *log;
	const char *base_path;
	pthread_mutex_t lock;
	struct owner_win *wins;		/* guarded by lock */
	size_t nwins;			/* guarded by lock */
	struct owner_name *names;	/* guarded by lock */
	size_t nnames, capnames;	/* guarded by lock */
};

static const char offsets_only[] = "offsets only";

struct xp_owner *xp_owner_new(const struct ws_log *l, const char *base_path)
{
	struct xp_owner *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->log = l;
	o->base_path = base_path;
	pthread_mutex_init(&o->lock, NULL);
	return o;
}

void xp_owner_free(struct xp_owner *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nwins; i++) {
		struct owner_win *w = &o->wins[i];

		if (w->path[0])
			unlink(w->path);
		for (size_t j = 0; j < w->nblocks; j++)
			free(w->names[j]);
		free(w->names);
		free(w->blocks);
	}
	for (size_t i = 0; i < o->nnames; i++)
		free(o->names[i].name);
	free(o->wins);
	free(o->names);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

static uint64_t le32(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

static uint64_t be32(const uint8_t *p)
{
	return (uint64_t)p[3] | (uint64_t)p[2] << 8 | (uint64_t)p[1] << 16 | (uint64_t)p[0] << 24;
}

/* Tell the filesystem of the image at @w->path from its superblock. */
static void detect(struct owner_win *w)
{
	uint8_t sb[1024];
	int fd = open(w->path, O_RDONLY | O_CLOEXEC);

	w->fs = FS_NONE;
	if (fd < 0)
		return;
	/* xfs: "XFSB" at 0, then sb_blocksize (big-endian), a power of two 512..64K */
	if (pread(fd, sb, 8, 0) == 8 && !memcmp(sb, "XFSB", 4) && be32(sb + 4) >= 512 &&
	    be32(sb + 4) <= 65536 && !(be32(sb + 4) & (be32(sb + 4) - 1))) {
		w->fs = FS_XFS;
		w->bs = be32(sb + 4);
	} else if (pread(fd, sb, 0x98, 0x10000) == 0x98 && !memcmp(sb + 0x40, "_BHRfS_M", 8) &&
		   le32(sb + 0x90) >= 512 && le32(sb + 0x90) <= 65536 &&
		   !(le32(sb + 0x90) & (le32(sb + 0x90) - 1))) {
		/* btrfs: its superblock at 64 KiB, the magic at 0x40, sectorsize at 0x90 */
		w->fs = FS_BTRFS;
		w->bs = le32(sb + 0x90);
	} else if (pread(fd, sb, sizeof(sb), 1024) == (ssize_t)sizeof(sb) &&
		   sb[56] == 0x53 && sb[57] == 0xef && le32(sb + 24) <= 6) {
		w->fs = FS_EXT4;
		w->bs = 1024ULL << le32(sb + 24);
		w->needs_recovery = le32(sb + 96) & EXT4_INCOMPAT_RECOVER;
	}
	close(fd);
}

/* Replay an ext4 journal into the window's image, as a mount would. The image is read as it
 * lies first, its blocks where the window left them (debugfs -n reads past a bitmap whose
 * checksum lags, the new one in the journal alone); an image debugfs still cannot read is
 * read once replayed. The replay marks the journal empty, so its blocks are "[journal]"
 * then, not named by what they copy. e2fsck exits 1 when it changed the image: that is
 * success here. */
static void replay_journal(struct owner_win *w)
{
	const char *argv[] = { "e2fsck", "-E", "journal_only", "-y", w->path, NULL };
	char *out = NULL;
	int ret = owner_run(argv, &out);

	free(out);
	if (ret && ret != -EIO)
		fprintf(stderr, "plugdisk explore: e2fsck -E journal_only %s: %s\n", w->path,
			strerror(-ret));
}

/* Write the image at window @win's end (every write of the window applied) to a temporary
 * file. 0 or -errno. */
static int build_window(struct xp_owner *o, struct owner_win *w)
{
	const struct ws_log *l = o->log;
	const struct ws_window *win = &l->win[w->win];
	struct ws_state s = { .id = win->first_id, .win = w->win, .kind = WS_K_PREFIX,
			      .n = win->end - win->durable, .j = win->end - win->durable };
	struct ws_builder b;
	struct extmap m;
	const char *tmp = getenv("TMPDIR");
	int base_fd = -1, fd, ret;

	snprintf(w->path, sizeof(w->path), "%s/plugdisk-owner-XXXXXX", tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	fd = mkstemp(w->path);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "plugdisk explore: mkstemp %s: %s\n", w->path, strerror(-ret));
		w->path[0] = '\0';
		return ret;
	}
	close(fd);
	base_fd = open(o->base_path && *o->base_path ? o->base_path : "/dev/null",
		       O_RDONLY | O_CLOEXEC);
	if (base_fd < 0) {
		ret = -errno;
		fprintf(stderr, "plugdisk explore: open %s: %s\n", o->base_path, strerror(-ret));
		return ret;
	}
	ws_builder_init(&b);
	extmap_init(&m);
	ret = ws_state_build(l, &b, &s, &m);
	if (ret)
		fprintf(stderr, "plugdisk explore: out of memory\n");
	else
		ret = xp_write_image(w->path, base_fd, l->hdr.disk_size, &m);
	extmap_free(&m);
	ws_builder_free(&b);
	close(base_fd);
	if (!ret)
		detect(w);
	return ret;
}

/* The reader of @w's filesystem over @n @blocks; an ext4 image it cannot read whose journal
 * needs replaying is read again once the journal is replayed. */
static int read_blocks(struct owner_win *w, const uint64_t *blocks, size_t n, char **names)
{
	int ret = readers[w->fs](w->path, w->bs, blocks, n, names);

	if (ret && w->needs_recovery) {
		replay_journal(w);
		w->needs_recovery = false;
		ret = readers[w->fs](w->path, w->bs, blocks, n, names);
	}
	return ret;
}

/* The name of block @b from the window's names, or NULL. */
static const char *window_name(const struct owner_win *w, uint64_t b)
{
	ssize_t i = owner_blk_index(w->blocks, w->nblocks, b);

	return i < 0 ? NULL : w->names[i];
}

/* Into @v (room for @max, beyond its @n first), the blocks the writes of @w's window cover
 * that @w has not named, up to @max in all; for the log's last window, the blocks of every
 * write of the log, since that window names the blocks the others leave unowned
 * (name_later()). Returns the count, sorted and distinct. */
static size_t window_blocks(const struct xp_owner *o, const struct owner_win *w, uint64_t *v,
			    size_t n, size_t max)
{
	const struct ws_window *win = &o->log->win[w->win];
	uint64_t from = w->win == o->log->nwin - 1 ? 0 : win->durable;

	for (uint64_t i = from; i < win->end && n < max; i++) {
		const struct ws_op *op = &o->log->ops[i];

		if (!op->len)
			continue;
		for (uint64_t b = op->off / w->bs; b <= (op->off + op->len - 1) / w->bs && n < max;
		     b++)
			if (!window_name(w, b))
				v[n++] = b;
	}
	return owner_sort_distinct(v, n);
}

/* Add the @n names @got (taken) of the sorted, distinct @blocks, none of them named yet, to
 * @w's names. 0 or -ENOMEM (nothing taken). */
static int window_add(struct owner_win *w, const uint64_t *blocks, char **got, size_t n)
{
	size_t total = w->nblocks + n, i = 0, j = 0, k = 0;
	uint64_t *v = malloc((total ? total : 1) * sizeof(*v));
	char **names = malloc((total ? total : 1) * sizeof(*names));

	if (!v || !names) {
		free(v);
		free(names);
		return -ENOMEM;
	}
	while (i < w->nblocks || j < n) {
		if (j == n || (i < w->nblocks && w->blocks[i] < blocks[j])) {
			v[k] = w->blocks[i];
			names[k++] = w->names[i++];
		} else {
			v[k] = blocks[j];
			names[k++] = got[j];
			got[j++] = NULL;
		}
	}
	free(w->blocks);
	free(w->names);
	w->blocks = v;
	w->names = names;
	w->nblocks = total;
	return 0;
}

/* Name the @n sorted, distinct blocks @v (none named yet) with one reader call, and keep the
 * names in @w. 0 or -errno. */
static int window_read(struct owner_win *w, const uint64_t *v, size_t n)
{
	char **got = calloc(n ? n : 1, sizeof(*got));
	int ret = got ? read_blocks(w, v, n, got) : -ENOMEM;

	if (!ret)
		ret = window_add(w, v, got, n);
	for (size_t i = 0; got && i < n; i++)
		free(got[i]);
	free(got);
	return ret;
}

/* Name the blocks the writes of @w's window cover, the first OWNER_BLOCKS_MAX of them, in one
 * reader call. A failure leaves the window without names: its ranges are asked for as they
 * come, and say "offsets only" if that fails too. */
static void name_window(struct xp_owner *o, struct owner_win *w)
{
	uint64_t *v = malloc(OWNER_BLOCKS_MAX * sizeof(*v));
	size_t n;

	if (!v)
		return;
	n = window_blocks(o, w, v, 0, OWNER_BLOCKS_MAX);
	if (n && window_read(w, v, n))
		w->batch_failed = true;
	free(v);
}

/* The window's image, written on first use; NULL on -ENOMEM. Called with o->lock held. */
static struct owner_win *get_window(struct xp_owner *o, uint64_t win)
{
	struct owner_win *w;

	for (size_t i = 0; i < o->nwins; i++)
		if (o->wins[i].win == win)
			return &o->wins[i];
	w = realloc(o->wins, (o->nwins + 1) * sizeof(*w));
	if (!w)
		return NULL;
	o->wins = w;
	w = &o->wins[o->nwins++];
	memset(w, 0, sizeof(*w));
	w->win = win;
	if (build_window(o, w))
		w->fs = FS_NONE;
	if (w->fs != FS_NONE)
		name_window(o, w);
	return w;
}

/* The distinct names of @n blocks joined by spaces, in block order. */
static char *join(char **names, uint64_t n)
{
	size_t len = 1;
	char *s;

	for (uint64_t i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (uint64_t i = 0; i < n; i++) {
		bool seen = false;

		for (uint64_t j = 0; j < i && !seen; j++)
			seen = !strcmp(names[i], names[j]);
		if (seen)
			continue;
		if (s[0])
			strcat(s, " ");
		strcat(s, names[i]);
	}
	return s;
}

/* Names for the @n sorted, distinct @blocks (n <= OWNER_BLOCKS_MAX), from @w's names; those
 * it lacks are named in one reader call, with as many more of the window's unnamed blocks as
 * the call takes (unless the window's batch failed), so that a window of more than
 * OWNER_BLOCKS_MAX blocks costs a call per OWNER_BLOCKS_MAX, not one per range asked. */
static int blocks_names(struct xp_owner *o, struct owner_win *w, const uint64_t *blocks,
			size_t n, char **names)
{
	uint64_t *miss = malloc(OWNER_BLOCKS_MAX * sizeof(*miss));
	size_t nmiss = 0;
	int ret = -ENOMEM;

	if (!miss)
		goto out;
	for (size_t i = 0; i < n && nmiss < OWNER_BLOCKS_MAX; i++)
		if (!window_name(w, blocks[i]))
			miss[nmiss++] = blocks[i];
	ret = 0;
	if (nmiss) {
		if (!w->batch_failed)
			nmiss = window_blocks(o, w, miss, nmiss, OWNER_BLOCKS_MAX);
		ret = window_read(w, miss, nmiss);
	}
	for (size_t i = 0; i < n && !ret; i++) {
		const char *s = window_name(w, blocks[i]);

		if (!s || !(names[i] = strdup(s)))
			ret = -ENOMEM;
	}
	for (size_t i = 0; ret && i < n; i++) {
		free(names[i]);
		names[i] = NULL;
	}
out:
	free(miss);
	return ret;
}

/* Whether @name says that nothing on the disk owns its block yet. */
static bool is_unowned(const char *name)
{
	return !strcmp(name, "[free]") || !strcmp(name, "[in use]");
}

/* A block with no owner at its window's end ("[free]", or "[in use]" with no inode owning it)
 * may be written before the metadata that claims it reaches its place on the disk (delayed
 * allocation, ordered data; the claim waits in the journal or log): name it by its owner at
 * the log's end, "[free, later /f (data)]", when it has one there. */
static int name_later(struct xp_owner *o, uint64_t win, enum owner_fs fs, const uint64_t *blocks,
		      char **names, size_t n)
{
	uint64_t last = o->log->nwin - 1, *v = malloc((n ? n : 1) * sizeof(*v));
	char **later = calloc(n ? n : 1, sizeof(*later));
	struct owner_win *w;
	size_t k = 0;
	int ret = -ENOMEM;

	if (!v || !later)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (is_unowned(names[i]))
			v[k++] = blocks[i];
	ret = 0;
	if (!k || win == last || !(w = get_window(o, last)) || w->fs != fs ||
	    blocks_names(o, w, v, k, later))
		goto out;
	for (size_t i = 0, j = 0; i < n && !ret; i++) {
		char *s;

		if (!is_unowned(names[i]) || is_unowned(later[j++]))
			continue;
		if (asprintf(&s, "[%.*s, later %s]", (int)strlen(names[i]) - 2, names[i] + 1,
			     later[j - 1]) < 0) {
			ret = -ENOMEM;
			break;
		}
		free(names[i]);
		names[i] = s;
	}
out:
	for (size_t i = 0; later && i < k; i++)
		free(later[i]);
	free(later);
	free(v);
	return ret;
}

static char *resolve(struct xp_owner *o, uint64_t win, uint64_t off, uint64_t len)
{
	struct owner_win *w = get_window(o, win);
	uint64_t first, nblk, named, *blocks = NULL;
	char **names = NULL, *s = NULL;
	enum owner_fs fs;

	if (!w)
		return NULL;
	if (w->fs == FS_NONE || !len)
		return strdup(offsets_only);
	fs = w->fs;
	first = off / w->bs;
	nblk = (off + len - 1) / w->bs - first + 1;
	named = nblk < OWNER_BLOCKS_MAX ? nblk : OWNER_BLOCKS_MAX;
	names = calloc(named + 1, sizeof(*names));
	blocks = calloc(named, sizeof(*blocks));
	if (!names || !blocks)
		goto out;
	for (uint64_t i = 0; i < named; i++)
		blocks[i] = first + i;
	if (blocks_names(o, w, blocks, named, names)) {
		s = strdup(offsets_only);
		goto out;
	}
	/* w is not used past here: get_window() may move the windows */
	if (name_later(o, win, fs, blocks, names, named))
		goto out;
	if (named < nblk && !(names[named++] = strdup("...")))
		goto out;
	s = join(names, named);
out:
	for (uint64_t i = 0; names && i < named; i++)
		free(names[i]);
	free(names);
	free(blocks);
	return s;
}

const char *xp_owner_name(struct xp_owner *o, uint64_t win, uint64_t off, uint64_t len)
{
	const char *ret = NULL;
	char *s;

	pthread_mutex_lock(&o->lock);
	for (size_t i = 0; i < o->nnames; i++) {
		struct owner_name *n = &o->names[i];

		if (n->win == win && n->off == off && n->len == len) {
			ret = n->name;
			goto out;
		}
	}
	if (o->nnames == o->capnames) {
		size_t cap = o->capnames ? 2 * o->capnames : 16;
		struct owner_name *v = realloc(o->names, cap * sizeof(*v));

		if (!v)
			goto out;
		o->names = v;
		o->capnames = cap;
	}
	s = resolve(o, win, off, len);
	if (!s)
		goto out;
	o->names[o->nnames++] = (struct owner_name){ win, off, len, s };
	ret = s;
out:
	pthread_mutex_unlock(&o->lock);
	return ret;
}
