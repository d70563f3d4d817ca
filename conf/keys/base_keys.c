/* SPDX-License-Identifier: MIT */
/* The keys of the disk, the mount, the request queue and the controller. */
#include <stdlib.h>
#include <string.h>

#include "conf/keys/key.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define TiB (1ull << 40)
#define PATH_LEN 4095			/* PATH_MAX - 1 */
#define MAX_LATENCY_US 3600000000ull	/* one hour */

static const struct conf_key disk_keys[] = {
	CONF_KEY("disk.image", CONF_STRING, disk_image, 1, PATH_LEN, 0, CONF_RESTART,
		 "path of the backing image; created sparse if missing"),
	CONF_KEY("disk.size", CONF_SIZE, disk_size, 512, 1ull << 60, 512, CONF_RESTART,
		 "bytes (\"1G\", \"1.5GiB\", \"1P\"), multiple of 512"),
	CONF_KEY("disk.name", CONF_STRING, disk_name, 1, 64, 0, CONF_NAME_CHARS | CONF_RESTART,
		 "name shown in stats and logs: [A-Za-z0-9._-]"),
	CONF_KEY("disk.read_only", CONF_BOOL, disk_read_only, 0, 1, 0, CONF_RESTART,
		 "writes fail with EROFS; a file image is opened read-only and must exist"),
};

static void disk_defaults(struct pd_config *c)
{
	c->disk_image = strdup(CONF_DEFAULT_IMAGE);
	c->disk_size = CONF_DEFAULT_SIZE;
	c->disk_name = strdup(CONF_DEFAULT_NAME);
}

const struct conf_table conf_disk_table = CONF_TABLE(disk_keys, disk_defaults, NULL);

static const struct conf_key mount_keys[] = {
	CONF_KEY("mount.point", CONF_STRING, mount_point, 0, PATH_LEN, 0, CONF_RESTART,
		 "mountpoint; \"\" = given on the command line"),
	CONF_KEY("mount.options", CONF_STRING, mount_options, 0, PATH_LEN, 0, CONF_RESTART,
		 "extra FUSE -o options, comma separated"),
	CONF_KEY("mount.allow_other", CONF_BOOL, mount_allow_other, 0, 1, 0, CONF_RESTART,
		 "let other users access the mount (with default_permissions)"),
	CONF_KEY("mount.threads", CONF_U32, mount_threads, 1, CONF_MAX_THREADS, 0,
		 CONF_RESTART,
		 "threads that receive FUSE requests"),
	CONF_KEY("mount.read_ahead_kb", CONF_U32, mount_read_ahead_kb, 0, 65536, 0, 0,
		 "readahead of buffered reads of disk, KiB; 0 = the kernel's default (a reload "
		 "applies a new non-zero value to files opened after it)"),
	CONF_KEY("mount.max_background", CONF_U32, mount_max_background, 0, 65535, 0, 0,
		 "asynchronous FUSE requests the kernel sends before it holds more back; 0 = auto "
		 "(on io_uring 12 while nothing in plugdisk holds requests, else the transport's "
		 "most)"),
};

static void mount_defaults(struct pd_config *c)
{
	c->mount_point = strdup("");
	c->mount_options = strdup("");
	c->mount_allow_other = false;
	c->mount_threads = CONF_DEFAULT_THREADS;
	c->mount_read_ahead_kb = CONF_DEFAULT_READ_AHEAD_KB;
	c->mount_max_background = 0;
}

const struct conf_table conf_mount_table = CONF_TABLE(mount_keys, mount_defaults, NULL);

static const struct conf_key queue_keys[] = {
	CONF_KEY("queue.plug", CONF_BOOL, queue.plug, 0, 1, 0, 0,
		 "plug an idle queue when a bio arrives"),
	CONF_KEY("queue.unplug_threshold", CONF_U32, queue.unplug_threshold, 1, 65536, 0, 0,
		 "unplug when this many requests are queued"),
	CONF_KEY("queue.unplug_delay_us", CONF_U32, queue.unplug_delay_us, 1, 1000000, 0, 0,
		 "unplug at the latest this many microseconds after plugging"),
	CONF_KEY("queue.nomerges", CONF_U32, queue.nomerges, 0, 2, 0, 0,
		 "0 all merges, 1 only the last-merge hit, 2 no merging"),
	CONF_KEY("queue.max_request_size", CONF_SIZE, queue.max_request_size, 4 * KiB, 16 * MiB,
		 512, 0, "bytes, largest request after merging"),
	CONF_KEY("queue.nr_requests", CONF_U32, queue.nr_requests, 1, 65536, 0, 0,
		 "queued requests before submitters wait"),
};

static void queue_defaults(struct pd_config *c)
{
	queue_params_default(&c->queue);
}

static int queue_validate(struct conf_load *ld, const struct pd_config *c)
{
	(void)c;
	/* The unplug threshold could never be reached: the submitter waits at nr_requests */
	return conf_check_not_above(ld, "queue.unplug_threshold", "queue.nr_requests");
}

const struct conf_table conf_queue_table = CONF_TABLE(queue_keys, queue_defaults, queue_validate);

static const struct conf_key ctrl_keys[] = {
	CONF_KEY("controller.queue_depth", CONF_U32, ctrl.queue_depth, 1, 4096, 0, 0,
		 "command slots (commands in flight)"),
	CONF_KEY("controller.workers", CONF_U32, ctrl.workers, 1, 256, 0, CONF_RESTART,
		 "backend I/O threads"),
	CONF_KEY("controller.bandwidth", CONF_SIZE, ctrl.bandwidth, 512, TiB, 0, CONF_ZERO_OK | CONF_PER_SEC,
		 "bytes/s for reads and writes together, 0 = unlimited"),
	CONF_KEY("controller.read_bandwidth", CONF_SIZE, ctrl.read_bandwidth, 512, TiB, 0,
		 CONF_ZERO_OK | CONF_PER_SEC, "bytes/s for reads, 0 = unlimited"),
	CONF_KEY("controller.write_bandwidth", CONF_SIZE, ctrl.write_bandwidth, 512, TiB, 0,
		 CONF_ZERO_OK | CONF_PER_SEC, "bytes/s for writes, 0 = unlimited"),
	CONF_KEY("controller.iops", CONF_U64, ctrl.iops, 0, 10000000, 0, 0,
		 "commands/s of every kind, 0 = unlimited"),
	CONF_KEY("controller.read_iops", CONF_U64, ctrl.read_iops, 0, 10000000, 0, 0,
		 "read commands/s, 0 = unlimited"),
	CONF_KEY("controller.write_iops", CONF_U64, ctrl.write_iops, 0, 10000000, 0, 0,
		 "write, flush and discard commands/s, 0 = unlimited"),
	CONF_KEY("controller.burst_ms", CONF_U32, ctrl.burst_ms, 0, 10000, 0, 0,
		 "each bucket holds rate x burst_ms of budget"),
	CONF_KEY("controller.latency_us", CONF_U64, ctrl.latency_us, 0, MAX_LATENCY_US, 0, 0,
		 "service time of every command, microseconds"),
	CONF_KEY("controller.read_latency_us", CONF_U64, ctrl.read_latency_us, 0, MAX_LATENCY_US,
		 0, 0, "service time of a read, 0 = latency_us"),
	CONF_KEY("controller.write_latency_us", CONF_U64, ctrl.write_latency_us, 0,
		 MAX_LATENCY_US, 0, 0, "service time of a write, 0 = latency_us"),
	CONF_KEY("controller.flush_latency_us", CONF_U64, ctrl.flush_latency_us, 0,
		 MAX_LATENCY_US, 0, 0, "service time of a flush, 0 = latency_us"),
};

static void ctrl_defaults(struct pd_config *c)
{
	ctrl_params_default(&c->ctrl);
}

const struct conf_table conf_ctrl_table = CONF_TABLE(ctrl_keys, ctrl_defaults, NULL);
