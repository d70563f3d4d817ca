/* SPDX-License-Identifier: MIT */
/* The `faults` setting: the faults a run starts with, as core/fault/fault.h strings. */
#ifndef PLUGDISK_CONF_FAULTS_H
#define PLUGDISK_CONF_FAULTS_H

#include <stddef.h>

struct conf_faults {
	char **spec;	/* heap strings, each one fault */
	size_t n;
};

/* Check one fault string. 0, or -EINVAL with the reason in @why. */
int conf_fault_check(const char *spec, char *why, size_t len);

/* Append @len bytes of @spec as one more fault. 0, -ENOSPC (FAULT_MAX) or -ENOMEM. */
int conf_faults_append(struct conf_faults *f, const char *spec, size_t len);

/* Split a --set value "SPEC; SPEC; ..." into @out (blank entries skipped). 0 or -errno. */
int conf_faults_split(const char *value, struct conf_faults *out);

void conf_faults_free(struct conf_faults *f);

#endif
