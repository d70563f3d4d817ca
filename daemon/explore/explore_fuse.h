/* SPDX-License-Identifier: MIT */
/* `plugdisk explore`'s disks: a small FUSE filesystem serving each crash state being checked
 * as MOUNT/state-ID, the base image read-only under the state's overlay, with the checker's
 * own writes kept in memory and thrown away with the state. */
#ifndef PLUGDISK_EXPLORE_FUSE_H
#define PLUGDISK_EXPLORE_FUSE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/crash/extmap.h"

struct fuse_session;
struct xf_page;

/* One state served. Its map is read-only while it is served. */
struct xf_state {
	uint64_t id;			/* read-only: the file is state-ID, inode ID + 2 */
	const struct extmap *map;	/* read-only */
	pthread_mutex_t lock;		/* the scratch pages */
	struct xf_page **buckets;	/* lock: the checker's writes, 4 KiB pages */
	uint64_t scratch_pages;		/* lock */
	unsigned int refs;		/* xf->lock: requests using it */
	bool gone;			/* xf->lock: being retired; lookups miss it */
	struct xf_state *next;		/* xf->lock: the served list */
};

#define XF_THREADS 8	/* threads serving the mount */

/* Lock order: xf->lock, then a state's lock (never the other way). */
struct xf {
	struct fuse_session *se;
	char *mnt;		/* read-only */
	int base_fd;		/* read-only: the base image, O_RDONLY */
	uint64_t base_size;	/* read-only */
	uint64_t size;		/* read-only: the disk's size */
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* lock: a state's refs fell to 0 */
	struct xf_state *states;	/* lock */
	pthread_t threads[XF_THREADS];	/* the loop's: each serves requests until told */
	unsigned int nthreads;
	int quit_fd;		/* an eventfd: readable once the threads must end */
	bool mounted;
	dev_t dev;		/* read-only: the mount's device, whose minor names the connection */
};

/* Mount at @mnt (an empty directory) and serve from XF_THREADS threads. 0 or -errno
 * (logged). */
int xf_start(struct xf *x, const char *mnt, int base_fd, uint64_t size);

/* Serve @map as state-@id until xf_remove. 0 or -ENOMEM. */
int xf_add(struct xf *x, struct xf_state *s, uint64_t id, const struct extmap *map);

/* Stop serving @s once no request uses it; drop the kernel's pages of it and its scratch. */
void xf_remove(struct xf *x, struct xf_state *s);

/* Unmount, end the threads, and end the connection: every request sent to the mount has
 * been answered, by a thread or with an error by the kernel, when it returns, even if
 * another mount namespace still holds a copy of the mount. */
void xf_stop(struct xf *x);

#endif
