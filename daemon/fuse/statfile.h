/* SPDX-License-Identifier: MIT */
/* MOUNTPOINT/stats and MOUNTPOINT/stat: a snapshot of the queue taken at open, served from
 * memory, so that reading them never waits behind data I/O. */
#ifndef PLUGDISK_STATFILE_H
#define PLUGDISK_STATFILE_H

#include <fuse_lowlevel.h>

struct pd;

/* Open, read, write (stats only: "reset") and release. Each replies. */
void statfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void statfile_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void statfile_write(fuse_req_t req, struct fuse_bufvec *bufv);
void statfile_release(fuse_req_t req, struct fuse_file_info *fi);

/* Free the snapshots of opens whose release never came. At the stop, once no FUSE thread
 * runs. */
void statfile_free_all(void);

/* One snapshot of MOUNTPOINT/stats, as text (malloc'd), or NULL when out of memory. Any
 * thread. */
char *pd_stats_text(struct pd *pd);

#endif
