// SPDX-License-Identifier: MIT
/* The checker runner of `plugdisk explore` (explore_run.h): the main thread walks the chosen
 * states in id order, builds each one's overlay, skips one identical to a state already
 * checked (same extents from the same log records, and the same marks for the checker), and
 * starts the checker in a free slot (-j slots); it waits for a checker whenever every slot is
 * busy. The FUSE threads only read a slot's overlay, which stays unchanged while it is
 * served. Failing states are then minimized (--minimize) through the same slots. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util/clock.h"
#include "core/util/log.h"
#include "daemon/explore/explore.h"
#include "daemon/explore/explore_checker.h"
#include "daemon/explore/explore_fuse.h"
#include "daemon/explore/explore_run.h"

extern char **environ;

#define XP_OUTPUT_KEEP 4096	/* bytes of a failing checker's output in the report */

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

volatile sig_atomic_t xp_stop;

void xp_on_signal(int sig)
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

int xp_cmp_fail(const void *a, const void *b)
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
		qsort(x->fails, x->nfails, sizeof(*x->fails), xp_cmp_fail);
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
int xp_run(struct xp *x, int base_fd, const uint64_t *ids)
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
