// SPDX-License-Identifier: MIT
/* libFuzzer target: the write log's validator and readers, over any file. The validator
 * (wlog_validate*, core/cache/wlog.c) from memory and from the file must agree; the record
 * reader replay uses, reading the data and skipping it, must read a log the validator passed
 * to its end without a bad record; and the crash-state reader explore uses
 * (core/crash/wlog_states.c) must accept it too, read it as cut short where the validator
 * does, and decode and build its first states. Whatever the file holds, none may crash. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "core/cache/wlog.h"
#include "core/crash/extmap.h"
#include "core/crash/wlog_states.h"
#include "core/util/log.h"
#include "tests/fuzz/fuzz.h"

/* States built per input: enough to reach the torn and dropped ones of a small log. */
#define FUZZ_STATES 64

/* Every record up to the first power cut, where readers stop; a log the validator passed
 * must read to there. */
static void read_records(const char *path, bool skip_data, bool valid)
{
	struct wlog_reader r;
	struct wlog_rec rec;
	int ret;

	ret = wlog_reader_open(&r, path);
	if (ret) {
		if (valid)
			fuzz_fail("a valid log does not open: %s", strerror(-ret));
		return;
	}
	r.skip_data = skip_data;
	while ((ret = wlog_next(&r, &rec)) > 0 && rec.type != WLOG_CUT)
		;
	if (valid && ret == -EINVAL)
		fuzz_fail("record %" PRIu64 " of a valid log is bad: %s", r.nrec, r.why);
	wlog_reader_close(&r);
}

static void build_states(const char *path, bool valid, const struct wlog_summary *sum)
{
	struct ws_builder b;
	struct ws_state s;
	struct extmap m;
	struct ws_log l;
	uint64_t nacked, h[2];
	char err[256];

	int ret = ws_log_open(&l, path, WS_MAX_K, err, sizeof(err));

	if (ret) {
		if (valid && ret != -ENOMEM)
			fuzz_fail("explore refuses a valid log: %s", err);
		return;
	}
	if (valid && (l.cut_short != sum->cut_short || l.cut_short_after != sum->cut_short_after))
		fuzz_fail("explore reads the log as cut short at %" PRIu64 " after %" PRIu64
			  " records, the validator at %" PRIu64 " after %" PRIu64, l.cut_short,
			  l.cut_short_after, sum->cut_short, sum->cut_short_after);
	ws_builder_init(&b);
	extmap_init(&m);
	for (uint64_t id = 0; id < l.nstates && id < FUZZ_STATES; id++) {
		ws_state_decode(&l, id, &s);
		if (ws_state_build(&l, &b, &s, &m))
			break;
		extmap_hash(&m, l.map, h);
		ws_state_mark(&l, &s, &nacked);
	}
	extmap_free(&m);
	ws_builder_free(&b);
	ws_log_close(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[128];

	if (!path[0]) {
		snprintf(path, sizeof(path), "%s/cache.log", fuzz_tmpdir());
		log_init("fuzz", false, LOG_LVL_ERR);
	}
	struct wlog_summary sum;
	char err[256], err2[256];
	int ret, ret2;

	fuzz_write_file(path, data, size);
	ret = wlog_validate_buf(data, size, &sum, err, sizeof(err));
	ret2 = wlog_validate_path(path, NULL, err2, sizeof(err2));
	if (ret != ret2)
		fuzz_fail("the validator says %d (%s) from memory, %d (%s) from the file", ret,
			  ret ? err : "", ret2, ret2 ? err2 : "");
	/* A log cut short says where, inside the file, and after the records read; one cut
	 * short after its first power cut reads whole up to that cut. */
	if (!ret && sum.cut_short &&
	    (sum.cut_short < 32 || sum.cut_short > size || sum.cut ||
	     sum.cut_short_after != sum.records || sum.end > sum.cut_short))
		fuzz_fail("a log cut short at %" PRIu64 " of %zu bytes reads %" PRIu64 " records to "
			  "byte %" PRIu64 " (cut short after %" PRIu64 ")", sum.cut_short, size,
			  sum.records, sum.end, sum.cut_short_after);
	read_records(path, false, !ret);
	read_records(path, true, !ret);
	build_states(path, !ret, &sum);
	return 0;
}
