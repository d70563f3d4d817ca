/* SPDX-License-Identifier: MIT */
/* Which configuration files a daemon may read: one policy for the main file and every file
 * it @includes. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/keys/key.h"

/* The file is opened, not just stat'ed, so that "cannot open" is told before libconfig's
 * vaguer error, and so that what is checked is what a read would get. O_NONBLOCK: a FIFO
 * must be refused, not waited on. */
int conf_check_file_safe(const char *file, uid_t euid, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret = 0;

	fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		conf_errf(err, errlen, "%s: cannot open: %s", file, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		conf_errf(err, errlen, "%s: cannot stat: %s", file, strerror(-ret));
	} else if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		conf_errf(err, errlen, "%s: not a regular file", file);
	} else if (euid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		ret = -EPERM;
		conf_errf(err, errlen,
			"%s: refusing a config file that others can write (mode %04o) for a root "
			"daemon", file, (unsigned)(st.st_mode & 07777));
	} else if (euid == 0 && st.st_uid != 0) {
		ret = -EPERM;
		conf_errf(err, errlen, "%s: refusing a config file owned by uid %u for a root daemon",
			file, (unsigned)st.st_uid);
	}
	close(fd);
	return ret;
}

/* libconfig follows its includes when it reads the file, before the loader sees any
 * setting, and does not ask first: so the files it would open are found here, each checked
 * by the same policy (a FIFO, a device would otherwise be opened and waited on), and theirs
 * in turn. libconfig 1.5 takes "@include "PATH"" alone on a line, PATH as given (no include
 * directory is set), and at most 10 levels deep. */
#define CONF_INCLUDE_DEPTH 10

static int check_includes(const char *file, uid_t euid, unsigned depth, char *err,
			  size_t errlen)
{
	char line[4096 + 64], why[4096 + 128];
	unsigned lineno = 0;
	bool in_comment = false;
	FILE *f;
	int fd, ret = 0;

	/* Checked already (conf_check_file_safe) by the caller: a regular file. */
	fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;	/* libconfig's own error says it */
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 0;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		lineno++;
		/* A block comment's lines hold no include. */
		if (in_comment) {
			p = strstr(p, "*/");
			if (!p)
				continue;
			in_comment = false;
			p += 2;
		}
		p += strspn(p, " \t");
		if (!strncmp(p, "/*", 2) && !strstr(p + 2, "*/")) {
			in_comment = true;
			continue;
		}
		if (strncmp(p, "@include", 8) || !strchr(" \t", p[8]))
			continue;
		p += 8 + strspn(p + 8, " \t");
		if (*p != '"' || !(end = strchr(p + 1, '"')))
			continue;	/* libconfig's syntax error */
		*end = '\0';
		p++;
		if (depth >= CONF_INCLUDE_DEPTH)
			break;		/* libconfig refuses it */
		ret = conf_check_file_safe(p, euid, why, sizeof(why));
		if (ret)
			conf_errf(err, errlen, "%s:%u: @include \"%s\": %s", file, lineno, p,
				  why + (strncmp(why, p, strlen(p)) ? 0 : strlen(p) + 2));
		else
			ret = check_includes(p, euid, depth + 1, err, errlen);
	}
	fclose(f);
	return ret;
}

int conf_check_includes(const char *file, uid_t euid, char *err, size_t errlen)
{
	return check_includes(file, euid, 0, err, errlen);
}
