/* SPDX-License-Identifier: MIT */
/* Loading and validation of the plugdisk configuration (libconfig file plus --set overrides).
 *
 * How to add a key. Every key belongs to a table that its module owns (conf/keys/key.h):
 *   1. Its value: a member of struct pd_config below. A module with several keys adds one
 *      member, its own params struct (as queue and ctrl are), declared in its own header.
 *   2. Its table, in a file of its own, e.g. conf/keys/cache_keys.c:
 *        static const struct conf_key cache_keys[] = {
 *            CONF_KEY("cache.size", CONF_SIZE, cache.size, 4096, 1ull << 40, 4096, CONF_ZERO_OK,
 *                     "bytes of page cache in front of the image, 0 = none"),
 *        };
 *        static void cache_defaults(struct pd_config *c) { c->cache.size = 0; }
 *        const struct conf_table conf_cache_table = CONF_TABLE(cache_keys, cache_defaults, NULL);
 *      A key is "group.name" (a new group appears in the file as `cache = { ... };`) or a
 *      bare "name" for a top-level setting (`faults = ( ... );`). Types: CONF_BOOL, CONF_U32,
 *      CONF_U64, CONF_SIZE, CONF_STRING and CONF_ENUM (CONF_ENUM_KEY: one word of a list,
 *      e.g. mount.io_uring = "auto" | "on" | "off") are loaded, range-checked, settable with
 *      --set and printed by the loader. CONF_CUSTOM_KEY gives a key its own parser (struct
 *      conf_custom): parse a string (an NBD URI), load a libconfig list or group (faults),
 *      print, release. With CONF_FIRST a key is applied before all others and its parser
 *      may preset other keys with conf_preset() (profile = "hdd"), so what the user sets
 *      wins. Rules across keys go in the table's validate hook (conf_reject,
 *      conf_check_not_above). A group may be spread over several tables.
 *   3. One line in conf/keys/tables.c: `&conf_cache_table,` (and its extern).
 *   4. Its help line, range and CONF_RESTART (a reload does not apply it) are its reference:
      `make doc` copies them into man/plugdisk.conf.5 (tests/shell/doc-keys.sh checks it).
      Add the key, at its default, to conf/plugdisk.conf with the why and the how; the
      same test checks that it is there.
 * Messages then name the file and line or the option, and the key, with no more code; a
 * wrong value exits with status 2. config.c itself does not change. */
#ifndef PLUGDISK_CONFIG_H
#define PLUGDISK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf/faults.h"
#include "core/cache/cache.h"
#include "core/crc/crc.h"
#include "core/queue/params.h"
#include "core/ctrl/ctrl_params.h"
#include "core/backend/backend.h"

/* mount.io_uring: the FUSE transport (daemon/fuse/fuse_uring.c). */
enum conf_io_uring {
	CONF_IO_URING_AUTO,	/* io_uring when the kernel offers it, else /dev/fuse */
	CONF_IO_URING_ON,	/* io_uring or fail the start */
	CONF_IO_URING_OFF,	/* /dev/fuse only */
};
#define CONF_DEFAULT_IO_URING_DEPTH 64

struct conf_io_uring_params {
	uint32_t mode;		/* mount.io_uring: enum conf_io_uring */
	uint32_t depth;		/* mount.io_uring_depth: ring entries per queue */
};

struct pd_config {
	char *disk_image;	/* disk.image: path of the backing image */
	uint64_t disk_size;	/* disk.size: bytes, multiple of 512 */
	bool disk_size_given;	/* disk.size came from the file or --set, not the default */
	char *disk_name;	/* disk.name: shown in stats and logs */
	bool disk_read_only;	/* disk.read_only: writes fail with EROFS, the image is not written */
	char *mount_point;	/* mount.point: "" = none (CLI gives it) */
	char *mount_options;	/* mount.options: extra FUSE -o options */
	char *stats_listen;	/* stats.listen: ADDRESS:PORT of /metrics, "" = none */
	bool mount_allow_other;	/* mount.allow_other */
	uint32_t mount_threads;	/* mount.threads: FUSE receive threads */
	uint32_t mount_read_ahead_kb;	/* mount.read_ahead_kb: readahead, 0 = the kernel's */
	uint32_t mount_max_background;	/* mount.max_background: 0 = auto (fuse/background.c) */
	struct conf_io_uring_params io_uring;	/* mount.io_uring*: conf/keys/uring_keys.c */
	char *profile;		/* profile: the device profile applied, "" = none */
	struct queue_params queue;
	struct ctrl_params ctrl;
	struct backend_params backend;	/* controller.connections, backend.timeout_ms (NBD) */
	struct conf_faults faults;	/* faults: the faults a run starts with (conf/faults.h) */
	struct cache_params cache;
	bool cache_keep_opens;	/* cache.keep_opens: opens of disk outlive power cuts (no
				 * fence, daemon/fuse/disk_open.c) */
	struct crc_params crc;	/* crc.*: the crc stage (core/crc/crc.h) */
	char *stages_order;	/* stages.order: the stages from the top down (core/stage/chain.h) */
};

#define CONF_DEFAULT_IMAGE	"plugdisk.img"
#define CONF_DEFAULT_SIZE	(1024ull * 1024 * 1024)
#define CONF_DEFAULT_NAME	"plugdisk"
#define CONF_DEFAULT_THREADS	2
/* One largest FUSE request (PD_MAX_WRITE): a sequential reader's readahead goes out whole. */
#define CONF_DEFAULT_READ_AHEAD_KB	1024
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

/* One setting from the command line, as the user typed it. */
struct conf_arg {
	const char *opt;	/* "--set", "-s", "--size": messages say "OPT ARG: KEY: reason" */
	const char *key;	/* the key the option sets; NULL for --set (ARG is KEY=VALUE) */
	const char *arg;	/* the option's argument */
};

/* conf_load, with settings that name the option they came from:
 *   "-s 1000: disk.size: must be a multiple of 512 (got 1000)" */
int conf_load_args(const char *file, const struct conf_arg *args, size_t nargs,
		   struct pd_config *out, char *err, size_t errlen);

/* Parse a size, "4096", "4K", "1.5GiB", "1GB" (core/util/units.h) into bytes. 0 or -EINVAL/-ERANGE. */
int conf_parse_size(const char *s, uint64_t *out);

struct sockaddr_storage;
/* Parse stats.listen's "ADDRESS:PORT" ("127.0.0.1:9469", "[::1]:9469") into @ss and @len.
 * 0 or -1. */
int conf_parse_listen(const char *s, struct sockaddr_storage *ss, unsigned int *len);

/* Refuse @file for a daemon running as @euid if it cannot be read or is unsafe: it must open,
 * be a regular file and, for euid 0, be neither writable by group or others nor owned by a
 * user other than root. conf_load calls it with geteuid() on the file and on every file it
 * @includes. 0, -EPERM, -EINVAL (not a regular file) or -errno (open, fstat). */
int conf_check_file_safe(const char *file, uid_t euid, char *err, size_t errlen);

/* Refuse the files @file pulls in with @include that conf_check_file_safe() refuses, and
 * theirs: checked before libconfig opens them. 0 or its error, @err naming the including file
 * and line. conf_load calls it on the file before reading it. */
int conf_check_includes(const char *file, uid_t euid, char *err, size_t errlen);

/* Print every key, one a line: "NAME TYPE [WORD...]", TYPE one of bool, integer, size,
 * string, enum, with the words a bool or an enum takes (--list-keys, shell completion). */
void conf_list_keys(void *FILE_stream);

/* Print the key reference, every key with its type, default, range or words, whether a
 * reload applies it, and its help, in @format: "man" (the GENERATED KEYS blocks of
 * plugdisk.conf(5), one per section), "md" (a Markdown table) or "conf" (libconfig lines
 * as in conf/plugdisk.conf). 0, or -EINVAL for another format (--doc-keys). */
int conf_doc_keys(const char *format, void *FILE_stream);

/* How many keys a reload leaves for the next start (CONF_RESTART in their table) differ
 * between @old and @new; their names, comma separated, in @buf (@len). */
size_t conf_restart_changed(const struct pd_config *old, const struct pd_config *new,
			    char *buf, size_t len);

/* Print every key with its current value in libconfig syntax (for --dump-config / docs). */
void conf_print(const struct pd_config *c, void *FILE_stream);

#endif
