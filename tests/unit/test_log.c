/* SPDX-License-Identifier: MIT */
/* Unit tests of the logger (core/util/log.c): a line cut to the buffer still ends in a newline and
 * never carries the terminating NUL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "tests/unit/suite.h"

#define LINE_MAX_BYTES 1200 /* log.c's line buffer */

/* Log one info message, with an ident of @ident_len 'i's and a message of @msg_len 'm's, to
 * stderr; return what reached stderr in @out. */
static ssize_t log_captured(size_t ident_len, size_t msg_len, char *out, size_t outlen)
{
	static char ident[512], msg[2048];
	int fds[2], saved;
	ssize_t n;

	ck_assert_uint_lt(ident_len, sizeof(ident));
	ck_assert_uint_lt(msg_len, sizeof(msg));
	memset(ident, 'i', ident_len);
	ident[ident_len] = '\0';
	memset(msg, 'm', msg_len);
	msg[msg_len] = '\0';
	ck_assert_int_eq(pipe(fds), 0);
	saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fds[1], STDERR_FILENO), 0);
	log_init(ident, false, LOG_LVL_INFO);
	log_info("%s", msg);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	close(fds[1]);
	n = read(fds[0], out, outlen);
	close(fds[0]);
	return n;
}

static void assert_whole_line(const char *out, ssize_t n)
{
	ck_assert_int_gt(n, 0);
	ck_assert_int_lt(n, LINE_MAX_BYTES);
	ck_assert_ptr_null(memchr(out, '\0', (size_t)n));
	ck_assert_int_eq(out[n - 1], '\n');
}

/* ident + ": " + message + "\n" is exactly the buffer's size. */
START_TEST(test_line_of_exactly_the_buffer_size)
{
	char out[4096];
	ssize_t n = log_captured(LINE_MAX_BYTES - 1023 - 3, 1023, out, sizeof(out));

	assert_whole_line(out, n);
}
END_TEST

START_TEST(test_line_longer_than_the_buffer)
{
	char out[4096];
	ssize_t n = log_captured(300, 1500, out, sizeof(out));

	assert_whole_line(out, n);
}
END_TEST

START_TEST(test_short_line_is_whole)
{
	char out[4096];
	ssize_t n = log_captured(8, 5, out, sizeof(out));

	ck_assert_int_eq(n, 8 + 2 + 5 + 1);
	ck_assert_mem_eq(out, "iiiiiiii: mmmmm\n", 16);
}
END_TEST

/* Log @msg at @lvl as "pd" to a pipe on stderr, with JOURNAL_STREAM unset (@journal NULL),
 * naming that pipe (""), or as given; return what reached the pipe in @out (NUL-terminated). */
static void log_level_captured(enum log_level lvl, const char *journal, const char *msg,
			       char *out, size_t outlen)
{
	int fds[2], saved;
	struct stat st;
	char js[64];
	ssize_t n;

	ck_assert_int_eq(pipe(fds), 0);
	saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fds[1], STDERR_FILENO), 0);
	ck_assert_int_eq(fstat(fds[1], &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	if (!journal)
		unsetenv("JOURNAL_STREAM");
	else
		setenv("JOURNAL_STREAM", *journal ? journal : js, 1);
	log_init("pd", false, LOG_LVL_DEBUG);
	log_msg(lvl, "%s", msg);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	close(fds[1]);
	n = read(fds[0], out, outlen - 1);
	close(fds[0]);
	ck_assert_int_gt(n, 0);
	out[n] = '\0';
	unsetenv("JOURNAL_STREAM");
}

/* An error is "ident: message", no "error: " tag; the other levels but info say what they
 * are. */
START_TEST(test_level_tags)
{
	char out[256];

	log_level_captured(LOG_LVL_ERR, NULL, "it failed", out, sizeof(out));
	ck_assert_str_eq(out, "pd: it failed\n");
	log_level_captured(LOG_LVL_WARN, NULL, "careful", out, sizeof(out));
	ck_assert_str_eq(out, "pd: warning: careful\n");
	log_level_captured(LOG_LVL_INFO, NULL, "fine", out, sizeof(out));
	ck_assert_str_eq(out, "pd: fine\n");
	log_level_captured(LOG_LVL_DEBUG, NULL, "detail", out, sizeof(out));
	ck_assert_str_eq(out, "pd: debug: detail\n");
}
END_TEST

/* On the journal's stream each line starts with its syslog priority, which journald reads. */
START_TEST(test_journal_priorities)
{
	char out[256];

	log_level_captured(LOG_LVL_ERR, "", "it failed", out, sizeof(out));
	ck_assert_str_eq(out, "<3>pd: it failed\n");
	log_level_captured(LOG_LVL_WARN, "", "careful", out, sizeof(out));
	ck_assert_str_eq(out, "<4>pd: warning: careful\n");
	log_level_captured(LOG_LVL_INFO, "", "fine", out, sizeof(out));
	ck_assert_str_eq(out, "<6>pd: fine\n");
	/* JOURNAL_STREAM naming another file (stderr redirected by hand): no prefix */
	log_level_captured(LOG_LVL_ERR, "1:1", "x", out, sizeof(out));
	ck_assert_str_eq(out, "pd: x\n");
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("line");

	tcase_add_test(tc, test_line_of_exactly_the_buffer_size);
	tcase_add_test(tc, test_line_longer_than_the_buffer);
	tcase_add_test(tc, test_short_line_is_whole);
	tcase_add_test(tc, test_level_tags);
	tcase_add_test(tc, test_journal_priorities);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(log_suite());
}
