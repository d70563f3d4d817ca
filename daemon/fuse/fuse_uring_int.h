/* SPDX-License-Identifier: MIT */
/* FUSE over io_uring, inside: the rings, their entries and the transport's state, shared by
 * the lifecycle (fuse_uring.c: setup, start, stop, stats) and the data path
 * (fuse_uring_ring.c: the session's read and writev, commits; fuse_uring_thread.c: the ring
 * threads). */
#ifndef PLUGDISK_FUSE_URING_INT_H
#define PLUGDISK_FUSE_URING_INT_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "daemon/fuse/fuse_uring_abi.h"

struct pd;
struct pd_io;
struct fuse_session;



/* Room in front of an entry's payload for the request's header and fixed argument, so that
 * libfuse sees one contiguous request; a page keeps the payload page-aligned. */
#define RING_ROOM 4096u
/* The ring thread submits its commits when it is about to wait, or once this many wait. */
#define RING_COMMIT_BATCH 16u
/* user_data of the eventfd read (entries are pointers, never this small). */
#define EVFD_TAG 1u

enum ring_state {
	RS_WAIT_INIT,		/* rings set up, FUSE_INIT not answered yet */
	RS_REGISTERING,		/* FUSE_OVER_IO_URING accepted: the threads register entries */
	RS_RUNNING,		/* every queue registered */
	RS_CLASSIC,		/* the kernel did not offer it: /dev/fuse only */
	RS_FAILED,		/* registering failed: the kernel fell back to /dev/fuse */
};

struct ring_queue;

struct ring_ent {
	struct ring_queue *q;
	unsigned int idx;				/* into u->held */
	struct pd_fuse_uring_req_header *hdr;		/* iov[0] */
	char *buf;					/* RING_ROOM, then the payload (iov[1]) */
	struct iovec iov[2];
	/* The entry's last command, to submit again after -EAGAIN: written by whoever
	 * submits it, before the submission, read by the ring thread after the CQE. */
	unsigned int last_cmd;
	uint64_t last_commit_id;
	struct ring_ent *next_reply;	/* on q->replies */
	/* A disk read or write taken straight from the entry (pd_disk_ring_rw()): its bio,
	 * allocated with the entry. Owned by the request until its reply is committed. */
	struct pd_io *io;
};

struct ring_queue {
	struct pd_uring *u;
	unsigned int qid;
	struct io_uring ring;		/* CQ: this queue's thread only; SQ: sq_lock */
	pthread_mutex_t sq_lock;
	/* Entries whose reply waits to be committed by the ring thread: a LIFO that any thread
	 * pushes on with a compare-and-swap (release) and the ring thread takes whole with an
	 * exchange (acquire), which pairs with it. */
	struct ring_ent *replies;
	int evfd;			/* written when replies were pushed, or to stop */
	uint64_t evbuf;			/* the eventfd read's buffer: ring thread */
	/* Requests received: written by the queue's thread only (no atomic add on a line
	 * both threads would share), read without a lock; a reset moves the base. */
	uint64_t requests;
	uint64_t requests_base;
	/* The thread's scheduling policy under load (ring_policy()): ring thread only. */
	unsigned int per_wake16;	/* requests per wake-up, running average, x16 */
	uint64_t requests_seen;		/* requests when the thread last waited */
	bool batch_policy;		/* the thread runs under SCHED_BATCH */
	bool policy_failed;		/* sched_setscheduler failed once: left alone since */
	bool ring_ok;			/* io_uring_queue_init succeeded (setup, then read-only) */
	bool thread_ok;			/* the thread was started (setup, then read-only) */
	pthread_t thread;
	struct ring_ent *ent;		/* [u->depth] */
};

struct pd_uring {
	struct pd *pd;
	struct fuse_session *se;
	int fd;				/* /dev/fuse */
	unsigned int nr_queues, depth;	/* read-only after setup */
	size_t payload_size;		/* bytes per entry's payload, read-only after setup */
	struct ring_queue *queues;
	void *mem;			/* every entry's buffers, one mapping */
	size_t mem_size;
	/* The unique of the request each entry holds, 0 when none: set by the ring thread
	 * before it hands the request to libfuse (release), claimed by the reply with a
	 * compare-and-swap to 0 (acquire), which pairs with it. */
	uint64_t *held;

	uint64_t init_unique;		/* atomic: FUSE_INIT's unique, 0 until read */
	int kernel_offers;		/* atomic: FUSE_INIT offered FUSE_OVER_IO_URING */

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* lock: state changed, or stop */
	enum ring_state state;		/* lock */
	unsigned int registered;	/* lock: queues with their entries registered */
	int error;			/* lock: first registration error (-errno) */
	bool stop;			/* lock */
	/* atomic: the ring threads stop (set before they are woken) and, once set and the
	 * threads joined, replies are committed by the thread that sends them. */
	int stopping;
	bool logged;			/* setup already logged why io_uring is not used */

	uint64_t commit_waits;		/* atomic: replies that had to wake their ring thread */
};

/* The data path (fuse_uring_ring.c). */

/* The session's custom I/O (fuse_session_custom_io()): every request read from /dev/fuse and
 * every reply libfuse writes, which goes to the ring entry its unique names, or to /dev/fuse. */
ssize_t ring_read(int fd, void *buf, size_t len, void *userdata);
ssize_t ring_writev(int fd, struct iovec *iov, int count, void *userdata);

/* Commit every reply pushed on @q->replies, with one submission. */
void ring_commit_replies(struct ring_queue *q);

/* Make the calling thread @q's ring thread: its own replies are then filled in, for its next
 * wait to submit. */
void ring_bind_thread(struct ring_queue *q);

/* Fill and submit one command for @e (sq_lock taken). 0 or -errno. */
int ring_submit(struct ring_ent *e, unsigned int cmd, uint64_t commit_id);

/* Submit what was filled in @q's SQ. sq_lock held. 0 or -errno (logged). */
int ring_flush(struct ring_queue *q);

/* Put the reply @iov into @e and commit it. Returns the bytes written, or -1 with errno. */
ssize_t ring_reply(struct pd_uring *u, struct ring_ent *e, const struct iovec *iov, int count);

/* Move the setup from RS_WAIT_INIT or RS_REGISTERING to @st, noting @error; wake waiters. */
void ring_set_state(struct pd_uring *u, enum ring_state st, int error);

/* The ring threads (fuse_uring_thread.c). */

/* A queue's thread: waits for FUSE_INIT, registers the queue's entries, then serves them. */
void *ring_thread(void *arg);

#endif
