/* SPDX-License-Identifier: MIT */
/* What the libFuzzer targets of tests/fuzz/ share: the input as a C string or a file, and a
 * failed property, reported as a crash so that libFuzzer keeps the input. */
#ifndef PLUGDISK_FUZZ_H
#define PLUGDISK_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* @data as a heap C string, cut at its first NUL; NULL when out of memory. */
char *fuzz_cstr(const uint8_t *data, size_t size);

/* Replace the file at @path with @data. Aborts on an error (the harness is broken). */
void fuzz_write_file(const char *path, const void *data, size_t size);

/* A scratch directory (on /dev/shm unless $TMPDIR says), made once per process and removed
 * at its exit. */
const char *fuzz_tmpdir(void);

/* Print the broken property and abort. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
