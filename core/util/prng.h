/* SPDX-License-Identifier: MIT */
/* The one seeded pseudo-random generator of the core: xoshiro256** drawn from a state seeded
 * through splitmix64. Faults, latency models and the write cache each keep their own state,
 * so that a seed replays its own choices whatever else runs. Not for cryptography. */
#ifndef PLUGDISK_PRNG_H
#define PLUGDISK_PRNG_H

#include <stdint.h>

/* splitmix64: the next value of the sequence whose state is *@x (also a generator alone). */
static inline uint64_t prng_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Seed a xoshiro256** state from @seed. */
static inline void prng_seed(uint64_t s[4], uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s[i] = prng_splitmix64(&seed);
}

static inline uint64_t prng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: the next 64 bits. */
static inline uint64_t prng_next(uint64_t s[4])
{
	uint64_t r = prng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = prng_rotl(s[3], 45);
	return r;
}

/* A uniform double in [0, 1). */
static inline double prng_double(uint64_t s[4])
{
	return (double)(prng_next(s) >> 11) * 0x1.0p-53;
}

/* A uniform double in (0, 1]: safe under log(). */
static inline double prng_unit(uint64_t s[4])
{
	return (double)((prng_next(s) >> 11) + 1) * 0x1.0p-53;
}

#endif
