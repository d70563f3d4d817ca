// SPDX-License-Identifier: MIT
/* MOUNTPOINT/control: commands that change the disk's state while it runs, and a listing of
 * that state (see control.h for the contract).
 *
 * A write is one command line. It is parsed into words, run by its handler, and answered
 * before the write returns: the write succeeds once the command has taken effect, or fails
 * with the handler's errno (EINVAL for a bad command) after one log line, having changed
 * nothing. The answer, if any, is what the next read of the same open file returns; a read
 * of a file on which no command was written lists the state, one command per line, so that
 * writing the listing back line by line recreates it.
 *
 * Each open file has its own answer buffer, guarded by its own lock, since a reader and a
 * writer of the same descriptor may be served by two receive threads at once. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "daemon/fuse/background.h"
#include "daemon/fuse/fuse_reply.h"
#include "daemon/control/cache_ctl.h"
#include "daemon/control/control.h"
#include "daemon/daemon.h"
#include "daemon/control/fault_ctl.h"

#define CTL_MAX_LINE 4096
#define CTL_MAX_ARGS 64
#define CTL_MAX_WRITE PD_CONTROL_SIZE /* several lines: a listing written back */

void ctl_printf(struct ctl_out *out, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (out->oom)
		return;
	for (;;) {
		size_t room = out->cap - out->len;

		va_start(ap, fmt);
		n = vsnprintf(out->buf ? out->buf + out->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			out->oom = 1;
			return;
		}
		if ((size_t)n < room) {
			out->len += (size_t)n;
			return;
		}
		{
			size_t cap = out->cap ? out->cap * 2 : 1024;
			char *nb;

			while (cap - out->len <= (size_t)n)
				cap *= 2;
			nb = realloc(out->buf, cap);
			if (!nb) {
				out->oom = 1;
				return;
			}
			out->buf = nb;
			out->cap = cap;
		}
	}
}

static void ctl_out_reset(struct ctl_out *out)
{
	out->len = 0;
	out->oom = 0;
	if (out->buf)
		out->buf[0] = '\0';
}

/* ---- the queue's own commands ---- */

/* Taken by a freeze for as long as it runs (lock order: before the queue's and the stages'). */
static pthread_mutex_t ctl_freeze_lock = PTHREAD_MUTEX_INITIALIZER;

static int ctl_no_args(int argc, char **argv, struct ctl_out *out)
{
	if (argc == 1)
		return 0;
	ctl_printf(out, "%s takes no arguments\n", argv[0]);
	return -EINVAL;
}

static int ctl_queue(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	int ret = ctl_no_args(argc, argv, out);

	if (ret)
		return ret;
	if (!strcmp(argv[0], "stop"))
		queue_hold(&pd->q, true);
	else if (!strcmp(argv[0], "start"))
		queue_hold(&pd->q, false);
	else if (!strcmp(argv[0], "plug"))
		queue_plug_hold(&pd->q, true);
	else if (!strcmp(argv[0], "unplug"))
		queue_plug_hold(&pd->q, false);
	else if (!strcmp(argv[0], "freeze")) {
		/* One freeze at a time: one that fails thaws what it froze, which must not be
		 * another's. A thaw does not wait for it. */
		pthread_mutex_lock(&ctl_freeze_lock);
		ret = queue_freeze(&pd->q, chain_any_held, &pd->chain);
		if (ret == -EBUSY) {
			ctl_printf(out, "%u requests are held by a stall below: release them first "
					"(release, or fault clear); nothing is frozen\n",
				   chain_held(&pd->chain));
		} else if (ret) {
			ctl_printf(out, "thawed before nothing was in flight; the queue is not frozen\n");
		} else {
			/* The stages' acknowledged writes, too (the write cache's). */
			ret = chain_freeze(&pd->chain);
			if (ret == -EBUSY)
				ctl_printf(out, "the write cache's write-out would wait for %u requests "
						"a stall holds below: release them first (release, or "
						"fault clear); nothing is frozen\n",
					   chain_held(&pd->chain));
			else if (ret == -ECANCELED)
				ctl_printf(out, "thawed while the write cache was written out; nothing "
						"is frozen\n");
			else if (ret)
				ctl_printf(out, "freeze: destaging the write cache failed: %s\n",
					   strerror(-ret));
			if (ret)
				queue_thaw(&pd->q);
		}
		pthread_mutex_unlock(&ctl_freeze_lock);
		return ret;
	} else if (!strcmp(argv[0], "thaw")) {
		chain_thaw(&pd->chain);
		queue_thaw(&pd->q);
	}
	return 0;
}

static int ctl_help(struct pd *pd, int argc, char **argv, struct ctl_out *out);

/* Every command. A feature adds its handler here, and its listing to ctl_shows[]. */
static const struct ctl_cmd ctl_cmds[] = {
	{ "stop", "stop: hold the queue stopped; bios queue and merge until start", ctl_queue, false },
	{ "start", "start: let a queue held by stop dispatch again (not one frozen)", ctl_queue, false },
	{ "plug", "plug: hold the queue plugged; bios queue and merge until unplug", ctl_queue, false },
	{ "unplug", "unplug: end a plug held by plug", ctl_queue, false },
	{ "freeze", "freeze: stop and wait until nothing is in flight (a consistent image)",
	  ctl_queue, true },
	{ "thaw", "thaw: end a freeze (not a stop)", ctl_queue, false },
	{ "fault", FAULT_CTL_USAGE ": injected faults", fault_ctl_cmd, false },
	{ "release", "release [ID]: complete the requests stalled by fault ID, or by all",
	  fault_ctl_release, false },
	{ "powercut", PD_CACHE_POWERCUT_USAGE, pd_cache_ctl_powercut, false },
	{ "poweron", PD_CACHE_POWERON_USAGE, pd_cache_ctl_poweron, true },
	{ "mark", PD_CACHE_MARK_USAGE, pd_cache_ctl_mark, false },
	{ "help", "help: list the commands", ctl_help, false },
};

static void ctl_show_queue(struct pd *pd, struct ctl_out *out)
{
	struct queue_hold_state st;

	queue_hold_state(&pd->q, &st);
	ctl_printf(out, "%s\n%s\n%s\n", st.held ? "stop" : "start",
		   st.plug_held ? "plug" : "unplug", st.frozen ? "freeze" : "thaw");
}

static const ctl_show_fn ctl_shows[] = {
	ctl_show_queue,
	fault_ctl_show,
	pd_cache_ctl_show,
};

static int ctl_help(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	(void)pd, (void)argc, (void)argv;
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		ctl_printf(out, "%s\n", ctl_cmds[i].usage);
	return 0;
}

void control_help(FILE *f)
{
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		fprintf(f, "%s\n", ctl_cmds[i].usage);
}

void control_list_commands(FILE *f)
{
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		fprintf(f, "%s\n", ctl_cmds[i].name);
}

/* The last refused command and its reason, for a writer that only sees the errno (`echo CMD >
 * control`): the listing shows it as a comment. Lock order: taken alone, or inside a file's
 * lock. */
static pthread_mutex_t ctl_refused_lock = PTHREAD_MUTEX_INITIALIZER;
static char ctl_refused[512]; /* ctl_refused_lock: "COMMAND: REASON", or "" */

static void ctl_refused_set(const char *line, int len, const char *why, int why_len)
{
	pthread_mutex_lock(&ctl_refused_lock);
	snprintf(ctl_refused, sizeof(ctl_refused), "%.*s: %.*s", len, line, why_len, why);
	/* one comment line: a command's newlines would end it */
	for (char *p = ctl_refused; *p; p++)
		if (*p == '\n')
			*p = ' ';
	pthread_mutex_unlock(&ctl_refused_lock);
}

void control_show(struct pd *pd, struct ctl_out *out)
{
	ctl_printf(out, "# plugdisk %s: one command per write; these lines replay the state\n",
		   pd->cfg.disk_name);
	pthread_mutex_lock(&ctl_refused_lock);
	if (ctl_refused[0])
		ctl_printf(out, "# last refused: %s\n", ctl_refused);
	pthread_mutex_unlock(&ctl_refused_lock);
	for (size_t i = 0; i < sizeof(ctl_shows) / sizeof(ctl_shows[0]); i++)
		ctl_shows[i](pd, out);
}

/* Run one line: a command, or nothing for a blank line or a '#' comment. */
static int control_run_line(struct pd *pd, const char *line, size_t len, struct ctl_out *out)
{
	char buf[CTL_MAX_LINE + 1];
	char *argv[CTL_MAX_ARGS + 1], *save = NULL, *w;
	int argc = 0, ret = -EINVAL;
	size_t lead, mark = out->len; /* this line's answer starts at mark */

	for (lead = 0; lead < len && (line[lead] == ' ' || line[lead] == '\t'); lead++)
		;
	if (lead == len || line[lead] == '#')
		return 0;
	if (len > CTL_MAX_LINE) {
		ctl_printf(out, "command longer than %u bytes\n", CTL_MAX_LINE);
		goto bad;
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		ctl_printf(out, "a command is a line of text\n");
		goto bad;
	}
	for (w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (argc == CTL_MAX_ARGS) {
			ctl_printf(out, "more than %u words\n", CTL_MAX_ARGS);
			goto bad;
		}
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	if (!argc)
		return 0; /* blank: not reached, the test above skipped it */
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++) {
		if (strcmp(argv[0], ctl_cmds[i].name))
			continue;
		ret = ctl_cmds[i].run(pd, argc, argv, out);
		/* A stop, a fault, a release may change whether anything holds requests. */
		pd_background_update(pd);
		if (ret)
			goto bad;
		return 0;
	}
	ctl_printf(out, "unknown command '%s' (try: help)\n", argv[0]);
bad:
	/* One log line naming the command and the reason. */
	{
		size_t n = out->len;

		while (n > mark && out->buf[n - 1] == '\n')
			n--;
		log_warn("control: '%.*s': %.*s", (int)(len > 200 ? 200 : len), line,
			 (int)(n - mark), out->buf ? out->buf + mark : "failed");
		ctl_refused_set(line, (int)(len > 200 ? 200 : len), out->buf ? out->buf + mark : "failed",
				out->buf ? (int)(n - mark) : 6);
	}
	return ret;
}

int control_run(struct pd *pd, const char *text, size_t len, struct ctl_out *out)
{
	size_t start = 0;

	ctl_out_reset(out);
	while (start < len) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - text) : len;
		int ret = control_run_line(pd, text + start, end - start, out);

		if (ret)
			return ret;
		start = end + 1;
	}
	return 0;
}

/* ---- the file ---- */

struct ctl_file {
	pthread_mutex_t lock;
	struct ctl_out out;	/* lock: the answer, or the listing being read */
	bool answered;		/* lock: out holds a command's answer */
	bool listed;		/* lock: out holds a listing */
	struct ctl_file *prev, *next;	/* ctl_files_lock: every open, for the stop */
};

/* Every open of the control file, so that the stop frees those whose release never came
 * (a close just before the unmount). Lock order: taken alone. */
static pthread_mutex_t ctl_files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctl_file ctl_files = { .prev = &ctl_files, .next = &ctl_files };

static void ctl_file_destroy(struct ctl_file *cf)
{
	free(cf->out.buf);
	pthread_mutex_destroy(&cf->lock);
	free(cf);
}

static void ctl_file_free(struct ctl_file *cf)
{
	pthread_mutex_lock(&ctl_files_lock);
	cf->prev->next = cf->next;
	cf->next->prev = cf->prev;
	pthread_mutex_unlock(&ctl_files_lock);
	ctl_file_destroy(cf);
}

void control_file_free_all(void)
{
	struct ctl_file *cf, *next;

	pthread_mutex_lock(&ctl_files_lock);
	cf = ctl_files.next;
	ctl_files.next = ctl_files.prev = &ctl_files;
	pthread_mutex_unlock(&ctl_files_lock);
	for (; cf != &ctl_files; cf = next) {
		next = cf->next;
		ctl_file_destroy(cf);
	}
}

void control_file_open(fuse_req_t req, struct fuse_file_info *fi)
{
	struct ctl_file *cf = calloc(1, sizeof(*cf));

	if (!cf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&cf->lock, NULL);
	pthread_mutex_lock(&ctl_files_lock);
	cf->next = ctl_files.next;
	cf->prev = &ctl_files;
	ctl_files.next->prev = cf;
	ctl_files.next = cf;
	pthread_mutex_unlock(&ctl_files_lock);
	fi->direct_io = 1;
	fi->nonseekable = 0;
	fi->fh = (uintptr_t)cf;
	/* Writes from several opens go side by side (see PD_CONTROL_SIZE): a command that waits
	 * does not keep the next one, the release or thaw it waits for, out. */
	pd_reply_open_flags(PD_FOPEN_PARALLEL_DIRECT_WRITES);
	if (fuse_reply_open(req, fi) == -ENOENT)
		ctl_file_free(cf); /* interrupted open: no release will come */
}

void control_file_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct pd *pd = fuse_req_userdata(req);
	struct ctl_file *cf = (struct ctl_file *)(uintptr_t)fi->fh;

	pthread_mutex_lock(&cf->lock);
	/* A read from the start of a file with no answer pending lists the state afresh. */
	if (!cf->answered && (off == 0 || !cf->listed)) {
		ctl_out_reset(&cf->out);
		control_show(pd, &cf->out);
		cf->listed = true;
	}
	if (cf->out.oom) {
		pthread_mutex_unlock(&cf->lock);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* The reply goes out after the unlock, from a copy: once it is sent, the reader may
	 * close the file, and the release that frees @cf may run in another receive thread
	 * while this one would still be inside pthread_mutex_unlock(). */
	{
		size_t n = 0;
		char *copy = NULL;

		if (off >= 0 && (size_t)off < cf->out.len) {
			n = size < cf->out.len - (size_t)off ? size : cf->out.len - (size_t)off;
			copy = malloc(n);
			if (copy)
				memcpy(copy, cf->out.buf + off, n);
		}
		pthread_mutex_unlock(&cf->lock);
		if (n && !copy)
			fuse_reply_err(req, ENOMEM);
		else
			fuse_reply_buf(req, copy, n);
		free(copy);
	}
}

/* Run the command(s) of a write, make the answer the file's, and answer the write; frees
 * @line. The file's lock is not held while a command runs: a read of the same descriptor is
 * not kept waiting, and of two commands written to it at once the last to end leaves its
 * answer. */
static void control_write_run(fuse_req_t req, struct pd *pd, struct ctl_file *cf, char *line,
			      size_t n)
{
	struct ctl_out out = { 0 };
	int ret = control_run(pd, line, n, &out);

	free(line);
	pthread_mutex_lock(&cf->lock);
	free(cf->out.buf);
	cf->out = out;
	cf->answered = true; /* the answer, or why the command failed */
	cf->listed = false;
	pthread_mutex_unlock(&cf->lock);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, n);
}

/* Whether a line of @text starts with a command that may wait (ctl_cmd.waits). */
static bool control_text_waits(const char *text, size_t len)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len, w;

		while (i < end && (text[i] == ' ' || text[i] == '\t'))
			i++;
		for (w = i; w < end && text[w] != ' ' && text[w] != '\t'; w++)
			;
		for (size_t c = 0; c < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); c++)
			if (ctl_cmds[c].waits && strlen(ctl_cmds[c].name) == w - i &&
			    !memcmp(ctl_cmds[c].name, text + i, w - i))
				return true;
		i = end + 1;
	}
	return false;
}

/* Writes whose commands may wait, each run by a thread of its own (ctl_job_start()); the
 * count lets the stop wait for their answers. Lock order: taken alone. */
static pthread_mutex_t ctl_jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_jobs_cond = PTHREAD_COND_INITIALIZER;
static unsigned int ctl_jobs;	/* ctl_jobs_lock: such threads not yet done */

struct ctl_job {
	fuse_req_t req;
	struct pd *pd;
	struct ctl_file *cf;	/* stays open: the kernel releases no file a write is in */
	char *line;
	size_t n;
};

static void *ctl_job_thread(void *arg)
{
	struct ctl_job *j = arg;

	control_write_run(j->req, j->pd, j->cf, j->line, j->n);
	free(j);
	pthread_mutex_lock(&ctl_jobs_lock);
	if (--ctl_jobs == 0)
		pthread_cond_broadcast(&ctl_jobs_cond);
	pthread_mutex_unlock(&ctl_jobs_lock);
	return NULL;
}

/* Hand the write to a thread of its own, which answers it. 0, or -errno (the caller runs it
 * then). */
static int ctl_job_start(fuse_req_t req, struct pd *pd, struct ctl_file *cf, char *line,
			 size_t n)
{
	struct ctl_job *j = malloc(sizeof(*j));
	pthread_attr_t attr;
	pthread_t tid;
	int err;

	if (!j)
		return -ENOMEM;
	*j = (struct ctl_job){ .req = req, .pd = pd, .cf = cf, .line = line, .n = n };
	pthread_mutex_lock(&ctl_jobs_lock);
	ctl_jobs++;
	pthread_mutex_unlock(&ctl_jobs_lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&tid, &attr, ctl_job_thread, j);
	pthread_attr_destroy(&attr);
	if (err) {
		log_warn("control: pthread_create: %s; the command runs in the receive thread",
			 strerror(err));
		free(j);
		pthread_mutex_lock(&ctl_jobs_lock);
		ctl_jobs--;
		pthread_mutex_unlock(&ctl_jobs_lock);
		return -err;
	}
	return 0;
}

void control_jobs_wait(void)
{
	pthread_mutex_lock(&ctl_jobs_lock);
	while (ctl_jobs)
		pthread_cond_wait(&ctl_jobs_cond, &ctl_jobs_lock);
	pthread_mutex_unlock(&ctl_jobs_lock);
}

void control_file_write(fuse_req_t req, struct fuse_bufvec *bufv, struct fuse_file_info *fi)
{
	struct pd *pd = fuse_req_userdata(req);
	struct ctl_file *cf = (struct ctl_file *)(uintptr_t)fi->fh;
	size_t n = fuse_buf_size(bufv);
	char *line;
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(n);
	ssize_t got;

	if (n == 0 || n > CTL_MAX_WRITE) {
		char why[64];

		snprintf(why, sizeof(why), "a write of %zu bytes is not a command", n);
		log_warn("control: %s", why);
		ctl_refused_set("(write)", 7, why, (int)strlen(why));
		fuse_reply_err(req, EINVAL);
		return;
	}
	line = malloc(n);
	if (!line) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	dst.buf[0].mem = line;
	got = fuse_buf_copy(&dst, bufv, 0);
	if (got != (ssize_t)n) {
		free(line);
		fuse_reply_err(req, got < 0 ? (int)-got : EIO);
		return;
	}
	if (control_text_waits(line, n) && ctl_job_start(req, pd, cf, line, n) == 0)
		return;
	control_write_run(req, pd, cf, line, n);
}

void control_file_release(fuse_req_t req, struct fuse_file_info *fi)
{
	struct ctl_file *cf = (struct ctl_file *)(uintptr_t)fi->fh;

	ctl_file_free(cf);
	fuse_reply_err(req, 0);
}
