/* SPDX-License-Identifier: MIT */
/* What every unit test program shares: Check with asserts on, running its suite, and
 * temporary files. */
#ifndef PLUGDISK_TEST_SUITE_H
#define PLUGDISK_TEST_SUITE_H

#undef NDEBUG
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Run a suite; return the process exit status. */
static inline int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

/* Create a new empty file named from @tmpl, a mkstemp() template, into @path (@size bytes);
 * fail the test if it cannot. */
static inline void make_tmp_file(char *path, size_t size, const char *tmpl)
{
	int fd;

	snprintf(path, size, "%s", tmpl);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

#endif
