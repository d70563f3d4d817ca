// SPDX-License-Identifier: MIT
/* `plugdisk explore`: run a checker on every crash state a power cut could leave, by the
 * write log (cache.log) and the write cache's rules (core/crash/wlog_states.c), each state served
 * as a disk by a FUSE filesystem of explore's own (daemon/explore/explore_fuse.c) instead of a copy.
 *
 * This file holds the command line, the listing and --state --image; the checker runner is
 * daemon/explore/explore_run.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf/parse.h"
#include "core/crash/dmlog.h"
#include "core/util/clock.h"
#include "core/util/log.h"
#include "core/util/units.h"
#include "daemon/daemon.h"
#include "daemon/explore/explore.h"
#include "daemon/explore/explore_checker.h"
#include "daemon/explore/explore_fuse.h"
#include "daemon/explore/explore_merge.h"
#include "daemon/explore/explore_run.h"


#define XP_MAX_JOBS 256
#define XP_KEEP_MAX 16	/* --keep-failing's images by default: a run can fail thousands */
#define XP_MINIMIZE_BUDGET 64	/* --minimize's checker runs per state by default */

static void explore_usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk explore [--budget N] [-j N] [--seed S] [--json]\n"
		"                        [--keep-failing DIR] [-k K] [--state ID] [--timeout T]\n"
		"                        [--kinds LIST] [--windows A-B] [--states ID,A-B,...]\n"
		"                        [--weights KIND=N,...] [--sampler stratified|uniform]\n"
		"                        [--from-flush N | --from-mark TEXT] [--shard I/N]\n"
		"                        [--minimize] [--minimize-budget N]\n"
		"                        LOG BASE_IMAGE -- CHECKER [ARG...]\n"
		"       plugdisk explore --merge [--json] REPORT.json...\n"
		"       plugdisk explore [-k K] --state ID --image OUT LOG BASE_IMAGE\n"
		"       plugdisk explore --list-states [--json] [selection] LOG [BASE_IMAGE]\n"
		"\n"
		"Run CHECKER on every crash state a power cut could leave by the write log LOG\n"
		"(cache.log) over BASE_IMAGE (what the disk held when the log began): the state each\n"
		"completed flush made durable, and between two flushes every prefix of the pending\n"
		"writes in completion order, every subset dropping up to K of them (every subset in\n"
		"a window of at most 10), and writes torn at the atomic unit.\n"
		"The checker gets, in its environment:\n"
		"  PLUGDISK_STATE     a file holding the state: read, write (thrown away), loop-mount\n"
		"  PLUGDISK_STATE_ID  the state's number\n"
		"  PLUGDISK_MARK      the last mark the state made durable (empty: none)\n"
		"  PLUGDISK_MARKS     a file: the marks acknowledged before the cut, one a line\n"
		"  PLUGDISK_STATE_KIND    flush, prefix, subset, drop, torn, ...\n"
		"  PLUGDISK_STATE_WINDOW  the state's window (0: from the log's start)\n"
		"  PLUGDISK_STATE_JSON    a file: the state as a JSON object, as --json reports it\n"
		"It passes a state by exiting 0. A CHECKER named without a '/' that is not on PATH\n"
		"is looked for among the ready checkers installed with plugdisk\n"
		"(BINDIR/../libexec/plugdisk: plugdisk-check-ext4, -xfs, -btrfs, -sqlite).\n"
		"  --budget N         check at most N states: when there are more, spread over every\n"
		"                     kind, then every window, before any twice, drawn from --seed\n"
		"  --weights K=N,...  under --budget, N states of kind K per round (default 1)\n"
		"  --sampler S        stratified (the default) or uniform (a plain random sample)\n"
		"  --kinds LIST       only states of these kinds (comma separated)\n"
		"  --windows A-B      only states of windows A to B (or one window A)\n"
		"  --states LIST      only these states: IDs and ranges A-B, comma separated\n"
		"  --from-flush N     the writes before flush N are durable by decree (setup):\n"
		"                     no state loses one, every image starts with them\n"
		"  --from-mark TEXT   the same from the first mark TEXT\n"
		"  --list-states      print the chosen states (id, kind, window, flush, writes kept,\n"
		"                     dropped and torn, marks), run nothing; with --json as JSON\n"
		"  --owners           with --list-states: name each write's owner on the image's\n"
		"                     filesystem (a report names its failures' always)\n"
		"  -j, --jobs N       checkers at once (default: the CPU count)\n"
		"  --seed S           the sample's seed (default 1)\n"
		"  -k K               drop up to K writes of a large window (0..3, default 2)\n"
		"  --json             the report as JSON\n"
		"  --minimize         for each failing state, the fewest of its lost writes that\n"
		"                     still fail when every other write is kept (ddmin)\n"
		"  --minimize-budget N  checker runs per state for --minimize (64; 0: no bound)\n"
		"  --keep-failing DIR write each failing state's image to DIR/state-ID.img, the\n"
		"                     first 16 to fail of each group (--keep-max N; 0: every one)\n"
		"  --state ID         only state ID (as a report names it)\n"
		"  --timeout T        kill a checker (and its process group) that runs longer than\n"
		"                     T (seconds, or 90s, 5min); the state fails as timed out\n"
		"  --image OUT        with --state: write the state's image to OUT, run nothing\n"
		"  --shard I/N        check share I (0..N-1) of the chosen states (of the sample\n"
		"                     under --budget): N such runs check what one run would\n"
		"  --merge            join the --json reports of shards 0..N-1 into one report,\n"
		"                     the one a run without --shard prints (text, or --json)\n"
		"A state that failed its check exits 1; bad input 2; explore's own failure 3;\n"
		"every state checked passed but the log is cut short (a write to it failed, so\n"
		"the states after the cut are unknown) 5.\n");
	pd_exit_help(f);
}

/* One checker at work. */
/* --state ID --image OUT: write that state, nothing else. */
static int xp_write_state(struct xp *x, int base_fd)
{
	struct ws_builder b;
	struct extmap m;
	struct ws_state s;
	int ret;

	ws_builder_init(&b);
	extmap_init(&m);
	ws_state_decode(&x->log, x->state, &s);
	ret = ws_state_build(&x->log, &b, &s, &m);
	if (!ret)
		ret = xp_write_image(x->image, base_fd, x->log.hdr.disk_size, &m);
	else
		fprintf(stderr, "plugdisk explore: out of memory\n");
	extmap_free(&m);
	ws_builder_free(&b);
	return ret ? 3 : 0;
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "plugdisk explore: bad %s: %s\n", what, arg);
	return 2;
}

/* Open x->log_path, a write log or a dm-log-writes log (converted, for a disk of
 * @disk_size bytes). 0 or -errno, @err said. */
static int xp_log_open(struct xp *x, uint64_t disk_size, char *err, size_t errlen)
{
	struct dmlog_src src;
	char msg[400];
	int ret = dmlog_src_open(&src, x->log_path, disk_size, msg, sizeof(msg));

	if (ret) {
		snprintf(err, errlen, "%s: %s", x->log_path, msg);
		return ret == -EPROTO ? -EINVAL : ret;
	}
	ret = ws_log_open(&x->log, src.path, x->k, err, errlen);
	dmlog_src_close(&src); /* the log is mapped */
	if (!ret && x->log.cut_short) {
		wlog_cut_short_text(msg, sizeof(msg), x->log.cut_short_after, x->log.cut_short);
		fprintf(stderr, "plugdisk explore: %s: warning: %s\n", x->log_path, msg);
	}
	return ret;
}

/* --list-states [--json] [selection] LOG [BASE_IMAGE]: print the chosen states. */
static int xp_list_main(struct xp *x, int argc, char **argv)
{
	uint64_t *ids = NULL, disk_size = 0;
	struct stat st;
	char err[512];
	int ret, status = 0;

	if (argc > 2 || x->checker || x->image || x->has_state) {
		fprintf(stderr, "plugdisk explore: --list-states takes LOG [BASE_IMAGE], no "
			"checker, --image or --state (--states picks)\n");
		return 2;
	}
	x->log_path = argv[0];
	x->base_path = argc > 1 ? argv[1] : "";
	x->sel.list_json = x->json;
	if (*x->base_path && !stat(x->base_path, &st) && S_ISREG(st.st_mode))
		disk_size = (uint64_t)st.st_size;
	ret = xp_log_open(x, disk_size, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "plugdisk explore: %s\n", err);
		xp_select_free(&x->sel);
		return ret == -ENOMEM ? 3 : 2;
	}
	if (x->owners_shown && !(x->owner = xp_owner_new(&x->log, x->base_path))) {
		fprintf(stderr, "plugdisk explore: out of memory\n");
		ws_log_close(&x->log);
		xp_select_free(&x->sel);
		return 3;
	}
	ret = xp_select_states(x, &ids);
	if (!ret && x->shard.count) {
		ret = xp_shard_select(x, &ids, &xp_stop);
		x->planned = x->shard.states;
	}
	if (ret)
		status = ret == -ENOMEM || ret == -EINTR ? 3 : 2;
	else
		xp_list_states(x, ids, stdout);
	free(ids);
	xp_owner_free(x->owner);
	ws_log_close(&x->log);
	xp_select_free(&x->sel);
	return status;
}

int pd_explore_main(int argc, char **argv)
{
	enum { O_BUDGET = 256, O_SEED, O_JSON, O_KEEP, O_STATE, O_IMAGE, O_TIMEOUT, O_KINDS,
	       O_WINDOWS, O_STATES, O_WEIGHTS, O_SAMPLER, O_LIST, O_FROM_FLUSH, O_FROM_MARK,
	       O_KEEP_MAX, O_MINIMIZE, O_MINIMIZE_BUDGET, O_SHARD, O_MERGE, O_OWNERS };
	static const struct option lo[] = {
		{ "budget", required_argument, 0, O_BUDGET }, { "jobs", required_argument, 0, 'j' },
		{ "seed", required_argument, 0, O_SEED },     { "json", no_argument, 0, O_JSON },
		{ "keep-failing", required_argument, 0, O_KEEP },
		{ "keep-max", required_argument, 0, O_KEEP_MAX },
		{ "minimize", no_argument, 0, O_MINIMIZE },
		{ "minimize-budget", required_argument, 0, O_MINIMIZE_BUDGET },
		{ "state", required_argument, 0, O_STATE },   { "image", required_argument, 0, O_IMAGE },
		{ "timeout", required_argument, 0, O_TIMEOUT },
		{ "kinds", required_argument, 0, O_KINDS },   { "windows", required_argument, 0, O_WINDOWS },
		{ "states", required_argument, 0, O_STATES }, { "weights", required_argument, 0, O_WEIGHTS },
		{ "sampler", required_argument, 0, O_SAMPLER },
		{ "list-states", no_argument, 0, O_LIST },
		{ "owners", no_argument, 0, O_OWNERS },
		{ "from-flush", required_argument, 0, O_FROM_FLUSH },
		{ "from-mark", required_argument, 0, O_FROM_MARK },
		{ "shard", required_argument, 0, O_SHARD },   { "merge", no_argument, 0, O_MERGE },
		{ "help", no_argument, 0, 'h' },	       { 0, 0, 0, 0 },
	};
	struct xp x = { .seed = 1, .k = 2, .keep_max = XP_KEEP_MAX,
			.minimize_budget = XP_MINIMIZE_BUDGET };
	uint64_t v, *ids = NULL;
	struct sigaction sa;
	struct stat st;
	char err[512], *ready = NULL;
	int opt, ret, base_fd, status;
	bool merge = false;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	log_init("plugdisk explore", false, LOG_LVL_WARN);
	x.jobs = cpus > 0 ? (unsigned int)cpus : 1;
	while ((opt = getopt_long(argc, argv, "+hj:k:", lo, NULL)) != -1) {
		switch (opt) {
		case O_MINIMIZE:
			x.minimize = true;
			break;
		case O_MINIMIZE_BUDGET:
			if (conf_parse_u64_whole(optarg, &x.minimize_budget))
				return bad("--minimize-budget (a whole number; 0: no bound)", optarg);
			x.minimize = true;
			break;
		case O_BUDGET:
			if (conf_parse_u64_whole(optarg, &x.budget) || !x.budget)
				return bad("--budget (a whole number > 0)", optarg);
			break;
		case 'j':
			if (conf_parse_u64_whole(optarg, &v) || !v || v > XP_MAX_JOBS)
				return bad("-j (1..256)", optarg);
			x.jobs = (unsigned int)v;
			break;
		case 'k':
			if (conf_parse_u64_whole(optarg, &v) || v > WS_MAX_K)
				return bad("-k (0..3)", optarg);
			x.k = (unsigned int)v;
			break;
		case O_SEED:
			if (conf_parse_u64_whole(optarg, &x.seed))
				return bad("--seed", optarg);
			break;
		case O_JSON:
			x.json = true;
			break;
		case O_KEEP:
			x.keep_dir = optarg;
			break;
		case O_KEEP_MAX:
			if (conf_parse_u64_whole(optarg, &x.keep_max))
				return bad("--keep-max (a whole number; 0: no cap)", optarg);
			break;
		case O_STATE:
			if (conf_parse_u64_whole(optarg, &x.state))
				return bad("--state", optarg);
			x.has_state = true;
			break;
		case O_IMAGE:
			x.image = optarg;
			break;
		case O_TIMEOUT:
			if (units_parse_duration(optarg, NSEC_PER_SEC, &x.timeout_ns) ||
			    !x.timeout_ns)
				return bad("--timeout (a duration > 0: 90, 90s, 5min)", optarg);
			break;
		case O_KINDS:
			if (xp_parse_kinds(&x.sel, optarg))
				return 2;
			break;
		case O_WINDOWS:
			if (xp_parse_windows(&x.sel, optarg))
				return 2;
			break;
		case O_STATES:
			ret = xp_parse_states(&x.sel, optarg);
			if (ret)
				return ret == -ENOMEM ? 3 : 2;
			break;
		case O_WEIGHTS:
			if (xp_parse_weights(&x.sel, optarg))
				return 2;
			break;
		case O_SAMPLER:
			if (xp_parse_sampler(&x.sel, optarg))
				return 2;
			break;
		case O_LIST:
			x.sel.list = true;
			break;
		case O_OWNERS:
			x.owners_shown = true;
			break;
		case O_FROM_FLUSH:
			if (xp_parse_from_flush(&x.sel, optarg))
				return 2;
			break;
		case O_FROM_MARK:
			if (xp_parse_from_mark(&x.sel, optarg))
				return 2;
			break;
		case O_SHARD:
			if (xp_parse_shard(&x.shard, optarg))
				return 2;
			break;
		case O_MERGE:
			merge = true;
			break;
		case 'h':
			explore_usage(stdout);
			return 0;
		default:
			explore_usage(stderr);
			return 2;
		}
	}
	if (merge)
		return xp_merge_main(&x, argc - optind, argv + optind);
	if (argc - optind < (x.sel.list ? 1 : 2)) {
		explore_usage(stderr);
		return 2;
	}
	if (x.sel.list)
		return xp_list_main(&x, argc - optind, argv + optind);
	if (x.owners_shown) {
		fprintf(stderr, "plugdisk explore: --owners goes with --list-states (a report "
			"names the owners of its failures' writes)\n");
		return 2;
	}
	x.log_path = argv[optind];
	x.base_path = argv[optind + 1];
	optind += 2;
	if (x.has_state && (x.sel.chosen || x.shard.count)) {
		fprintf(stderr, "plugdisk explore: --state picks one state: no --kinds, --windows, "
			"--states, --from-* or --shard with it\n");
		return 2;
	}
	if (x.image) {
		if (!x.has_state || optind != argc) {
			fprintf(stderr, "plugdisk explore: --image needs --state and no checker\n");
			return 2;
		}
	} else {
		if (optind >= argc || strcmp(argv[optind], "--") || optind + 1 >= argc) {
			fprintf(stderr, "plugdisk explore: give the checker after --\n");
			return 2;
		}
		x.checker = &argv[optind + 1];
	}
	if (x.keep_dir && (stat(x.keep_dir, &st) || !S_ISDIR(st.st_mode)))
		return bad("--keep-failing (not a directory)", x.keep_dir);
	base_fd = open(x.base_path, O_RDONLY | O_CLOEXEC);
	if (base_fd < 0 || fstat(base_fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "plugdisk explore: %s: %s\n", x.base_path,
			base_fd < 0 ? strerror(errno) : "not a regular file");
		if (base_fd >= 0)
			close(base_fd);
		return 2;
	}
	ret = xp_log_open(&x, (uint64_t)st.st_size, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "plugdisk explore: %s\n", err);
		close(base_fd);
		return ret == -ENOMEM ? 3 : 2;
	}
	/* a short name not on PATH: a ready checker installed with plugdisk */
	if (x.checker) {
		ready = xp_ready_checker(x.checker[0]);
		if (ready)
			x.checker[0] = ready;
	}
	if (x.has_state && x.state >= x.log.nstates) {
		fprintf(stderr, "plugdisk explore: --state %" PRIu64 ": the log has %" PRIu64
			" states (with -k %u)\n", x.state, x.log.nstates, x.k);
		status = 2;
		goto out;
	}
	if (x.image) {
		status = xp_write_state(&x, base_fd);
		goto out;
	}
	if (x.has_state) {
		struct ws_state one;

		ws_state_decode(&x.log, x.state, &one);
		x.planned = 1;
		x.kinds[one.kind].states = x.kinds[one.kind].planned = 1;
		ids = &x.state;
	} else {
		ret = xp_select_states(&x, &ids);
		if (!ret)
			ret = xp_shard_select(&x, &ids, &xp_stop);
		if (ret) {
			status = ret == -ENOMEM || ret == -EINTR ? 3 : 2;
			goto out;
		}
	}
	x.owner = xp_owner_new(&x.log, x.base_path);
	if (!x.owner) {
		fprintf(stderr, "plugdisk explore: out of memory\n");
		status = 3;
		goto out;
	}
	if ((x.json || x.shard.count) && xp_print_inputs(&x, base_fd)) {
		status = 3;
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = xp_on_signal; /* no SA_RESTART: waitpid returns to see the flag */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	ret = xp_run(&x, base_fd, ids);
	if (ret) {
		fprintf(stderr, "plugdisk explore: %s\n",
			ret == -EINTR ? "interrupted" : "stopped on an error");
		status = x.bad_checker ? 2 : 3; /* a checker that cannot run is bad input */
		goto out;
	}
	if (x.nfails)
		qsort(x.fails, x.nfails, sizeof(*x.fails), xp_cmp_fail);
	xp_groups_sort(&x.groups);
	x.owners_shown = true;
	xp_report(&x, stdout);
	{
		uint64_t min_runs = 0;

		/* --minimize's checker runs come on top of the states, in the same time */
		for (uint64_t i = 0; i < x.nfails; i++)
			min_runs += x.fails[i].culprit.runs;
		fprintf(stderr, "explore: %" PRIu64 " states checked", x.checked);
		if (min_runs)
			fprintf(stderr, " and %" PRIu64 " checker runs to minimize", min_runs);
		fprintf(stderr, " in %.1f s: %.0f states/min\n", x.seconds,
			x.seconds > 0 ? (double)x.checked * 60 / x.seconds : 0.0);
	}
	status = xp_status(&x);
out:
	for (uint64_t i = 0; i < x.nfails; i++) {
		free(x.fails[i].output);
		free(x.fails[i].image);
		free(x.fails[i].culprit.ops);
	}
	free(x.fails);
	xp_groups_free(&x.groups);
	xp_owner_free(x.owner);
	if (ids != &x.state)
		free(ids);
	ws_log_close(&x.log);
	close(base_fd);
	xp_select_free(&x.sel);
	free(ready);
	return status;
}
