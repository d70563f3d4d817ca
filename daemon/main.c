// SPDX-License-Identifier: MIT
/* plugdisk: command line, start-up, signals and clean shutdown.
 *
 * Start-up checks everything a user can get wrong before anything is mounted, and answers
 * each with a message and a distinct exit status (see daemon.h). Without -f the process
 * forks, and the parent returns only once the mount is live, with the child's status. */
#define FUSE_USE_VERSION 34

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "core/barrier.h"
#include "core/backend_nbd.h"
#include "core/log.h"
#include "conf/profile.h"
#include "daemon/cache_ctl.h"
#include "daemon/daemon.h"
#include "daemon/data.h"
#include "daemon/fuse_uring.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk [OPTIONS] MOUNTPOINT\n"
		"       plugdisk top MOUNTPOINT [INTERVAL] [--once|--batch]\n"
		"       plugdisk ctl MOUNTPOINT [COMMAND...]\n"
		"       plugdisk replay LOG [IMAGE] --list | --flush N | --crash N [...]\n"
		"\n"
		"Mount a virtual disk: MOUNTPOINT/disk is the disk, MOUNTPOINT/stats its queue.\n"
		"\n"
		"  -c, --config FILE      read settings from FILE (libconfig syntax)\n"
		"  -i, --image IMAGE      backing image (disk.image; created sparse if missing),\n"
		"                         or an NBD URI: nbd://HOST/EXPORT, nbd+unix:///?socket=PATH\n"
		"  -s, --size SIZE        disk size, with K/M/G/T suffixes (disk.size)\n"
		"  -f, --foreground       stay in the foreground and log to stderr\n"
		"  -o, --options OPTS     extra FUSE mount options (mount.options)\n"
		"      --set KEY=VALUE    set any configuration key; may be repeated\n"
		"      --profile NAME     emulate a named device (profile); keys you set win\n"
		"      --list-profiles    print the device profiles with their sources and exit\n"
		"      --dump-config      print the settings in force and exit\n"
		"  -h, --help             this text\n"
		"  -V, --version          the version\n"
		"\n"
		"Signals: SIGTERM/SIGINT drain, fdatasync, unmount and exit; SIGHUP reloads the\n"
		"config file and applies queue and controller settings live.\n"
		"Exit status: 0 ok, 1 runtime failure, 2 bad option or config, 3 image problem,\n"
		"4 mountpoint problem. See plugdisk(8) and plugdisk.conf(5).\n");
}

/* ---- status line for systemd ---- */

static void fmt_rate(char *buf, size_t len, uint64_t v)
{
	static const char *const unit[] = { "", "K", "M", "G", "T" };
	int u = 0;
	double d = (double)v;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	snprintf(buf, len, "%.4g%s", d, unit[u]);
}

static void notify_status(struct pd *pd, const char *prefix)
{
	struct stats_snapshot *ss;
	char size[16], bw[16], buf[512];

	if (!getenv("NOTIFY_SOCKET"))
		return;
	ss = malloc(sizeof(*ss));
	if (!ss)
		return;
	queue_snapshot(&pd->q, ss);
	fmt_rate(size, sizeof(size), pd->be.size);
	fmt_rate(bw, sizeof(bw), ss->cp.bandwidth);
	snprintf(buf, sizeof(buf),
		 "%sSTATUS=%sB disk at %s; bw %s/s, iops %" PRIu64 ", latency %" PRIu64
		 "us; in flight %" PRIu64 "/%u, queued %" PRIu64 ", %s",
		 prefix, size, pd->mountpoint, ss->cp.bandwidth ? bw : "unlimited", ss->cp.iops,
		 ss->cp.latency_us, ss->in_flight, ss->cp.queue_depth, ss->queued_requests,
		 ss->stopped ? (ss->stop_reason == STOP_SLOTS ? "stopped (slots)" : "stopped (budget)")
			     : ss->plugged ? "plugged" : "running");
	sd_notify(0, buf);
	free(ss);
}

/* ---- reload ---- */

static bool str_differs(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static bool faults_differ(const struct conf_faults *a, const struct conf_faults *b)
{
	if (a->n != b->n)
		return true;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->spec[i], b->spec[i]))
			return true;
	return false;
}

/* A changed `faults` list replaces the configured faults; those added through the control
 * file stay. An unchanged list keeps its faults, their counters and their draws. */
static void pd_reload_faults(struct pd *pd, struct pd_config *nc)
{
	struct conf_faults tmp;
	char err[512];

	if (!faults_differ(&nc->faults, &pd->cfg.faults))
		return;
	if (fault_replace_configured(&pd->faults, nc->faults.spec, nc->faults.n, err,
				     sizeof(err))) {
		log_err("reload: faults: %s; the configured faults stay", err);
		return;
	}
	tmp = pd->cfg.faults;
	pd->cfg.faults = nc->faults;
	nc->faults = tmp; /* freed with nc */
}

/* queue.max_request_size is capped by the largest command the backend takes. */
static void pd_cap_request_size(struct pd *pd, struct queue_params *qp)
{
	uint32_t max = pd->be.max_request;

	if (!max || qp->max_request_size <= max)
		return;
	log_info("queue.max_request_size: %" PRIu32 " bytes, the backend's maximum (not %" PRIu32
		 ")", max, qp->max_request_size);
	qp->max_request_size = max;
}

static void pd_reload(struct pd *pd)
{
	struct pd_config nc;
	char err[512];
	int ret;

	sd_notify(0, "RELOADING=1");
	ret = conf_load_args(pd->config_file, pd->args, pd->nargs, &nc, err, sizeof(err));
	if (ret) {
		log_err("reload refused, old settings stay: %s", err);
		notify_status(pd, "READY=1\n");
		return;
	}
	if (str_differs(nc.disk_image, pd->cfg.disk_image) ||
	    (nc.disk_size_given && nc.disk_size != pd->be.size) ||
	    str_differs(nc.disk_name, pd->cfg.disk_name) ||
	    str_differs(nc.mount_point, pd->cfg.mount_point) ||
	    str_differs(nc.mount_options, pd->cfg.mount_options) ||
	    nc.mount_allow_other != pd->cfg.mount_allow_other ||
	    nc.mount_threads != pd->cfg.mount_threads ||
	    nc.io_uring.mode != pd->cfg.io_uring.mode ||
	    nc.io_uring.depth != pd->cfg.io_uring.depth)
		log_warn("reload: disk.* and mount.* changes take effect at the next start");
	if (nc.ctrl.workers != pd->cfg.ctrl.workers)
		log_warn("reload: controller.workers changes take effect at the next start");
	if (nc.backend.connections != pd->cfg.backend.connections ||
	    nc.backend.timeout_ms != pd->cfg.backend.timeout_ms)
		log_warn("reload: controller.connections and backend.timeout_ms changes take "
			 "effect at the next start");
	pd_cap_request_size(pd, &nc.queue);
	nc.ctrl.disk_size = pd->be.size; /* per-GiB rates (burst credits) */
	queue_reconfigure(&pd->q, &nc.queue, &nc.ctrl);
	pd_reload_faults(pd, &nc);
	pd->cfg.queue = nc.queue;
	pd->cfg.ctrl = nc.ctrl;
	pd->cfg.ctrl.workers = pd->ctrl.nr_workers;
	pd_cache_reload(pd, &nc);
	conf_free(&nc);
	log_info("reloaded %s", pd->config_file ? pd->config_file : "(no config file)");
	notify_status(pd, "READY=1\n");
}

/* ---- shutdown ---- */

/* Name whatever still holds MOUNTPOINT/disk open: loop devices and processes. */
static void log_disk_holders(const char *disk)
{
	glob_t g;
	char buf[PATH_MAX + 1];

	if (glob("/sys/block/loop*/loop/backing_file", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			FILE *f = fopen(g.gl_pathv[i], "re");

			if (!f)
				continue;
			if (fgets(buf, sizeof(buf), f)) {
				buf[strcspn(buf, "\n")] = '\0';
				if (!strcmp(buf, disk)) {
					char dev[64];

					sscanf(g.gl_pathv[i], "/sys/block/%63[^/]", dev);
					log_warn("%s is still held by loop device /dev/%s "
						 "(detach it with losetup -d first)",
						 disk, dev);
				}
			}
			fclose(f);
		}
		globfree(&g);
	}
	if (glob("/proc/[0-9]*/fd/*", GLOB_NOSORT, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			ssize_t n = readlink(g.gl_pathv[i], buf, sizeof(buf) - 1);
			int pid;

			if (n <= 0)
				continue;
			buf[n] = '\0';
			if (strcmp(buf, disk) || sscanf(g.gl_pathv[i], "/proc/%d/", &pid) != 1 ||
			    pid == getpid())
				continue;
			log_warn("%s is still open in process %d", disk, pid);
		}
		globfree(&g);
	}
}

/* Stop as a removed device does: new requests on the disk fail at once with PD_ESTOPPED,
 * and what is queued or in flight completes normally, with the emulated limits and service
 * latency lifted, so that the stop takes the backing I/O's own time. A second SIGTERM or
 * SIGINT fails the queued requests that have not started and ends the wait. */
static void pd_drain_for_stop(struct pd *pd, const sigset_t *sigs)
{
	struct ctrl_params cp = pd->cfg.ctrl;
	struct stats_snapshot *ss = malloc(sizeof(*ss));

	if (ss) {
		queue_snapshot(&pd->q, ss);
		log_info("stopping: new requests fail with EIO; completing %" PRIu64 " queued and %" PRIu64 " "
			 "in-flight requests without the emulated limits",
			 (uint64_t)ss->queued_requests, (uint64_t)ss->in_flight);
		free(ss);
	}
	cp.bandwidth = cp.read_bandwidth = cp.write_bandwidth = 0;
	cp.iops = cp.read_iops = cp.write_iops = 0;
	cp.latency_us = cp.read_latency_us = cp.write_latency_us = cp.flush_latency_us = 0;
	queue_reconfigure(&pd->q, &pd->cfg.queue, &cp);
	queue_hold(&pd->q, false);
	queue_plug_hold(&pd->q, false);
	queue_unplug_idle(&pd->q);
	while (!queue_is_idle(&pd->q) || pd_data_nr_parked(pd)) {
		struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
		int sig = sigtimedwait(sigs, NULL, &ts);

		if (sig == SIGTERM || sig == SIGINT) {
			unsigned int n = queue_abort(&pd->q, -PD_ESTOPPED);

			log_warn("stopping at once (second %s): failed %u queued requests with EIO",
				 sig == SIGTERM ? "SIGTERM" : "SIGINT", n);
		}
	}
	queue_drain(&pd->q);
}

static int pd_shutdown(struct pd *pd, const sigset_t *sigs)
{
	char disk[PATH_MAX + 8];
	int ret, status = EXIT_OK;

	smp_store_mb(pd->stopping, 1);
	sd_notify(0, "STOPPING=1");
	/* A stalled request would hold the drain forever: no fault outlives the stop. */
	if (fault_nr_held(&pd->faults))
		log_info("stopping: releasing %u stalled requests", fault_nr_held(&pd->faults));
	fault_clear(&pd->faults);
	pd_drain_for_stop(pd, sigs);
	ret = backend_sync(&pd->be);
	if (ret)
		status = EXIT_RUNTIME; /* backend_sync logged it */

	snprintf(disk, sizeof(disk), "%s/disk", pd->mountpoint);
	if (geteuid() == 0 && umount2(pd->mountpoint, 0) < 0 && errno == EBUSY) {
		log_disk_holders(disk);
		log_warn("%s is busy: detaching it lazily; every acknowledged write is in the image",
			 pd->mountpoint);
	}
	fuse_session_exit(pd->se);
	pd_fuse_join(pd);
	/* Whatever arrived while unmounting. */
	queue_drain(&pd->q);
	pd_fuse_trim_buffers(pd, false);
	/* The write cache goes to the image before the last sync. */
	pd_cache_stop(pd);
	if (backend_sync(&pd->be))
		status = EXIT_RUNTIME;
	fuse_session_unmount(pd->se);
	fuse_session_destroy(pd->se);
	pd->se = NULL;
	pd_uring_destroy(pd);
	/* No timer callback may run into the queue or the workers while they go away. */
	timer_stop(&pd->timer);
	ctrl_destroy(&pd->ctrl);
	queue_destroy(&pd->q);
	fault_set_destroy(&pd->faults);
	timer_destroy(&pd->timer);
	backend_close(&pd->be);
	log_info("stopped");
	return status;
}

/* ---- start-up checks ---- */

/* Whether something is mounted at @path; if so and @type is given, its filesystem type
 * (mountinfo's field after " - ", e.g. "fuse.plugdisk"). */
static bool mount_at(const char *path, char *type, size_t typelen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mp[PATH_MAX];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - FSTYPE SOURCE OPTIONS
		 * (octal escapes for spaces are rare) */
		char *sep = strstr(line, " - ");

		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || strcmp(mp, path))
			continue;
		found = true;
		if (type && typelen) {
			char t[64] = "";

			if (sep)
				sscanf(sep, " - %63s", t);
			snprintf(type, typelen, "%s", t);
		}
	}
	fclose(f);
	return found;
}

/* The mountpoint of the filesystem mounted from /dev/@dev, into @mnt; false if none. */
static bool mounted_from(const char *dev, char *mnt, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192], want[80];
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), "/dev/%s", dev);
	while (!found && fgets(line, sizeof(line), f)) {
		char point[4096], src[256], *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(sep, " - %*s %255s", src) != 1 || strcmp(src, want))
			continue;
		snprintf(mnt, len, "%s", point);
		found = true;
	}
	fclose(f);
	return found;
}

/* A crash leaves what was stacked on the dead disk: loop devices on @disk and filesystems on
 * them. A loop device with nothing mounted on it is detached, which is safe: nothing can
 * reach its dead backing file. A mounted filesystem is the user's: it is named, with the
 * commands that release it, and left alone. */
static void release_dead_holders(const char *disk)
{
	glob_t g;
	char buf[PATH_MAX + 1];

	if (glob("/sys/block/loop*/loop/backing_file", 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "re");
		char dev[64], mnt[4096], path[80];
		size_t dl = strlen(disk);

		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f)) {
			fclose(f);
			continue;
		}
		fclose(f);
		buf[strcspn(buf, "\n")] = '\0';
		if (strncmp(buf, disk, dl) || (buf[dl] && strcmp(buf + dl, " (deleted)")) ||
		    sscanf(g.gl_pathv[i], "/sys/block/%63[^/]", dev) != 1)
			continue;
		if (mounted_from(dev, mnt, sizeof(mnt))) {
			fprintf(stderr,
				"plugdisk: %s: /dev/%s still holds the crashed disk, and %s is mounted "
				"on it; release them with: umount %s && losetup -d /dev/%s\n",
				disk, dev, mnt, mnt, dev);
			continue;
		}
		snprintf(path, sizeof(path), "/dev/%s", dev);
		{
			int fd = open(path, O_RDONLY | O_CLOEXEC);

			if (fd >= 0 && ioctl(fd, LOOP_CLR_FD, 0) == 0)
				fprintf(stderr, "plugdisk: %s: detached loop device %s of the crashed "
					"disk (nothing was mounted on it)\n", disk, path);
			else
				fprintf(stderr, "plugdisk: %s: %s still holds the crashed disk; detach it "
					"with: losetup -d %s (%s)\n", disk, path, path, strerror(errno));
			if (fd >= 0)
				close(fd);
		}
	}
	globfree(&g);
}

/* A plugdisk that crashed leaves its mount behind, answering ENOTCONN. Detach it, so that a
 * restart needs no manual step. Only a dead mount of our own filesystem type is touched. */
static void clear_dead_mount(const char *path)
{
	char type[64];

	if (!mount_at(path, type, sizeof(type)) || strcmp(type, "fuse.plugdisk"))
		return;
	{
		struct statvfs sv;

		if (statvfs(path, &sv) == 0 || errno != ENOTCONN)
			return; /* alive: a running plugdisk owns it */
	}
	{
		char disk[PATH_MAX + 8];

		snprintf(disk, sizeof(disk), "%s/disk", path);
		release_dead_holders(disk);
	}
	if (umount2(path, MNT_DETACH) == 0) {
		fprintf(stderr, "plugdisk: %s: detached the dead mount of a crashed plugdisk\n", path);
		return;
	}
	if (errno == EPERM) {
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd), "fusermount3 -u -z -- '%s' 2>/dev/null", path);
		if (!strchr(path, '\'') && system(cmd) == 0)
			fprintf(stderr, "plugdisk: %s: detached the dead mount of a crashed plugdisk\n",
				path);
	}
}

/* Whether directory @path has entries besides . and .. (false when it cannot be read). */
static bool dir_has_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	bool found = false;

	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		found = strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return found;
}

static int check_mountpoint(const char *arg, char **out)
{
	struct stat st;
	char *real;

	if (stat(arg, &st) < 0 && errno == ENOTCONN) {
		char abs[PATH_MAX], cwd[PATH_MAX];
		int n = -1;

		/* Without the working directory there is no absolute path to look up: leave
		 * the mount alone, and the stat below reports it. */
		if (arg[0] == '/')
			n = snprintf(abs, sizeof(abs), "%s", arg);
		else if (getcwd(cwd, sizeof(cwd)))
			n = snprintf(abs, sizeof(abs), "%s/%s", cwd, arg);
		if (n >= 0 && (size_t)n < sizeof(abs))
			clear_dead_mount(abs);
	}
	if (stat(arg, &st) < 0) {
		fprintf(stderr, "plugdisk: mountpoint %s: %s\n", arg, strerror(errno));
		return EXIT_MOUNT;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "plugdisk: mountpoint %s: not a directory\n", arg);
		return EXIT_MOUNT;
	}
	real = realpath(arg, NULL);
	if (!real) {
		fprintf(stderr, "plugdisk: realpath %s: %s\n", arg, strerror(errno));
		return EXIT_MOUNT;
	}
	if (mount_at(real, NULL, 0))
		clear_dead_mount(real);
	if (mount_at(real, NULL, 0)) {
		fprintf(stderr, "plugdisk: mountpoint %s: something is already mounted there\n", real);
		free(real);
		return EXIT_MOUNT;
	}
	/* As mount(8) allows, but says so: the files there are hidden until the unmount. */
	if (dir_has_entries(real))
		fprintf(stderr, "plugdisk: warning: mountpoint %s is not empty: its files are "
			"hidden while the disk is mounted\n", real);
	*out = real;
	return 0;
}

/* A new image must fit on its filesystem (sparse, but it must be possible to fill it). */
static int check_image_fits(const char *image, uint64_t size)
{
	struct statvfs sv;
	struct stat st;
	char *copy, *dir;
	int ret = 0;

	if (lstat(image, &st) == 0 || errno != ENOENT)
		return 0;
	copy = strdup(image);
	if (!copy)
		return EXIT_RUNTIME;
	dir = dirname(copy);
	if (statvfs(dir, &sv) < 0) {
		fprintf(stderr, "plugdisk: image %s: directory %s: %s\n", image, dir, strerror(errno));
		ret = EXIT_IMAGE;
	} else if ((uint64_t)sv.f_blocks * sv.f_frsize < size) {
		fprintf(stderr,
			"plugdisk: image %s: disk.size %" PRIu64 " bytes is larger than its "
			"filesystem (%" PRIu64 " bytes)\n",
			image, size, (uint64_t)sv.f_blocks * sv.f_frsize);
		ret = EXIT_IMAGE;
	}
	free(copy);
	return ret;
}

/* ---- mount ---- */

/* Take a mount that failed to come up down again: stop the receive threads, unmount and
 * free the session, before the caller closes the image under them. */
static void pd_mount_undo(struct pd *pd)
{
	smp_store_mb(pd->stopping, 1);
	fuse_session_exit(pd->se);
	pd_fuse_join(pd);
	queue_drain(&pd->q);
	fuse_session_unmount(pd->se);
	fuse_session_destroy(pd->se);
	pd->se = NULL;
	pd_uring_destroy(pd);
}

static int pd_mount(struct pd *pd)
{
	char opts[4096];
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *argv0 = "plugdisk";
	char path[PATH_MAX + 8];
	struct stat st;

	snprintf(opts, sizeof(opts), "fsname=plugdisk:%s,subtype=plugdisk,default_permissions%s%s%s",
		 pd->cfg.disk_name, pd->cfg.mount_allow_other ? ",allow_other" : "",
		 pd->cfg.mount_options && *pd->cfg.mount_options ? "," : "",
		 pd->cfg.mount_options ? pd->cfg.mount_options : "");
	if (fuse_opt_add_arg(&args, (char *)argv0) || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, opts)) {
		log_err("fuse_opt_add_arg: out of memory");
		return EXIT_RUNTIME;
	}
	pd->se = fuse_session_new(&args, &pd_fuse_ops, sizeof(pd_fuse_ops), pd);
	fuse_opt_free_args(&args);
	if (!pd->se) {
		log_err("fuse_session_new failed: check mount.options (%s)", opts);
		return EXIT_USAGE;
	}
	/* The transport: the kernel decides at mount time whether FUSE_INIT offers io_uring,
	 * and FUSE_INIT's reply, before any other request, whether it is used. */
	if (pd_uring_prepare(pd)) {
		fuse_session_destroy(pd->se);
		pd->se = NULL;
		return EXIT_MOUNT;
	}
	if (fuse_session_mount(pd->se, pd->mountpoint)) {
		log_err("fuse_session_mount %s failed", pd->mountpoint);
		fuse_session_destroy(pd->se);
		pd->se = NULL;
		pd_uring_destroy(pd);
		return EXIT_MOUNT;
	}
	if (pd_uring_setup(pd)) {
		fuse_session_unmount(pd->se);
		fuse_session_destroy(pd->se);
		pd->se = NULL;
		pd_uring_destroy(pd);
		return EXIT_MOUNT;
	}
	pd->nr_threads = pd->cfg.mount_threads;
	if (pd_fuse_start(pd)) {
		pd_mount_undo(pd);
		return EXIT_RUNTIME;
	}
	if (pd_uring_wait_ready(pd)) {
		/* mount.io_uring = on and no io_uring: the start fails. */
		pd_mount_undo(pd);
		return EXIT_MOUNT;
	}
	/* Ready means the mount answers: look at the disk through it. */
	snprintf(path, sizeof(path), "%s/disk", pd->mountpoint);
	if (stat(path, &st) < 0 || (uint64_t)st.st_size != pd->be.size) {
		log_err("stat %s: the new mount does not answer: %m", path);
		pd_mount_undo(pd);
		return EXIT_MOUNT;
	}
	return 0;
}

/* ---- main ---- */

enum { OPT_SET = 256, OPT_DUMP, OPT_PROFILE, OPT_LIST_PROFILES };

/* The options that set a configuration key. A message about the value names the option as
 * the user typed it ("-s 1000: disk.size: ..."), so both spellings are here. */
static const struct key_opt {
	int val;		/* getopt_long's value */
	const char *shortopt;	/* "-s", or NULL */
	const char *longopt;	/* "--size" */
	const char *key;	/* NULL: the argument is KEY=VALUE */
} key_opts[] = {
	{ 'i', "-i", "--image", "disk.image" },
	{ 's', "-s", "--size", "disk.size" },
	{ 'o', "-o", "--options", "mount.options" },
	{ OPT_SET, NULL, "--set", NULL },
	{ OPT_PROFILE, NULL, "--profile", "profile" },
};

static const struct key_opt *key_opt_find(int val)
{
	for (size_t i = 0; i < sizeof(key_opts) / sizeof(key_opts[0]); i++)
		if (key_opts[i].val == val)
			return &key_opts[i];
	return NULL;
}

/* Append a command-line setting; @arg points into argv and lives as long as the process. */
static int add_arg(struct pd *pd, const char *opt, const char *key, const char *arg)
{
	struct conf_arg *v = realloc(pd->args, (pd->nargs + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	pd->args = v;
	pd->args[pd->nargs++] = (struct conf_arg){ .opt = opt, .key = key, .arg = arg };
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "image", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "options", required_argument, NULL, 'o' },
		{ "set", required_argument, NULL, OPT_SET },
		{ "dump-config", no_argument, NULL, OPT_DUMP },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "list-profiles", no_argument, NULL, OPT_LIST_PROFILES },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct pd pdata;
	struct pd *pd = &pdata;
	bool foreground = false, dump = false, have_syslog = true, is_nbd;
	char err[1024], *mp = NULL;
	struct conf_arg cli_opts = { 0 };
	int c, ret, longindex, ready_pipe[2] = { -1, -1 };
	sigset_t sigs;

	if (argc > 1 && !strcmp(argv[1], "top"))
		return pd_top_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return pd_ctl_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "replay"))
		return pd_replay_main(argc - 1, argv + 1);

	/* getopt_long sets longindex for a long option only */
	while ((longindex = -1, c = getopt_long(argc, argv, "c:i:s:fo:hV", longopts, &longindex)) !=
	       -1) {
		const struct key_opt *ko = key_opt_find(c);

		if (ko) {
			/* the option as the user spelled it */
			const char *typed = longindex >= 0 || !ko->shortopt ? ko->longopt
									    : ko->shortopt;

			if (c == 'o') {
				/* applied after every --set, whatever the order: -o wins */
				cli_opts = (struct conf_arg){ .opt = typed, .key = ko->key,
							      .arg = optarg };
			} else if (add_arg(pd, typed, ko->key, optarg)) {
				fprintf(stderr, "plugdisk: out of memory\n");
				return EXIT_RUNTIME;
			}
			continue;
		}
		switch (c) {
		case 'c':
			pd->config_file = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case OPT_DUMP:
			dump = true;
			break;
		case OPT_LIST_PROFILES:
			conf_profile_list(stdout);
			return EXIT_OK;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("plugdisk %s\n", PLUGDISK_VERSION);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'plugdisk --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (cli_opts.arg && add_arg(pd, cli_opts.opt, cli_opts.key, cli_opts.arg)) {
		fprintf(stderr, "plugdisk: out of memory\n");
		return EXIT_RUNTIME;
	}

	ret = conf_load_args(pd->config_file, pd->args, pd->nargs, &pd->cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "plugdisk: %s\n", err);
		return EXIT_USAGE;
	}
	if (dump) {
		conf_print(&pd->cfg, stdout);
		return EXIT_OK;
	}
	if (optind < argc) {
		if (optind + 1 < argc) {
			fprintf(stderr, "plugdisk: unexpected argument '%s'\nTry 'plugdisk --help'.\n",
				argv[optind + 1]);
			return EXIT_USAGE;
		}
		mp = argv[optind];
	} else if (pd->cfg.mount_point && *pd->cfg.mount_point) {
		mp = pd->cfg.mount_point;
	} else {
		fprintf(stderr, "plugdisk: no MOUNTPOINT given (argument or mount.point)\n"
				"Try 'plugdisk --help'.\n");
		return EXIT_USAGE;
	}
	ret = check_mountpoint(mp, (char **)&pd->mountpoint);
	if (ret)
		return ret;
	is_nbd = backend_uri_is_nbd(pd->cfg.disk_image);
	/* An NBD export has its size and is opened after the fork below: its connections have
	 * threads. A file is opened here, so that its errors reach the caller directly. */
	if (is_nbd && !pd->cfg.disk_size_given)
		pd->cfg.disk_size = 0;
	if (!is_nbd) {
		ret = check_image_fits(pd->cfg.disk_image, pd->cfg.disk_size);
		if (ret)
			return ret;
	}
	/* A block device, or an existing image, has its own size unless one is asked for. */
	if (!is_nbd) {
		struct stat ist;

		if (!pd->cfg.disk_size_given && stat(pd->cfg.disk_image, &ist) == 0 &&
		    (S_ISBLK(ist.st_mode) || S_ISREG(ist.st_mode)))
			pd->cfg.disk_size = 0;
		ret = backend_open(&pd->be, pd->cfg.disk_image, pd->cfg.disk_size, err,
				   sizeof(err));
		if (ret) {
			fprintf(stderr, "plugdisk: %s\n", err);
			return EXIT_IMAGE;
		}
	}

	if (!foreground) {
		pid_t pid;
		char st = EXIT_RUNTIME;

		if (pipe2(ready_pipe, O_CLOEXEC) < 0) {
			perror("plugdisk: pipe");
			return EXIT_RUNTIME;
		}
		pid = fork();
		if (pid < 0) {
			perror("plugdisk: fork");
			return EXIT_RUNTIME;
		}
		if (pid > 0) {
			close(ready_pipe[1]);
			if (read(ready_pipe[0], &st, 1) != 1)
				st = EXIT_RUNTIME;
			return st;
		}
		close(ready_pipe[0]);
		setsid();
		/* Without a syslog socket (a container, a minimal machine) syslog() drops every
		 * message: log to stderr instead, and keep stderr open. */
		have_syslog = access("/dev/log", F_OK) == 0;
		log_init("plugdisk", have_syslog, LOG_LVL_INFO);
		log_also_stderr(true);
		if (!have_syslog)
			log_warn("no syslog socket at /dev/log: logging to stderr");
	} else {
		log_init("plugdisk", false, LOG_LVL_INFO);
	}

	/* Signals are taken synchronously by the main thread; every other thread inherits
	 * the blocked mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (is_nbd) {
		ret = backend_nbd_open(&pd->be, pd->cfg.disk_image, &pd->cfg.backend,
				       pd->cfg.disk_size, err, sizeof(err));
		if (ret) {
			log_err("%s", err);
			ret = EXIT_IMAGE;
			goto fail;
		}
	}
	pd_cap_request_size(pd, &pd->cfg.queue);

	pthread_mutex_init(&pd->attr_lock, NULL);
	pthread_mutex_init(&pd->data_lock, NULL);
	pthread_cond_init(&pd->data_cond, NULL);
	clock_gettime(CLOCK_REALTIME, &pd->start_time);
	pd->atime = pd->mtime = pd->ctime = pd->start_time;
	for (int i = 0; i < INO_NR; i++) {
		pd->uid[i] = getuid();
		pd->gid[i] = getgid();
	}
	pd->mode[INO_ROOT] = S_IFDIR | 0755;
	pd->mode[INO_DISK] = S_IFREG | (pd->be.read_only ? 0400 : 0600);
	pd->mode[INO_STATS] = S_IFREG | 0644;
	pd->mode[INO_STAT] = S_IFREG | 0444;
	pd->mode[INO_CONTROL] = S_IFREG | 0600;
	pd->quit_pipe[0] = pd->quit_pipe[1] = pd->kick_fd = -1;

	pd->cfg.ctrl.disk_size = pd->be.size; /* per-GiB rates (burst credits), the seek model */
	ret = timer_init(&pd->timer, true);
	if (!ret)
		ret = fault_set_init(&pd->faults, backend_exec, &pd->be, &pd->timer, NULL, NULL);
	if (!ret) {
		/* The controller's stage: the faults over the backend, or the write cache in
		 * front of them (a fault then hits the cache's destaging, as a media error). */
		io_exec_fn exec = fault_exec;
		void *exec_arg = &pd->faults;

		ret = pd_cache_start(pd, &exec, &exec_arg);
		if (!ret)
			ret = ctrl_init(&pd->ctrl, &pd->cfg.ctrl, &pd->timer, exec, exec_arg,
					(int64_t)clock_now_ns());
	}
	if (!ret) {
		pd->ctrl.faults = &pd->faults;
		ret = queue_init(&pd->q, &pd->cfg.queue, &pd->ctrl, &pd->timer, NULL, NULL);
	}
	if (ret) {
		ret = EXIT_RUNTIME;
		goto fail;
	}
	if (fault_replace_configured(&pd->faults, pd->cfg.faults.spec, pd->cfg.faults.n, err,
				     sizeof(err))) {
		log_err("faults: %s", err);
		ret = EXIT_USAGE;
		goto fail;
	}
	ret = pd_mount(pd);
	if (ret)
		goto fail;

	log_info("disk %s: %" PRIu64 " bytes from %s mounted at %s", pd->cfg.disk_name, pd->be.size,
		 pd->cfg.disk_image, pd->mountpoint);
	notify_status(pd, "READY=1\n");
	if (!foreground) {
		char st = EXIT_OK;
		int fd = open("/dev/null", O_RDWR);

		if (write(ready_pipe[1], &st, 1) != 1) {
			/* the parent is gone; carry on */
		}
		close(ready_pipe[1]);
		if (have_syslog)
			log_also_stderr(false);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
			if (have_syslog)
				dup2(fd, STDERR_FILENO);
			if (fd > STDERR_FILENO)
				close(fd);
		}
		if (chdir("/") < 0) {
			/* harmless: every path in use is absolute */
		}
	}

	for (;;) {
		struct timespec ts = { .tv_sec = 2 };
		int sig = sigtimedwait(&sigs, NULL, &ts);

		if (sig == SIGHUP) {
			pd_reload(pd);
		} else if (sig == SIGTERM || sig == SIGINT) {
			break;
		} else if (sig < 0) {
			notify_status(pd, "");
			pd_fuse_trim_buffers(pd, true);
		}
	}
	ret = pd_shutdown(pd, &sigs);
	conf_free(&pd->cfg);
	free(pd->args);
	return ret;

fail:
	if (!foreground) {
		char st = (char)ret;

		if (write(ready_pipe[1], &st, 1) != 1) {
			/* the parent is gone */
		}
	}
	backend_close(&pd->be);
	return ret;
}
