/* SPDX-License-Identifier: MIT */
/* What every unit test program shares: Check with asserts on, and running its suite. */
#ifndef PLUGDISK_TEST_SUITE_H
#define PLUGDISK_TEST_SUITE_H

#undef NDEBUG
#include <check.h>

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

#endif
