/* SPDX-License-Identifier: MIT */
/* Unit tests of the key-table interface (conf/keys/key.h): a module's own table with a custom
 * parser, a libconfig list, a preset applied first, an enum, a top-level key, a group spread
 * over two tables and a cross-key rule, loaded with conf_load_with; and conf_load_args naming
 * the option typed. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/keys/key.h"
#include "conf/parse.h"
#include "tests/unit/suite.h"

static char path[PATH_MAX];
static char err[1024];

/* --- a module's table, as a feature would write it ------------------------------------ */

/* profile: a top-level preset, applied first; its name is kept in mount_point. Each profile
 * presets disk.size, which the user may still set. */
static const struct {
	const char *name, *set;
} profiles[] = { { "hdd", "disk.size=8M" }, { "ssd", "disk.size=2M" }, { "broken", "disk.size=1000" } };

static int profile_parse(struct conf_load *ld, const struct conf_key *k, const char *text,
			 struct conf_why *why)
{
	char **slot = conf_value(ld, k), *copy;

	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		if (strcmp(text, profiles[i].name))
			continue;
		copy = strdup(text);
		if (!copy)
			return -ENOMEM;
		free(*slot);
		*slot = copy;
		return conf_preset(ld, "profile", profiles[i].name, profiles[i].set);
	}
	return conf_whyf(why, "unknown profile \"%s\" (profiles are hdd, ssd, broken)", text);
}

static void profile_print(const struct pd_config *c, const struct conf_key *k, FILE *f)
{
	fprintf(f, "\"%s\"", *(char *const *)((const char *)c + k->offset));
}

static void profile_release(struct pd_config *c, const struct conf_key *k)
{
	char **slot = conf_field(c, k);

	free(*slot);
	*slot = NULL;
}

static const struct conf_custom profile_custom = {
	.parse = profile_parse,
	.print = profile_print,
	.release = profile_release,
	.expected = "a profile name",
};

/* faults: a top-level list of strings; the test keeps the sum of their lengths in
 * mount_threads. */
static int faults_load(struct conf_load *ld, const struct conf_key *k, const config_setting_t *s,
		       struct conf_why *why)
{
	uint32_t sum = 0;

	if (!config_setting_is_list(s))
		return conf_whyf(why, "expected a list ( ... ), got %s", conf_setting_type_name(s));
	for (int i = 0; i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);

		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			why->at = e;
			snprintf(why->suffix, sizeof(why->suffix), "[%d]", i);
			return conf_whyf(why, "expected a string, got %s", conf_setting_type_name(e));
		}
		sum += (uint32_t)strlen(config_setting_get_string(e));
	}
	*(uint32_t *)conf_value(ld, k) = sum;
	return 0;
}

static int faults_parse(struct conf_load *ld, const struct conf_key *k, const char *text,
			struct conf_why *why)
{
	uint64_t v;

	if (conf_parse_u64(text, NULL, &v) || v > UINT32_MAX)
		return conf_whyf(why, "not a count");
	conf_loading(ld)->mount_threads = (uint32_t)v;
	(void)k;
	return 0;
}

static void faults_print(const struct pd_config *c, const struct conf_key *k, FILE *f)
{
	(void)k;
	fprintf(f, "( \"%0*d\" )", (int)c->mount_threads, 0);
}

static const struct conf_custom faults_custom = {
	.parse = faults_parse,
	.load = faults_load,
	.print = faults_print,
};

static const char *const mode_names[] = { "slow", "fast", NULL };

static const struct conf_key feature_keys[] = {
	CONF_CUSTOM_KEY("profile", mount_point, profile_custom, CONF_FIRST, "preset"),
	CONF_CUSTOM_KEY("faults", mount_threads, faults_custom, 0, "faults to inject"),
	CONF_KEY("disk.image", CONF_STRING, disk_image, 1, 64, 0, 0, "image"),
	CONF_ENUM_KEY("disk.mode", queue.nomerges, mode_names, "slow or fast"),
};

static void feature_defaults(struct pd_config *c)
{
	c->mount_point = strdup("none");
	c->disk_image = strdup("a.img");
}

static int feature_validate(struct conf_load *ld, const struct pd_config *c)
{
	if (!strcmp(c->mount_point, "ssd") && !strcmp(c->disk_image, "floppy.img"))
		return conf_reject(ld, "disk.image", "a floppy is no ssd");
	return 0;
}

static const struct conf_table feature_table =
	CONF_TABLE(feature_keys, feature_defaults, feature_validate);

/* The same group, disk, in another table. */
static const struct conf_key other_keys[] = {
	CONF_KEY("disk.size", CONF_SIZE, disk_size, 512, 1ull << 40, 512, 0, "bytes"),
};

static void other_defaults(struct pd_config *c)
{
	c->disk_size = 1 << 20;
}

static const struct conf_table other_table = CONF_TABLE(other_keys, other_defaults, NULL);

static const struct conf_table *const tabs[] = { &other_table, &feature_table, NULL };

/* --- helpers -------------------------------------------------------------------------- */

static const char *write_conf(const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0600), 0);
	return path;
}

static int load(const char *text, const struct conf_arg *args, size_t nargs, struct pd_config *c)
{
	return conf_load_with(tabs, text ? write_conf(text) : NULL, args, nargs, c, err,
			      sizeof(err));
}

static void expect_error(const char *text, const struct conf_arg *args, size_t nargs,
			 const char *want)
{
	struct pd_config c;
	char full[PATH_MAX + 512];

	ck_assert_int_eq(load(text, args, nargs, &c), -EINVAL);
	if (text)
		snprintf(full, sizeof(full), "%s:%s", path, want);
	else
		snprintf(full, sizeof(full), "%s", want);
	ck_assert_str_eq(err, full);
}

static char *print_of(const struct pd_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	conf_print_of(tabs, c, f);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

/* --- tests ---------------------------------------------------------------------------- */

START_TEST(test_defaults_come_from_every_table)
{
	struct pd_config c;

	ck_assert_msg(load(NULL, NULL, 0, &c) == 0, "%s", err);
	ck_assert_str_eq(c.mount_point, "none");
	ck_assert_str_eq(c.disk_image, "a.img");
	ck_assert_uint_eq(c.disk_size, 1 << 20);
	ck_assert_uint_eq(c.queue.nomerges, 0);
	ck_assert(!c.disk_size_given);
	conf_free_of(tabs, &c);
	ck_assert_ptr_null(c.mount_point);
	ck_assert_ptr_null(c.disk_image);
}
END_TEST

START_TEST(test_custom_top_level_list_and_enum_keys_load)
{
	struct pd_config c;

	ck_assert_msg(load("faults = (\"ab\", \"cde\");\n"
			   "disk = { size = \"4M\"; image = \"b.img\"; mode = \"fast\"; };\n", NULL, 0,
			   &c) == 0, "%s", err);
	ck_assert_uint_eq(c.mount_threads, 5);
	ck_assert_uint_eq(c.disk_size, 4 << 20);
	ck_assert(c.disk_size_given);
	ck_assert_str_eq(c.disk_image, "b.img");
	ck_assert_uint_eq(c.queue.nomerges, 1);
	conf_free_of(tabs, &c);
}
END_TEST

START_TEST(test_custom_refusals_name_file_line_key)
{
	expect_error("\nprofile = \"tape\";\n", NULL, 0,
		     "2: profile: unknown profile \"tape\" (profiles are hdd, ssd, broken)");
	expect_error("profile = 5;\n", NULL, 0, "1: profile: expected a profile name, got an integer");
	/* an element's own line, and the key with the element's index */
	expect_error("faults = (\"a\",\n 5);\n", NULL, 0, "2: faults[1]: expected a string, got an integer");
	expect_error("faults = 3;\n", NULL, 0, "1: faults: expected a list ( ... ), got an integer");
	expect_error("disk = { mode = \"medium\"; };\n", NULL, 0,
		     "1: disk.mode: must be one of slow, fast (got \"medium\")");
	expect_error("disk = { mode = 1; };\n", NULL, 0, "1: disk.mode: expected a string, got an integer");
}
END_TEST

START_TEST(test_groups_come_from_the_tables)
{
	/* "queue" is a group of the built-in tables, not of these */
	expect_error("queue = { plug = true; };\n", NULL, 0, "1: queue: unknown key (groups are disk)");
	expect_error("disk = { name = \"x\"; };\n", NULL, 0, "1: disk.name: unknown key");
}
END_TEST

START_TEST(test_options_reach_custom_parsers)
{
	struct conf_arg good[] = { { "--set", NULL, "faults=7" }, { "--mode", "disk.mode", "fast" } };
	struct conf_arg bad[] = { { "--profile", "profile", "tape" } };
	struct conf_arg badenum[] = { { "--mode", "disk.mode", "" } };
	struct pd_config c;

	ck_assert_msg(load(NULL, good, 2, &c) == 0, "%s", err);
	ck_assert_uint_eq(c.mount_threads, 7);
	ck_assert_uint_eq(c.queue.nomerges, 1);
	conf_free_of(tabs, &c);
	expect_error(NULL, bad, 1,
		     "--profile tape: profile: unknown profile \"tape\" (profiles are hdd, ssd, broken)");
	expect_error(NULL, badenum, 1, "--mode '': disk.mode: must be one of slow, fast (got \"\")");
}
END_TEST

/* A CONF_FIRST preset is applied before everything else, wherever it stands, so that what
 * the user sets wins; its own values are not "set by the user". */
START_TEST(test_first_key_presets_and_the_user_wins)
{
	struct conf_arg prof[] = { { "--profile", "profile", "hdd" } };
	struct conf_arg two[] = { { "--profile", "profile", "tape" }, { "--set", NULL, "profile=ssd" } };
	struct conf_arg broken[] = { { "--profile", "profile", "broken" } };
	struct pd_config c;

	/* in the file, after the key it presets: the file's value wins */
	ck_assert_msg(load("disk = { size = \"4M\"; };\nprofile = \"hdd\";\n", NULL, 0, &c) == 0,
		      "%s", err);
	ck_assert_str_eq(c.mount_point, "hdd");
	ck_assert_uint_eq(c.disk_size, 4 << 20);
	conf_free_of(tabs, &c);
	/* alone: its value, not counted as set by the user */
	ck_assert_msg(load("profile = \"hdd\";\n", NULL, 0, &c) == 0, "%s", err);
	ck_assert_uint_eq(c.disk_size, 8 << 20);
	ck_assert(!c.disk_size_given);
	conf_free_of(tabs, &c);
	/* the command line's beats the file's */
	ck_assert_msg(load("profile = \"ssd\";\n", prof, 1, &c) == 0, "%s", err);
	ck_assert_str_eq(c.mount_point, "hdd");
	ck_assert_uint_eq(c.disk_size, 8 << 20);
	conf_free_of(tabs, &c);
	/* the last on the command line counts */
	ck_assert_msg(load(NULL, two, 2, &c) == 0, "%s", err);
	ck_assert_str_eq(c.mount_point, "ssd");
	conf_free_of(tabs, &c);
	/* a preset's bad value is named by the preset */
	expect_error(NULL, broken, 1, "profile broken: disk.size: must be a multiple of 512 (got 1000; the nearest are 512 and 1024)");
}
END_TEST

START_TEST(test_validate_hook_names_the_origin)
{
	struct conf_arg args[] = { { "-i", "disk.image", "floppy.img" } };
	struct pd_config c;

	ck_assert_int_eq(load("profile = \"ssd\";\n", args, 1, &c), -EINVAL);
	ck_assert_str_eq(err, "-i floppy.img: disk.image: a floppy is no ssd");
	expect_error("profile = \"ssd\";\ndisk = {\n image = \"floppy.img\"; };\n", NULL, 0,
		     "3: disk.image: a floppy is no ssd");
}
END_TEST

START_TEST(test_print_top_level_first_and_each_group_once)
{
	struct pd_config c, d;
	char *a, *b;

	ck_assert_msg(load("faults = (\"ab\", \"cde\");\n", NULL, 0, &c) == 0, "%s", err);
	a = print_of(&c);
	ck_assert_str_eq(a, "profile = \"none\";\t# preset\n"
			    "faults = ( \"00000\" );\t# faults to inject\n"
			    "\n"
			    "disk = {\n"
			    "\tsize = \"1M\";\t# bytes\n"
			    "\timage = \"a.img\";\t# image\n"
			    "\tmode = \"slow\";\t# slow or fast\n"
			    "};\n");
	/* and it loads back, but for the profile "none", which is only a default */
	ck_assert_int_eq(load(a, NULL, 0, &d), -EINVAL);
	ck_assert_msg(load(a + strlen("profile = \"none\";\t# preset\n"), NULL, 0, &d) == 0, "%s",
		      err);
	b = print_of(&d);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	conf_free_of(tabs, &c);
	conf_free_of(tabs, &d);
}
END_TEST

/* The daemon's options: messages name the option as typed, for the built-in keys. */
START_TEST(test_load_args_names_the_option)
{
	struct conf_arg s[] = { { "-s", "disk.size", "1000" } };
	struct conf_arg size[] = { { "--size", "disk.size", "12Q" } };
	struct conf_arg img[] = { { "-i", "disk.image", "" } };
	struct conf_arg set[] = { { "--set", NULL, "disk.size=1000" } };
	struct conf_arg nokey[] = { { "--set", NULL, "=1" } };
	struct conf_arg later[] = { { "-s", "disk.size", "2M" }, { "--set", NULL, "disk.size=4M" } };
	struct pd_config c;

	ck_assert_int_eq(conf_load_args(NULL, s, 1, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "-s 1000: disk.size: must be a multiple of 512 (got 1000; the nearest are 512 and 1024)");
	ck_assert_int_eq(conf_load_args(NULL, size, 1, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "--size 12Q: disk.size: not a size: \"12Q\" (bytes, with an optional "
			      "suffix: K, M, G, T, P, E or KiB, MiB... binary, KB, MB... decimal)");
	ck_assert_int_eq(conf_load_args(NULL, img, 1, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "-i '': disk.image: must not be empty");
	ck_assert_int_eq(conf_load_args(NULL, set, 1, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "--set disk.size=1000: disk.size: must be a multiple of 512 (got 1000; the nearest are 512 and 1024)");
	ck_assert_int_eq(conf_load_args(NULL, nokey, 1, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "--set =1: expected KEY=VALUE");
	ck_assert_msg(conf_load_args(NULL, later, 2, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.disk_size, 4 << 20);
	ck_assert(c.disk_size_given);
	conf_free(&c);
}
END_TEST

static Suite *key_suite(void)
{
	Suite *s = suite_create("conf_key");
	TCase *tc = tcase_create("conf_key");

	tcase_add_test(tc, test_defaults_come_from_every_table);
	tcase_add_test(tc, test_custom_top_level_list_and_enum_keys_load);
	tcase_add_test(tc, test_custom_refusals_name_file_line_key);
	tcase_add_test(tc, test_groups_come_from_the_tables);
	tcase_add_test(tc, test_options_reach_custom_parsers);
	tcase_add_test(tc, test_first_key_presets_and_the_user_wins);
	tcase_add_test(tc, test_validate_hook_names_the_origin);
	tcase_add_test(tc, test_print_top_level_first_and_each_group_once);
	tcase_add_test(tc, test_load_args_names_the_option);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int ret, fd;

	snprintf(path, sizeof(path), "/tmp/plugdisk-test-conf-key-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	ret = run_suite(key_suite());
	unlink(path);
	return ret;
}
