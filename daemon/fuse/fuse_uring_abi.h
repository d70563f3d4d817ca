/* SPDX-License-Identifier: MIT */
/* The kernel's FUSE-over-io_uring ABI, as far as plugdisk uses it.
 *
 * Written from the kernel's documented interface: include/uapi/linux/fuse.h (protocol 7.42,
 * Linux 6.14 and later) and Documentation/filesystems/fuse-io-uring.rst. Debian 12's kernel
 * headers (protocol 7.38) predate it, so the definitions live here; every name carries a
 * PD_ prefix so that a newer <linux/fuse.h> cannot clash with them.
 *
 * The protocol in short: the server registers ring entries on /dev/fuse with
 * IORING_OP_URING_CMD SQEs (128-byte SQEs: the command below sits in the SQE's 80-byte
 * command area), one set per possible CPU ("queue"); each entry is a header buffer and a
 * payload buffer. A request fills an entry: struct fuse_in_header in in_out, the opcode's
 * fixed argument in op_in, the remaining arguments in the payload (payload_sz bytes) and the
 * request's unique in commit_id; its CQE completes the entry's last command. The server
 * answers by writing struct fuse_out_header into in_out and the reply's arguments into the
 * payload (payload_sz), then submits COMMIT_AND_FETCH with that commit_id, which also hands
 * the entry back for the next request. FUSE_INIT, interrupts, forgets and notifications stay
 * on /dev/fuse. The kernel offers the transport with FUSE_OVER_IO_URING in FUSE_INIT's flags2
 * when /sys/module/fuse/parameters/enable_uring is set; the server accepts it in its reply. */
#ifndef PLUGDISK_FUSE_URING_ABI_H
#define PLUGDISK_FUSE_URING_ABI_H

#include <stdint.h>

/* FUSE_INIT flag (bit 41 of the 64-bit flags: bit 9 of flags2). */
#define PD_FUSE_OVER_IO_URING (1ull << 41)

/* Sizes of the two leading areas of the entry header. */
#define PD_FUSE_URING_IN_OUT_HEADER_SZ 128
#define PD_FUSE_URING_OP_IN_OUT_SZ 128

/* The ring entry's own fields, last in the header. */
struct pd_fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;	/* the request's unique, to quote when committing */
	uint32_t payload_sz;	/* bytes used in the payload buffer, either way */
	uint32_t padding;
	uint64_t reserved;
};

/* The header buffer of an entry (iov[0] of the registration). */
struct pd_fuse_uring_req_header {
	char in_out[PD_FUSE_URING_IN_OUT_HEADER_SZ];	/* fuse_in_header / fuse_out_header */
	char op_in[PD_FUSE_URING_OP_IN_OUT_SZ];		/* the opcode's fixed argument */
	struct pd_fuse_uring_ent_in_out ring_ent_in_out;
};

/* sqe->cmd_op of the IORING_OP_URING_CMD. */
enum {
	PD_FUSE_IO_URING_CMD_REGISTER = 1,		/* sqe->addr: iovec[2], sqe->len: 2 */
	PD_FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
};

/* The command in the SQE's 80-byte command area (IORING_SETUP_SQE128). */
struct pd_fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;	/* COMMIT_AND_FETCH: the unique answered; REGISTER: 0 */
	uint16_t qid;		/* the queue (CPU) the entry belongs to */
	uint8_t padding[6];
};

_Static_assert(sizeof(struct pd_fuse_uring_ent_in_out) == 32, "ring_ent_in_out is 32 bytes");
_Static_assert(sizeof(struct pd_fuse_uring_req_header) == 288, "req_header is 288 bytes");
_Static_assert(sizeof(struct pd_fuse_uring_cmd_req) == 24, "cmd_req is 24 bytes");

#endif
