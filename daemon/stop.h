/* SPDX-License-Identifier: MIT */
/* Stopping the daemon (SIGTERM, SIGINT): drain, sync, unmount, free. */
#ifndef PLUGDISK_STOP_H
#define PLUGDISK_STOP_H

#include <signal.h>

struct pd;

/* Stop as a removed device does (doc/usage.md, "Signals"): new requests fail with EIO, what is
 * queued or in flight completes without the emulated limits (a second SIGTERM or SIGINT in
 * @sigs fails what has not started), then fdatasync, unmount, and everything is freed.
 * Main thread, with @sigs blocked. Returns the exit status: EXIT_OK, or EXIT_RUNTIME when
 * a sync failed. */
int pd_shutdown(struct pd *pd, const sigset_t *sigs);

#endif
