// SPDX-License-Identifier: MIT
/* Finding explore's checker by its short name: `-- plugdisk-check-ext4` runs the ready
 * checker `make install` put in PREFIX/libexec/plugdisk, a directory not on PATH. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/explore/explore_checker.h"

#define XP_LIBEXEC_FROM_BIN "../libexec/plugdisk"

/* Whether @name is an executable file in a directory of PATH (an empty entry: the current
 * directory), as posix_spawnp would find it. */
static bool on_path(const char *name)
{
	const char *p = getenv("PATH"), *end;
	char path[PATH_MAX];
	int n;

	if (!p)
		p = "/bin:/usr/bin";
	for (; ; p = end + 1) {
		end = strchrnul(p, ':');
		n = snprintf(path, sizeof(path), "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "",
			     name);
		if (n > 0 && (size_t)n < sizeof(path) && !access(path, X_OK))
			return true;
		if (!*end)
			return false;
	}
}

char *xp_ready_checker(const char *name)
{
	char exe[PATH_MAX], *slash, *path;
	ssize_t n;

	if (!*name || strchr(name, '/') || on_path(name))
		return NULL;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	if (asprintf(&path, "%s/" XP_LIBEXEC_FROM_BIN "/%s", exe, name) < 0)
		return NULL;
	if (access(path, X_OK)) {
		free(path);
		return NULL;
	}
	return path;
}
