// SPDX-License-Identifier: MIT
/* `plugdisk stats MOUNTPOINT [--format=text|json|openmetrics]`: one snapshot of
 * MOUNTPOINT/stats, as it is (text), as one JSON object for scripts, or as OpenMetrics text
 * for Prometheus (node_exporter's textfile collector reads it too: only counter, gauge and
 * histogram families, so that its older text parser takes every line).
 *
 * The stats file is "name value" lines under "# section" comments (doc/stats.md). Which
 * values are counters is decided here, by section and by name: a counter only grows (a
 * reset aside); everything else is a gauge. The cumulative latency lines
 * (OP_lat_le_Nus, OP_lat_count) become one histogram per op, in seconds. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/client/stats_read.h"


enum fmt { FMT_TEXT, FMT_JSON, FMT_OPENMETRICS };

/* One "name value" line, or a "# name value" note (nbd_uri), of the stats file. */
struct stat_line {
	const char *section;	/* the "# ..." comment above it */
	const char *name, *value;
	bool number;		/* value is a decimal integer, maybe negative */
	bool note;		/* from a comment: a string by nature */
};

struct stats_doc {
	char *text;		/* the file, split in place */
	char disk[128];		/* from "# plugdisk NAME" */
	struct stat_line *l;
	size_t n;
};

static const char *const op_names[] = { "read", "write", "flush", "discard" };

static bool is_integer(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool is_metric_name(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* Split doc->text into lines and those into names and values. 0 or -ENOMEM. */
static int stats_parse(struct stats_doc *doc)
{
	const char *section = "";
	char *save = NULL, *line;
	size_t cap = 0;

	for (line = strtok_r(doc->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct stat_line sl = { .section = section };
		char *sp;

		if (line[0] == '#') {
			char *rest = line + 1 + (line[1] == ' ');

			if (!doc->n && !doc->disk[0] && !strncmp(rest, "plugdisk ", 9)) {
				snprintf(doc->disk, sizeof(doc->disk), "%s", rest + 9);
				continue;
			}
			sp = strchr(rest, ' ');
			/* "# nbd_uri nbd://...": a note, a name with an underscore and a value */
			if (sp && strchr(rest, '_') && strchr(rest, '_') < sp) {
				*sp = '\0';
				if (is_metric_name(rest)) {
					sl.name = rest;
					sl.value = sp + 1;
					sl.note = true;
					goto add;
				}
				*sp = ' ';
			}
			section = rest;
			continue;
		}
		sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		sl.name = line;
		sl.value = sp + 1;
		sl.number = is_integer(sl.value);
add:
		if (doc->n == cap) {
			struct stat_line *nl;

			cap = cap ? cap * 2 : 256;
			nl = realloc(doc->l, cap * sizeof(*nl));
			if (!nl)
				return -ENOMEM;
			doc->l = nl;
		}
		doc->l[doc->n++] = sl;
	}
	return 0;
}

/* "read" for "read_lat_le_64us" (with *@bound_us = 64), or for "read_lat_count" (with
 * *@bound_us = 0: the +Inf bucket); NULL for any other name. */
static const char *lat_hist_op(const char *name, uint64_t *bound_us)
{
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
		size_t n = strlen(op_names[i]);
		const char *p = name + n;
		char *end;

		if (strncmp(name, op_names[i], n))
			continue;
		if (!strcmp(p, "_lat_count")) {
			*bound_us = 0;
			return op_names[i];
		}
		if (strncmp(p, "_lat_le_", 8))
			continue;
		*bound_us = strtoull(p + 8, &end, 10);
		if (end != p + 8 && !strcmp(end, "us") && *bound_us)
			return op_names[i];
	}
	return NULL;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Whether @l only grows between resets: everything in the sections of counters but the
 * figures of a moment (percentiles, the maximum, averages), and the counters that sit among
 * the state. */
static bool is_counter(const struct stat_line *l)
{
	static const char *const counters[] = {
		"credits_spent", "write_cliff_bytes", "latency_host_starts", "fuse_ring_requests",
		"fuse_ring_commit_waits", "cache_destaged_bytes", "cache_destaged_writes",
		"cache_flushes", "cache_flushes_ignored", "cache_powercuts", "disk_opens_fenced",
		"disk_requests_fenced", "nbd_reconnects",
		"nbd_timeouts", "nbd_failed_fast", "nbd_deferred",
	};

	if (!l->number || l->note || l->name[0] == '-')
		return false;
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		if (!strcmp(l->name, counters[i]))
			return true;
	if (!strncmp(l->name, "fault_", 6) &&
	    (has_suffix(l->name, "_matched") || has_suffix(l->name, "_injected")))
		return true;
	if (!strncmp(l->section, "plugging", 8) || !strncmp(l->section, "device time", 11))
		return true;
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(l->section, op_names[i]))
			return !strstr(l->name, "_lat_p") && !has_suffix(l->name, "_lat_max_us") &&
			       !has_suffix(l->name, "_avg_request_bytes");
	return false;
}

/* ---- JSON ---- */

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void print_json(const struct stats_doc *doc, FILE *f)
{
	bool first = true;

	fputs("{\"disk\":", f);
	json_string(f, doc->disk);
	fputs(",\"stats\":{", f);
	for (size_t i = 0; i < doc->n; i++) {
		const struct stat_line *l = &doc->l[i];

		fprintf(f, "%s\n", first ? "" : ",");
		first = false;
		json_string(f, l->name);
		fputc(':', f);
		if (l->number)
			fputs(l->value, f);
		else
			json_string(f, l->value);
	}
	/* The histograms again, by op and bound, for scripts that plot them. */
	fputs("},\n\"latency_histogram_us\":{", f);
	for (size_t o = 0; o < sizeof(op_names) / sizeof(op_names[0]); o++) {
		bool b_first = true;

		fprintf(f, "%s", o ? ",\n" : "\n");
		json_string(f, op_names[o]);
		fputs(":{", f);
		for (size_t i = 0; i < doc->n; i++) {
			const struct stat_line *l = &doc->l[i];
			uint64_t bound;
			const char *op = lat_hist_op(l->name, &bound);

			if (!op || strcmp(op, op_names[o]) || !l->number)
				continue;
			if (bound)
				fprintf(f, "%s\"%" PRIu64 "\":%s", b_first ? "" : ",", bound, l->value);
			else
				fprintf(f, "%s\"+Inf\":%s", b_first ? "" : ",", l->value);
			b_first = false;
		}
		fputc('}', f);
	}
	fputs("}}\n", f);
}

/* ---- OpenMetrics ---- */

static void om_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void print_openmetrics(const struct stats_doc *doc, FILE *f)
{
	uint64_t bound;

	for (size_t i = 0; i < doc->n; i++) {
		const struct stat_line *l = &doc->l[i];

		if (lat_hist_op(l->name, &bound) || !is_metric_name(l->name))
			continue;	/* the histograms follow; odd names are not metrics */
		if (!l->number) {
			/* A word ("stop_reason none"): a gauge of 1 with the word as its label,
			 * as node_exporter shows such states. */
			fprintf(f, "# TYPE plugdisk_%s gauge\nplugdisk_%s{disk=\"", l->name, l->name);
			om_label_value(f, doc->disk);
			fprintf(f, "\",%s=\"", l->name);
			om_label_value(f, l->value);
			fputs("\"} 1\n", f);
			continue;
		}
		if (is_counter(l)) {
			fprintf(f, "# TYPE plugdisk_%s counter\nplugdisk_%s_total{disk=\"", l->name,
				l->name);
		} else {
			fprintf(f, "# TYPE plugdisk_%s gauge\nplugdisk_%s{disk=\"", l->name, l->name);
		}
		om_label_value(f, doc->disk);
		fprintf(f, "\"} %s\n", l->value);
	}
	for (size_t o = 0; o < sizeof(op_names) / sizeof(op_names[0]); o++) {
		const struct stat_line *inf = NULL;
		bool typed = false;

		for (size_t i = 0; i < doc->n; i++) {
			const struct stat_line *l = &doc->l[i];
			const char *op = lat_hist_op(l->name, &bound);

			if (!op || strcmp(op, op_names[o]) || !l->number)
				continue;
			if (!bound) {
				inf = l;
				continue;
			}
			if (!typed)
				fprintf(f, "# TYPE plugdisk_%s_latency_seconds histogram\n", op);
			typed = true;
			fprintf(f, "plugdisk_%s_latency_seconds_bucket{disk=\"", op);
			om_label_value(f, doc->disk);
			fprintf(f, "\",le=\"%.9g\"} %s\n", (double)bound / 1e6, l->value);
		}
		if (!typed || !inf)
			continue;
		fprintf(f, "plugdisk_%s_latency_seconds_bucket{disk=\"", op_names[o]);
		om_label_value(f, doc->disk);
		fprintf(f, "\",le=\"+Inf\"} %s\n", inf->value);
	}
	fputs("# EOF\n", f);
}

static void stats_usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk stats MOUNTPOINT [--format=text|json|openmetrics]\n"
		"\n"
		"Print one snapshot of MOUNTPOINT/stats: as it is (text, the default), as one JSON\n"
		"object ({\"disk\": NAME, \"stats\": {NAME: VALUE...}, \"latency_histogram_us\":\n"
		"{OP: {BOUND: COUNT... \"+Inf\": COUNT}}}), or as OpenMetrics text (plugdisk_*\n"
		"metrics with a disk label, latency histograms in seconds, ending in # EOF) for\n"
		"Prometheus or node_exporter's textfile collector.\n");
	pd_exit_help(f);
}

int pd_stats_main(int argc, char **argv)
{
	struct stats_doc doc = { 0 };
	const char *mnt = NULL, *format = "text";
	char path[4096];
	size_t text_cap = 0;
	enum fmt fmt;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			stats_usage(stdout);
			return EXIT_OK;
		} else if (!strncmp(a, "--format=", 9)) {
			format = a + 9;
		} else if (!strcmp(a, "--format") && i + 1 < argc) {
			format = argv[++i];
		} else if (a[0] == '-') {
			fprintf(stderr, "plugdisk stats: unknown option '%s'\nTry 'plugdisk stats "
					"--help'.\n", a);
			return EXIT_USAGE;
		} else if (!mnt) {
			mnt = a;
		} else {
			fprintf(stderr, "plugdisk stats: unexpected argument '%s'\n", a);
			return EXIT_USAGE;
		}
	}
	if (!mnt) {
		stats_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(format, "text")) {
		fmt = FMT_TEXT;
	} else if (!strcmp(format, "json")) {
		fmt = FMT_JSON;
	} else if (!strcmp(format, "openmetrics") || !strcmp(format, "prometheus")) {
		fmt = FMT_OPENMETRICS;
	} else {
		fprintf(stderr, "plugdisk stats: --format %s: must be text, json or openmetrics\n",
			format);
		return EXIT_USAGE;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/stats", mnt) >= sizeof(path)) {
		fprintf(stderr, "plugdisk stats: %s: path too long\n", mnt);
		return EXIT_USAGE;
	}
	ret = stats_read_file(path, &doc.text, &text_cap);
	if (ret == -ENOENT || ret == -ENOTDIR) {
		fprintf(stderr, "plugdisk stats: %s is not a plugdisk mount (no %s)\n", mnt, path);
		return EXIT_MOUNT;
	}
	if (ret == -ENODEV) {
		fprintf(stderr, "plugdisk stats: %s is not a plugdisk mount (%s is not a file of "
				"a FUSE mount)\n", mnt, path);
		return EXIT_MOUNT;
	}
	if (ret == -ENOTCONN) {
		fprintf(stderr, "plugdisk stats: %s: the plugdisk daemon of this mount has exited "
				"(unmount it with fusermount3 -u)\n", mnt);
		return EXIT_MOUNT;
	}
	if (ret == -EFBIG) {
		fprintf(stderr, "plugdisk stats: %s: larger than %u bytes\n", path, STATS_READ_MAX);
		return EXIT_RUNTIME;
	}
	if (ret) {
		fprintf(stderr, "plugdisk stats: read %s: %s\n", path, strerror(-ret));
		return EXIT_RUNTIME;
	}
	if (fmt == FMT_TEXT) {
		fputs(doc.text, stdout);
		ret = 0;
	} else {
		ret = stats_parse(&doc);
		if (!ret && fmt == FMT_JSON)
			print_json(&doc, stdout);
		else if (!ret)
			print_openmetrics(&doc, stdout);
	}
	free(doc.l);
	free(doc.text);
	if (ret) {
		fprintf(stderr, "plugdisk stats: out of memory\n");
		return EXIT_RUNTIME;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "plugdisk stats: write: %s\n", strerror(errno));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}
