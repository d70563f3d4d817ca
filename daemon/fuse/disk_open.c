// SPDX-License-Identifier: MIT
/* Opens of MOUNTPOINT/disk and the power fence.
 *
 * A real power loss takes the host down with the disk: its page cache, its mounted
 * filesystems and every open file go, so nothing opened before the cut writes into the next
 * power epoch. Here the host lives on, so each open notes the write cache's power generation
 * (cache_power_gen(): one more at each cut) and a request whose open noted an older one fails
 * with EIO, from the moment of the cut and after poweron too. Opens made after the cut (even
 * while the power is off) work once the power is back. What is fenced is what reaches the
 * daemon: every write (the mount has no writeback cache, so a write(2) is a FUSE write), fsync
 * and fallocate, and every read the kernel's page cache does not answer (doc/power-loss.md
 * says which those are).
 *
 * An open's file handle is its struct pd_disk_open, registered on open_list until release:
 * poweron counts the fenced opens still registered. The kernel sends no request of an open
 * after its release, so a request's handle is alive while it is served. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/cache/cache.h"
#include "core/util/barrier.h"
#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse/disk_open.h"

struct pd_disk_open {
	struct pd_disk_open *prev, *next;	/* open_lock: open_list */
	uint64_t gen;		/* the power generation at the open; read-only */
	bool direct;		/* answered with FOPEN_DIRECT_IO; read-only */
	bool counted;		/* open_lock: counted by a poweron as fenced */
};

/* The kernel orders an open's life: its reply comes before any request of the open, and a
 * release after every request of it has been answered. Threads that serve those (any
 * receive thread, any ring's on FUSE over io_uring) are thus ordered through system calls,
 * which ThreadSanitizer cannot see; these tell it, and are nothing in other builds. */
#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
#define handoff_release(o) __tsan_release(o)
#define handoff_acquire(o) __tsan_acquire(o)
#else
#define handoff_release(o) ((void)(o))
#define handoff_acquire(o) ((void)(o))
#endif

/* Lock order: taken alone, never across I/O. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pd_disk_open open_list = { .prev = &open_list, .next = &open_list };
static uint64_t opens_fenced;		/* open_lock: counted at poweron since start or reset */
static uint64_t requests_fenced;	/* atomic: requests refused; a statistic */

/* The power generation now, 0 without a write cache (no cut ever comes). */
static uint64_t power_gen(struct pd *pd)
{
	struct cache *c = chain_find(&pd->chain, "cache");

	return c ? cache_power_gen(c) : 0;
}

static struct pd_disk_open *fh_open(uint64_t fh)
{
	struct pd_disk_open *o = (struct pd_disk_open *)(uintptr_t)fh;

	handoff_acquire(o);
	return o;
}

int pd_disk_open_new(struct pd *pd, bool direct, uint64_t *fh)
{
	struct pd_disk_open *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->gen = power_gen(pd);
	o->direct = direct;
	handoff_release(o);
	pthread_mutex_lock(&open_lock);
	o->next = open_list.next;
	o->prev = &open_list;
	open_list.next->prev = o;
	open_list.next = o;
	pthread_mutex_unlock(&open_lock);
	*fh = (uintptr_t)o;
	return 0;
}

void pd_disk_open_release(uint64_t fh)
{
	struct pd_disk_open *o;

	if (!fh)
		return;
	o = fh_open(fh);
	pthread_mutex_lock(&open_lock);
	o->prev->next = o->next;
	o->next->prev = o->prev;
	pthread_mutex_unlock(&open_lock);
	free(o);
}

bool pd_disk_open_is_direct(uint64_t fh)
{
	struct pd_disk_open *o;
	bool direct;

	if (!fh)
		return false;
	o = fh_open(fh);
	direct = o->direct;
	handoff_release(o); /* done with it: before the release that frees it */
	return direct;
}

int pd_disk_open_check(struct pd *pd, uint64_t fh)
{
	struct pd_disk_open *o;
	uint64_t gen;

	if (!fh)
		return 0;
	o = fh_open(fh);
	gen = o->gen;
	handoff_release(o); /* done with it: before the release that frees it */
	/* A request that reads the generation just before a cut is in flight at the cut, and
	 * the cache fails it (core/cache/cache_io.c). */
	if (gen == power_gen(pd) || pd->cfg.cache_keep_opens)
		return 0;
	atomic_add_return_relaxed(requests_fenced, 1);
	return -EIO;
}

uint64_t pd_disk_open_fence(struct pd *pd)
{
	uint64_t gen = power_gen(pd), n = 0;

	if (pd->cfg.cache_keep_opens)
		return 0;
	pthread_mutex_lock(&open_lock);
	for (struct pd_disk_open *o = open_list.next; o != &open_list; o = o->next) {
		if (o->counted || o->gen == gen)
			continue;
		o->counted = true;
		n++;
	}
	opens_fenced += n;
	pthread_mutex_unlock(&open_lock);
	if (n)
		log_info("poweron: %" PRIu64 " open%s of disk from before the cut fenced: "
			 "%s requests fail with EIO", n, n == 1 ? "" : "s", n == 1 ? "its" : "their");
	return n;
}

void pd_disk_open_stats(uint64_t *fenced_opens, uint64_t *fenced_requests)
{
	pthread_mutex_lock(&open_lock);
	*fenced_opens = opens_fenced;
	pthread_mutex_unlock(&open_lock);
	*fenced_requests = READ_ONCE(requests_fenced);
}

void pd_disk_open_stats_reset(void)
{
	pthread_mutex_lock(&open_lock);
	opens_fenced = 0;
	pthread_mutex_unlock(&open_lock);
	WRITE_ONCE(requests_fenced, 0);
}

void pd_disk_open_free_all(void)
{
	struct pd_disk_open *o, *next;

	pthread_mutex_lock(&open_lock);
	o = open_list.next;
	open_list.next = open_list.prev = &open_list;
	pthread_mutex_unlock(&open_lock);
	for (; o != &open_list; o = next) {
		next = o->next;
		free(o);
	}
}
