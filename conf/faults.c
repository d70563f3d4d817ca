// SPDX-License-Identifier: MIT
/* The `faults` setting: a list of fault strings (core/fault.h syntax), from the config file
 * or from --set faults="SPEC; SPEC". Each is checked with the core's own parser, so that a
 * configuration that loads is one the daemon can apply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/faults.h"
#include "core/fault.h"

int conf_fault_check(const char *spec, char *why, size_t len)
{
	struct fault_spec s;
	int ret = fault_spec_parse(spec, &s, why, len);

	if (!ret)
		fault_spec_free(&s);
	return ret;
}

void conf_faults_free(struct conf_faults *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->spec[i]);
	free(f->spec);
	f->spec = NULL;
	f->n = 0;
}

int conf_faults_append(struct conf_faults *f, const char *spec, size_t len)
{
	char **v, *s;

	if (f->n >= FAULT_MAX)
		return -ENOSPC;
	s = strndup(spec, len);
	if (!s)
		return -ENOMEM;
	v = realloc(f->spec, (f->n + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	f->spec = v;
	f->spec[f->n++] = s;
	return 0;
}

/* Whether @s[0..len) holds nothing but blanks. */
static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

int conf_faults_split(const char *value, struct conf_faults *out)
{
	const char *p = value;
	int ret;

	memset(out, 0, sizeof(*out));
	for (;;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);

		if (!blank(p, len)) {
			ret = conf_faults_append(out, p, len);
			if (ret) {
				conf_faults_free(out);
				return ret;
			}
		}
		if (!semi)
			return 0;
		p = semi + 1;
	}
}

int conf_faults_copy(const struct conf_faults *in, struct conf_faults *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < in->n; i++) {
		int ret = conf_faults_append(out, in->spec[i], strlen(in->spec[i]));

		if (ret) {
			conf_faults_free(out);
			return ret;
		}
	}
	return 0;
}
