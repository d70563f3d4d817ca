// SPDX-License-Identifier: MIT
/* plugdisk top: a live iostat-style view of a mounted plugdisk, from its stats file alone.
 * Rates come from the difference of two snapshots of MOUNTPOINT/stats, so top works on any
 * mounted plugdisk (one started by hand or by systemd) and needs no access to the daemon.
 * This file: the options, the terminal and the sampling loop; the samples are
 * daemon/client/top_sample.c, the report daemon/client/top_render.c. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "conf/parse.h"
#include "core/util/units.h"
#include "daemon/daemon.h"
#include "daemon/client/top.h"

/* Top's exit statuses are the daemon's (daemon/exit.h): 4 when MOUNTPOINT is not a plugdisk
 * mount, 1 when its stats file cannot be read for another reason. */

enum top_mode { MODE_SCREEN, MODE_ONCE, MODE_BATCH };

struct top {
	const char *mnt;
	double interval;
	uint64_t count;			/* reports to print before exiting; 0 = until killed */
	enum top_mode mode;
	bool tty_in;			/* keys are read from stdin */
	struct termios saved_tio;
	bool tio_saved, screen_on;
	struct top_src src;		/* MOUNTPOINT/stats */
};

static volatile sig_atomic_t top_quit, top_suspend;

static void top_on_signal(int sig)
{
	if (sig == SIGTSTP)
		top_suspend = 1;	/* the main loop restores the terminal, then stops */
	else
		top_quit = 1;
}

/* ---- terminal ---- */

static void screen_enter(struct top *t)
{
	struct termios tio;

	if (t->tty_in && !tcgetattr(STDIN_FILENO, &t->saved_tio)) {
		t->tio_saved = true;
		tio = t->saved_tio;
		tio.c_lflag &= ~(tcflag_t)(ICANON | ECHO);	/* ISIG stays: Ctrl-C still signals */
		tio.c_cc[VMIN] = 0;
		tio.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &tio);
	}
	/* Alternate screen, cursor hidden, no line wrap (a narrow terminal cuts lines short):
	 * the user's scrollback is left as it was. */
	fputs("\033[?1049h\033[?25l\033[?7l", stdout);
	fflush(stdout);
	t->screen_on = true;
}

static void screen_leave(struct top *t)
{
	if (t->screen_on) {
		fputs("\033[?7h\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		t->screen_on = false;
	}
	if (t->tio_saved) {
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved_tio);
		t->tio_saved = false;
	}
}

/* Wait until @deadline (top_mono_now() seconds) or a signal. In screen mode also watch the
 * keyboard: q quits, any other key redraws at once. Returns false to quit. */
static bool top_wait(struct top *t, double deadline)
{
	while (!top_quit) {
		double left = deadline - top_mono_now();
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int ms;

		if (top_suspend || left <= 0)
			return true;
		ms = (int)ceil(left * 1000);
		if (t->mode == MODE_SCREEN && t->tty_in) {
			char c;
			int n = poll(&pfd, 1, ms);

			if (top_suspend)
				return true;
			if (n > 0) {
				ssize_t r = read(STDIN_FILENO, &c, 1);

				if (r == 1 && (c == 'q' || c == 'Q'))
					return false;
				if (r == 1)
					return true;	/* any other key: refresh now */
				if (r == 0 || (errno != EINTR && errno != EAGAIN))
					t->tty_in = false;	/* hung up: stop watching keys */
			}
		} else {
			struct timespec ts = { .tv_sec = (time_t)left,
					       .tv_nsec = (long)((left - floor(left)) * 1e9) };

			nanosleep(&ts, NULL);	/* returns early on a signal */
		}
	}
	return false;
}

/* ---- main ---- */

static void top_usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk top MOUNTPOINT [INTERVAL [COUNT]] [--once|--batch]\n"
		"\n"
		"Show a mounted plugdisk's I/O rates (iostat -x style), queue state, command slots,\n"
		"rate-limit buckets and latency, from MOUNTPOINT/stats every INTERVAL seconds\n"
		"(default 1; fractions and units allowed: 0.5, 250ms, 2s), COUNT times (default:\n"
		"until stopped), as iostat does.\n"
		"\n"
		"      --once     take two samples INTERVAL apart, print one report and exit\n"
		"  -b, --batch    print a header and then one plain line per interval, until killed\n"
		"  -h, --help     this text\n"
		"\n"
		"Without --once or --batch the screen is redrawn each interval; q or Ctrl-C quits.\n"
		"When standard output is not a terminal, --batch is assumed.\n");
	pd_exit_help(f);
}

static int top_parse_args(struct top *t, int argc, char **argv)
{
	const char *interval = NULL, *count = NULL;
	int once = 0, batch = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--once")) {
			once = 1;
		} else if (!strcmp(a, "--batch") || !strcmp(a, "-b")) {
			batch = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			top_usage(stdout);
			exit(0);
		} else if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.') {
			fprintf(stderr, "plugdisk top: unknown option '%s'\n", a);
			return -1;
		} else if (!t->mnt) {
			t->mnt = a;
		} else if (!interval) {
			interval = a;
		} else if (!count) {
			count = a;
		} else {
			fprintf(stderr, "plugdisk top: unexpected argument '%s'\n", a);
			return -1;
		}
	}
	if (!t->mnt) {
		fprintf(stderr, "plugdisk top: missing MOUNTPOINT\n");
		return -1;
	}
	if (once && batch) {
		fprintf(stderr, "plugdisk top: --once and --batch exclude each other\n");
		return -1;
	}
	t->interval = 1.0;
	if (interval) {
		uint64_t ns;

		/* core/util/units.h: "0.5" (seconds), "250ms", "2s" */
		if (units_parse_duration(interval, 1000000000ull, &ns) || ns < 10000000ull ||
		    ns > 86400000000000ull) {
			fprintf(stderr,
				"plugdisk top: INTERVAL must be from 0.01 to 86400 seconds, as a number "
				"of seconds or with a unit (250ms, 2s) (got '%s')\n",
				interval);
			return -1;
		}
		t->interval = (double)ns / 1e9;
	}
	if (count) {
		if (conf_parse_u64_whole(count, &t->count) || !t->count) {
			fprintf(stderr, "plugdisk top: COUNT must be a whole number of reports, at "
					"least 1 (got '%s')\n", count);
			return -1;
		}
		if (once) {
			fprintf(stderr, "plugdisk top: --once and COUNT exclude each other (--once "
					"is COUNT 1)\n");
			return -1;
		}
	}
	t->mode = once ? MODE_ONCE : batch ? MODE_BATCH : MODE_SCREEN;
	if (t->mode == MODE_SCREEN && !isatty(STDOUT_FILENO))
		t->mode = MODE_BATCH;
	if (snprintf(t->src.path, sizeof(t->src.path), "%s/stats", t->mnt) >=
	    (int)sizeof(t->src.path)) {
		fprintf(stderr, "plugdisk top: MOUNTPOINT is too long\n");
		return -1;
	}
	return 0;
}

int pd_top_main(int argc, char **argv)
{
	struct top t = { 0 };
	struct sample s[2];
	struct sigaction sa = { 0 };
	int cur = 0, ret = EXIT_RUNTIME;
	double next;

	if (top_parse_args(&t, argc, argv)) {
		fprintf(stderr, "Try 'plugdisk top --help'.\n");
		return EXIT_USAGE;
	}
	/* A name renamed in the table and not here is a bug: say it rather than show zeros. */
	if (top_names_check(t.src.err, sizeof(t.src.err))) {
		fprintf(stderr, "plugdisk top: %s\n", t.src.err);
		return EXIT_RUNTIME;
	}
	/* No SA_RESTART: a signal must cut poll() and nanosleep() short. */
	sa.sa_handler = top_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (t.mode == MODE_SCREEN)
		sigaction(SIGTSTP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	t.tty_in = isatty(STDIN_FILENO);

	if (top_sample(&t.src, &s[cur]))
		goto err;
	next = top_mono_now() + t.interval;

	if (t.mode == MODE_SCREEN) {
		screen_enter(&t);
		fputs("\033[H", stdout);
		top_print_report(stdout, t.mnt, t.interval, NULL, &s[cur], "\033[K\n", true);
		fputs("\033[J", stdout);
		fflush(stdout);
	} else if (t.mode == MODE_BATCH) {
		top_print_batch_header(stdout);
		fflush(stdout);
	}
	for (;;) {
		if (!top_wait(&t, next))
			break;
		if (top_suspend) {	/* Ctrl-Z: give the terminal back, stop, redraw on resume */
			top_suspend = 0;
			screen_leave(&t);
			signal(SIGTSTP, SIG_DFL);
			raise(SIGTSTP);	/* returns after SIGCONT */
			sigaction(SIGTSTP, &sa, NULL);
			screen_enter(&t);
		}
		if (top_sample(&t.src, &s[!cur]))
			goto err;
		cur = !cur;
		/* Fixed cadence; after a stall (suspended terminal, slow mount) start afresh. */
		next += t.interval;
		if (next < top_mono_now())
			next = top_mono_now() + t.interval;
		switch (t.mode) {
		case MODE_ONCE:
			top_print_report(stdout, t.mnt, t.interval, &s[!cur], &s[cur], "\n", false);
			ret = 0;
			goto out;
		case MODE_BATCH:
			top_print_batch_line(stdout, &s[!cur], &s[cur]);
			if (ferror(stdout)) {	/* a closed pipe: nobody is reading */
				ret = 0;
				goto out;
			}
			break;
		case MODE_SCREEN:
			fputs("\033[H", stdout);
			top_print_report(stdout, t.mnt, t.interval, &s[!cur], &s[cur], "\033[K\n", true);
			fputs("\033[J", stdout);
			fflush(stdout);
			break;
		}
		if (t.count && !--t.count) {
			/* COUNT reports printed: the last one stays on the terminal */
			if (t.mode == MODE_SCREEN) {
				screen_leave(&t);
				top_print_report(stdout, t.mnt, t.interval, &s[!cur], &s[cur], "\n",
						 false);
			}
			break;
		}
	}
	ret = 0;
	goto out;
err:
	screen_leave(&t);
	fprintf(stderr, "plugdisk top: %s\n", t.src.err);
	ret = t.src.not_mount ? EXIT_MOUNT : EXIT_RUNTIME;
out:
	screen_leave(&t);
	free(t.src.buf);
	return ret;
}
