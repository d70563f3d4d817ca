// SPDX-License-Identifier: MIT
/* libFuzzer target: the configuration loader (conf/), a file and --set values. The input is
 * the file's text; each line "--set KEY=VALUE" in it is taken out and given as a --set, in
 * order. A configuration that loads must print (--dump-config) as a file that loads back to
 * the same printout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_SETS 16

/* The printout of @c, as a heap string. */
static char *dump(const struct pd_config *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	conf_print(c, f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[128], path2[128];
	char *text = fuzz_cstr(data, size), *sets[FUZZ_MAX_SETS], *file, *line, *next, *out;
	char err[1024], err2[1024], *out2;
	struct pd_config c, c2;
	size_t nsets = 0, flen = 0;

	if (!text)
		return 0;
	if (!path[0]) {
		snprintf(path, sizeof(path), "%s/plugdisk.conf", fuzz_tmpdir());
		snprintf(path2, sizeof(path2), "%s/dump.conf", fuzz_tmpdir());
	}
	file = malloc(size + 1);
	if (!file) {
		free(text);
		return 0;
	}
	for (line = text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, "--set ", 6) && nsets < FUZZ_MAX_SETS) {
			sets[nsets++] = line + 6;
		} else {
			flen += (size_t)sprintf(file + flen, "%s%s", line, next ? "\n" : "");
		}
	}
	fuzz_write_file(path, file, flen);
	if (conf_load(path, sets, nsets, &c, err, sizeof(err)) == 0) {
		out = dump(&c);
		if (out) {
			fuzz_write_file(path2, out, strlen(out));
			if (conf_load(path2, NULL, 0, &c2, err2, sizeof(err2)))
				fuzz_fail("the printout does not load back: %s\n%s", err2, out);
			out2 = dump(&c2);
			if (out2 && strcmp(out, out2))
				fuzz_fail("the printout loads back as another:\n%s\n---\n%s", out, out2);
			free(out2);
			conf_free(&c2);
			free(out);
		}
		conf_free(&c);
	}
	free(file);
	free(text);
	return 0;
}
