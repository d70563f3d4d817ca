// SPDX-License-Identifier: MIT
/* libFuzzer target: the dm-log-writes reader (core/crash/dmlog.c) over any file. A log its
 * validator passes must convert into a write log the write log's validator passes, and that
 * log must export back into a dm log the validator passes. Whatever the file holds, none
 * may crash. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/cache/wlog.h"
#include "core/crash/dmlog.h"
#include "core/util/log.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char wpath[128], dpath[128];
	struct dmlog_summary sum;
	char err[512];
	int ret;

	if (!wpath[0]) {
		snprintf(wpath, sizeof(wpath), "%s/dm.wlog", fuzz_tmpdir());
		snprintf(dpath, sizeof(dpath), "%s/dm.log", fuzz_tmpdir());
		log_init("fuzz", false, LOG_LVL_ERR);
	}
	ret = dmlog_to_wlog(data, size, 0, wpath, &sum, err, sizeof(err));
	if (ret)
		return 0;
	ret = wlog_validate_path(wpath, NULL, err, sizeof(err));
	if (ret)
		fuzz_fail("a valid dm log converts into a bad write log: %s", err);
	ret = dmlog_from_wlog(wpath, dpath, 512, NULL, err, sizeof(err));
	if (ret && ret != -ENOMEM)
		fuzz_fail("a converted dm log does not export: %s", err);
	return 0;
}
