/* SPDX-License-Identifier: MIT */
/* Unit tests of conf/parse.c: the one decimal parser and the size and boolean words built on
 * it. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "conf/config.h"
#include "conf/parse.h"
#include "tests/unit/suite.h"

START_TEST(test_u64_reads_leading_digits)
{
	const char *end = NULL;
	uint64_t v = 7;

	ck_assert_int_eq(conf_parse_u64("0", &end, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_str_eq(end, "");
	ck_assert_int_eq(conf_parse_u64("4096K", &end, &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_str_eq(end, "K");
	ck_assert_int_eq(conf_parse_u64("007x", &end, &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_str_eq(end, "x");
	ck_assert_int_eq(conf_parse_u64("12", NULL, &v), 0);
	ck_assert_uint_eq(v, 12);
}
END_TEST

/* The whole string or nothing: trailing characters are refused, @out untouched. */
START_TEST(test_u64_whole)
{
	uint64_t v = 5;

	ck_assert_int_eq(conf_parse_u64_whole("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	v = 5;
	ck_assert_int_eq(conf_parse_u64_whole("4096K", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_u64_whole("12 ", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_u64_whole("", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_u64_whole("18446744073709551616", &v), -ERANGE);
	ck_assert_uint_eq(v, 5);
}
END_TEST

START_TEST(test_u64_refuses_no_digit)
{
	static const char *const bad[] = { "", "-1", "+1", " 1", "x1", "K", "\t" };
	uint64_t v = 99;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(conf_parse_u64(bad[i], NULL, &v), -EINVAL);
	ck_assert_int_eq(conf_parse_u64(NULL, NULL, &v), -EINVAL);
	ck_assert_uint_eq(v, 99);	/* untouched on error */
}
END_TEST

START_TEST(test_u64_overflow_boundary)
{
	uint64_t v = 5;

	ck_assert_int_eq(conf_parse_u64("18446744073709551615", NULL, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(conf_parse_u64("18446744073709551616", NULL, &v), -ERANGE);
	ck_assert_int_eq(conf_parse_u64("99999999999999999999", NULL, &v), -ERANGE);
	ck_assert_int_eq(conf_parse_u64("000000000000000000000000018446744073709551615", NULL, &v),
			 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	/* overflow is found before what follows the digits */
	ck_assert_int_eq(conf_parse_u64("18446744073709551616Q", NULL, &v), -ERANGE);
}
END_TEST

START_TEST(test_size_suffixes_and_boundaries)
{
	uint64_t v = 0;

	ck_assert_int_eq(conf_parse_size("1k", &v), 0);
	ck_assert_uint_eq(v, 1024);
	ck_assert_int_eq(conf_parse_size("16777215T", &v), 0);
	ck_assert_uint_eq(v, 16777215ull << 40);
	ck_assert_int_eq(conf_parse_size("16777216T", &v), -ERANGE);
	ck_assert_int_eq(conf_parse_size("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(conf_parse_size("18446744073709551616", &v), -ERANGE);
	ck_assert_int_eq(conf_parse_size("1KK", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_size("1 K", &v), 0);	/* as systemd takes it */
	ck_assert_uint_eq(v, 1024);
	ck_assert_int_eq(conf_parse_size("1P", &v), 0);
	ck_assert_uint_eq(v, 1ull << 50);
	ck_assert_int_eq(conf_parse_size("15E", &v), 0);
	ck_assert_uint_eq(v, 15ull << 60);
	ck_assert_int_eq(conf_parse_size("16E", &v), -ERANGE);
	ck_assert_int_eq(conf_parse_size("1Q", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_size(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(test_bool_words)
{
	static const char *const yes[] = { "true", "1", "yes", "on", "TRUE", "Yes", "oN" };
	static const char *const no[] = { "false", "0", "no", "off", "FALSE", "No", "OFF" };
	static const char *const bad[] = { "", "2", "y", "n", "truee", "of", " on" };
	bool b;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		b = false;
		ck_assert_int_eq(conf_parse_bool(yes[i], &b), 0);
		ck_assert(b);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		b = true;
		ck_assert_int_eq(conf_parse_bool(no[i], &b), 0);
		ck_assert(!b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(conf_parse_bool(bad[i], &b), -EINVAL);
}
END_TEST

static Suite *parse_suite(void)
{
	Suite *s = suite_create("conf_parse");
	TCase *tc = tcase_create("conf_parse");

	tcase_add_test(tc, test_u64_reads_leading_digits);
	tcase_add_test(tc, test_u64_refuses_no_digit);
	tcase_add_test(tc, test_u64_whole);
	tcase_add_test(tc, test_u64_overflow_boundary);
	tcase_add_test(tc, test_size_suffixes_and_boundaries);
	tcase_add_test(tc, test_bool_words);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(parse_suite());
}
