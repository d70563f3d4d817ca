/* SPDX-License-Identifier: MIT */
/* One logger with levels: stderr in the foreground, syslog as a daemon, or a file. */
#ifndef PLUGDISK_LOG_H
#define PLUGDISK_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* Send messages to syslog (true) or stderr (false). Call before starting threads. */
void log_init(const char *ident, bool use_syslog, enum log_level max);

/* Also copy messages to stderr while @on (a daemon until its parent has returned). */
void log_also_stderr(bool on);

/* Also write every message to @fd (--log-file), as stderr gets them; -1 for none. Call before
 * starting threads. */
void log_to_fd(int fd);

/* printf-style; %m works as in syslog(3) (glibc expands it from errno). */
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
