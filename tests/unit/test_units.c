/* SPDX-License-Identifier: MIT */
/* Unit tests of core/util/units.c: sizes and durations as people write them, their suffixes,
 * fractions and limits. */
#include <errno.h>
#include <stdint.h>

#include "core/util/units.h"
#include "tests/unit/suite.h"

static uint64_t size_of(const char *s)
{
	uint64_t v = 0;

	ck_assert_msg(units_parse_size(s, &v) == 0, "\"%s\" refused", s);
	return v;
}

static uint64_t ns_of(const char *s, uint64_t bare)
{
	uint64_t v = 0;

	ck_assert_msg(units_parse_duration(s, bare, &v) == 0, "\"%s\" refused", s);
	return v;
}

START_TEST(test_size_binary_suffixes)
{
	ck_assert_uint_eq(size_of("4096"), 4096);
	ck_assert_uint_eq(size_of("512B"), 512);
	ck_assert_uint_eq(size_of("1k"), 1024);
	ck_assert_uint_eq(size_of("1K"), 1024);
	ck_assert_uint_eq(size_of("1KiB"), 1024);
	ck_assert_uint_eq(size_of("1kib"), 1024);
	ck_assert_uint_eq(size_of("1GiB"), 1ull << 30);
	ck_assert_uint_eq(size_of("1G"), 1ull << 30);
	ck_assert_uint_eq(size_of("1 GiB"), 1ull << 30);
	ck_assert_uint_eq(size_of("3T"), 3ull << 40);
	ck_assert_uint_eq(size_of("1P"), 1ull << 50);
	ck_assert_uint_eq(size_of("1PiB"), 1ull << 50);
	ck_assert_uint_eq(size_of("2E"), 2ull << 60);
}
END_TEST

START_TEST(test_size_decimal_suffixes)
{
	ck_assert_uint_eq(size_of("1KB"), 1000);
	ck_assert_uint_eq(size_of("1kB"), 1000);
	ck_assert_uint_eq(size_of("1MB"), 1000000);
	ck_assert_uint_eq(size_of("1GB"), 1000000000);
	ck_assert_uint_eq(size_of("2TB"), 2000000000000ull);
	ck_assert_uint_eq(size_of("1PB"), 1000000000000000ull);
	ck_assert_uint_eq(size_of("18EB"), 18000000000000000000ull);
}
END_TEST

START_TEST(test_size_fractions)
{
	ck_assert_uint_eq(size_of("1.5G"), 3ull << 29);
	ck_assert_uint_eq(size_of("0.5K"), 512);
	ck_assert_uint_eq(size_of("1.5GB"), 1500000000);
	ck_assert_uint_eq(size_of(".5M"), 1ull << 19);
	ck_assert_uint_eq(size_of("2.000"), 2);
	uint64_t v = 7;
	/* a fraction of a byte is no size */
	ck_assert_int_eq(units_parse_size("0.3K", &v), -EINVAL);
	ck_assert_int_eq(units_parse_size("1.5", &v), -EINVAL);
	ck_assert_uint_eq(v, 7);
	/* 39 and more digits after the point: 10^39 does not fit in 128 bits */
	ck_assert_int_eq(units_parse_size("0.000000000000000000000000000000000000001K", &v),
			 -EINVAL);
	ck_assert_uint_eq(v, 7);
	ck_assert_uint_eq(size_of("0.00000000000000000000000000000000000000000000000000K"), 0);
	ck_assert_int_eq(units_parse_duration(".0000000000000000000000000000000000000000ms",
					      1000, &v), 0);
	ck_assert_uint_eq(v, 0);
}
END_TEST

START_TEST(test_size_refused_and_limits)
{
	static const char *const bad[] = { "", "K", "G1", "1KK", "1Q", "1Ki", "1iB", "1.2.3K",
					   "-1K", "+1K", "1K ", "1 ", "1K/s", "1 KiB B", "." };
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(units_parse_size(bad[i], &v) == -EINVAL, "\"%s\" accepted", bad[i]);
	ck_assert_int_eq(units_parse_size(NULL, &v), -EINVAL);
	ck_assert_uint_eq(size_of("18446744073709551615"), UINT64_MAX);
	ck_assert_int_eq(units_parse_size("18446744073709551616", &v), -ERANGE);
	ck_assert_uint_eq(size_of("15E"), 15ull << 60);
	ck_assert_int_eq(units_parse_size("16E", &v), -ERANGE);
	ck_assert_uint_eq(size_of("16383P"), 16383ull << 50);
	ck_assert_int_eq(units_parse_size("16384P", &v), -ERANGE);
	ck_assert_int_eq(units_parse_size("18.5EB", &v), -ERANGE);
	ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_duration_units)
{
	ck_assert_uint_eq(ns_of("5ns", 0), 5);
	ck_assert_uint_eq(ns_of("5nsec", 0), 5);
	ck_assert_uint_eq(ns_of("2us", 0), 2000);
	ck_assert_uint_eq(ns_of("2usec", 0), 2000);
	ck_assert_uint_eq(ns_of("2\xc2\xb5s", 0), 2000);
	ck_assert_uint_eq(ns_of("2ms", 0), 2000000);
	ck_assert_uint_eq(ns_of("2msec", 0), 2000000);
	ck_assert_uint_eq(ns_of("1s", 0), 1000000000);
	ck_assert_uint_eq(ns_of("1sec", 0), 1000000000);
	ck_assert_uint_eq(ns_of("2 seconds", 0), 2000000000);
	ck_assert_uint_eq(ns_of("1m", 0), 60000000000ull);
	ck_assert_uint_eq(ns_of("1min", 0), 60000000000ull);
	ck_assert_uint_eq(ns_of("1h", 0), 3600000000000ull);
	ck_assert_uint_eq(ns_of("1hr", 0), 3600000000000ull);
	ck_assert_uint_eq(ns_of("1d", 0), 86400000000000ull);
	ck_assert_uint_eq(ns_of("1MS", 0), 1000000);	/* any case */
}
END_TEST

START_TEST(test_duration_sums_and_fractions)
{
	ck_assert_uint_eq(ns_of("1m30s", 0), 90000000000ull);
	ck_assert_uint_eq(ns_of("1min 30s", 0), 90000000000ull);
	ck_assert_uint_eq(ns_of("1s 500ms ", 0), 1500000000ull);
	ck_assert_uint_eq(ns_of("1.5ms", 0), 1500000);
	ck_assert_uint_eq(ns_of("0.5s", 0), 500000000);
	ck_assert_uint_eq(ns_of("2.5us", 0), 2500);
	uint64_t v = 7;
	ck_assert_int_eq(units_parse_duration("1.5ns", 0, &v), -EINVAL);
	ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_duration_bare_numbers)
{
	uint64_t v = 7;

	/* a bare number is in the caller's unit, or refused */
	ck_assert_uint_eq(ns_of("250", 1000), 250000);
	ck_assert_uint_eq(ns_of("0", 1000), 0);
	ck_assert_int_eq(units_parse_duration("250", 0, &v), -EINVAL);
	ck_assert_int_eq(units_parse_duration("1s 250", 1000, &v), -EINVAL);
	ck_assert_int_eq(units_parse_duration("1.5", 1, &v), -EINVAL);
	ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_duration_refused_and_limits)
{
	static const char *const bad[] = { "", "ms", "5", "5q", "5 ms ms", "-1ms", "1.2.3s",
					   "5mss", "1y", "5s,", "." };
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(units_parse_duration(bad[i], 0, &v) == -EINVAL, "\"%s\" accepted",
			      bad[i]);
	ck_assert_int_eq(units_parse_duration(NULL, 1, &v), -EINVAL);
	ck_assert_uint_eq(ns_of("18446744073709551615ns", 0), UINT64_MAX);
	ck_assert_int_eq(units_parse_duration("18446744073709551616ns", 0, &v), -ERANGE);
	ck_assert_uint_eq(ns_of("213503d", 0), 213503ull * 86400000000000ull);
	ck_assert_int_eq(units_parse_duration("213504d", 0, &v), -ERANGE);
	ck_assert_int_eq(units_parse_duration("213503d 213503d", 0, &v), -ERANGE);
	ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_is_bare)
{
	ck_assert(units_is_bare("0"));
	ck_assert(units_is_bare("123"));
	ck_assert(!units_is_bare(""));
	ck_assert(!units_is_bare("1ms"));
	ck_assert(!units_is_bare("1.5"));
	ck_assert(!units_is_bare(NULL));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("units");
	TCase *tc = tcase_create("units");

	tcase_add_test(tc, test_size_binary_suffixes);
	tcase_add_test(tc, test_size_decimal_suffixes);
	tcase_add_test(tc, test_size_fractions);
	tcase_add_test(tc, test_size_refused_and_limits);
	tcase_add_test(tc, test_duration_units);
	tcase_add_test(tc, test_duration_sums_and_fractions);
	tcase_add_test(tc, test_duration_bare_numbers);
	tcase_add_test(tc, test_duration_refused_and_limits);
	tcase_add_test(tc, test_is_bare);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
