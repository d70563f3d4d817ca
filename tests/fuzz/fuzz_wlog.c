// SPDX-License-Identifier: MIT
/* libFuzzer target: the write log's readers, over any file. The record reader
 * (core/cache/wlog.c) that replay uses, reading the data and skipping it, and the crash-state
 * reader (core/crash/wlog_states.c) that explore uses, which also decodes and builds the
 * first states of a log it accepts. Whatever the file holds, they must answer, not crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cache/wlog.h"
#include "core/crash/extmap.h"
#include "core/crash/wlog_states.h"
#include "core/util/log.h"
#include "tests/fuzz/fuzz.h"

/* States built per input: enough to reach the torn and dropped ones of a small log. */
#define FUZZ_STATES 64

static void read_records(const char *path, bool skip_data)
{
	struct wlog_reader r;
	struct wlog_rec rec;

	if (wlog_reader_open(&r, path))
		return;
	r.skip_data = skip_data;
	while (wlog_next(&r, &rec) > 0)
		;
	wlog_reader_close(&r);
}

static void build_states(const char *path)
{
	struct ws_builder b;
	struct ws_state s;
	struct extmap m;
	struct ws_log l;
	uint64_t nacked, h[2];
	char err[256];

	if (ws_log_open(&l, path, WS_MAX_K, err, sizeof(err)))
		return;
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
	fuzz_write_file(path, data, size);
	read_records(path, false);
	read_records(path, true);
	build_states(path);
	return 0;
}
