// SPDX-License-Identifier: MIT
/* The owner dispatcher: builds the image at a window's end once, tells its filesystem by the
 * superblock's magic, asks that filesystem's reader for the blocks a range covers, and caches
 * the names by window and range. */
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

enum owner_fs { FS_NONE, FS_EXT4 };

#define EXT4_INCOMPAT_RECOVER 0x4	/* s_feature_incompat: the journal needs replaying */

struct owner_win {
	uint64_t win;
	char path[64];		/* the image at the window's end; "" when not written */
	enum owner_fs fs;
	uint64_t bs;		/* the filesystem's block size */
	bool needs_recovery;	/* ext4: its journal holds transactions to replay */
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
	for (size_t i = 0; i < o->nwins; i++)
		if (o->wins[i].path[0])
			unlink(o->wins[i].path);
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

/* Tell the filesystem of the image at @w->path from its superblock. */
static void detect(struct owner_win *w)
{
	uint8_t sb[1024];
	int fd = open(w->path, O_RDONLY | O_CLOEXEC);

	w->fs = FS_NONE;
	if (fd < 0)
		return;
	if (pread(fd, sb, sizeof(sb), 1024) == (ssize_t)sizeof(sb) &&
	    sb[56] == 0x53 && sb[57] == 0xef && le32(sb + 24) <= 6) {
		w->fs = FS_EXT4;
		w->bs = 1024ULL << le32(sb + 24);
		w->needs_recovery = le32(sb + 96) & EXT4_INCOMPAT_RECOVER;
	}
	close(fd);
}

/* Replay an ext4 journal into the window's image, as a mount would. The image is read as it
 * lies first, its blocks where the window left them; but when a transaction of the window
 * committed a bitmap that is in the journal alone, debugfs refuses the stale bitmap's checksum
 * and reads nothing, and only the replayed image can be read. The journal's blocks stay as
 * they were written (the replay only marks it empty), so its transactions can still be read.
 * e2fsck exits 1 when it changed the image: that is success here. */
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

static char *resolve(struct xp_owner *o, uint64_t win, uint64_t off, uint64_t len)
{
	struct owner_win *w = get_window(o, win);
	uint64_t first, nblk;
	char **names = NULL, *s;

	if (!w)
		return NULL;
	if (w->fs == FS_NONE || !len)
		return strdup(offsets_only);
	first = off / w->bs;
	nblk = (off + len - 1) / w->bs - first + 1;
	if (owner_ext4(w->path, w->bs, first, nblk, &names)) {
		if (!w->needs_recovery)
			return strdup(offsets_only);
		replay_journal(w);
		w->needs_recovery = false;
		if (owner_ext4(w->path, w->bs, first, nblk, &names))
			return strdup(offsets_only);
	}
	s = join(names, nblk);
	for (uint64_t i = 0; i < nblk; i++)
		free(names[i]);
	free(names);
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
