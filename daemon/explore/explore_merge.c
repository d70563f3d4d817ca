// SPDX-License-Identifier: MIT
/* `plugdisk explore --merge REPORT.json...`: shards' --json reports joined into one run's.
 *
 * Notes on the design. A shard's report holds what its checkers found (each failing state's
 * exit status and output) and what it was made from (the log's and the base's fingerprints,
 * the planned states' fingerprint, the options the report depends on, the shard I/N). The
 * merge refuses reports that do not add up to one run: other inputs or another selection,
 * a shard missing or given twice. It then reopens the log the reports name, checks that it
 * is the one they read, and prints the report through the same code as a run
 * (explore_report.c), with the shards' counts added up and their failures in id order: the
 * merged report is the one a run without --shard prints, but for the run's timing. */
#include <errno.h>
#include <inttypes.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/explore/explore.h"
#include "daemon/explore/explore_groups.h"
#include "daemon/explore/explore_merge.h"

/* One shard's report. */
struct xm_report {
	const char *path;
	struct json_object *root;
	uint64_t index, count, states;
};

/* The fields that must be equal in every shard's report: the inputs and the selection. */
static const char *const xm_same[] = {
	"log_size", "log_hash", "base_size", "base_hash", "k", "seed", "budget", "sampler",
	"from_flush", "from_mark", "timeout_ns", "keep_max", "states_total", "windows", "log_cut",
	"from_writes", "sampled", "planned", "plan_hash", NULL,
};

static int xm_bad(const struct xm_report *r, const char *what)
{
	fprintf(stderr, "plugdisk explore: --merge: %s: %s\n", r->path, what);
	return -EINVAL;
}

/* @key of @o: 0 with *@v (NULL for JSON null), or -EINVAL when it is missing or not of
 * @type (null allowed with @nullable). */
static int xm_get(const struct xm_report *r, struct json_object *o, const char *key,
		  enum json_type type, bool nullable, struct json_object **v)
{
	if (!json_object_object_get_ex(o, key, v) ||
	    !(json_object_is_type(*v, type) || (nullable && !*v))) {
		fprintf(stderr, "plugdisk explore: --merge: %s: no '%s' (%s) in it: not a report "
			"of plugdisk explore --json of this version\n", r->path, key,
			json_type_to_name(type));
		return -EINVAL;
	}
	return 0;
}

static int xm_u64(const struct xm_report *r, struct json_object *o, const char *key,
		  uint64_t *out)
{
	struct json_object *v;
	int ret = xm_get(r, o, key, json_type_int, false, &v);

	if (ret)
		return ret;
	if (json_object_get_int64(v) < 0)
		return xm_bad(r, "a count below 0");
	*out = json_object_get_uint64(v);
	return 0;
}

static int xm_hex(const struct xm_report *r, const char *key, uint64_t *out)
{
	struct json_object *v;
	char *end;
	int ret = xm_get(r, r->root, key, json_type_string, false, &v);

	if (ret)
		return ret;
	errno = 0;
	*out = strtoull(json_object_get_string(v), &end, 16);
	return errno || *end ? xm_bad(r, "a fingerprint that is not hexadecimal") : 0;
}

/* A string field, or NULL for JSON null. */
static int xm_str(const struct xm_report *r, struct json_object *o, const char *key,
		  bool nullable, const char **out)
{
	struct json_object *v;
	int ret = xm_get(r, o, key, json_type_string, nullable, &v);

	*out = ret || !v ? NULL : json_object_get_string(v);
	return ret;
}

/* Read report @r and its shard (I/N, 0/1 for a run without --shard). */
static int xm_load(struct xm_report *r)
{
	struct json_object *sh;
	int ret;

	r->root = json_object_from_file(r->path);
	if (!r->root) {
		fprintf(stderr, "plugdisk explore: --merge: %s: %s\n", r->path,
			json_util_get_last_err());
		return -EINVAL;
	}
	if (!json_object_is_type(r->root, json_type_object))
		return xm_bad(r, "not a report of plugdisk explore --json");
	ret = xm_get(r, r->root, "shard", json_type_object, true, &sh);
	if (ret)
		return ret;
	if (!sh) {
		r->index = 0;
		r->count = 1;
		return xm_u64(r, r->root, "planned", &r->states);
	}
	ret = xm_u64(r, sh, "index", &r->index);
	if (!ret)
		ret = xm_u64(r, sh, "count", &r->count);
	if (!ret)
		ret = xm_u64(r, sh, "states", &r->states);
	if (!ret && (!r->count || r->index >= r->count))
		ret = xm_bad(r, "a shard outside 0..count-1");
	return ret;
}

/* Whether report @r was made from what report @r0 was, and is a shard of the same split. */
static int xm_check_same(const struct xm_report *r0, const struct xm_report *r)
{
	for (const char *const *k = xm_same; *k; k++) {
		struct json_object *a, *b;

		if (!json_object_object_get_ex(r0->root, *k, &a))
			return xm_get(r0, r0->root, *k, json_type_null, true, &a);
		if (!json_object_object_get_ex(r->root, *k, &b))
			return xm_get(r, r->root, *k, json_object_get_type(a), true, &b);
		if (!json_object_equal(a, b)) {
			fprintf(stderr, "plugdisk explore: --merge: %s and %s are not shards of one "
				"run: their '%s' differ (%s, %s)%s\n", r0->path, r->path, *k,
				json_object_to_json_string(a), json_object_to_json_string(b),
				!strcmp(*k, "plan_hash") ? ": another selection (--budget, --seed, "
				"--kinds, --windows, --states, --from-*)" : "");
			return -EINVAL;
		}
	}
	if (r->count != r0->count) {
		fprintf(stderr, "plugdisk explore: --merge: %s is shard %" PRIu64 "/%" PRIu64
			" and %s shard %" PRIu64 "/%" PRIu64 ": not one split\n", r0->path,
			r0->index, r0->count, r->path, r->index, r->count);
		return -EINVAL;
	}
	return 0;
}

/* Every shard 0..N-1 once. */
static int xm_check_shards(const struct xm_report *r, int n)
{
	uint64_t count = r[0].count;

	for (uint64_t s = 0; s < count; s++) {
		int seen = -1;

		for (int i = 0; i < n; i++) {
			if (r[i].index != s)
				continue;
			if (seen >= 0) {
				fprintf(stderr, "plugdisk explore: --merge: shard %" PRIu64 "/%" PRIu64
					" twice: %s and %s\n", s, count, r[seen].path, r[i].path);
				return -EINVAL;
			}
			seen = i;
		}
		if (seen < 0) {
			fprintf(stderr, "plugdisk explore: --merge: shard %" PRIu64 "/%" PRIu64
				" is missing (give the reports of shards 0 to %" PRIu64 ")\n", s,
				count, count - 1);
			return -EINVAL;
		}
	}
	return 0;
}

/* The run's options and inputs, as report @r gives them, into @x. */
static int xm_take_run(struct xp *x, const struct xm_report *r)
{
	const char *sampler;
	struct json_object *v;
	uint64_t k;
	int ret = 0;

	ret |= xm_str(r, r->root, "log", false, &x->log_path);
	ret |= xm_str(r, r->root, "base", false, &x->base_path);
	ret |= xm_u64(r, r->root, "k", &k);
	ret |= xm_u64(r, r->root, "seed", &x->seed);
	ret |= xm_u64(r, r->root, "budget", &x->budget);
	ret |= xm_u64(r, r->root, "planned", &x->planned);
	ret |= xm_get(r, r->root, "sampled", json_type_boolean, false, &v);
	if (!ret)
		x->sampled = json_object_get_boolean(v);
	ret |= xm_str(r, r->root, "sampler", false, &sampler);
	ret |= xm_u64(r, r->root, "from_writes", &x->sel.from_ops);
	ret |= xm_get(r, r->root, "from_flush", json_type_int, true, &v);
	if (!ret && v) {
		x->sel.has_from_flush = true;
		x->sel.from_flush = json_object_get_uint64(v);
	}
	ret |= xm_str(r, r->root, "from_mark", true, &x->sel.from_mark);
	ret |= xm_u64(r, r->root, "timeout_ns", &x->timeout_ns);
	ret |= xm_str(r, r->root, "keep_failing", true, &x->keep_dir);
	ret |= xm_u64(r, r->root, "keep_max", &x->keep_max);
	ret |= xm_u64(r, r->root, "log_size", &x->print.log_size);
	ret |= xm_hex(r, "log_hash", &x->print.log_hash);
	ret |= xm_u64(r, r->root, "base_size", &x->print.base_size);
	ret |= xm_hex(r, "base_hash", &x->print.base_hash);
	ret |= xm_hex(r, "plan_hash", &x->print.plan_hash);
	if (ret)
		return -EINVAL;
	if (k > WS_MAX_K)
		return xm_bad(r, "a 'k' above 3");
	x->k = (unsigned int)k;
	x->sel.uniform = !strcmp(sampler, "uniform");
	return 0;
}

/* One failure of a report into x->fails. */
static int xm_take_fail(struct xp *x, const struct xm_report *r, struct json_object *o)
{
	struct xp_fail *fl = &x->fails[x->nfails];
	const char *output, *image;
	struct json_object *v;
	uint64_t status;
	int ret = 0;

	memset(fl, 0, sizeof(*fl));
	ret |= xm_u64(r, o, "id", &fl->id);
	ret |= xm_u64(r, o, "status", &status);
	ret |= xm_get(r, o, "timed_out", json_type_boolean, false, &v);
	ret |= xm_str(r, o, "output", false, &output);
	ret |= xm_str(r, o, "image", true, &image);
	if (ret)
		return -EINVAL;
	if (json_object_object_get_ex(o, "culprit", &v))
		return xm_bad(r, "a report of --minimize: its culprits cannot be merged yet");
	json_object_object_get_ex(o, "timed_out", &v);
	if (fl->id >= x->log.nstates || status > 255 + 128)
		return xm_bad(r, "a failure of a state the log does not have");
	fl->status = (int)status;
	fl->timed_out = json_object_get_boolean(v);
	fl->output = strdup(output ? output : "");
	fl->image = image ? strdup(image) : NULL;
	if (!fl->output || (image && !fl->image)) {
		free(fl->output);
		free(fl->image);
		return -ENOMEM;
	}
	x->nfails++;
	return 0;
}

/* Report @r's counts and failures added to @x's. */
static int xm_add(struct xp *x, const struct xm_report *r, bool first)
{
	struct json_object *kinds, *fails;
	uint64_t checked, passed, dups, failed;
	int ret = 0;

	ret |= xm_u64(r, r->root, "checked", &checked);
	ret |= xm_u64(r, r->root, "passed", &passed);
	ret |= xm_u64(r, r->root, "duplicates", &dups);
	ret |= xm_u64(r, r->root, "failed", &failed);
	ret |= xm_get(r, r->root, "kinds", json_type_object, false, &kinds);
	ret |= xm_get(r, r->root, "failures", json_type_array, false, &fails);
	if (ret)
		return -EINVAL;
	if (json_object_array_length(fails) != failed)
		return xm_bad(r, "'failed' is not the number of 'failures'");
	x->checked += checked;
	x->passed += passed;
	x->dups += dups;
	for (unsigned int k = 0; k < xp_nkinds(); k++) {
		struct xp_kind_count *c = &x->kinds[k];
		struct json_object *o;
		uint64_t states, planned, kc, kf;

		if (!json_object_object_get_ex(kinds, ws_kind_names[k], &o))
			continue;
		ret |= xm_u64(r, o, "states", &states);
		ret |= xm_u64(r, o, "planned", &planned);
		ret |= xm_u64(r, o, "checked", &kc);
		ret |= xm_u64(r, o, "failed", &kf);
		if (ret)
			return -EINVAL;
		if (first) {
			c->states = states;
			c->planned = planned;
		}
		c->checked += kc;
		c->failed += kf;
	}
	for (size_t i = 0; i < failed; i++) {
		ret = xm_take_fail(x, r, json_object_array_get_idx(fails, i));
		if (ret)
			return ret;
	}
	return 0;
}

/* The failures grouped by cause, by the run's own signature, on the merged failures. */
static int xm_group(struct xp *x)
{
	for (uint64_t i = 0; i < x->nfails; i++) {
		struct ws_state s;
		char *sig;
		int64_t gi;

		ws_state_decode(&x->log, x->fails[i].id, &s);
		sig = xp_state_signature(x, &s, NULL, 0, x->fails[i].output);
		if (!sig)
			return -ENOMEM;
		gi = xp_groups_add(&x->groups, sig, x->fails[i].id);
		free(sig);
		if (gi < 0)
			return (int)gi;
	}
	xp_groups_sort(&x->groups);
	return 0;
}

static int cmp_fail_id(const void *a, const void *b)
{
	const struct xp_fail *p = a, *q = b;

	return p->id < q->id ? -1 : p->id > q->id;
}

/* Open the log the reports name and check that it is the one they read. */
static int xm_open_log(struct xp *x, bool *opened)
{
	struct xp_print want = x->print;
	char err[512];
	int ret = ws_log_open(&x->log, x->log_path, x->k, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "plugdisk explore: --merge: the shards' log: %s\n", err);
		return ret;
	}
	xp_print_inputs(x, -1);
	if (x->print.log_size != want.log_size || x->print.log_hash != want.log_hash) {
		fprintf(stderr, "plugdisk explore: --merge: %s is not the log the shards read "
			"(its size or hash differs from the reports' log_size, log_hash)\n",
			x->log_path);
		ws_log_close(&x->log);
		return -EINVAL;
	}
	x->print = want;
	*opened = true;
	return 0;
}

/* Join the loaded reports @r[0..n-1] into @x. */
static int xm_join(struct xp *x, const struct xm_report *r, int n, bool *opened)
{
	uint64_t total = 0, states = 0;
	int ret = xm_take_run(x, &r[0]);

	for (int i = 1; i < n && !ret; i++)
		ret = xm_check_same(&r[0], &r[i]);
	if (!ret)
		ret = xm_check_shards(r, n);
	for (int i = 0; i < n && !ret; i++) {
		struct json_object *f;

		states += r[i].states;
		if (json_object_object_get_ex(r[i].root, "failures", &f) &&
		    json_object_is_type(f, json_type_array))
			total += json_object_array_length(f);
	}
	if (!ret && states != x->planned) {
		fprintf(stderr, "plugdisk explore: --merge: the shards hold %" PRIu64 " states, the "
			"run planned %" PRIu64 "\n", states, x->planned);
		ret = -EINVAL;
	}
	if (ret)
		return ret;
	ret = xm_open_log(x, opened);
	if (ret)
		return ret;
	x->fails = calloc(total ? total : 1, sizeof(*x->fails));
	if (!x->fails)
		return -ENOMEM;
	x->capfails = total;
	for (int i = 0; i < n && !ret; i++)
		ret = xm_add(x, &r[i], i == 0);
	if (ret)
		return ret;
	qsort(x->fails, x->nfails, sizeof(*x->fails), cmp_fail_id);
	for (uint64_t i = 1; i < x->nfails; i++)
		if (x->fails[i].id == x->fails[i - 1].id) {
			fprintf(stderr, "plugdisk explore: --merge: state %" PRIu64 " failed in two "
				"shards: their shares overlap\n", x->fails[i].id);
			return -EINVAL;
		}
	/* The owners are read again from the log and the base, as the shards read them: the
	 * merged groups are the run's own. */
	x->owner = xp_owner_new(&x->log, x->base_path);
	if (!x->owner)
		return -ENOMEM;
	x->owners_shown = true;
	return xm_group(x);
}

int xp_merge_main(struct xp *x, int argc, char **argv)
{
	struct xm_report *r;
	bool opened = false;
	int ret = 0, status;

	if (x->budget || x->has_state || x->image || x->keep_dir || x->sel.chosen || x->sel.list ||
	    x->shard.count || x->timeout_ns || x->sel.uniform) {
		fprintf(stderr, "plugdisk explore: --merge takes --json and the shards' reports "
			"(REPORT.json...), no other option: the reports say how they were run\n");
		return 2;
	}
	if (argc < 1) {
		fprintf(stderr, "plugdisk explore: --merge: give the shards' --json reports\n");
		return 2;
	}
	r = calloc((size_t)argc, sizeof(*r));
	if (!r) {
		fprintf(stderr, "plugdisk explore: out of memory\n");
		return 3;
	}
	for (int i = 0; i < argc && !ret; i++) {
		r[i].path = argv[i];
		ret = xm_load(&r[i]);
	}
	if (!ret)
		ret = xm_join(x, r, argc, &opened);
	if (!ret)
		xp_report(x, stdout);
	status = ret == -ENOMEM ? 3 : ret ? 2 : xp_status(x);
	if (ret == -ENOMEM)
		fprintf(stderr, "plugdisk explore: out of memory\n");
	for (uint64_t i = 0; i < x->nfails; i++) {
		free(x->fails[i].output);
		free(x->fails[i].image);
	}
	free(x->fails);
	xp_groups_free(&x->groups);
	xp_owner_free(x->owner);
	if (opened)
		ws_log_close(&x->log);
	for (int i = 0; i < argc; i++)
		json_object_put(r[i].root);
	free(r);
	return status;
}
