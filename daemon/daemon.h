/* SPDX-License-Identifier: MIT */
/* The daemon's shared state: configuration, the core objects and the FUSE session. */
#ifndef PLUGDISK_DAEMON_H
#define PLUGDISK_DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "conf/config.h"
#include "core/backend/backend.h"
#include "core/ctrl/ctrl.h"
#include "core/cache/cache.h"
#include "core/fault/fault.h"
#include "core/stage/chain.h"
#include "core/queue/queue.h"
#include "core/util/timer.h"
#include "daemon/exit.h"

/* Inode numbers of the mount's fixed tree. */
enum { INO_ROOT = 1, INO_DISK, INO_STATS, INO_STAT, INO_CONTROL, INO_NR };

/* The errno of requests on the disk once the daemon is stopping, as a removed device's. */
#define PD_ESTOPPED EIO

struct fuse_session;
struct pd_parked;
struct pd_uring;

/* Large buffers kept for reuse (data_budget.c), each PD_RXBUF_SIZE bytes. */
#define PD_BIGBUF_FREE_MAX 16

struct pd {
	struct pd_config cfg;		/* settings in force; main thread only after start */
	const char *config_file;	/* -c, or NULL */
	struct conf_arg *args;		/* -i, -s, -o, --set: re-applied on reload */
	size_t nargs;
	const char *mountpoint;
	dev_t mount_dev;		/* the mount's device (names its bdi); set once it
					 * answers, then read-only */

	struct backend be;
	struct timer timer;
	struct ctrl ctrl;
	struct queue q;
	struct chain chain;		/* the stages below the controller, over be
					 * (core/stage/chain.h); built once before the mount */

	struct fuse_session *se;
	unsigned int nr_threads;	/* FUSE receive threads */
	struct pd_fuse_thread *threads;	/* nr_threads of them; read-only after start */
	int fuse_fd;			/* the session's /dev/fuse fd; read-only after start */
	int quit_pipe[2];		/* written once to stop the receive threads */
	unsigned int readers_waiting;	/* atomic: receive threads in (or entering) read */
	unsigned int readers_sleeping;	/* atomic: receive threads in epoll_wait */
	struct pd_uring *uring;		/* FUSE over io_uring (fuse_uring.c), or NULL */
	/* FUSE_INIT, seen by fuse_reply.c. Atomics: init_unique is stored (release) after
	 * init_offers, and dio_may_mmap once the INIT reply accepted the flag. */
	uint64_t init_unique;		/* atomic: FUSE_INIT's unique, 0 before it */
	uint64_t init_offers;		/* atomic: the kernel's FUSE_INIT flags (both words) */
	bool dio_may_mmap;		/* atomic: FUSE_DIRECT_IO_ALLOW_MMAP accepted */
	/* The kernel's background limit (daemon/fuse/background.c), under its bg_lock. */
	unsigned int bg_max;		/* bg_lock: FUSE_INIT's max_background, 0 before */
	unsigned int bg_now;		/* bg_lock: the limit in force */
	uint32_t bg_conf;		/* bg_lock: mount.max_background, 0 = auto */
	bool bg_ring;			/* bg_lock: on FUSE over io_uring (auto may lower it) */
	bool bg_logged;			/* bg_lock: a failed change was logged */

	/* Attributes of the files that users may change (chmod, chown, touch).
	 * Lock order: independent of the queue's locks; never held across I/O. */
	pthread_mutex_t attr_lock;
	mode_t mode[INO_NR];		/* attr_lock */
	uid_t uid[INO_NR];		/* attr_lock */
	gid_t gid[INO_NR];		/* attr_lock */
	struct timespec atime, mtime, ctime;	/* attr_lock: of disk */
	struct timespec start_time;	/* read-only after start */

	int stopping;			/* atomic: shutdown begun */

	/* Bytes of read and write buffers in flight, bounded by PD_DATA_BUDGET (fuse_ops.c).
	 * Taken on its own: never held with another lock. */
	pthread_mutex_t data_lock;
	pthread_cond_t data_cond;	/* data_lock: buffers were freed */
	size_t data_in_flight;		/* data_lock */
	unsigned int data_waiters;	/* data_lock: receive threads waiting for the budget */
	struct pd_parked *parked;	/* data_lock: requests parked by the last free thread */
	struct pd_parked **parked_tail;	/* data_lock: the last one's next, while any is parked */
	unsigned int nr_parked;		/* data_lock: requests parked now */
	unsigned int parked_peak;	/* data_lock: most requests parked at once */
	uint64_t stats_parked;		/* data_lock: requests ever parked */
	int kick_fd;			/* eventfd: budget freed while requests are parked */
	/* Large data buffers done with, kept for the next large read or receive thread
	 * instead of going back to malloc. */
	void *bigbuf_free[PD_BIGBUF_FREE_MAX];	/* data_lock */
	unsigned int bigbuf_nr_free;		/* data_lock */
	bool bigbuf_used;			/* data_lock: one taken or kept since the last trim */
};

/* A FUSE receive thread (daemon/fuse/fuse_loop.c). */
struct pd_fuse_thread {
	pthread_t tid;
	struct pd *pd;
	int epoll_fd;			/* its own: /dev/fuse, kick_fd and the quit pipe */
};

/* The FUSE operations (daemon/fuse/fuse_ops.c); the receive threads (daemon/fuse/fuse_loop.c). */
extern const struct fuse_lowlevel_ops pd_fuse_ops;

/* Run the FUSE receive loop in @pd->nr_threads threads. 0 or -errno. */
int pd_fuse_start(struct pd *pd);

/* Stop and join the receive threads (after the session was told to exit). */
void pd_fuse_join(struct pd *pd);

/* Give back the large buffers kept for reuse: all of them when @idle_only is false (at exit,
 * with nothing in flight), else only when none was used since the last call (the main
 * thread's periodic tick). */
void pd_fuse_trim_buffers(struct pd *pd, bool idle_only);

/* `plugdisk top` (daemon/client/top.c). Returns an exit status. */
int pd_top_main(int argc, char **argv);

/* `plugdisk ctl` (daemon/client/ctl_client.c). Returns an exit status. */
int pd_ctl_main(int argc, char **argv);

/* `plugdisk stats` (daemon/client/stats_client.c). Returns an exit status. */
int pd_stats_main(int argc, char **argv);

/* `plugdisk replay` (daemon/client/replay.c). Returns an exit status. */
int pd_replay_main(int argc, char **argv);

/* `plugdisk explore` (daemon/explore/explore.c). Returns an exit status. */
int pd_explore_main(int argc, char **argv);

#endif
