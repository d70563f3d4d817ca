/* SPDX-License-Identifier: MIT */
/* Unit tests of conf/: defaults, the example file, sizes, --set, and every refused input
 * with the file, line and key its message must name. */
#undef NDEBUG
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "tests/unit/suite.h"

/* conf_load takes argv-style strings; it never writes them */
#define S(lit) ((char *)(lit))

static char tmpdir[] = "/tmp/plugdisk-test-config-XXXXXX";
static unsigned nfiles;
static char err[1024];

/* Write @text to a fresh file under tmpdir with @mode; return its path (static storage
 * per call site is not needed: each test writes one file at most twice). */
static const char *write_conf(const char *text, mode_t mode)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/t%u-%d.conf", tmpdir, nfiles++, (int)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
	return path;
}

/* Load @text as a config file with @sets; return conf_load's result. */
static int load_text(const char *text, char *const *sets, size_t nsets, struct pd_config *c,
		     const char **pathp)
{
	const char *path = write_conf(text, 0600);

	if (pathp)
		*pathp = path;
	return conf_load(path, sets, nsets, c, err, sizeof(err));
}

/* Expect @text to be refused with exactly "PATH:@suffix". */
static void expect_file_error(const char *text, const char *suffix)
{
	struct pd_config c;
	const char *path;
	char want[PATH_MAX + 256];

	ck_assert_int_eq(load_text(text, NULL, 0, &c, &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:%s", path, suffix);
	ck_assert_str_eq(err, want);
}

static void expect_set_error(const char *set, const char *msg)
{
	struct pd_config c;
	char *sets[] = { (char *)set };

	ck_assert_int_eq(conf_load(NULL, sets, 1, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, msg);
}

static char *print_to_string(const struct pd_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	conf_print(c, f);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

START_TEST(test_defaults_without_file)
{
	struct pd_config c;

	ck_assert_int_eq(conf_load(NULL, NULL, 0, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.disk_image, CONF_DEFAULT_IMAGE);
	ck_assert_str_eq(c.disk_name, CONF_DEFAULT_NAME);
	ck_assert_str_eq(c.mount_point, "");
	ck_assert_str_eq(c.mount_options, "");
	ck_assert(!c.mount_allow_other);
	ck_assert_uint_eq(c.mount_threads, CONF_DEFAULT_THREADS);
	ck_assert_uint_eq(c.disk_size, CONF_DEFAULT_SIZE);
	ck_assert(c.queue.plug == QUEUE_DEFAULT_PLUG);
	ck_assert_uint_eq(c.queue.unplug_threshold, QUEUE_DEFAULT_UNPLUG_THRESHOLD);
	ck_assert_uint_eq(c.queue.unplug_delay_us, QUEUE_DEFAULT_UNPLUG_DELAY_US);
	ck_assert_uint_eq(c.queue.nomerges, QUEUE_DEFAULT_NOMERGES);
	ck_assert_uint_eq(c.queue.max_request_size, QUEUE_DEFAULT_MAX_REQUEST_SIZE);
	ck_assert_uint_eq(c.queue.nr_requests, QUEUE_DEFAULT_NR_REQUESTS);
	ck_assert_uint_eq(c.ctrl.queue_depth, CTRL_DEFAULT_QUEUE_DEPTH);
	ck_assert_uint_eq(c.ctrl.workers, CTRL_DEFAULT_WORKERS);
	ck_assert_uint_eq(c.ctrl.burst_ms, CTRL_DEFAULT_BURST_MS);
	ck_assert_uint_eq(c.ctrl.bandwidth + c.ctrl.read_bandwidth + c.ctrl.write_bandwidth, 0);
	ck_assert_uint_eq(c.ctrl.iops + c.ctrl.read_iops + c.ctrl.write_iops, 0);
	ck_assert_uint_eq(c.ctrl.latency_us + c.ctrl.read_latency_us + c.ctrl.write_latency_us +
				  c.ctrl.flush_latency_us, 0);
	conf_free(&c);
}
END_TEST

/* conf/plugdisk.conf documents the defaults: it must load and change nothing. */
START_TEST(test_example_file_loads_with_defaults)
{
	struct pd_config c, d;
	const char *path = "conf/plugdisk.conf";
	char *pc, *pd, alt[PATH_MAX];

	if (access(path, R_OK) && getenv("srcdir")) {
		snprintf(alt, sizeof(alt), "%s/conf/plugdisk.conf", getenv("srcdir"));
		path = alt;
	}
	ck_assert_msg(conf_load(path, NULL, 0, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(conf_load(NULL, NULL, 0, &d, err, sizeof(err)), 0);
	pc = print_to_string(&c);
	pd = print_to_string(&d);
	ck_assert_str_eq(pc, pd);
	free(pc);
	free(pd);
	conf_free(&c);
	conf_free(&d);
}
END_TEST

START_TEST(test_sizes_with_suffixes)
{
	struct pd_config c;
	uint64_t v;

	ck_assert_int_eq(conf_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(conf_parse_size("4K", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(conf_parse_size("3m", &v), 0);
	ck_assert_uint_eq(v, 3ull << 20);
	ck_assert_int_eq(conf_parse_size("2G", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(conf_parse_size("1T", &v), 0);
	ck_assert_uint_eq(v, 1ull << 40);
	ck_assert_int_eq(conf_parse_size("1.5G", &v), 0);	/* core/util/units.c has the rest */
	ck_assert_uint_eq(v, 3ull << 29);
	ck_assert_int_eq(conf_parse_size("1GiB", &v), 0);
	ck_assert_uint_eq(v, 1ull << 30);
	ck_assert_int_eq(conf_parse_size("1P", &v), 0);
	ck_assert_uint_eq(v, 1ull << 50);
	ck_assert_int_eq(conf_parse_size("", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_size("G", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_size("-1", &v), -EINVAL);
	ck_assert_int_eq(conf_parse_size("1KB", &v), 0);
	ck_assert_uint_eq(v, 1000);
	ck_assert_int_eq(conf_parse_size("16777216T", &v), -ERANGE);
	ck_assert_int_eq(conf_parse_size("99999999999999999999", &v), -ERANGE);

	ck_assert_msg(load_text("disk = { size = \"2G\"; };\n"
				"queue = { max_request_size = \"64K\"; };\n"
				"controller = { bandwidth = \"20M\"; read_bandwidth = 1048576;"
				" write_bandwidth = 8589934592L; iops = 500; };\n",
				NULL, 0, &c, NULL) == 0, "%s", err);
	ck_assert_uint_eq(c.disk_size, 2ull << 30);
	ck_assert_uint_eq(c.queue.max_request_size, 64 * 1024);
	ck_assert_uint_eq(c.ctrl.bandwidth, 20ull << 20);
	ck_assert_uint_eq(c.ctrl.read_bandwidth, 1 << 20);
	ck_assert_uint_eq(c.ctrl.write_bandwidth, 8ull << 30);
	ck_assert_uint_eq(c.ctrl.iops, 500);
	conf_free(&c);
}
END_TEST

/* Durations in every key named _us or _ms, rates with "/s", sizes with fractions and IEC or
 * SI suffixes, and "honor": each as the file's string or --set's value, beside the plain
 * numbers that worked before. */
START_TEST(test_units_in_keys)
{
	struct pd_config c;
	char *sets[] = { S("controller.latency_us=2ms"), S("controller.read_latency_us=1.5ms"),
			 S("controller.write_latency_us=250"), S("queue.unplug_delay_us=3 ms"),
			 S("backend.timeout_ms=1min 30s"), S("controller.burst_ms=2s"),
			 S("controller.bandwidth=100MB/s"), S("controller.write_bandwidth=1.5GiB"),
			 S("disk.size=1.5G"), S("cache.flush=honor"),
			 S("cache.destage_rate=64M/s") };

	ck_assert_msg(conf_load(NULL, sets, sizeof(sets) / sizeof(sets[0]), &c, err,
				sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.ctrl.latency_us, 2000);
	ck_assert_uint_eq(c.ctrl.read_latency_us, 1500);
	ck_assert_uint_eq(c.ctrl.write_latency_us, 250);
	ck_assert_uint_eq(c.queue.unplug_delay_us, 3000);
	ck_assert_uint_eq(c.backend.timeout_ms, 90000);
	ck_assert_uint_eq(c.ctrl.burst_ms, 2000);
	ck_assert_uint_eq(c.ctrl.bandwidth, 100000000);
	ck_assert_uint_eq(c.ctrl.write_bandwidth, 3ull << 29);
	ck_assert_uint_eq(c.disk_size, 3ull << 29);
	ck_assert_uint_eq(c.cache.flush, 0);
	ck_assert_str_eq(cache_flush_names[c.cache.flush], "honour");
	ck_assert_uint_eq(c.cache.destage_rate, 64ull << 20);
	conf_free(&c);

	ck_assert_msg(load_text("controller = { latency_us = \"2ms\"; flush_latency_us = 7;"
				" seek_full_us = \"8ms\"; seek_settle_us = \"500us\"; rpm = 7200;"
				" media_rate_outer = \"200MB/s\"; };\n"
				"cache = { destage_delay_ms = \"1s\"; };\n", NULL, 0, &c, NULL) == 0,
		      "%s", err);
	ck_assert_uint_eq(c.ctrl.latency_us, 2000);
	ck_assert_uint_eq(c.ctrl.flush_latency_us, 7);
	ck_assert_uint_eq(c.ctrl.seek_full_us, 8000);
	ck_assert_uint_eq(c.ctrl.seek_settle_us, 500);
	ck_assert_uint_eq(c.ctrl.media_rate_outer, 200000000);
	ck_assert_uint_eq(c.cache.destage_delay_ms, 1000);
	conf_free(&c);

	expect_set_error("controller.latency_us=1500ns",
			 "--set controller.latency_us=1500ns: controller.latency_us: \"1500ns\" is "
			 "not a whole number of microseconds");
	expect_set_error("controller.latency_us=2 parsecs",
			 "--set controller.latency_us=2 parsecs: controller.latency_us: not a duration: "
			 "\"2 parsecs\" (microseconds, or a number with a unit: 2ms, 1.5s, 250us, 1min)");
	expect_set_error("controller.latency_us=2h",
			 "--set controller.latency_us=2h: controller.latency_us: must be at most "
			 "3600000000 (got 7200000000)");
	expect_set_error("controller.latency_us=-2ms",
			 "--set controller.latency_us=-2ms: controller.latency_us: must not be "
			 "negative (got -2ms)");
	expect_set_error("controller.iops=2ms",
			 "--set controller.iops=2ms: controller.iops: not a number");
	expect_set_error("disk.size=1G/s", "--set disk.size=1G/s: disk.size: not a size: \"1G/s\" "
			 "(bytes, with an optional suffix: K, M, G, T, P, E or KiB, MiB... binary, "
			 "KB, MB... decimal)");
	expect_set_error("disk.size=0.3K", "--set disk.size=0.3K: disk.size: not a size: "
			 "\"0.3K\" (bytes, with an optional suffix: K, M, G, T, P, E or KiB, MiB... "
			 "binary, KB, MB... decimal)");
	expect_set_error("controller.bandwidth=1x/s",
			 "--set controller.bandwidth=1x/s: controller.bandwidth: not a rate: \"1x/s\" "
			 "(bytes per second, with an optional suffix: K, M, G, T, P, E or KiB, MiB... "
			 "binary, KB, MB... decimal)");
	expect_set_error("cache.flush=honr",
			 "--set cache.flush=honr: cache.flush: must be one of honour, ignore (got "
			 "\"honr\")");
	expect_file_error("queue = {\n nomerges = \"2ms\"; };\n",
			  "2: queue.nomerges: expected an integer, got a string");
	expect_file_error("controller = {\n latency_us = 1.5; };\n",
			  "2: controller.latency_us: expected an integer or a duration string such as "
			  "\"2ms\", got a floating-point number");
}
END_TEST

START_TEST(test_set_overrides_file)
{
	struct pd_config c;
	char *sets[] = { S("queue.nomerges=2"), S("disk.size=64M"), S("disk.image=/tmp/x=y.img"),
			 S("queue.nomerges=1") };

	ck_assert_msg(load_text("disk = { size = \"1G\"; image = \"a.img\"; };\n"
				"queue = { nomerges = 0; plug = true; };\n",
				sets, 4, &c, NULL) == 0, "%s", err);
	ck_assert_uint_eq(c.queue.nomerges, 1);	/* later --set wins */
	ck_assert_uint_eq(c.disk_size, 64ull << 20);
	ck_assert_str_eq(c.disk_image, "/tmp/x=y.img");	/* split at the first '=' */
	ck_assert(c.queue.plug);
	conf_free(&c);
}
END_TEST

START_TEST(test_set_bool_words)
{
	static const char *const on[] = { "true", "1", "yes", "on", "TRUE" };
	static const char *const off[] = { "false", "0", "no", "off", "Off" };
	struct pd_config c;
	char set[64], *sets[] = { set };

	for (size_t i = 0; i < 5; i++) {
		snprintf(set, sizeof(set), "mount.allow_other=%s", on[i]);
		ck_assert_int_eq(conf_load(NULL, sets, 1, &c, err, sizeof(err)), 0);
		ck_assert(c.mount_allow_other);
		conf_free(&c);
		snprintf(set, sizeof(set), "queue.plug=%s", off[i]);
		ck_assert_int_eq(conf_load(NULL, sets, 1, &c, err, sizeof(err)), 0);
		ck_assert(!c.queue.plug);
		conf_free(&c);
	}
	expect_set_error("queue.plug=maybe",
			 "--set queue.plug=maybe: queue.plug: expected true/false, 1/0, yes/no or "
			 "on/off (got \"maybe\")");
}
END_TEST

START_TEST(test_unknown_key_names_file_line_key)
{
	expect_file_error("queue = {\n\tplug = true;\n\tnomerge = 1;\n};\n",
			  "3: queue.nomerge: unknown key (did you mean queue.nomerges?)");
}
END_TEST

START_TEST(test_unknown_group_and_top_level_scalar)
{
	expect_file_error("\nqueu = { nomerges = 1; };\n",
			  "2: queu: unknown key (did you mean queue?)");
	expect_file_error("nomerges = 1;\n",
			  "1: nomerges: unknown key (did you mean queue.nomerges?)");
	expect_file_error("xyzzy = 1;\n",
			  "1: xyzzy: unknown key (groups are disk, mount, queue, controller, backend, cache, stages, crc, stats)");
	expect_file_error("disk = \"x.img\";\n", "1: disk: expected a group { ... }, got a string");
	expect_file_error("queue = { sub = { a = 1; }; };\n", "1: queue.sub: unknown key");
}
END_TEST

/* cache.*: words, a power of two, sizes; each refusal names the key and the place. */
START_TEST(test_cache_keys)
{
	struct pd_config c;
	const char *path;
	char *sets[] = { (char *)"cache.flush=ignore", (char *)"cache.atomic_write=16384" };

	ck_assert_int_eq(load_text("cache = {\n mode = \"writeback\";\n powercut = \"tear\";\n"
				   " size = \"32M\"; destage_rate = 0; };\n",
				   sets, 2, &c, &path), 0);
	ck_assert_uint_eq(c.cache.mode, CACHE_MODE_WRITEBACK);
	ck_assert_uint_eq(c.cache.powercut, CACHE_CUT_TEAR);
	ck_assert_uint_eq(c.cache.flush, CACHE_FLUSH_IGNORE);
	ck_assert_uint_eq(c.cache.atomic_write, 16384);
	ck_assert_uint_eq(c.cache.size, 32ull << 20);
	ck_assert_uint_eq(c.cache.destage_rate, 0);
	conf_free(&c);
	expect_file_error("cache = {\n\n mode = \"wb\"; };\n",
			  "3: cache.mode: must be one of none, writeback (got \"wb\")");
	expect_file_error("cache = { powercut = 2; };\n",
			  "1: cache.powercut: expected a string, got an integer");
	expect_set_error("cache.atomic_write=4000",
			 "--set cache.atomic_write=4000: cache.atomic_write: must be a power of two "
			 "(got 4000)");
	expect_set_error("cache.atomic_write=32768",
			 "--set cache.atomic_write=32768: cache.atomic_write: must be between 512 and "
			 "16384 (got 32768)");
	expect_set_error("cache.size=1M",
			 "--set cache.size=1M: cache.size: must be between 16M and 64G (got 1M)");
	expect_file_error("cache = {\n log = \"/tmp/w.log\"; };\n",
			  "2: cache.log: needs cache.mode = \"writeback\"");
	expect_set_error("cache.flush=sometimes",
			 "--set cache.flush=sometimes: cache.flush: must be one of honour, ignore "
			 "(got \"sometimes\")");
}
END_TEST

/* A reload names exactly the changed keys it leaves for the next start, in table order. */
START_TEST(test_restart_changed_names_keys)
{
	char *sets[] = { S("cache.seed=7"), S("disk.name=other"), S("controller.iops=100"),
			 S("mount.io_uring=off"), S("cache.destage_rate=1M") };
	struct pd_config a, b;
	char keys[256];

	ck_assert_int_eq(conf_load(NULL, NULL, 0, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_load(NULL, sets, 5, &b, err, sizeof(err)), 0);
	ck_assert_uint_eq(conf_restart_changed(&a, &a, keys, sizeof(keys)), 0);
	ck_assert_str_eq(keys, "");
	ck_assert_uint_eq(conf_restart_changed(&a, &b, keys, sizeof(keys)), 3);
	ck_assert_str_eq(keys, "disk.name, mount.io_uring, cache.seed");
	/* A short buffer still counts them all. */
	ck_assert_uint_eq(conf_restart_changed(&a, &b, keys, 5), 3);
	conf_free(&a);
	conf_free(&b);
}
END_TEST

START_TEST(test_wrong_type)
{
	expect_file_error("queue = {\n nomerges = \"2\"; };\n",
			  "2: queue.nomerges: expected an integer, got a string");
	expect_file_error("queue = {\n plug = 1; };\n",
			  "2: queue.plug: expected true or false, got an integer");
	expect_file_error("disk = {\n image = 5; };\n",
			  "2: disk.image: expected a string, got an integer");
	expect_file_error("disk = {\n size = 1.5; };\n",
			  "2: disk.size: expected an integer or a size string such as \"1G\", got a "
			  "floating-point number");
	expect_file_error("queue = {\n nr_requests = [1, 2]; };\n",
			  "2: queue.nr_requests: expected an integer, got an array");
	expect_set_error("controller.iops=abc", "--set controller.iops=abc: controller.iops: not a number");
}
END_TEST

START_TEST(test_negative_value)
{
	expect_file_error("controller = {\n\n iops = -5; };\n",
			  "3: controller.iops: must not be negative (got -5)");
	expect_file_error("controller = { bandwidth = \"-1M\"; };\n",
			  "1: controller.bandwidth: must not be negative (got \"-1M\")");
	expect_set_error("controller.latency_us=-1",
			 "--set controller.latency_us=-1: controller.latency_us: must not be negative "
			 "(got -1)");
}
END_TEST

/* libconfig wraps 4294967296 to 0 silently: it must be refused, not read as 0. */
START_TEST(test_overflow_32bit_literal)
{
	expect_file_error("disk = {\n\tsize =\n\t4294967296; };\n",
			  "2: disk.size: overflow: the integer does not fit in 32 bits (append L for "
			  "a 64-bit integer, or write a size string like \"4G\")");
	expect_file_error("controller = { latency_us = 0x100000000; };\n",
			  "1: controller.latency_us: overflow: the integer does not fit in 32 bits "
			  "(append L for a 64-bit integer)");
	/* a big number in a comment or a string is no overflow */
	struct pd_config c;
	ck_assert_msg(load_text("# size = 99999999999;\ndisk = { name = \"n99999999999\"; "
				"size = /* 99999999999 */ 1048576; };\n",
				NULL, 0, &c, NULL) == 0, "%s", err);
	ck_assert_uint_eq(c.disk_size, 1 << 20);
	conf_free(&c);
}
END_TEST

START_TEST(test_overflow_64bit)
{
	expect_file_error("disk = { size = 99999999999999999999L; };\n",
			  "1: disk.size: overflow: the integer does not fit in 64 bits (from "
			  "9223372036854775807 on, write it as a string: \"9223372036854775807\")");
	expect_file_error("disk = { size = \"99999999999T\"; };\n",
			  "1: disk.size: overflow: \"99999999999T\" does not fit in 64 bits");
	expect_set_error("controller.iops=99999999999999999999",
			 "--set controller.iops=99999999999999999999: controller.iops: overflow: "
			 "99999999999999999999 does not fit in 64 bits");
}
END_TEST

START_TEST(test_nomerges_out_of_range)
{
	expect_file_error("queue = {\n\n\n nomerges = 3; };\n",
			  "4: queue.nomerges: must be at most 2 (got 3)");
}
END_TEST

START_TEST(test_max_request_size_below_4k)
{
	expect_file_error("queue = { max_request_size = 2048; };\n",
			  "1: queue.max_request_size: must be between 4K and 16M (got 2K)");
	expect_set_error("queue.max_request_size=5000",
			 "--set queue.max_request_size=5000: queue.max_request_size: must be a "
			 "multiple of 512 (got 5000; the nearest are 4608 and 5120)");
}
END_TEST

START_TEST(test_queue_depth_zero)
{
	expect_file_error("controller = {\n queue_depth = 0; };\n",
			  "2: controller.queue_depth: must be between 1 and 4096 (got 0)");
}
END_TEST

START_TEST(test_threads_range)
{
	expect_file_error("mount = {\n threads = 0; };\n",
			  "2: mount.threads: must be between 1 and 64 (got 0)");
	expect_file_error("mount = { threads = 65; };\n",
			  "1: mount.threads: must be between 1 and 64 (got 65)");
}
END_TEST

START_TEST(test_latency_over_an_hour)
{
	struct pd_config c;
	char *sets[] = { S("controller.flush_latency_us=3600000000") };

	expect_file_error("controller = { write_latency_us = 3600000001L; };\n",
			  "1: controller.write_latency_us: must be at most 3600000000 (got 3600000001)");
	ck_assert_int_eq(conf_load(NULL, sets, 1, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.ctrl.flush_latency_us, 3600000000ull);
	conf_free(&c);
}
END_TEST

START_TEST(test_disk_size_bounds)
{
	expect_file_error("disk = { size = 1000; };\n",
			  "1: disk.size: must be a multiple of 512 (got 1000; the nearest are 512 and 1024)");
	expect_file_error("disk = { size = 0; };\n",
			  "1: disk.size: must be between 512 and 1E (got 0)");
	expect_set_error("disk.size=2000000T",
			 "--set disk.size=2000000T: disk.size: must be between 512 and 1E (got "
			 "2000000T)");
}
END_TEST

START_TEST(test_bandwidth_zero_or_at_least_512)
{
	struct pd_config c;
	char *sets[] = { S("controller.bandwidth=0"), S("controller.read_bandwidth=512") };

	ck_assert_int_eq(conf_load(NULL, sets, 2, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.ctrl.read_bandwidth, 512);
	conf_free(&c);
	expect_set_error("controller.write_bandwidth=100",
			 "--set controller.write_bandwidth=100: controller.write_bandwidth: must be 0 "
			 "(unlimited) or between 512 and 1T (got 100)");
}
END_TEST

/* A contradiction names both keys, at the place where the user set one of them. */
START_TEST(test_unplug_threshold_above_nr_requests)
{
	struct pd_config c;
	char *sets[] = { S("queue.nr_requests=16") };

	expect_file_error("queue = {\n nr_requests = 256;\n unplug_threshold = 300; };\n",
			  "3: queue.unplug_threshold: 300 is larger than queue.nr_requests (256)");
	ck_assert_int_eq(conf_load(NULL, sets, 1, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "--set queue.nr_requests=16: queue.nr_requests: 16 is smaller than "
			      "queue.unplug_threshold (32)");
}
END_TEST

START_TEST(test_disk_name_chars)
{
	expect_file_error("disk = { name = \"my disk\"; };\n",
			  "1: disk.name: may only hold letters, digits, '.', '_' and '-' (got \"my "
			  "disk\")");
	expect_file_error("disk = { name = \"\"; };\n", "1: disk.name: must not be empty");
	expect_set_error("disk.name=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			 "--set disk.name=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			 "aaaaa: disk.name: longer than 64 characters");
}
END_TEST

START_TEST(test_syntax_error_with_line)
{
	expect_file_error("queue = {\n nomerges = 1;\n plug = ;\n};\n", "3: syntax error");
	expect_file_error("queue = { plug = true; };\nqueue = { plug = false; };\n",
			  "2: syntax error: duplicate setting name");
}
END_TEST

START_TEST(test_set_without_equals)
{
	expect_set_error("queue.nomerges", "--set queue.nomerges: expected KEY=VALUE");
	expect_set_error("=2", "--set =2: expected KEY=VALUE");
}
END_TEST

START_TEST(test_set_unknown_key)
{
	expect_set_error("queue.nomerge=1",
			 "--set queue.nomerge=1: queue.nomerge: unknown key (did you mean queue.nomerges?)");
	expect_set_error("controler.latecy_us=1", "--set controler.latecy_us=1: controler.latecy_us: "
			 "unknown key (did you mean controller.latency_us?)");
	expect_set_error("xyzzy=1", "--set xyzzy=1: xyzzy: unknown key");
	expect_set_error("queue=1", "--set queue=1: queue: unknown key");
}
END_TEST

START_TEST(test_world_writable_refused_for_root)
{
	const char *path = write_conf("queue = { nomerges = 1; };\n", 0666);
	struct pd_config c;
	char want[PATH_MAX + 128];

	snprintf(want, sizeof(want),
		 "%s: refusing a config file that others can write (mode 0666) for a root daemon",
		 path);
	ck_assert_int_eq(chmod(path, 0666), 0);	/* beat the umask */
	if (geteuid() == 0) {
		ck_assert_int_eq(conf_load(path, NULL, 0, &c, err, sizeof(err)), -EPERM);
		ck_assert_str_eq(err, want);
	}
	ck_assert_int_eq(conf_check_file_safe(path, 0, err, sizeof(err)), -EPERM);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(chmod(path, 0620), 0);
	ck_assert_int_eq(conf_check_file_safe(path, 0, err, sizeof(err)), -EPERM);
	/* a non-root daemon reads what its user can read */
	ck_assert_int_eq(conf_check_file_safe(path, 1000, err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_foreign_owner_refused_for_root)
{
	const char *path = write_conf("queue = { nomerges = 1; };\n", 0644);
	struct pd_config c;

	if (geteuid() == 0) {
		ck_assert_int_eq(conf_check_file_safe(path, 0, err, sizeof(err)), 0);
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
		ck_assert_int_eq(conf_load(path, NULL, 0, &c, err, sizeof(err)), -EPERM);
	} else {
		/* the file is ours and we are not root: still refused for a root daemon */
		ck_assert_int_eq(conf_check_file_safe(path, 0, err, sizeof(err)), -EPERM);
	}
	ck_assert_ptr_nonnull(strstr(err, ": refusing a config file owned by uid "));
}
END_TEST

/* The main file and every @include pass one policy (conf_check_file_safe): it opens, it is a
 * regular file, and for a root daemon nobody else can change it. */
START_TEST(test_one_file_policy)
{
	char fifo[PATH_MAX], dir[PATH_MAX], want[PATH_MAX + 128];
	struct pd_config c;

	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", tmpdir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(conf_check_file_safe(fifo, 1000, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: not a regular file", fifo);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(conf_load(fifo, NULL, 0, &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, want);
	unlink(fifo);

	snprintf(dir, sizeof(dir), "%s/missing.conf", tmpdir);
	ck_assert_int_eq(conf_check_file_safe(dir, 1000, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot open: %s", dir, strerror(ENOENT));
	ck_assert_str_eq(err, want);

	/* an @include others can write is refused for a root daemon, naming the included file */
	if (geteuid() == 0) {
		char inc[PATH_MAX], text[PATH_MAX + 64];
		const char *path;

		snprintf(inc, sizeof(inc), "%s/inc.conf", tmpdir);
		snprintf(text, sizeof(text), "@include \"%s\"\n", inc);
		FILE *f = fopen(inc, "w");
		ck_assert_ptr_nonnull(f);
		fputs("queue = { nomerges = 1; };\n", f);
		ck_assert_int_eq(fclose(f), 0);
		ck_assert_int_eq(chmod(inc, 0644), 0);
		ck_assert_msg(load_text(text, NULL, 0, &c, &path) == 0, "%s", err);
		ck_assert_uint_eq(c.queue.nomerges, 1);
		conf_free(&c);
		ck_assert_int_eq(chmod(inc, 0666), 0);
		ck_assert_int_eq(load_text(text, NULL, 0, &c, &path), -EPERM);
		snprintf(want, sizeof(want),
			 "%s:1: @include \"%s\": refusing a config file that others can write "
			 "(mode 0666) for a root daemon", path, inc);
		ck_assert_str_eq(err, want);
		unlink(inc);
	}
}
END_TEST

START_TEST(test_missing_file_is_errno)
{
	struct pd_config c;
	char path[PATH_MAX], want[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/missing.conf", tmpdir);
	ck_assert_int_eq(conf_load(path, NULL, 0, &c, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot open: %s", path, strerror(ENOENT));
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(conf_load(tmpdir, NULL, 0, &c, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(test_error_leaves_out_untouched)
{
	struct pd_config c, before;
	char *sets[] = { S("disk.image=new.img"), S("queue.nomerges=7") };

	ck_assert_int_eq(conf_load(NULL, NULL, 0, &c, err, sizeof(err)), 0);
	before = c;
	ck_assert_int_eq(conf_load(NULL, sets, 2, &c, err, sizeof(err)), -EINVAL);
	ck_assert_mem_eq(&c, &before, sizeof(c));
	ck_assert_str_eq(c.disk_image, CONF_DEFAULT_IMAGE);
	conf_free(&c);
}
END_TEST

/* conf_print writes libconfig that loads back to the same values. */
START_TEST(test_print_round_trip)
{
	struct pd_config c, d;
	char *sets[] = { S("disk.image=/srv/a \"quoted\"\\img"), S("disk.size=1536"),
			 S("controller.latency_us=3600000000"), S("controller.write_bandwidth=1T"),
			 S("controller.iops=10000000"), S("queue.plug=off"), S("mount.options=ro,fsname=x"),
			 S("queue.max_request_size=16M") };
	char *pc, *pd, path[PATH_MAX];
	FILE *f;

	ck_assert_msg(conf_load(NULL, sets, 8, &c, err, sizeof(err)) == 0, "%s", err);
	pc = print_to_string(&c);
	snprintf(path, sizeof(path), "%s/print.conf", tmpdir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(pc, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(conf_load(path, NULL, 0, &d, err, sizeof(err)) == 0, "%s", err);
	pd = print_to_string(&d);
	ck_assert_str_eq(pc, pd);
	ck_assert_str_eq(d.disk_image, "/srv/a \"quoted\"\\img");
	ck_assert_uint_eq(d.disk_size, 1536);
	ck_assert_uint_eq(d.ctrl.latency_us, 3600000000ull);
	ck_assert(!d.queue.plug);
	free(pc);
	free(pd);
	conf_free(&c);
	conf_free(&d);
}
END_TEST

/* A 64-bit key at and past the edges of libconfig's integers (2^31, INT64_MAX, 2^63,
 * UINT64_MAX): what --dump-config prints loads back to the same value. */
START_TEST(test_print_round_trip_64bit_edges)
{
	static const uint64_t vals[] = { 0, 2147483647ull, 2147483648ull, 4294967296ull,
					 9223372036854775806ull, 9223372036854775807ull,
					 9223372036854775808ull, 18446744073709551614ull,
					 18446744073709551615ull };
	struct pd_config c, d;
	char set[64], *sets[] = { set }, *pc, *pd;
	const char *path;

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		snprintf(set, sizeof(set), "cache.seed=%" PRIu64, vals[i]);
		ck_assert_msg(conf_load(NULL, sets, 1, &c, err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(c.cache.seed, vals[i]);
		pc = print_to_string(&c);
		ck_assert_msg(load_text(pc, NULL, 0, &d, &path) == 0, "%s: %s", set, err);
		ck_assert_uint_eq(d.cache.seed, vals[i]);
		pd = print_to_string(&d);
		ck_assert_str_eq(pc, pd);
		free(pc);
		free(pd);
		conf_free(&c);
		conf_free(&d);
	}
	/* The string form in a file, and its limits */
	ck_assert_msg(load_text("cache = { seed = \"18446744073709551615\"; };\n", NULL, 0, &d,
				NULL) == 0, "%s", err);
	ck_assert_uint_eq(d.cache.seed, UINT64_MAX);
	conf_free(&d);
	expect_file_error("cache = { seed = \"18446744073709551616\"; };\n",
			  "1: cache.seed: overflow: 18446744073709551616 does not fit in 64 bits");
	expect_file_error("cache = { seed = \"-1\"; };\n",
			  "1: cache.seed: must not be negative (got -1)");
	expect_file_error("cache = { seed = 9223372036854775807L; };\n",
			  "1: cache.seed: overflow: the integer does not fit in 64 bits (from "
			  "9223372036854775807 on, write it as a string: \"9223372036854775807\")");
	/* controller.latency_seed stops one short of UINT64_MAX */
	expect_file_error("controller = { latency_seed = \"18446744073709551615\"; };\n",
			  "1: controller.latency_seed: must be at most 18446744073709551614 (got "
			  "18446744073709551615)");
}
END_TEST

/* The faults list: from the file, replaced by --set, each string checked by the core, and
 * printed back so that it loads again. */
START_TEST(test_faults_list)
{
	struct pd_config c, d;
	char *sets[] = { S("faults=op=read error=EIO; ;lie seed=3") };
	char *empty[] = { S("faults=") };
	char *text;
	const char *path;

	ck_assert_int_eq(load_text("faults = ( \"op=write offset=1M len=64K error=EIO every=3 "
				   "seed=42\", \"latency=exp:2ms\" );\n",
				   NULL, 0, &c, NULL), 0);
	ck_assert_uint_eq(c.faults.n, 2);
	ck_assert_str_eq(c.faults.spec[1], "latency=exp:2ms");
	text = print_to_string(&c);
	path = write_conf(text, 0600);
	ck_assert_int_eq(conf_load(path, NULL, 0, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.faults.n, 2);
	ck_assert_str_eq(d.faults.spec[0], c.faults.spec[0]);
	free(text);
	conf_free(&d);
	conf_free(&c);

	ck_assert_int_eq(load_text("faults = ( \"error=EIO\" );\n", sets, 1, &c, NULL), 0);
	ck_assert_uint_eq(c.faults.n, 2); /* --set replaced the file's list; blanks skipped */
	ck_assert_str_eq(c.faults.spec[0], "op=read error=EIO");
	ck_assert_str_eq(c.faults.spec[1], "lie seed=3");
	conf_free(&c);
	ck_assert_int_eq(load_text("faults = ( \"error=EIO\" );\n", empty, 1, &c, NULL), 0);
	ck_assert_uint_eq(c.faults.n, 0);
	conf_free(&c);
}
END_TEST

START_TEST(test_faults_refused)
{
	expect_file_error("faults = ( \"error=EIO\",\n \"op=write error=EBOGUS\" );\n",
			  "2: faults[1]: error=EBOGUS: unknown errno (EIO, ENOSPC, ETIMEDOUT, "
			  "EROFS, ...)");
	expect_file_error("faults = ( 5 );\n", "1: faults[0]: expected a string, got an integer");
	expect_file_error("faults = \"error=EIO\";\n",
			  "1: faults: expected a list of strings ( \"...\" ), got a string");
	expect_set_error("faults=error=EIO; latency=5",
			 "--set faults=error=EIO; latency=5: faults[1]: latency: expected DURATION, "
			 "uniform:MIN:MAX, exp:MEAN or pareto:SCALE:ALPHA, durations such as 2ms "
			 "(got \"5\")");
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_defaults_without_file);
	tcase_add_test(tc, test_faults_list);
	tcase_add_test(tc, test_faults_refused);
	tcase_add_test(tc, test_example_file_loads_with_defaults);
	tcase_add_test(tc, test_sizes_with_suffixes);
	tcase_add_test(tc, test_units_in_keys);
	tcase_add_test(tc, test_set_overrides_file);
	tcase_add_test(tc, test_set_bool_words);
	tcase_add_test(tc, test_unknown_key_names_file_line_key);
	tcase_add_test(tc, test_unknown_group_and_top_level_scalar);
	tcase_add_test(tc, test_wrong_type);
	tcase_add_test(tc, test_negative_value);
	tcase_add_test(tc, test_overflow_32bit_literal);
	tcase_add_test(tc, test_overflow_64bit);
	tcase_add_test(tc, test_nomerges_out_of_range);
	tcase_add_test(tc, test_threads_range);
	tcase_add_test(tc, test_max_request_size_below_4k);
	tcase_add_test(tc, test_queue_depth_zero);
	tcase_add_test(tc, test_latency_over_an_hour);
	tcase_add_test(tc, test_disk_size_bounds);
	tcase_add_test(tc, test_bandwidth_zero_or_at_least_512);
	tcase_add_test(tc, test_unplug_threshold_above_nr_requests);
	tcase_add_test(tc, test_disk_name_chars);
	tcase_add_test(tc, test_syntax_error_with_line);
	tcase_add_test(tc, test_set_without_equals);
	tcase_add_test(tc, test_set_unknown_key);
	tcase_add_test(tc, test_world_writable_refused_for_root);
	tcase_add_test(tc, test_foreign_owner_refused_for_root);
	tcase_add_test(tc, test_one_file_policy);
	tcase_add_test(tc, test_missing_file_is_errno);
	tcase_add_test(tc, test_error_leaves_out_untouched);
	tcase_add_test(tc, test_print_round_trip);
	tcase_add_test(tc, test_print_round_trip_64bit_edges);
	tcase_add_test(tc, test_cache_keys);
	tcase_add_test(tc, test_restart_changed_names_keys);
	suite_add_tcase(s, tc);
	return s;
}

/* Remove tmpdir and what the tests left in it (flat: tests make plain files only). */
static void remove_tmpdir(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(tmpdir);
}

int main(void)
{
	int ret;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	ret = run_suite(config_suite());
	remove_tmpdir();
	return ret;
}
