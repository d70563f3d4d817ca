// SPDX-License-Identifier: MIT
/* What libfuse 3.14 cannot put in a reply, added on the way to the kernel: the FUSE_INIT flag
 * FUSE_DIRECT_IO_ALLOW_MMAP and the open flag FOPEN_PARALLEL_DIRECT_WRITES.
 *
 * Why. The disk's O_DIRECT opens (a loop device with direct I/O, fio --direct=1, databases)
 * are opened with FOPEN_DIRECT_IO and FOPEN_PARALLEL_DIRECT_WRITES (fuse_ops.c): the kernel
 * then sends their I/O straight to the daemon, without the page-cache path's exclusive inode
 * lock, attribute update and page-cache invalidation on every write. FOPEN_DIRECT_IO alone
 * would make such a file impossible to mmap; FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6) keeps
 * mmap working, so an open only bypasses the page cache when the kernel accepted it.
 *
 * How. Both transports read /dev/fuse and write replies through the session's custom I/O
 * (fuse_session_custom_io(); fuse_uring.c's ring_read/ring_writev on FUSE over io_uring, the
 * plain pair below on the classic transport), which call pd_reply_note_read() and
 * pd_reply_patch(). libfuse builds a reply in the thread that answers, with its argument on
 * that thread's stack, and writes it before fuse_reply_*() returns: a thread-local flag set
 * just before fuse_reply_open() reaches exactly that reply. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "daemon/daemon.h"
#include "daemon/fuse/fuse_reply.h"

/* Open flags for this thread's next reply (pd_reply_open_flags()). */
static __thread uint32_t tls_open_flags;

void pd_reply_note_read(struct pd *pd, const void *buf, ssize_t n)
{
	const struct fuse_in_header *in = buf;
	const struct fuse_init_in *ii = (const void *)(in + 1);
	uint64_t flags;

	if (n < (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, flags2) + sizeof(ii->flags2)) ||
	    in->opcode != FUSE_INIT)
		return;
	flags = ii->flags;
	if (flags & FUSE_INIT_EXT)
		flags |= (uint64_t)ii->flags2 << 32;
	WRITE_ONCE(pd->init_offers, flags);
	/* Pairs with the acquire in pd_reply_patch(): the offer is seen with the unique. */
	smp_store_release(pd->init_unique, in->unique);
}

void pd_reply_open_flags(uint32_t flags)
{
	tls_open_flags = flags;
}

bool pd_reply_dio_may_mmap(struct pd *pd)
{
	return READ_ONCE(pd->dio_may_mmap);
}

static void patch_init(struct pd *pd, struct iovec *arg)
{
	struct fuse_init_out *io = arg->iov_base;

	if (arg->iov_len < offsetof(struct fuse_init_out, flags2) + sizeof(io->flags2) ||
	    !(READ_ONCE(pd->init_offers) & PD_FUSE_DIRECT_IO_ALLOW_MMAP))
		return;
	io->flags |= FUSE_INIT_EXT;
	io->flags2 |= (uint32_t)(PD_FUSE_DIRECT_IO_ALLOW_MMAP >> 32);
	/* Before the reply is written: no open can be answered before FUSE_INIT is. */
	WRITE_ONCE(pd->dio_may_mmap, true);
}

void pd_reply_patch(struct pd *pd, struct iovec *iov, int count)
{
	const struct fuse_out_header *out;
	uint32_t open_flags = tls_open_flags;

	tls_open_flags = 0;
	if (count != 2 || iov[0].iov_len < sizeof(*out))
		return;
	out = iov[0].iov_base;
	if (out->error)
		return;
	if (open_flags && iov[1].iov_len == sizeof(struct fuse_open_out)) {
		struct fuse_open_out *oo = iov[1].iov_base;

		oo->open_flags |= open_flags;
		return;
	}
	/* Pairs with the release in pd_reply_note_read(). */
	if (out->unique && out->unique == smp_load_acquire(pd->init_unique))
		patch_init(pd, &iov[1]);
}

/* ---- the classic transport's session I/O ---- */

static ssize_t classic_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);

	if (n > 0) {
		int saved = errno;

		pd_reply_note_read(userdata, buf, n);
		errno = saved;
	}
	return n;
}

static ssize_t classic_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	pd_reply_patch(userdata, iov, count);
	return writev(fd, iov, count);
}

int pd_reply_io_install(struct pd *pd)
{
	const struct fuse_custom_io io = { .read = classic_read, .writev = classic_writev };

	return fuse_session_custom_io(pd->se, &io, fuse_session_fd(pd->se));
}
