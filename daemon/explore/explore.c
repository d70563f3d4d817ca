// SPDX-License-Identifier: MIT
/* `plugdisk explore`: run a checker on every crash state a power cut could leave, by the
 * write log (cache.log) and the write cache's rules (core/crash/wlog_states.c), each state served
 * as a disk by a FUSE filesystem of explore's own (daemon/explore/explore_fuse.c) instead of a copy.
 *
 * The main thread walks the chosen states in id order, builds each one's overlay, skips one
 * identical to a state already checked (same extents from the same log records, and the
 * same marks for the checker), and starts
 * the checker in a free slot (-j slots); it waits for a checker whenever every slot is busy.
 * The FUSE threads only read a slot's overlay, which stays unchanged while it is served. */
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

extern char **environ;

#define XP_OUTPUT_KEEP 4096	/* bytes of a failing checker's output in the report */
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
struct xp_slot {
	pid_t pid;		/* 0: free; the checker leads its own process group */
	uint64_t id;
	uint64_t deadline_ns;	/* --timeout: when it is killed; 0 = never */
	bool timed_out;
	struct extmap map;
	struct xf_state fs;
	char out[512], marks[512], json[512];
};

/* States already checked, by their overlay's hash. */
struct xp_seen {
	uint64_t (*v)[2];
	uint64_t n, cap;	/* cap a power of two; v[i] = {0, 0} is empty */
};

/* Whether @h was seen; else remember it. -ENOMEM on failure to grow. */
static int seen_test_add(struct xp_seen *s, const uint64_t h[2])
{
	uint64_t k0 = h[0] | 1, k1 = h[1], i;

	if (2 * (s->n + 1) > s->cap) {
		uint64_t ncap = s->cap ? 2 * s->cap : 1024;
		uint64_t (*nv)[2] = calloc(ncap, sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		for (uint64_t j = 0; j < s->cap; j++) {
			if (!s->v[j][0])
				continue;
			for (i = s->v[j][0] & (ncap - 1); nv[i][0]; i = (i + 1) & (ncap - 1))
				;
			nv[i][0] = s->v[j][0];
			nv[i][1] = s->v[j][1];
		}
		free(s->v);
		s->v = nv;
		s->cap = ncap;
	}
	for (i = k0 & (s->cap - 1); s->v[i][0]; i = (i + 1) & (s->cap - 1))
		if (s->v[i][0] == k0 && s->v[i][1] == k1)
			return 1;
	s->v[i][0] = k0;
	s->v[i][1] = k1;
	s->n++;
	return 0;
}

static volatile sig_atomic_t xp_stop;

static void xp_on_signal(int sig)
{
	(void)sig;
	xp_stop = 1;
}

/* The end of file @path, at most XP_OUTPUT_KEEP bytes, as a string (NULL on failure). */
static char *read_tail(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long size;
	size_t n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	if (size > XP_OUTPUT_KEEP)
		fseek(f, size - XP_OUTPUT_KEEP, SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	buf = malloc(XP_OUTPUT_KEEP + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, XP_OUTPUT_KEEP, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int write_marks(const struct ws_log *l, uint64_t nacked, const char *path)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	for (uint64_t i = 0; i < nacked; i++)
		fprintf(f, "%s\n", l->marks[i].text);
	return fclose(f) ? -errno : 0;
}

/* Start the checker on the state in @sl. 0 or -errno (printed). */
static int slot_spawn(struct xp *x, struct xf *xf, struct xp_slot *sl, const struct ws_state *s)
{
	char env_state[600], env_id[64], env_marks[600], *env_mark = NULL, **envp;
	char env_kind[64], env_win[64], env_json[600];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t nomask;
	size_t nenv = 0, i = 0;
	uint64_t nacked;
	int64_t mark;
	int ret;

	if (!x->checker || !x->checker[0])
		return -EINVAL; /* a run with states to check has a checker (pd_explore_main) */
	mark = ws_state_mark(&x->log, s, &nacked);
	ret = write_marks(&x->log, nacked, sl->marks);
	if (ret) {
		fprintf(stderr, "plugdisk explore: %s: %s\n", sl->marks, strerror(-ret));
		return ret;
	}
	/* sl->id: the state's file, another than s->id for --minimize's derived states */
	snprintf(env_state, sizeof(env_state), "PLUGDISK_STATE=%s/state-%" PRIu64, xf->mnt, sl->id);
	snprintf(env_id, sizeof(env_id), "PLUGDISK_STATE_ID=%" PRIu64, s->id);
	snprintf(env_marks, sizeof(env_marks), "PLUGDISK_MARKS=%s", sl->marks);
	ret = xp_state_json_file(x, s->id, sl->json);
	if (ret) {
		fprintf(stderr, "plugdisk explore: %s: %s\n", sl->json, strerror(-ret));
		return ret;
	}
	snprintf(env_kind, sizeof(env_kind), "PLUGDISK_STATE_KIND=%s", ws_kind_names[s->kind]);
	snprintf(env_win, sizeof(env_win), "PLUGDISK_STATE_WINDOW=%" PRIu64, s->win);
	snprintf(env_json, sizeof(env_json), "PLUGDISK_STATE_JSON=%s", sl->json);
	if (asprintf(&env_mark, "PLUGDISK_MARK=%s", mark >= 0 ? x->log.marks[mark].text : "") < 0)
		return -ENOMEM;
	while (environ[nenv])
		nenv++;
	envp = calloc(nenv + 8, sizeof(*envp));
	if (!envp) {
		free(env_mark);
		return -ENOMEM;
	}
	for (size_t e = 0; e < nenv; e++)
		if (strncmp(environ[e], "PLUGDISK_", 9))
			envp[i++] = environ[e];
	envp[i++] = env_state;
	envp[i++] = env_id;
	envp[i++] = env_mark;
	envp[i++] = env_marks;
	envp[i++] = env_kind;
	envp[i++] = env_win;
	envp[i++] = env_json;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, sl->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	/* Nothing else of explore's: its mount's auto-unmount socket must close when explore
	 * ends, whatever a checker leaves running. */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	/* Its own process group: a timeout or a stop ends the checker and what it started. */
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setpgroup(&attr, 0);
	sigemptyset(&nomask);
	posix_spawnattr_setsigmask(&attr, &nomask); /* not explore's blocked SIGCHLD */
	ret = posix_spawnp(&sl->pid, x->checker[0], &fa, &attr, x->checker, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	sl->timed_out = false;
	sl->deadline_ns = x->timeout_ns ? clock_now_ns() + x->timeout_ns : 0;
	free(envp);
	free(env_mark);
	if (ret) {
		fprintf(stderr, "plugdisk explore: %s: %s\n", x->checker[0], strerror(ret));
		x->bad_checker = true;
		sl->pid = 0;
		return -ret;
	}
	return 0;
}

static int add_fail(struct xp *x, uint64_t id, int status, bool timed_out, char *output,
		    char *image)
{
	if (x->nfails == x->capfails) {
		uint64_t cap = x->capfails ? 2 * x->capfails : 16;
		struct xp_fail *nv = realloc(x->fails, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		x->fails = nv;
		x->capfails = cap;
	}
	x->fails[x->nfails++] = (struct xp_fail){ .id = id, .status = status,
						  .timed_out = timed_out, .output = output,
						  .image = image };
	return 0;
}

/* File failing state @id, whose checker said @output, under its cause: *@g. 0 or -ENOMEM. */
static int fail_group(struct xp *x, uint64_t id, const char *output, struct xp_group **g)
{
	struct ws_state s;
	char *sig;
	int64_t gi;

	ws_state_decode(&x->log, id, &s);
	sig = xp_state_signature(x, &s, NULL, 0, output);
	if (!sig)
		return -ENOMEM;
	gi = xp_groups_add(&x->groups, sig, id);
	free(sig);
	if (gi < 0)
		return (int)gi;
	*g = &x->groups.g[gi];
	return 0;
}

/* A checker ended with @wstatus: note the verdict, keep a failing image, free the slot. */
static int slot_finish(struct xp *x, struct xf *xf, int base_fd, struct xp_slot *sl,
		       int wstatus)
{
	int status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	char *image = NULL;
	int ret = 0;

	xf_remove(xf, &sl->fs);
	x->checked++;
	xp_count_checked(x, sl->id, status != 0);
	if (status == 0) {
		x->passed++;
	} else {
		char *output = read_tail(sl->out);
		struct xp_group *g = NULL;

		ret = fail_group(x, sl->id, output, &g);
		if (ret) {
			free(output);
			goto out;
		}
		if (x->keep_dir && (!x->keep_max || g->kept < x->keep_max) &&
		    asprintf(&image, "%s/state-%" PRIu64 ".img", x->keep_dir, sl->id) >= 0 &&
		    xp_write_image(image, base_fd, x->log.hdr.disk_size, &sl->map)) {
			free(image);
			image = NULL;
		}
		x->kept += image != NULL;
		g->kept += image != NULL;
		ret = add_fail(x, sl->id, status, sl->timed_out, output, image);
	}
out:
	sl->pid = 0;
	return ret;
}

static int cmp_fail(const void *a, const void *b)
{
	const struct xp_fail *p = a, *q = b;

	return p->id < q->id ? -1 : p->id > q->id;
}

static void progress(const struct xp *x, uint64_t done, uint64_t t0, bool final)
{
	double s = (double)(clock_now_ns() - t0) / 1e9;

	fprintf(stderr, "\rexplore: done %" PRIu64 ", left %" PRIu64 ", failed %" PRIu64
		", %.0f states/min   %s", done, xp_run_states(x) - done, x->nfails,
		s > 0 ? (double)x->checked * 60 / s : 0.0, final ? "\n" : "");
}

/* Wait for a checker to end (@block), or look for one that has: its pid, 0 for none, or -1
 * with errno set. Before it is reaped, whatever it left running in its process group is
 * killed: until then its zombie holds the group's id, which no other group can have. */
static pid_t reap_checker(bool block, int *wstatus)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) < 0)
		return -1;
	if (!si.si_pid)
		return 0;
	kill(-si.si_pid, SIGKILL);
	while (waitpid(si.si_pid, wstatus, 0) < 0)
		if (errno != EINTR)
			return -1;
	return si.si_pid;
}

/* End checker @pid and its process group at a stop: SIGTERM, up to 2 s to go, then SIGKILL
 * (a checker that ignores SIGTERM must not hold explore). Then reap it. */
static void end_checker(pid_t pid)
{
	int wstatus;

	kill(-pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		siginfo_t si = { 0 };

		/* Whether it ended, leaving it to be reaped below: waitid, since waitpid
		 * refuses WNOWAIT (EINVAL), and every stop then waited the full 2 s a
		 * checker. */
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid)
			break;
		nanosleep(&ts, NULL);
	}
	kill(-pid, SIGKILL);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
}

/* --timeout: kill the process group of every checker past its deadline. It then ends as a
 * failure that says so. */
static void kill_late(const struct xp *x, struct xp_slot *slots)
{
	uint64_t now = clock_now_ns();

	for (unsigned int i = 0; i < x->jobs; i++) {
		struct xp_slot *sl = &slots[i];

		if (!sl->pid || !sl->deadline_ns || now < sl->deadline_ns || sl->timed_out)
			continue;
		sl->timed_out = true;
		kill(-sl->pid, SIGKILL);
	}
}

/* --minimize: the states derived from a failing one are served and checked in the run's
 * mount and slots, as files past the log's state ids. */
struct xp_lost_ctx {
	struct xp *x;
	struct xf *xf;
	struct xp_slot *slots;
	uint64_t next_file;	/* the next derived state's file id */
};

/* Start the checker on derived state @lost of @s in a free slot. 0 or -errno. */
static int lost_spawn(struct xp_lost_ctx *c, const struct ws_state *s, const bool *lost,
		      struct xp_slot *sl)
{
	int ret = xp_build_lost(&c->x->log, s, lost, &sl->map);

	if (ret)
		return ret;
	sl->id = c->next_file++;
	ret = xf_add(c->xf, &sl->fs, sl->id, &sl->map);
	if (ret)
		return ret;
	ret = slot_spawn(c->x, c->xf, sl, s);
	if (ret)
		xf_remove(c->xf, &sl->fs);
	return ret;
}

/* xp_lost_check_fn: up to -j checkers at once in the run's slots. */
static int check_lost(void *ctx, const struct ws_state *s, bool *const *lost, size_t n,
		      bool *fails)
{
	struct xp_lost_ctx *c = ctx;
	struct xp *x = c->x;
	size_t next = 0, *which = calloc(x->jobs, sizeof(*which));
	unsigned int busy = 0;
	sigset_t chld;
	int ret = 0;

	if (!which)
		return -ENOMEM;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (next < n || busy) {
		struct xp_slot *sl = NULL;
		unsigned int i;
		int wstatus;
		pid_t pid;

		if (xp_stop && !ret)
			ret = -EINTR;
		if (!ret && next < n && busy < x->jobs) {
			for (i = 0; i < x->jobs && c->slots[i].pid; i++)
				;
			ret = lost_spawn(c, s, lost[next], &c->slots[i]);
			if (!ret) {
				which[i] = next++;
				busy++;
			}
			continue;
		}
		if (!busy)
			break;
		pid = reap_checker(!x->timeout_ns, &wstatus);
		if (pid == 0) {
			struct timespec ts = { 0, 20 * 1000 * 1000 };

			kill_late(x, c->slots);
			sigtimedwait(&chld, NULL, &ts);
			continue;
		}
		if (pid < 0) {
			if (errno != EINTR) {
				ret = -errno;
				break;
			}
			continue;
		}
		for (i = 0; i < x->jobs && !sl; i++)
			if (c->slots[i].pid == pid)
				sl = &c->slots[i];
		if (!sl)
			continue;
		xf_remove(c->xf, &sl->fs);
		fails[which[sl - c->slots]] = !WIFEXITED(wstatus) || WEXITSTATUS(wstatus);
		sl->pid = 0;
		busy--;
	}
	free(which);
	return ret;
}

/* --minimize every failure, then group the failures again by their culprits. 0 or -errno. */
static int minimize_fails(struct xp *x, struct xf *xf, struct xp_slot *slots)
{
	struct xp_lost_ctx c = { x, xf, slots, x->log.nstates };
	int ret = 0;

	if (x->nfails) /* no failure, no array: qsort must not be given NULL */
		qsort(x->fails, x->nfails, sizeof(*x->fails), cmp_fail);
	for (uint64_t i = 0; i < x->nfails && !ret; i++) {
		struct xp_fail *fl = &x->fails[i];
		struct ws_state s;

		ws_state_decode(&x->log, fl->id, &s);
		ret = xp_minimize(&x->log, &s, x->minimize_budget, check_lost, &c, &fl->culprit);
		fl->has_culprit = !ret;
	}
	if (ret)
		return ret;
	xp_groups_free(&x->groups);
	for (uint64_t i = 0; i < x->nfails && !ret; i++) {
		struct xp_fail *fl = &x->fails[i];
		struct ws_state s;
		char *sig;

		ws_state_decode(&x->log, fl->id, &s);
		sig = xp_state_signature(x, &s, fl->culprit.ops, fl->culprit.n, fl->output);
		if (!sig)
			return -ENOMEM;
		if (xp_groups_add(&x->groups, sig, fl->id) < 0)
			ret = -ENOMEM;
		free(sig);
	}
	return ret;
}

/* Check the chosen states. 0, or -errno when explore itself failed. */
static int xp_run(struct xp *x, int base_fd, const uint64_t *ids)
{
	struct xp_slot *slots;
	struct ws_builder b;
	struct xp_seen seen = { 0 };
	char dir[] = "/tmp/plugdisk-explore.XXXXXX", mnt[64];
	uint64_t t0 = clock_now_ns(), last = 0, done = 0, todo = xp_run_states(x);
	bool tty = isatty(STDERR_FILENO);
	struct xf xf;
	sigset_t chld, oldmask;
	unsigned int busy = 0;
	int ret = 0;

	if (!mkdtemp(dir)) {
		ret = -errno;
		fprintf(stderr, "plugdisk explore: mkdtemp: %s\n", strerror(-ret));
		return ret;
	}
	/* SIGCHLD blocked (in the FUSE threads too, which inherit it) for sigtimedwait. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (x->timeout_ns)
		pthread_sigmask(SIG_BLOCK, &chld, &oldmask);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	slots = calloc(x->jobs, sizeof(*slots));
	if (!slots || mkdir(mnt, 0700)) {
		ret = slots ? -errno : -ENOMEM;
		goto out_dir;
	}
	for (unsigned int i = 0; i < x->jobs; i++) {
		extmap_init(&slots[i].map);
		snprintf(slots[i].out, sizeof(slots[i].out), "%s/out-%u", dir, i);
		snprintf(slots[i].marks, sizeof(slots[i].marks), "%s/marks-%u", dir, i);
		snprintf(slots[i].json, sizeof(slots[i].json), "%s/state-%u.json", dir, i);
	}
	ret = xf_start(&xf, mnt, base_fd, x->log.hdr.disk_size);
	if (ret)
		goto out_dir;
	ws_builder_init(&b);
	b.stop = &xp_stop; /* a stop ends a long build too, not only the wait between states */
	for (uint64_t n = 0; (n < todo || busy) && !ret;) {
		struct xp_slot *sl = NULL;
		struct ws_state s;
		uint64_t h[2];
		int wstatus;

		if (xp_stop) {
			ret = -EINTR;
			break;
		}
		if (busy == x->jobs || n == todo) {
			/* With --timeout, wait for SIGCHLD (blocked, so that it is not lost)
			 * 20 ms at a time, and look for checkers past their deadline. */
			pid_t pid = reap_checker(!x->timeout_ns, &wstatus);

			if (pid == 0) {
				struct timespec ts = { 0, 20 * 1000 * 1000 };

				kill_late(x, slots);
				sigtimedwait(&chld, NULL, &ts);
				continue;
			}
			if (pid < 0) {
				if (errno != EINTR)
					ret = -errno;
				continue;
			}
			for (unsigned int i = 0; i < x->jobs; i++)
				if (slots[i].pid == pid)
					sl = &slots[i];
			if (!sl)
				continue;
			ret = slot_finish(x, &xf, base_fd, sl, wstatus);
			busy--;
			done++;
			if (tty && clock_now_ns() - last > 200 * NSEC_PER_MSEC) {
				last = clock_now_ns();
				progress(x, done, t0, false);
			}
			continue;
		}
		for (unsigned int i = 0; i < x->jobs && !sl; i++)
			if (!slots[i].pid)
				sl = &slots[i];
		if (!sl) { /* busy < jobs: cannot happen */
			ret = -EIO;
			break;
		}
		ws_state_decode(&x->log, ids ? ids[n] : n, &s);
		n++;
		ret = ws_state_build(&x->log, &b, &s, &sl->map);
		if (ret)
			break;
		/* A duplicate has the same writes at the same places and tells its checker
		 * the same marks. */
		xp_state_key(x, &s, &sl->map, h);
		ret = seen_test_add(&seen, h);
		if (ret > 0) {
			ret = 0;
			x->dups++;
			done++;
			continue;
		}
		if (ret)
			break;
		sl->id = s.id;
		ret = xf_add(&xf, &sl->fs, s.id, &sl->map);
		if (ret)
			break;
		ret = slot_spawn(x, &xf, sl, &s);
		if (ret) {
			xf_remove(&xf, &sl->fs);
			break;
		}
		busy++;
	}
	if (tty)
		progress(x, done, t0, true);
	if (!ret && x->minimize)
		ret = minimize_fails(x, &xf, slots);
	/* On an error or a signal: end our checkers, by their pids, and collect them. */
	for (unsigned int i = 0; i < x->jobs; i++) {
		if (!slots[i].pid)
			continue;
		end_checker(slots[i].pid);
		xf_remove(&xf, &slots[i].fs);
		slots[i].pid = 0;
	}
	ws_builder_free(&b);
	xf_stop(&xf);
	x->seconds = (double)(clock_now_ns() - t0) / 1e9;
out_dir:
	if (slots)
		for (unsigned int i = 0; i < x->jobs; i++) {
			extmap_free(&slots[i].map);
			unlink(slots[i].out);
			unlink(slots[i].marks);
			unlink(slots[i].json);
		}
	free(slots);
	free(seen.v);
	rmdir(mnt);
	rmdir(dir);
	if (x->timeout_ns)
		pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	if (ret == -ENOMEM)
		fprintf(stderr, "plugdisk explore: out of memory\n");
	return ret;
}

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
		qsort(x.fails, x.nfails, sizeof(*x.fails), cmp_fail);
	xp_groups_sort(&x.groups);
	x.owners_shown = true;
	xp_report(&x, stdout);
	fprintf(stderr, "explore: %" PRIu64 " states checked in %.1f s: %.0f states/min\n",
		x.checked, x.seconds, x.seconds > 0 ? (double)x.checked * 60 / x.seconds : 0.0);
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
