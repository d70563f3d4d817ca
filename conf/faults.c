// SPDX-License-Identifier: MIT
/* The `faults` setting: a list of fault strings (core/fault/fault.h syntax), from the config file
 * or from --set faults="SPEC; SPEC". Each is checked with the core's own parser, so that a
 * configuration that loads is one the daemon can apply. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/faults.h"
#include "conf/keys/key.h"
#include "core/fault/fault.h"

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
			const char *q = p;
			size_t n = len;

			while (*q == ' ' || *q == '\t')
				q++, n--;
			while (q[n - 1] == ' ' || q[n - 1] == '\t')
				n--;
			ret = conf_faults_append(out, q, n);
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

/* ---- the key ---- */

/* --set faults="SPEC; SPEC": the whole list ("" empties it). */
static int faults_parse(struct conf_load *ld, const struct conf_key *k, const char *text,
			struct conf_why *why)
{
	struct conf_faults *f = conf_value(ld, k), nf;
	int ret = conf_faults_split(text, &nf);

	if (ret == -ENOSPC)
		return conf_whyf(why, "more than %d faults", FAULT_MAX);
	if (ret)
		return ret;
	for (size_t i = 0; i < nf.n; i++) {
		ret = conf_fault_check(nf.spec[i], why->text, sizeof(why->text));
		if (ret) {
			snprintf(why->suffix, sizeof(why->suffix), "[%zu]", i);
			conf_faults_free(&nf);
			return ret;
		}
	}
	conf_faults_free(f);
	*f = nf;
	return 0;
}

/* faults = ( "SPEC", ... ); in the file. */
static int faults_load(struct conf_load *ld, const struct conf_key *k, const config_setting_t *s,
		       struct conf_why *why)
{
	struct conf_faults *f = conf_value(ld, k), nf = { 0 };
	int ret = 0;

	if (!config_setting_is_list(s) && !config_setting_is_array(s))
		return conf_whyf(why, "expected a list of strings ( \"...\" ), got %s",
				 conf_setting_type_name(s));
	for (int i = 0; i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		const char *spec;

		snprintf(why->suffix, sizeof(why->suffix), "[%d]", i);
		why->at = e;
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			ret = conf_whyf(why, "expected a string, got %s", conf_setting_type_name(e));
			goto err;
		}
		spec = config_setting_get_string(e);
		ret = conf_fault_check(spec, why->text, sizeof(why->text));
		if (!ret)
			ret = conf_faults_append(&nf, spec, strlen(spec));
		if (ret == -ENOSPC)
			ret = conf_whyf(why, "more than %d faults", FAULT_MAX);
		if (ret)
			goto err;
	}
	conf_faults_free(f);
	*f = nf;
	return 0;
err:
	conf_faults_free(&nf);
	return ret;
}

static void faults_print(const struct pd_config *c, const struct conf_key *k, FILE *f)
{
	(void)k;
	fputc('(', f);
	for (size_t i = 0; i < c->faults.n; i++) {
		fputs(i ? ",\n\t" : "\n\t", f);
		conf_print_string(f, c->faults.spec[i]);
	}
	fputs(c->faults.n ? "\n)" : " )", f);
}

static void faults_release(struct pd_config *c, const struct conf_key *k)
{
	(void)k;
	conf_faults_free(&c->faults);
}

static const struct conf_custom faults_custom = {
	.parse = faults_parse,
	.load = faults_load,
	.print = faults_print,
	.release = faults_release,
	.expected = "a list of strings",
};

static const struct conf_key fault_keys[] = {
	CONF_CUSTOM_KEY("faults", faults, faults_custom, 0,
			"injected faults, one string each (plugdisk.conf(5), FAULTS)"),
};

static void faults_defaults(struct pd_config *c)
{
	memset(&c->faults, 0, sizeof(c->faults));
}

const struct conf_table conf_fault_table = CONF_TABLE(fault_keys, faults_defaults, NULL);
