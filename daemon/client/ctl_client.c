// SPDX-License-Identifier: MIT
/* `plugdisk ctl MOUNTPOINT [COMMAND...]`: write one command to MOUNTPOINT/control and print
 * the answer, or, with no command, print the control file's listing. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/client/mount_file.h"
#include "daemon/control/control.h"
#include "daemon/daemon.h"

/* Copy what remains of @fd to @out. Returns 0 or -errno. */
static int ctl_copy(int fd, FILE *out)
{
	char buf[4096];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		fwrite(buf, 1, (size_t)n, out);
	}
}

int pd_ctl_main(int argc, char **argv)
{
	char path[4096], *cmd;
	size_t len = 0;
	int fd, ret;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		FILE *f = argc < 2 ? stderr : stdout;

		fprintf(f,
			"Usage: plugdisk ctl MOUNTPOINT [COMMAND...]\n"
			"       plugdisk ctl help\n"
			"Write COMMAND to MOUNTPOINT/control and print its answer; with no COMMAND,\n"
			"print the control file's listing.\n"
			"A refused command exits 1 with its reason.\n");
		pd_exit_help(f);
		fprintf(f, "\nCommands:\n");
		control_help(f);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	/* "ctl help", "ctl MOUNTPOINT help" where nothing is mounted: the commands this
	 * plugdisk knows, without asking a daemon. (A mounted disk answers help itself.) */
	if (argc == 2 && !strcmp(argv[1], "help")) {
		control_help(stdout);
		return EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "--list-commands")) {
		control_list_commands(stdout);
		return EXIT_OK;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/control", argv[1]) >= sizeof(path)) {
		fprintf(stderr, "plugdisk ctl: %s: path too long\n", argv[1]);
		return EXIT_USAGE;
	}
	/* Only a plugdisk mount's control file: never a FIFO to wait on, nor a plain file
	 * that a command would overwrite. */
	fd = pd_mount_file_open(path, argc > 2 ? O_RDWR : O_RDONLY);
	if (fd < 0) {
		int e = -fd;

		/* No control file: the directory is not (or no longer) a plugdisk mount. Its own
		 * status, so that a script can tell it from a refused command. */
		if (argc == 3 && !strcmp(argv[2], "help")) {
			control_help(stdout);
			return EXIT_OK;
		}
		if (e == ENOENT || e == ENOTDIR) {
			fprintf(stderr, "plugdisk ctl: %s is not a plugdisk mount (no %s)\n",
				argv[1], path);
			return EXIT_MOUNT;
		}
		if (e == ENODEV) {
			fprintf(stderr, "plugdisk ctl: %s is not a plugdisk mount (%s is not a file "
					"of a FUSE mount)\n", argv[1], path);
			return EXIT_MOUNT;
		}
		if (e == ENOTCONN) {
			fprintf(stderr, "plugdisk ctl: %s: the plugdisk daemon of this mount has "
					"exited (unmount it with fusermount3 -u)\n", argv[1]);
			return EXIT_MOUNT;
		}
		fprintf(stderr, "plugdisk ctl: %s: %s\n", path, strerror(e));
		return EXIT_RUNTIME;
	}
	if (argc == 2) {
		ret = ctl_copy(fd, stdout);
		close(fd);
		if (ret) {
			fprintf(stderr, "plugdisk ctl: read %s: %s\n", path, strerror(-ret));
			return EXIT_RUNTIME;
		}
		return EXIT_OK;
	}
	for (int i = 2; i < argc; i++)
		len += strlen(argv[i]) + 1;
	cmd = malloc(len + 1);
	if (!cmd) {
		close(fd);
		fprintf(stderr, "plugdisk ctl: out of memory\n");
		return EXIT_RUNTIME;
	}
	cmd[0] = '\0';
	for (int i = 2; i < argc; i++) {
		strcat(cmd, argv[i]);
		strcat(cmd, i + 1 < argc ? " " : "\n");
	}
	/* The file's size, fetched afresh (a truncating open elsewhere leaves 0 in the kernel
	 * until then): a write inside it goes to the daemon beside the others in progress, so
	 * that a release or a thaw gets in while a freeze or a poweron waits. */
	{
		struct stat st;

		(void)fstat(fd, &st);
	}
	ret = 0;
	while (write(fd, cmd, strlen(cmd)) < 0) {
		if (errno != EINTR) {
			ret = errno;
			break;
		}
	}
	free(cmd);
	/* The answer, or the reason the command failed, from the start of the file: a write
	 * that succeeded moved the file offset past the command's length. */
	if (lseek(fd, 0, SEEK_SET) < 0)
		fprintf(stderr, "plugdisk ctl: lseek %s: %s\n", path, strerror(errno));
	ctl_copy(fd, ret ? stderr : stdout);
	close(fd);
	if (ret) {
		fprintf(stderr, "plugdisk ctl: %s: %s\n", argv[2], strerror(ret));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}
