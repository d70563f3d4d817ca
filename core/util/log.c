// SPDX-License-Identifier: MIT
/* The logger. Each message is formatted into one buffer and written with one call, so lines
 * from different threads never interleave. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "core/util/log.h"

/* Written once by log_init() before any thread starts; read-only afterwards. */
static bool log_syslog;
static bool log_journal;	/* stderr is the journal's stream: lines carry "<N>" */
static bool log_stderr_too; /* atomic */
static int log_fd = -1;	/* --log-file, or -1 */
static enum log_level log_max = LOG_LVL_INFO;
static const char *log_ident = "plugdisk";

/* Whether stderr is the journal's stream (systemd sets JOURNAL_STREAM to its device and
 * inode), which reads a "<N>" priority prefix off each line (SyslogLevelPrefix=yes). */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *ident, bool use_syslog, enum log_level max)
{
	log_journal = stderr_is_journal();
	log_ident = ident;
	log_syslog = use_syslog;
	log_max = max;
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_also_stderr(bool on)
{
	WRITE_ONCE(log_stderr_too, on); /* a lone flag: a line or two late is fine */
}

void log_to_fd(int fd)
{
	log_fd = fd;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	/* An error reads "plugdisk: what failed", the way the start's own messages do; the
	 * other levels say what they are. */
	static const char *const tag[] = { "", "warning: ", "", "debug: " };
	int saved = errno;
	char buf[1024];
	va_list ap;
	int n;

	if (lvl > log_max)
		return;
	va_start(ap, fmt);
	errno = saved; /* for %m */
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		goto out;
	if (log_syslog)
		syslog(prio[lvl], "%s", buf);
	if ((!log_syslog && log_fd < 0) || READ_ONCE(log_stderr_too) || log_fd >= 0) {
		bool to_stderr = (!log_syslog && log_fd < 0) || READ_ONCE(log_stderr_too);
		char line[1200];
		char pri[8] = "";
		int m;

		/* In the journal an error's priority says what the tag would. */
		if (log_journal && to_stderr)
			snprintf(pri, sizeof(pri), "<%d>", prio[lvl]);
		m = snprintf(line, sizeof(line), "%s%s: %s%s\n", pri, log_ident, tag[lvl], buf);
		if (m < 0)
			goto out;
		if (m >= (int)sizeof(line)) { /* cut: keep the newline, not the NUL */
			m = (int)sizeof(line) - 1;
			line[m - 1] = '\n';
		}
		if (to_stderr && write(STDERR_FILENO, line, m) < 0) {
			/* nowhere left to report it */
		}
		/* O_APPEND: one write is one line, whoever else appends */
		if (log_fd >= 0 && write(log_fd, line + strlen(pri), m - strlen(pri)) < 0) {
			/* nowhere left to report it */
		}
	}
out:
	errno = saved;
}
