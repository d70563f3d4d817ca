// SPDX-License-Identifier: MIT
/* The kernel's limit on asynchronous FUSE requests: direct I/O from a loop device or from
 * libaio, readahead (max_background, FUSE_INIT's answer, changed later through
 * /sys/fs/fuse/connections/N/max_background).
 *
 * Why it moves. A loop device hands its requests to a kernel worker, which sends them to
 * FUSE one by one. While the disk holds fewer than the limit, the worker sends each request
 * as it comes and sleeps until the next: the host's every submission wakes it (0.32 worker
 * context switches per 4 KiB I/O at iodepth 32 with a limit of 48). At a limit below what
 * the host keeps in flight, the worker waits in FUSE for a free place instead, and the
 * requests that come meanwhile queue behind it; a batch of replies lets it send a batch
 * (0.10 switches per I/O at a limit of 12), and a fast disk runs 1.3-1.6 times as many 4 KiB
 * I/Os (doc/benchmarks.md).
 *
 * An emulated device needs the opposite: a service latency, a rate limit, a fault or a hold
 * by hand keeps requests in plugdisk, and a device of queue_depth slots, or a queue that
 * merges while stopped, must see every request the host sends; so does a backing store
 * behind a network (NBD), whose throughput grows with the requests in flight. A local store
 * that does real I/O does not count: its large requests (1 MiB copies) look slow too, and
 * moving the limit up in the middle of a stream only touches more ring entries. So auto
 * (mount.max_background = 0) gives the kernel's default while nothing may hold requests
 * (queue_may_hold(), chain_may_hold()), and the transport's most (what FUSE_INIT said) while
 * something may. It is looked at again after each control command and reload. Only on FUSE
 * over io_uring: the classic transport's receive threads do 0.88 times the loop device's I/O
 * at 12 that they do at 256, whose limit stays.
 *
 * The knob needs root and fusectl mounted (systemd mounts it at boot); without them the
 * limit stays at FUSE_INIT's, which is correct and only slower, and that is said once.
 *
 * Lock order: bg_lock, then the queue's lock or a stage's (queue_may_hold(),
 * chain_may_hold()). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse/background.h"
#include "daemon/fuse/bdi.h"

static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;

/* Write @n to the connection's max_background. bg_lock held. 0 or -errno, logged once
 * (a missing fusectl or a daemon not run by root at info level: the disk works). */
static int bg_write(struct pd *pd, unsigned int n)
{
	/* The connection's name is the kernel's dev_t of the mount: MAJOR << 20 | MINOR. */
	unsigned int conn = major(pd->mount_dev) << 20 | minor(pd->mount_dev);
	const char *call;
	char path[96];
	int ret;

	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/max_background", conn);
	ret = pd_sysfs_write_uint(path, n, &call);
	if (ret && !pd->bg_logged) {
		errno = -ret;
		log_msg(!strcmp(call, "open") ? LOG_LVL_INFO : LOG_LVL_WARN,
			"mount.max_background: %s %s: %m; the kernel keeps %u", call, path,
			pd->bg_now);
		pd->bg_logged = true;
	}
	return ret;
}

/* bg_lock held. */
static void bg_apply(struct pd *pd)
{
	unsigned int want;

	if (!pd->bg_max || !pd->mount_dev)
		return; /* before FUSE_INIT, or before the mount answers */
	if (pd->bg_conf)
		want = pd->bg_conf < pd->bg_max ? pd->bg_conf : pd->bg_max;
	else if (!pd->bg_ring || queue_may_hold(&pd->q) || chain_may_hold(&pd->chain))
		want = pd->bg_max;
	else
		want = PD_BACKGROUND_IDLE < pd->bg_max ? PD_BACKGROUND_IDLE : pd->bg_max;
	if (want != pd->bg_now && !bg_write(pd, want))
		pd->bg_now = want;
}

void pd_background_init(struct pd *pd, unsigned int max, bool ring)
{
	pthread_mutex_lock(&bg_lock);
	pd->bg_max = pd->bg_now = max;
	pd->bg_ring = ring;
	pthread_mutex_unlock(&bg_lock);
}

void pd_background_configure(struct pd *pd, uint32_t conf)
{
	pthread_mutex_lock(&bg_lock);
	if (conf > pd->bg_max && pd->bg_max)
		log_warn("mount.max_background = %u: the transport takes at most %u", conf,
			   pd->bg_max);
	pd->bg_conf = conf;
	bg_apply(pd);
	pthread_mutex_unlock(&bg_lock);
}

void pd_background_update(struct pd *pd)
{
	pthread_mutex_lock(&bg_lock);
	bg_apply(pd);
	pthread_mutex_unlock(&bg_lock);
}

unsigned int pd_background_now(struct pd *pd)
{
	unsigned int n;

	pthread_mutex_lock(&bg_lock);
	n = pd->bg_now;
	pthread_mutex_unlock(&bg_lock);
	return n;
}
