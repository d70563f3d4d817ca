/* SPDX-License-Identifier: MIT */
/* Unit tests of device profiles and the model keys in conf/: each profile loads, the user's
 * keys win over it (from the file and from --set), an unknown name is refused naming the
 * known ones, and the model keys that only work together are checked. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "conf/profile.h"
#include "core/ctrl/latency.h"
#include "tests/unit/suite.h"

#define S(lit) ((char *)(lit))

static char err[1024];
static char path[PATH_MAX];

static const char *write_conf(const char *text)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/plugdisk-test-profile-%d.conf", (int)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0600), 0);
	return path;
}

static void load_ok(const char *text, char *const *sets, size_t n, struct pd_config *c)
{
	int ret = conf_load(text ? write_conf(text) : NULL, sets, n, c, err, sizeof(err));

	if (text)
		unlink(path);
	ck_assert_msg(ret == 0, "%s", err);
}

static void load_bad(const char *text, char *const *sets, size_t n, const char *want)
{
	struct pd_config c;
	int ret = conf_load(text ? write_conf(text) : NULL, sets, n, &c, err, sizeof(err));
	char full[PATH_MAX + 512];

	if (text)
		unlink(path);
	ck_assert_int_eq(ret, -EINVAL);
	if (text && want[0] != '-')
		snprintf(full, sizeof(full), "%s:%s", path, want);
	else
		snprintf(full, sizeof(full), "%s", want);
	ck_assert_str_eq(err, full);
}

START_TEST(test_every_profile_loads)
{
	char names[512], *save = NULL, set[128];
	int n = 0;

	conf_profile_names(names, sizeof(names));
	for (char *t = strtok_r(names, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		char *sets[] = { set };
		const struct conf_profile *p = conf_profile_find(t);
		struct pd_config c;

		ck_assert_ptr_nonnull(p);
		ck_assert(p->source && *p->source);
		snprintf(set, sizeof(set), "profile=%s", t);
		load_ok(NULL, sets, 1, &c);
		ck_assert_str_eq(c.profile, t);
		conf_free(&c);
		n++;
	}
	ck_assert_int_ge(n, 8);
	for (const char *want = "hdd-7200 sata-ssd nvme-gen4 ebs-gp2 ebs-gp3 ebs-io2 sd-a1 usb2-stick";
	     *want;) {
		char one[32];
		size_t l = strcspn(want, " ");

		snprintf(one, sizeof(one), "%.*s", (int)l, want);
		ck_assert_msg(conf_profile_find(one) != NULL, "profile %s missing", one);
		want += l + (want[l] == ' ');
	}
}
END_TEST

START_TEST(test_profile_sets_its_keys)
{
	struct pd_config c;

	load_ok("profile = \"ebs-gp2\";\n", NULL, 0, &c);
	ck_assert_uint_eq(c.ctrl.iops, 3000);
	ck_assert_uint_eq(c.ctrl.iops_size, 256 * 1024);
	ck_assert_uint_eq(c.ctrl.credit_capacity, 5400000);
	ck_assert_uint_eq(c.ctrl.credit_baseline_iops, 100);
	ck_assert_uint_eq(c.ctrl.credit_iops_per_gib, 3);
	conf_free(&c);
	load_ok(NULL, (char *[]){ S("profile=hdd-7200") }, 1, &c);
	ck_assert_uint_eq(c.ctrl.rpm, 7200);
	ck_assert_uint_eq(c.ctrl.seek_full_us, 15000);
	conf_free(&c);
	load_ok(NULL, (char *[]){ S("profile=sata-ssd") }, 1, &c);
	ck_assert_uint_eq(c.ctrl.latency_dist, LAT_DIST_LOGNORMAL);
	ck_assert_uint_eq(c.ctrl.read_iops, 98000);
	conf_free(&c);
}
END_TEST

/* Keys the user sets win, wherever they are in the file and whatever their order. */
START_TEST(test_user_keys_win)
{
	struct pd_config c;

	load_ok("controller = { iops = 5000; };\nprofile = \"ebs-gp2\";\n", NULL, 0, &c);
	ck_assert_uint_eq(c.ctrl.iops, 5000);
	ck_assert_uint_eq(c.ctrl.credit_capacity, 5400000);
	conf_free(&c);
	load_ok("profile = \"ebs-gp2\";\n",
		(char *[]){ S("controller.credit_capacity=5400"), S("controller.bandwidth=0") }, 2,
		&c);
	ck_assert_uint_eq(c.ctrl.credit_capacity, 5400);
	ck_assert_uint_eq(c.ctrl.bandwidth, 0);
	ck_assert_uint_eq(c.ctrl.iops, 3000);
	conf_free(&c);
	/* --profile replaces the file's profile; the file's keys still win over it */
	load_ok("profile = \"ebs-gp2\";\ncontroller = { queue_depth = 4; };\n",
		(char *[]){ S("profile=sd-a1") }, 1, &c);
	ck_assert_str_eq(c.profile, "sd-a1");
	ck_assert_uint_eq(c.ctrl.credit_capacity, 0);
	ck_assert_uint_eq(c.ctrl.write_iops, 0);
	ck_assert_uint_eq(c.ctrl.write_latency_us, 2000);
	ck_assert_uint_eq(c.ctrl.queue_depth, 4);
	conf_free(&c);
}
END_TEST

START_TEST(test_unknown_profile_names_the_known)
{
	char names[512], want[700];

	conf_profile_names(names, sizeof(names));
	snprintf(want, sizeof(want), "2: profile: unknown profile \"hdd\" (known: %s)", names);
	load_bad("\nprofile = \"hdd\";\n", NULL, 0, want);
	snprintf(want, sizeof(want), "--set profile=ssd: profile: unknown profile \"ssd\" (known: %s)",
		 names);
	load_bad(NULL, (char *[]){ S("profile=ssd") }, 1, want);
	/* as the daemon passes --profile NAME */
	{
		struct conf_arg a = { .opt = "--profile", .key = "profile", .arg = "ssd" };
		struct pd_config c;

		ck_assert_int_eq(conf_load_args(NULL, &a, 1, &c, err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want),
			 "--profile ssd: profile: unknown profile \"ssd\" (known: %s)", names);
		ck_assert_str_eq(err, want);
	}
	load_bad("profile = 3;\n", NULL, 0, "1: profile: expected a string, got an integer");
}
END_TEST

START_TEST(test_enum_keys)
{
	struct pd_config c;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	load_bad(NULL, (char *[]){ S("controller.latency_dist=gamma") }, 1,
		 "--set controller.latency_dist=gamma: controller.latency_dist: must be one of "
		 "constant, uniform, normal, lognormal, pareto (got \"gamma\")");
	load_bad("controller = { latency_tail = 99; };\n", NULL, 0,
		 "1: controller.latency_tail: expected a string, got an integer");
	load_ok("controller = { latency_dist = \"pareto\"; latency_tail = \"p99.9\"; "
		"latency_us = 100; latency_tail_us = 900; };\n",
		NULL, 0, &c);
	ck_assert_uint_eq(c.ctrl.latency_dist, LAT_DIST_PARETO);
	ck_assert_uint_eq(c.ctrl.latency_tail, LAT_TAIL_P999);
	f = open_memstream(&out, &len);
	conf_print(&c, f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "latency_dist = \"pareto\";"));
	ck_assert_ptr_nonnull(strstr(out, "latency_tail = \"p99.9\";"));
	free(out);
	conf_free(&c);
}
END_TEST

/* Keys that only work together name the key to fix. */
START_TEST(test_model_rules)
{
	load_bad(NULL, (char *[]){ S("controller.latency_dist=lognormal") }, 1,
		 "--set controller.latency_dist=lognormal: controller.latency_dist: \"lognormal\" "
		 "needs a tail: set controller.latency_tail_us");
	load_bad("controller = { latency_dist = \"normal\"; latency_us = 100; latency_tail_us = 90; };\n",
		 NULL, 0, "1: controller.latency_tail_us: 90 must be above its median (100 us)");
	load_bad(NULL, (char *[]){ S("controller.latency_tail_us=500") }, 1,
		 "--set controller.latency_tail_us=500: controller.latency_tail_us: a tail needs "
		 "controller.latency_dist other than \"constant\"");
	load_bad(NULL, (char *[]){ S("controller.rpm=7200") }, 1,
		 "--set controller.rpm=7200: controller.rpm: needs controller.media_rate_outer");
	load_bad(NULL, (char *[]){ S("controller.reorder=sptf") }, 1,
		 "--set controller.reorder=sptf: controller.reorder: sptf needs the seek model "
		 "(controller.rpm)");
	load_bad(NULL, (char *[]){ S("profile=hdd-7200"), S("controller.seek_full_us=500") }, 2,
		 "--set controller.seek_full_us=500: controller.seek_full_us: 500 is below "
		 "controller.seek_settle_us (1000)");
	load_bad(NULL, (char *[]){ S("controller.write_cliff_bytes=1G") }, 1,
		 "--set controller.write_cliff_bytes=1G: controller.write_cliff_bytes: needs "
		 "controller.write_cliff_window_ms and controller.write_cliff_bandwidth");
	load_bad(NULL, (char *[]){ S("controller.credit_capacity=100") }, 1,
		 "--set controller.credit_capacity=100: controller.credit_capacity: needs "
		 "controller.credit_baseline_iops or controller.credit_iops_per_gib");
	load_bad(NULL, (char *[]){ S("controller.iops_size=1000") }, 1,
		 "--set controller.iops_size=1000: controller.iops_size: must be a multiple of 512 "
		 "(got 1000; the nearest are 512 and 1024)");
}
END_TEST

static Suite *profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *tc = tcase_create("profile");

	tcase_add_test(tc, test_every_profile_loads);
	tcase_add_test(tc, test_profile_sets_its_keys);
	tcase_add_test(tc, test_user_keys_win);
	tcase_add_test(tc, test_unknown_profile_names_the_known);
	tcase_add_test(tc, test_enum_keys);
	tcase_add_test(tc, test_model_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(profile_suite());
}
