/* SPDX-License-Identifier: MIT */
/* Loading and validation of the plugdisk configuration (libconfig file plus --set overrides). */
#ifndef PLUGDISK_CONFIG_H
#define PLUGDISK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf/faults.h"
#include "core/params.h"

struct pd_config {
	char *disk_image;	/* disk.image: path of the backing image */
	uint64_t disk_size;	/* disk.size: bytes, multiple of 512 */
	bool disk_size_given;	/* disk.size came from the file or --set, not the default */
	char *disk_name;	/* disk.name: shown in stats and logs */
	char *mount_point;	/* mount.point: "" = none (CLI gives it) */
	char *mount_options;	/* mount.options: extra FUSE -o options */
	bool mount_allow_other;	/* mount.allow_other */
	uint32_t mount_threads;	/* mount.threads: FUSE receive threads */
	struct queue_params queue;
	struct ctrl_params ctrl;
	struct conf_faults faults;	/* faults: the faults a run starts with (conf/faults.h) */
};

#define CONF_DEFAULT_IMAGE	"plugdisk.img"
#define CONF_DEFAULT_SIZE	(1024ull * 1024 * 1024)
#define CONF_DEFAULT_NAME	"plugdisk"
#define CONF_DEFAULT_THREADS	2
#define CONF_MAX_THREADS	64

/* Fill @c with the built-in defaults. Strings are heap copies owned by @c. */
void conf_defaults(struct pd_config *c);

/* Release the strings held by @c. */
void conf_free(struct pd_config *c);

/* Load @file (may be NULL: defaults only), then apply each "KEY=VALUE" of @sets in order,
 * then validate the whole. On success overwrite @out (without freeing what it held) and
 * return 0. On error return -EINVAL (bad syntax, key, type or value), -EPERM (a root daemon
 * and a file others can write), -ENOMEM, or -errno for an unreadable file; leave @out
 * untouched and write into @err a one-line message that names the file, the line and the
 * key, e.g.
 *   "plugdisk.conf:12: queue.nomerges: must be between 0 and 2 (got 5)"
 *   "--set controller.iops=abc: controller.iops: not a number"
 * Any error is a configuration error for the caller (exit status 2). */
int conf_load(const char *file, char *const *sets, size_t nsets, struct pd_config *out,
	      char *err, size_t errlen);

/* Parse "4096", "4K", "1M", "2G", "1T" (binary multiples) into bytes. 0 or -EINVAL/-ERANGE. */
int conf_parse_size(const char *s, uint64_t *out);

/* Refuse @file for a daemon running as @euid if it is unsafe: for euid 0, a file writable
 * by group or others, or owned by a user other than root. conf_load calls it with
 * geteuid() on the file and on every file it @includes. 0, -EPERM or -errno (stat). */
int conf_check_file_safe(const char *file, uid_t euid, char *err, size_t errlen);

/* Print every key with its current value in libconfig syntax (for --dump-config / docs). */
void conf_print(const struct pd_config *c, void *FILE_stream);

#endif
