// SPDX-License-Identifier: MIT
/* Stopping the daemon: no fault outlives the stop, the queue drains without the emulated
 * limits, the write cache and the image are synced, and the mount goes (lazily, naming what
 * still holds the disk, when it is busy). */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "core/util/log.h"
#include "daemon/control/control.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/disk_open.h"
#include "daemon/fuse/fuse_uring.h"
#include "daemon/fuse/statfile.h"
#include "daemon/control/cache_ctl.h"
#include "daemon/stop.h"

/* Name whatever still holds MOUNTPOINT/disk open: loop devices and processes. */
static void log_disk_holders(const char *disk)
{
	glob_t g;
	char buf[PATH_MAX + 1];

	if (glob("/sys/block/loop*/loop/backing_file", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			FILE *f = fopen(g.gl_pathv[i], "re");

			if (!f)
				continue;
			if (fgets(buf, sizeof(buf), f)) {
				buf[strcspn(buf, "\n")] = '\0';
				if (!strcmp(buf, disk)) {
					char dev[64];

					sscanf(g.gl_pathv[i], "/sys/block/%63[^/]", dev);
					log_warn("%s is still held by loop device /dev/%s "
						 "(detach it with losetup -d first)",
						 disk, dev);
				}
			}
			fclose(f);
		}
		globfree(&g);
	}
	if (glob("/proc/[0-9]*/fd/*", GLOB_NOSORT, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			ssize_t n = readlink(g.gl_pathv[i], buf, sizeof(buf) - 1);
			int pid;

			if (n <= 0)
				continue;
			buf[n] = '\0';
			if (strcmp(buf, disk) || sscanf(g.gl_pathv[i], "/proc/%d/", &pid) != 1 ||
			    pid == getpid())
				continue;
			log_warn("%s is still open in process %d", disk, pid);
		}
		globfree(&g);
	}
}

/* Stop as a removed device does: new requests on the disk fail at once with PD_ESTOPPED,
 * and what is queued or in flight completes normally, with the emulated limits and service
 * latency lifted, so that the stop takes the backing I/O's own time. A second SIGTERM or
 * SIGINT fails the queued requests that have not started and ends the wait. */
static void pd_drain_for_stop(struct pd *pd, const sigset_t *sigs)
{
	struct ctrl_params cp = pd->cfg.ctrl;
	struct stats_snapshot *ss = malloc(sizeof(*ss));

	if (ss) {
		queue_snapshot(&pd->q, ss);
		log_info("stopping: new requests fail with EIO; completing %" PRIu64 " queued and %" PRIu64 " "
			 "in-flight requests without the emulated limits",
			 (uint64_t)ss->queued_requests, (uint64_t)ss->in_flight);
		free(ss);
	}
	/* The holds end first: a freeze still waiting then fails, rather than see the lifted
	 * limits complete what it waits for and report a frozen disk that the stop thaws. */
	queue_hold(&pd->q, false);
	queue_thaw(&pd->q);
	queue_plug_hold(&pd->q, false);
	ctrl_params_lift_limits(&cp);
	queue_reconfigure(&pd->q, &pd->cfg.queue, &cp);
	queue_unplug_idle(&pd->q);
	while (!queue_is_idle(&pd->q) || pd_data_nr_parked(pd)) {
		struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
		int sig = sigtimedwait(sigs, NULL, &ts);

		if (sig == SIGTERM || sig == SIGINT) {
			unsigned int n = queue_abort(&pd->q, -PD_ESTOPPED);

			log_warn("stopping at once (second %s): failed %u queued requests with EIO",
				 sig == SIGTERM ? "SIGTERM" : "SIGINT", n);
		}
	}
	queue_drain(&pd->q);
}

int pd_shutdown(struct pd *pd, const sigset_t *sigs)
{
	char disk[PATH_MAX + 8];
	int ret, status = EXIT_OK;
	bool busy = false;

	smp_store_mb(pd->stopping, 1);
	sd_notify(0, "STOPPING=1");
	/* A stalled request would hold the drain forever: no hold outlives the stop. */
	chain_stop(&pd->chain);
	pd_drain_for_stop(pd, sigs);
	ret = backend_sync(&pd->be);
	if (ret)
		status = EXIT_RUNTIME; /* backend_sync logged it */

	snprintf(disk, sizeof(disk), "%s/disk", pd->mountpoint);
	if (geteuid() == 0 && umount2(pd->mountpoint, 0) < 0 && errno == EBUSY) {
		log_disk_holders(disk);
		log_warn("%s is busy: detaching it lazily", pd->mountpoint);
		busy = true;
	}
	fuse_session_exit(pd->se);
	pd_fuse_join(pd);
	/* Whatever arrived while unmounting. */
	queue_drain(&pd->q);
	control_jobs_wait();
	pd_cache_ctl_stop();
	pd_fuse_trim_buffers(pd, false);
	/* The write cache goes to the image, then the image is synced. */
	if (chain_writeout(&pd->chain))
		status = EXIT_RUNTIME;
	/* Only now, with the cache written out and the image synced, is the claim true. */
	if (busy && status == EXIT_OK)
		log_warn("%s was busy when detached: every acknowledged write is in the image",
			 pd->mountpoint);
	fuse_session_unmount(pd->se);
	fuse_session_destroy(pd->se);
	pd->se = NULL;
	pd_uring_destroy(pd);
	/* Releases of files closed just before the unmount may never have come. */
	control_file_free_all();
	statfile_free_all();
	pd_disk_open_free_all();
	/* No timer callback may run into the queue or the workers while they go away. */
	timer_stop(&pd->timer);
	ctrl_destroy(&pd->ctrl);
	queue_destroy(&pd->q);
	chain_destroy(&pd->chain);
	timer_destroy(&pd->timer);
	backend_close(&pd->be);
	log_info("stopped");
	return status;
}
