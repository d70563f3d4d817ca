// SPDX-License-Identifier: MIT
/* Start-up checks: the mountpoint (clearing what a crashed plugdisk left there: its dead
 * mount and the loop devices on its disk) and the room for a new image. They run before
 * anything is mounted and before logging is set up, so they write to stderr. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/preflight.h"

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

int pd_check_mountpoint(const char *arg, char **out)
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
int pd_check_image_fits(const char *image, uint64_t size)
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

int pd_image_size(const char *image, uint64_t *size)
{
	struct stat st;
	uint64_t bytes;
	int fd, ret = 0;

	if (lstat(image, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		return 0;
	}
	if (!S_ISBLK(st.st_mode))
		return -EINVAL;
	fd = open(image, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, BLKGETSIZE64, &bytes) < 0)
		ret = -errno;
	else
		*size = bytes;
	close(fd);
	return ret;
}
