// SPDX-License-Identifier: MIT
/* libFuzzer target: the fault-spec parser (core/fault/fault_spec.c), as the control file's
 * "fault add" and the configuration's faults list give it text. A spec it accepts must
 * print back (fault_spec_format) as words that parse to the same spec. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault/fault.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fault_spec a, b;
	char *text = fuzz_cstr(data, size), *words, *again, err[256];

	if (!text)
		return 0;
	if (fault_spec_parse(text, &a, err, sizeof(err)) == 0) {
		words = fault_spec_format(&a);
		if (words) {
			if (fault_spec_parse(words, &b, err, sizeof(err)))
				fuzz_fail("\"%s\" printed back as \"%s\", which fails: %s", text, words,
					  err);
			again = fault_spec_format(&b);
			if (again && strcmp(words, again))
				fuzz_fail("\"%s\" printed back as \"%s\", then as \"%s\"", text, words,
					  again);
			free(again);
			fault_spec_free(&b);
			free(words);
		}
		fault_spec_free(&a);
	}
	free(text);
	return 0;
}
