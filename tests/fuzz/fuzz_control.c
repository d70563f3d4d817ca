// SPDX-License-Identifier: MIT
/* libFuzzer target: the control file's commands (daemon/control/), as a write gives them to
 * control_run(): the line splitting, the command table and every handler's argument parsing,
 * run for real against a daemon's core (queue, controller, faults, write cache with its log,
 * over an image file), built once as the daemon builds it, without a mount. After each
 * input a fixed command list brings the state back, so that an input replays alone; it must
 * always succeed; and the listing a read would return, written back after it, must list
 * the same (but for its comments: ids and counters). */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/stage/chain.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "daemon/control/control.h"
#include "daemon/daemon.h"
#include "daemon/reload.h"
#include "tests/fuzz/fuzz.h"

/* No request ever comes, so no command waits: a stall, a freeze or a cut have nothing to
 * hold. The state every input starts from. */
static const char reset[] = "thaw\nstart\nunplug\nfault clear\nrelease\npowercut disarm\n"
			    "poweron\n";

static struct pd *pd_setup(void)
{
	static struct pd pdata;
	struct pd *pd = &pdata;
	char image[128], wlog[128], err[1024], *sets[6];
	char set_image[160], set_log[160];
	struct stage bottom;
	struct chain_params p;

	snprintf(image, sizeof(image), "%s/disk.img", fuzz_tmpdir());
	snprintf(wlog, sizeof(wlog), "%s/cache.log", fuzz_tmpdir());
	snprintf(set_image, sizeof(set_image), "disk.image=%s", image);
	snprintf(set_log, sizeof(set_log), "cache.log=%s", wlog);
	sets[0] = set_image;
	sets[1] = (char *)"disk.size=64M";
	sets[2] = (char *)"cache.size=16M";
	sets[3] = set_log;
	sets[4] = (char *)"mount.io_uring=off";
	sets[5] = (char *)"cache.mode=writeback";
	if (conf_load(NULL, sets, 6, &pd->cfg, err, sizeof(err)))
		fuzz_fail("conf_load: %s", err);
	if (backend_open(&pd->be, image, pd->cfg.disk_size, err, sizeof(err)))
		fuzz_fail("backend_open: %s", err);
	pd_cap_request_size(pd, &pd->cfg.queue);
	pthread_mutex_init(&pd->attr_lock, NULL);
	pthread_mutex_init(&pd->data_lock, NULL);
	pthread_cond_init(&pd->data_cond, NULL);
	pd->quit_pipe[0] = pd->quit_pipe[1] = pd->kick_fd = -1;
	pd->cfg.ctrl.disk_size = pd->be.size;
	if (timer_init(&pd->timer, true))
		fuzz_fail("timer_init failed");
	bottom = backend_stage(&pd->be);
	pd_chain_params(pd, &pd->cfg, &p);
	p.timer = &pd->timer;
	p.cache_thread = true;
	if (chain_build(&pd->chain, &bottom, &p, err, sizeof(err)))
		fuzz_fail("chain_build: %s: %s", pd->chain.failed, err);
	if (ctrl_init(&pd->ctrl, &pd->cfg.ctrl, &pd->timer, chain_top(&pd->chain)->ops->exec,
		      chain_top(&pd->chain)->self, (int64_t)clock_now_ns()))
		fuzz_fail("ctrl_init failed");
	pd->ctrl.admit_ns = chain_admit_ns;
	pd->ctrl.admit_arg = &pd->chain;
	if (queue_init(&pd->q, &pd->cfg.queue, &pd->ctrl, &pd->timer, NULL, NULL))
		fuzz_fail("queue_init failed");
	return pd;
}

static void run_reset(struct pd *pd, struct ctl_out *out)
{
	int ret = control_run(pd, reset, sizeof(reset) - 1, out);

	if (ret)
		fuzz_fail("the reset failed (%s): %.*s", strerror(-ret), (int)out->len,
			  out->buf ? out->buf : "");
}

/* A listing without its comments, which carry ids and counters ("# id=1 matched=3"), and
 * without a timed arm's line, which lists the time left. */
static void strip_comments(struct ctl_out *l)
{
	char *src = l->buf, *dst = l->buf;

	if (!src)
		return;
	while (*src) {
		size_t n = strcspn(src, "\n"), keep = n;
		char *hash = memchr(src, '#', n);

		if (hash)
			keep = (size_t)(hash - src);
		while (keep && src[keep - 1] == ' ')
			keep--;
		if (!strncmp(src, "powercut arm after_ms=", 22))
			keep = 0;
		if (keep) {
			memmove(dst, src, keep);
			dst += keep;
			*dst++ = '\n';
		}
		src += n + (src[n] == '\n');
	}
	*dst = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pd *pd;
	struct ctl_out out = { 0 }, listing = { 0 }, again = { 0 };
	int ret;

	if (!pd) {
		log_init("fuzz", false, LOG_LVL_ERR);
		pd = pd_setup();
	}
	control_run(pd, (const char *)data, size, &out);
	/*
	 * What a read lists, written back from the reset state, lists the same. A cut armed on a
	 * time fires from the timer thread whenever it comes due, so the state of the power is
	 * not a function of the commands alone: such inputs are run for crashes, not compared.
	 */
	if (memmem(data, size, "after_ms", 8)) {
		run_reset(pd, &out);
		free(out.buf);
		return 0;
	}
	control_show(pd, &listing);
	if (listing.oom)
		fuzz_fail("the listing ran out of memory");
	run_reset(pd, &out);
	ret = control_run(pd, listing.buf, listing.len, &out);
	if (ret)
		fuzz_fail("the listing does not replay (%s): %.*s\n%.*s", strerror(-ret),
			  (int)out.len, out.buf ? out.buf : "", (int)listing.len, listing.buf);
	control_show(pd, &again);
	strip_comments(&listing);
	strip_comments(&again);
	if (!again.oom && strcmp(listing.buf, again.buf))
		fuzz_fail("the listing replays as another:\n%s---\n%s", listing.buf, again.buf);
	run_reset(pd, &out);
	free(out.buf);
	free(listing.buf);
	free(again.buf);
	return 0;
}
