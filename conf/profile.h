/* SPDX-License-Identifier: MIT */
/* Named device profiles: documented groups of controller keys that emulate a real device.
 * A profile is applied before the config file and --set, so any key the user sets wins. */
#ifndef PLUGDISK_PROFILE_H
#define PLUGDISK_PROFILE_H

#include <stddef.h>

struct conf_profile {
	const char *name;		/* "hdd-7200" */
	const char *device;		/* what it emulates, one line */
	const char *source;		/* where its figures come from */
	const char *out_of_reach;	/* figures a FUSE disk on a small machine cannot reach, or NULL */
	const char *const *keys;	/* "KEY=VALUE" settings, NULL-terminated */
};

/* The profile called @name, or NULL. */
const struct conf_profile *conf_profile_find(const char *name);

/* "hdd-7200, sata-ssd, ..." into @buf (always NUL-terminated). */
void conf_profile_names(char *buf, size_t len);

/* Print every profile with its device, source, settings and limits (--list-profiles). */
void conf_profile_list(void *FILE_stream);

#endif
