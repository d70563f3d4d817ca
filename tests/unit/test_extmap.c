/* SPDX-License-Identifier: MIT */
/* Unit tests of the extent overlay (core/crash/extmap.c): a batch put gives the same map, extent
 * for extent, as the same puts one at a time, over random overlapping extents and over a map
 * that already holds some; and it is not quadratic. */
#undef NDEBUG
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/crash/extmap.h"
#include "core/util/prng.h"
#include "tests/unit/suite.h"

static uint8_t src[1 << 16];

/* @n random extents over [0, @span): some zeros (NULL), the rest from src. */
static void random_extents(uint64_t *rng, struct extent *v, size_t n, uint64_t span,
			   uint64_t maxlen)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t len = 1 + prng_splitmix64(rng) % maxlen;
		uint64_t off = prng_splitmix64(rng) % (span - len + 1);
		uint64_t r = prng_splitmix64(rng);

		v[i] = (struct extent){ off, len, r % 5 ? src + r % (sizeof(src) - maxlen) : NULL };
	}
}

static void assert_same(const struct extmap *a, const struct extmap *b)
{
	ck_assert_uint_eq(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		ck_assert_uint_eq(a->v[i].off, b->v[i].off);
		ck_assert_uint_eq(a->v[i].len, b->v[i].len);
		ck_assert_ptr_eq(a->v[i].src, b->v[i].src);
	}
}

START_TEST(test_put_many_is_puts_in_order)
{
	uint64_t rng = 42;
	struct extent v[300], base[50];

	for (int round = 0; round < 1000; round++) {
		struct extmap one, many;
		size_t n = 1 + prng_splitmix64(&rng) % 300, nb = prng_splitmix64(&rng) % 50;
		uint64_t span = 64 + prng_splitmix64(&rng) % 4000, maxlen = 1 + span / 4;

		extmap_init(&one);
		extmap_init(&many);
		random_extents(&rng, base, nb, span, maxlen);
		random_extents(&rng, v, n, span, maxlen);
		if (round % 7 == 0) /* same offsets, lengths at the boundary */
			for (size_t i = 0; i < n; i++)
				v[i].off = v[0].off;
		for (size_t i = 0; i < nb; i++) {
			ck_assert_int_eq(extmap_put(&one, base[i].off, base[i].len, base[i].src), 0);
			ck_assert_int_eq(extmap_put(&many, base[i].off, base[i].len, base[i].src), 0);
		}
		for (size_t i = 0; i < n; i++)
			ck_assert_int_eq(extmap_put(&one, v[i].off, v[i].len, v[i].src), 0);
		ck_assert_int_eq(extmap_put_many(&many, v, n), 0);
		assert_same(&one, &many);
		extmap_free(&one);
		extmap_free(&many);
	}
}
END_TEST

/* 2M small extents over 262144 places: the puts one at a time move the array's tail each
 * time (minutes); the batch is n log n. Not timed: it must simply end, which a quadratic
 * build of this size would not within the test runner's limit. */
START_TEST(test_put_many_large)
{
	size_t n = 2000000;
	struct extent *v = malloc(n * sizeof(*v));
	struct extmap m;
	uint64_t rng = 7;

	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (struct extent){ (prng_splitmix64(&rng) % 262144) * 4096, 8, src };
	extmap_init(&m);
	ck_assert_int_eq(extmap_put_many(&m, v, n), 0);
	ck_assert_uint_le(m.n, 262144);
	ck_assert_uint_gt(m.n, 250000);
	for (size_t i = 1; i < m.n; i++)
		ck_assert_uint_ge(m.v[i].off, m.v[i - 1].off + m.v[i - 1].len);
	extmap_free(&m);
	free(v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("extmap");
	TCase *tc = tcase_create("extmap");

	tcase_set_timeout(tc, 120); /* a loaded machine; nothing here is timed */
	tcase_add_test(tc, test_put_many_is_puts_in_order);
	tcase_add_test(tc, test_put_many_large);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
