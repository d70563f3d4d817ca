/* SPDX-License-Identifier: MIT */
/* Opens of MOUNTPOINT/disk and the power fence: an open made before a power cut fails every
 * request with EIO from the cut on, for good, as a host's page cache and filesystems do not
 * outlive a real power loss (unless cache.keep_opens). */
#ifndef PLUGDISK_DISK_OPEN_H
#define PLUGDISK_DISK_OPEN_H

#include <stdbool.h>
#include <stdint.h>

struct pd;

/* Register an open of disk, answered with FOPEN_DIRECT_IO when @direct; its file handle in
 * *@fh. 0 or -ENOMEM. Any receive thread. */
int pd_disk_open_new(struct pd *pd, bool direct, uint64_t *fh);

/* Forget the open @fh (FUSE release: no request of it comes after). */
void pd_disk_open_release(uint64_t fh);

/* Whether the open @fh was answered with FOPEN_DIRECT_IO. */
bool pd_disk_open_is_direct(uint64_t fh);

/* 0 when a request of the open @fh may go on; -EIO when a power cut came since the open was
 * made (counted in disk_requests_fenced). No lock: any thread, on every request. */
int pd_disk_open_check(struct pd *pd, uint64_t fh);

/* At poweron: count the opens still registered that a cut fenced and no poweron counted
 * yet (disk_opens_fenced), log them, and return how many. 0 with cache.keep_opens. */
uint64_t pd_disk_open_fence(struct pd *pd);

/* Free every open still registered: at exit, with no receive thread left (releases of files
 * closed just before the unmount may never have come). */
void pd_disk_open_free_all(void);

/* The counters for MOUNTPOINT/stats, and their reset. */
void pd_disk_open_stats(uint64_t *opens_fenced, uint64_t *requests_fenced);
void pd_disk_open_stats_reset(void);

#endif
