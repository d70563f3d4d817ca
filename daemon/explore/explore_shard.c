// SPDX-License-Identifier: MIT
/* `plugdisk explore --shard I/N`: one deterministic share of the chosen states.
 *
 * Notes on the design. The shards of a selection must add up to one run: their checks
 * disjoint, their union the states one run checks, and the states one run skips as identical
 * to one it checked skipped by a shard too. A share by position (every N-th state) would
 * check twice two identical states that fall in two shards. So a state goes to the shard its
 * check's key names (its overlay and its marks, as the run's skip of identical states keys
 * it): identical states land in one shard, which checks the first and skips the rest, as one
 * run does. Each shard builds every planned state once to key it; a build costs far less
 * than a checker. The selection itself (--budget, --seed, --kinds...) is made whole first,
 * so that every shard shares out the same sample.
 *
 * The fingerprints let --merge refuse reports of other inputs: the log's bytes, the base's
 * data (holes and zeros alike) and the planned ids. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/parse.h"
#include "core/util/prng.h"
#include "daemon/explore/explore.h"
#include "daemon/explore/explore_shard.h"

#define XP_HASH_BLOCK 4096	/* the base is hashed by blocks; a block of zeros is skipped */

int xp_parse_shard(struct xp_shard *sh, const char *arg)
{
	const char *slash = strchr(arg, '/');
	char num[32];
	size_t len = slash ? (size_t)(slash - arg) : 0;

	if (!slash || !len || len >= sizeof(num))
		goto bad;
	memcpy(num, arg, len);
	num[len] = '\0';
	if (conf_parse_u64_whole(num, &sh->index) || conf_parse_u64_whole(slash + 1, &sh->count))
		goto bad;
	if (!sh->count || sh->count > XP_MAX_SHARDS || sh->index >= sh->count)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "plugdisk explore: bad --shard (I/N: shard I of N, 0 <= I < N <= %d): "
		"%s\n", XP_MAX_SHARDS, arg);
	sh->count = 0;
	return -EINVAL;
}

void xp_state_key(const struct xp *x, const struct ws_state *s, const struct extmap *map,
		  uint64_t h[2])
{
	uint64_t nacked;
	int64_t mark = ws_state_mark(&x->log, s, &nacked);

	/* The same image after more acknowledged commits is a new question for the checker. */
	extmap_hash(map, x->log.map, h);
	h[0] ^= (nacked + 1) * 0x9e3779b97f4a7c15ull;
	h[1] ^= (uint64_t)(mark + 2) * 0xc2b2ae3d27d4eb4full;
}

/* One 64-bit word into hash @h. */
static uint64_t mix(uint64_t h, uint64_t w)
{
	h ^= w;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/* @len bytes at @p into hash @h: two lanes, so that the multiplies overlap. */
static uint64_t hash_bytes(uint64_t h, const uint8_t *p, uint64_t len)
{
	uint64_t a = h, b = h ^ 0x9e3779b97f4a7c15ull, w[2], i = 0;

	for (; i + 16 <= len; i += 16) {
		memcpy(w, p + i, 16);
		a = mix(a, w[0]);
		b = mix(b, w[1]);
	}
	for (; i < len; i++)
		a = mix(a, p[i]);
	return mix(a, b ^ len);
}

uint64_t xp_run_states(const struct xp *x)
{
	return x->shard.count ? x->shard.states : x->planned;
}

int xp_shard_select(struct xp *x, uint64_t **ids, const volatile sig_atomic_t *stop)
{
	uint64_t *in = *ids, *out = NULL, n = 0, h = 0x243f6a8885a308d3ull;
	struct ws_builder b;
	struct extmap m;
	int ret = 0;

	for (uint64_t i = 0; i < x->planned; i++)
		h = mix(h, in ? in[i] : i);
	x->print.plan_hash = mix(h, x->planned);
	if (!x->shard.count)
		return 0;
	out = calloc(x->planned ? x->planned : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	ws_builder_init(&b);
	b.stop = stop;
	extmap_init(&m);
	for (uint64_t i = 0; i < x->planned && !ret; i++) {
		uint64_t key[2], id = in ? in[i] : i;
		struct ws_state s;

		ws_state_decode(&x->log, id, &s);
		ret = ws_state_build(&x->log, &b, &s, &m);
		if (ret)
			break;
		xp_state_key(x, &s, &m, key);
		if (prng_splitmix64(&(uint64_t){ key[0] ^ key[1] }) % x->shard.count ==
		    x->shard.index)
			out[n++] = id;
	}
	extmap_free(&m);
	ws_builder_free(&b);
	if (ret) {
		free(out);
		return ret;
	}
	free(in);
	*ids = out;
	x->shard.states = n;
	return 0;
}

/* The base's data: each block not all zeros, with its offset, so that a sparse copy and a
 * full one of the same image hash alike. */
static int hash_base(int fd, uint64_t *size, uint64_t *hash)
{
	static const uint8_t zeros[XP_HASH_BLOCK];
	uint8_t *buf = malloc(1 << 20);
	uint64_t h = 0x13198a2e03707344ull;
	off_t end = lseek(fd, 0, SEEK_END), pos = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (end >= 0 && pos < end) {
		off_t data = lseek(fd, pos, SEEK_DATA), hole;
		ssize_t got;

		if (data < 0 && errno == ENXIO)
			break; /* a hole to the end */
		hole = data < 0 ? -1 : lseek(fd, data, SEEK_HOLE);
		if (hole < 0) {
			ret = -errno;
			break;
		}
		pos = data & ~(off_t)(XP_HASH_BLOCK - 1);
		while (pos < hole) {
			size_t want = hole - pos < (1 << 20) ? (size_t)(hole - pos) : 1 << 20;

			got = pread(fd, buf, want, pos);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				ret = got < 0 ? -errno : -EIO;
				goto out;
			}
			for (ssize_t o = 0; o < got; o += XP_HASH_BLOCK) {
				size_t bl = got - o < XP_HASH_BLOCK ? (size_t)(got - o) : XP_HASH_BLOCK;

				if (!memcmp(buf + o, zeros, bl))
					continue;
				h = mix(h, (uint64_t)(pos + o));
				h = hash_bytes(h, buf + o, bl);
			}
			pos += got;
		}
	}
	if (end < 0)
		ret = -errno;
out:
	free(buf);
	*size = end < 0 ? 0 : (uint64_t)end;
	*hash = h;
	return ret;
}

int xp_print_inputs(struct xp *x, int base_fd)
{
	int ret;

	x->print.log_size = x->log.map_len;
	x->print.log_hash = hash_bytes(0x243f6a8885a308d3ull, x->log.map, x->log.map_len);
	if (base_fd < 0)
		return 0;
	ret = hash_base(base_fd, &x->print.base_size, &x->print.base_hash);
	if (ret)
		fprintf(stderr, "plugdisk explore: reading %s: %s\n", x->base_path, strerror(-ret));
	return ret;
}
