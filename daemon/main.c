// SPDX-License-Identifier: MIT
/* plugdisk: start-up, the signal loop (SIGHUP reloads) and systemd's status line.
 *
 * Start-up checks everything a user can get wrong before anything is mounted, and answers
 * each with a message and a distinct exit status (see daemon.h). Without -f the process
 * forks, and the parent returns only once the mount is live, with the child's status. The
 * command line is daemon/cli.c, the checks daemon/preflight.c, the reload and the status
 * line daemon/reload.c, the stop daemon/stop.c. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "core/backend/backend_nbd.h"
#include "core/util/log.h"
#include "daemon/fuse/background.h"
#include "daemon/fuse/bdi.h"
#include "daemon/cli.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/fuse_reply.h"
#include "daemon/fuse/fuse_uring.h"
#include "daemon/fuse/metrics_http.h"
#include "daemon/pidfile.h"
#include "daemon/preflight.h"
#include "daemon/reload.h"
#include "daemon/stop.h"

/* ---- mount ---- */

/* Take a mount that failed to come up down again: stop the receive threads, unmount and
 * free the session, before the caller closes the image under them. */
static void pd_mount_undo(struct pd *pd)
{
	smp_store_mb(pd->stopping, 1);
	fuse_session_exit(pd->se);
	pd_fuse_join(pd);
	queue_drain(&pd->q);
	fuse_session_unmount(pd->se);
	fuse_session_destroy(pd->se);
	pd->se = NULL;
	pd_uring_destroy(pd);
}

static int pd_mount(struct pd *pd)
{
	char opts[4096];
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *argv0 = "plugdisk";
	char path[PATH_MAX + 8];
	struct stat st;

	snprintf(opts, sizeof(opts), "fsname=plugdisk:%s,subtype=plugdisk,default_permissions%s%s%s",
		 pd->cfg.disk_name, pd->cfg.mount_allow_other ? ",allow_other" : "",
		 pd->cfg.mount_options && *pd->cfg.mount_options ? "," : "",
		 pd->cfg.mount_options ? pd->cfg.mount_options : "");
	if (fuse_opt_add_arg(&args, (char *)argv0) || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, opts)) {
		log_err("fuse_opt_add_arg: out of memory");
		return EXIT_RUNTIME;
	}
	pd->se = fuse_session_new(&args, &pd_fuse_ops, sizeof(pd_fuse_ops), pd);
	fuse_opt_free_args(&args);
	if (!pd->se) {
		log_err("fuse_session_new failed: check mount.options (%s)", opts);
		return EXIT_USAGE;
	}
	/* The transport: the kernel decides at mount time whether FUSE_INIT offers io_uring,
	 * and FUSE_INIT's reply, before any other request, whether it is used. */
	if (pd_uring_prepare(pd)) {
		fuse_session_destroy(pd->se);
		pd->se = NULL;
		return EXIT_MOUNT;
	}
	if (fuse_session_mount(pd->se, pd->mountpoint)) {
		log_err("fuse_session_mount %s failed", pd->mountpoint);
		fuse_session_destroy(pd->se);
		pd->se = NULL;
		pd_uring_destroy(pd);
		return EXIT_MOUNT;
	}
	if (pd_uring_setup(pd)) {
		fuse_session_unmount(pd->se);
		fuse_session_destroy(pd->se);
		pd->se = NULL;
		pd_uring_destroy(pd);
		return EXIT_MOUNT;
	}
	/* Classic transport: its replies, too, say what libfuse 3.14 cannot (fuse_reply.c). */
	if (!pd->uring && pd_reply_io_install(pd)) {
		log_err("fuse_session_custom_io failed");
		fuse_session_unmount(pd->se);
		fuse_session_destroy(pd->se);
		pd->se = NULL;
		return EXIT_MOUNT;
	}
	pd->nr_threads = pd->cfg.mount_threads;
	if (pd_fuse_start(pd)) {
		pd_mount_undo(pd);
		return EXIT_RUNTIME;
	}
	if (pd_uring_wait_ready(pd)) {
		/* mount.io_uring = on and no io_uring: the start fails. */
		pd_mount_undo(pd);
		return EXIT_MOUNT;
	}
	/* Ready means the mount answers: look at the disk through it. */
	snprintf(path, sizeof(path), "%s/disk", pd->mountpoint);
	if (stat(path, &st) < 0 || (uint64_t)st.st_size != pd->be.size) {
		log_err("stat %s: the new mount does not answer: %m", path);
		pd_mount_undo(pd);
		return EXIT_MOUNT;
	}
	pd->mount_dev = st.st_dev; /* a file's device is its mount's */
	pd_bdi_set_read_ahead(pd->mount_dev, pd->cfg.mount_read_ahead_kb);
	pd_background_configure(pd, pd->cfg.mount_max_background);
	return 0;
}

/* ---- the stack: stages, controller, queue ---- */

/* Build the stages below the controller over the backend (core/stage/chain.h), then the
 * controller and the queue over them. Returns 0 or an exit status; logs the failure. */
static int pd_stack_init(struct pd *pd, char *err, size_t errlen)
{
	struct stage bottom = backend_stage(&pd->be);
	struct chain_params p;
	int ret;

	pd_chain_params(pd, &pd->cfg, &p);
	p.timer = &pd->timer;
	p.cache_thread = true;
	ret = chain_build(&pd->chain, &bottom, &p, err, errlen);
	if (ret) {
		log_err("%s: %s", pd->chain.failed, err);
		return !strcmp(pd->chain.failed, "faults") && ret == -EINVAL ? EXIT_USAGE
									    : EXIT_RUNTIME;
	}
	ret = ctrl_init(&pd->ctrl, &pd->cfg.ctrl, &pd->timer, chain_top(&pd->chain)->ops->exec,
			chain_top(&pd->chain)->self, (int64_t)clock_now_ns());
	if (ret)
		return EXIT_RUNTIME;
	pd->ctrl.admit_ns = chain_admit_ns;
	pd->ctrl.admit_arg = &pd->chain;
	pd->ctrl.may_hold = chain_may_block;
	pd->ctrl.may_hold_arg = &pd->chain;
	/* A control command fails with EBUSY rather than wait for what a stall holds. */
	if (chain_find(&pd->chain, "cache"))
		cache_set_held_below(chain_find(&pd->chain, "cache"), chain_any_held, &pd->chain);
	if (queue_init(&pd->q, &pd->cfg.queue, &pd->ctrl, &pd->timer, NULL, NULL))
		return EXIT_RUNTIME;
	return 0;
}

/* Tell the waiting parent the start worked, and let go of the caller's terminal or pipe: a
 * `$(plugdisk ...)`, an ssh command or a CI step returns, and no line lands there after the
 * start returned. */
static void pd_detach(int ready_fd)
{
	char st = EXIT_OK;
	int fd = open("/dev/null", O_RDWR);

	if (write(ready_fd, &st, 1) != 1) {
		/* the parent is gone; carry on */
	}
	close(ready_fd);
	log_also_stderr(false);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (chdir("/") < 0) {
		/* harmless: every path in use is absolute */
	}
}

/* ---- subcommands ---- */

/* A word after the program's name that runs a client instead of the daemon (libfuse's op
 * table: the dispatch is data). Each entry point gets argv from the word on, as its argv[0]. */
struct pd_subcommand {
	const char *name;
	int (*main)(int argc, char **argv);
};

static const struct pd_subcommand pd_subcommands[] = {
	{ "top", pd_top_main },		  /* daemon/client/top.c */
	{ "ctl", pd_ctl_main },		  /* daemon/client/ctl_client.c */
	{ "stats", pd_stats_main },	  /* daemon/client/stats_client.c */
	{ "replay", pd_replay_main },	  /* daemon/client/replay.c */
	{ "explore", pd_explore_main }, /* daemon/explore/explore.c */
};

/* The subcommand named by argv[1], or NULL: then the arguments are the daemon's. */
static const struct pd_subcommand *pd_subcommand_find(int argc, char **argv)
{
	if (argc < 2)
		return NULL;
	for (size_t i = 0; i < sizeof(pd_subcommands) / sizeof(pd_subcommands[0]); i++)
		if (!strcmp(argv[1], pd_subcommands[i].name))
			return &pd_subcommands[i];
	return NULL;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
	static struct pd pdata;
	struct pd *pd = &pdata;
	bool foreground, have_syslog = true, is_nbd;
	char err[1024], *mp = NULL;
	const struct pd_subcommand *cmd;
	struct pd_cli cli;
	int ret, ready_pipe[2] = { -1, -1 }, pid_fd = -1, log_fd = -1;
	sigset_t sigs;

	cmd = pd_subcommand_find(argc, argv);
	if (cmd)
		return cmd->main(argc - 1, argv + 1);
	argv[0] = (char *)"plugdisk";	/* getopt's messages start with it, not with a path */
	ret = pd_cli_parse(pd, argc, argv, &cli);
	if (ret >= 0)
		return ret;
	/* The daemon leaves its working directory, and a reload reads -c again. */
	ret = pd_cli_absolute(pd, &cli);
	if (ret)
		return ret;
	foreground = cli.foreground;

	ret = conf_load_args(pd->config_file, pd->args, pd->nargs, &pd->cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "plugdisk: %s\n", err);
		return EXIT_USAGE;
	}
	if (cli.dump) {
		uint64_t size;

		/* The size in force: an existing image keeps its own unless one is asked for,
		 * so that the output, fed back, describes the same disk. */
		if (!pd->cfg.disk_size_given && !backend_uri_is_nbd(pd->cfg.disk_image) &&
		    !pd_image_size(pd->cfg.disk_image, &size) && size)
			pd->cfg.disk_size = size;
		conf_print(&pd->cfg, stdout);
		return EXIT_OK;
	}
	ret = pd_cli_mountpoint(&cli, &pd->cfg, &mp);
	if (ret)
		return ret;
	ret = pd_check_mountpoint(mp, (char **)&pd->mountpoint);
	if (ret)
		return ret;
	is_nbd = backend_uri_is_nbd(pd->cfg.disk_image);
	/* An NBD export has its size and is opened after the fork below: its connections have
	 * threads. A file is opened here, so that its errors reach the caller directly. */
	if (is_nbd && !pd->cfg.disk_size_given)
		pd->cfg.disk_size = 0;
	if (!is_nbd) {
		ret = pd_check_image_fits(pd->cfg.disk_image, pd->cfg.disk_size);
		if (ret)
			return ret;
	}
	/* A block device, or an existing image, has its own size unless one is asked for. */
	if (!is_nbd) {
		struct stat ist;

		if (!pd->cfg.disk_size_given && stat(pd->cfg.disk_image, &ist) == 0 &&
		    (S_ISBLK(ist.st_mode) || S_ISREG(ist.st_mode)))
			pd->cfg.disk_size = 0;
		ret = (pd->cfg.disk_read_only ? backend_open_read_only : backend_open)(
			&pd->be, pd->cfg.disk_image, pd->cfg.disk_size, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "plugdisk: %s\n", err);
			return EXIT_IMAGE;
		}
	}

	/* Refused before anything is mounted: another daemon's pid file, a log file that cannot
	 * be opened. */
	if (cli.pidfile) {
		ret = pd_pidfile_lock(cli.pidfile, &pid_fd);
		if (ret) {
			backend_close(&pd->be);
			return ret;
		}
	}
	if (cli.log_file) {
		log_fd = open(cli.log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		if (log_fd < 0) {
			fprintf(stderr, "plugdisk: --log-file %s: %s\n", cli.log_file, strerror(errno));
			pd_pidfile_remove(pid_fd, cli.pidfile);
			backend_close(&pd->be);
			return EXIT_USAGE;
		}
	}
	if (!foreground) {
		pid_t pid;
		char st = EXIT_RUNTIME;

		if (pipe2(ready_pipe, O_CLOEXEC) < 0) {
			perror("plugdisk: pipe");
			return EXIT_RUNTIME;
		}
		pid = fork();
		if (pid < 0) {
			perror("plugdisk: fork");
			return EXIT_RUNTIME;
		}
		if (pid > 0) {
			close(ready_pipe[1]);
			if (read(ready_pipe[0], &st, 1) != 1)
				st = EXIT_RUNTIME;
			return st;
		}
		close(ready_pipe[0]);
		setsid();
		/* Until the start is reported, messages reach the caller's stderr too; then
		 * syslog or --log-file alone. Without a syslog socket (a container, a minimal
		 * machine) syslog() would drop every message: say so while the caller can see it. */
		have_syslog = !cli.log_file && access("/dev/log", F_OK) == 0;
		log_init("plugdisk", have_syslog, cli.log_level);
		log_to_fd(log_fd);
		log_also_stderr(true);
		if (!have_syslog && !cli.log_file)
			log_warn("no syslog socket at /dev/log: messages after the start are lost; "
				 "use --log-file PATH to keep them");
	} else {
		/* stderr, and --log-file too when given */
		log_init("plugdisk", false, cli.log_level);
		log_to_fd(log_fd);
		log_also_stderr(true);
	}
	if (pid_fd >= 0 && pd_pidfile_write(pid_fd, cli.pidfile)) {
		ret = EXIT_RUNTIME;
		goto fail;
	}
	log_debug("log level %d; disk.image %s, %s", cli.log_level, pd->cfg.disk_image,
		  pd->cfg.disk_read_only ? "read-only" : "read-write");

	/* Signals are taken synchronously by the main thread; every other thread inherits
	 * the blocked mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (is_nbd) {
		ret = backend_nbd_open(&pd->be, pd->cfg.disk_image, &pd->cfg.backend,
				       pd->cfg.disk_size, err, sizeof(err));
		if (ret) {
			log_err("disk.image %s", err);
			ret = EXIT_IMAGE;
			goto fail;
		}
		if (pd->cfg.disk_read_only)
			pd->be.read_only = true; /* writes and discards fail before they leave */
	}
	pd_cap_request_size(pd, &pd->cfg.queue);

	pthread_mutex_init(&pd->attr_lock, NULL);
	pthread_mutex_init(&pd->data_lock, NULL);
	pthread_cond_init(&pd->data_cond, NULL);
	clock_gettime(CLOCK_REALTIME, &pd->start_time);
	pd->atime = pd->mtime = pd->ctime = pd->start_time;
	for (int i = 0; i < INO_NR; i++) {
		pd->uid[i] = getuid();
		pd->gid[i] = getgid();
	}
	pd->mode[INO_ROOT] = S_IFDIR | 0755;
	pd->mode[INO_DISK] = S_IFREG | (pd->be.read_only ? 0400 : 0600);
	pd->mode[INO_STATS] = S_IFREG | 0644;
	pd->mode[INO_STAT] = S_IFREG | 0444;
	pd->mode[INO_CONTROL] = S_IFREG | 0600;
	pd->quit_pipe[0] = pd->quit_pipe[1] = pd->kick_fd = -1;

	pd->cfg.ctrl.disk_size = pd->be.size; /* per-GiB rates (burst credits), the seek model */
	ret = timer_init(&pd->timer, true);
	if (ret) {
		ret = EXIT_RUNTIME;
		goto fail;
	}
	ret = pd_stack_init(pd, err, sizeof(err));
	if (ret)
		goto fail;
	/* stats.listen: before the mount, so that a port in use fails the start */
	if (pd_metrics_start(pd)) {
		ret = EXIT_RUNTIME;
		goto fail;
	}
	ret = pd_mount(pd);
	if (ret)
		goto fail;

	log_info("disk %s: %" PRIu64 " bytes from %s mounted at %s", pd->cfg.disk_name, pd->be.size,
		 pd->cfg.disk_image, pd->mountpoint);
	pd_notify_status(pd, "READY=1\n");
	if (!foreground)
		pd_detach(ready_pipe[1]);

	for (;;) {
		struct timespec ts = { .tv_sec = 2 };
		int sig = sigtimedwait(&sigs, NULL, &ts);

		if (sig == SIGHUP) {
			pd_reload(pd);
		} else if (sig == SIGTERM || sig == SIGINT) {
			break;
		} else if (sig < 0) {
			pd_notify_status(pd, "");
			pd_fuse_trim_buffers(pd, true);
		}
	}
	pd_metrics_stop();
	ret = pd_shutdown(pd, &sigs);
	pd_pidfile_remove(pid_fd, cli.pidfile);
	conf_free(&pd->cfg);
	free(pd->args);
	return ret;

fail:
	pd_metrics_stop();
	pd_pidfile_remove(pid_fd, cli.pidfile);
	if (!foreground) {
		char st = (char)ret;

		if (write(ready_pipe[1], &st, 1) != 1) {
			/* the parent is gone */
		}
	}
	backend_close(&pd->be);
	return ret;
}
