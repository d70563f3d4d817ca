/* SPDX-License-Identifier: MIT */
/* The keys of the FUSE transport: mount.io_uring and mount.io_uring_depth (fuse_uring.c). */
#include "conf/keys/key.h"

static const char *const io_uring_modes[] = {
	[CONF_IO_URING_AUTO] = "auto",
	[CONF_IO_URING_ON] = "on",
	[CONF_IO_URING_OFF] = "off",
	NULL,
};

static const struct conf_key uring_keys[] = {
	CONF_ENUM_KEY_FLAGS("mount.io_uring", io_uring.mode, io_uring_modes, CONF_RESTART,
			    "FUSE over io_uring: auto (when the kernel offers it), on (or fail), off"),
	CONF_KEY("mount.io_uring_depth", CONF_U32, io_uring.depth, 1, 128, 0,
		 CONF_RESTART,
		 "io_uring entries per queue (one queue per CPU), each with 1 MiB of buffer"),
};

static void uring_defaults(struct pd_config *c)
{
	c->io_uring.mode = CONF_IO_URING_AUTO;
	c->io_uring.depth = CONF_DEFAULT_IO_URING_DEPTH;
}

const struct conf_table conf_uring_table = CONF_TABLE(uring_keys, uring_defaults, NULL);
