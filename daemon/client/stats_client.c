// SPDX-License-Identifier: MIT
/* `plugdisk stats MOUNTPOINT [--format=text|json|openmetrics|prometheus]`: one snapshot of
 * MOUNTPOINT/stats, as it is (text), as one JSON object for scripts, or as OpenMetrics text
 * for Prometheus (node_exporter's textfile collector reads it too: only counter, gauge and
 * histogram families, so that its older text parser takes every line).
 *
 * The stats file is "name value" lines under "# section" comments (doc/stats.md). Which
 * values are counters, their units and their HELP text come from the name table
 * (stats_names.c). The cumulative latency lines
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
#include "daemon/client/stats_names.h"
#include "daemon/client/stats_read.h"


enum fmt { FMT_TEXT, FMT_JSON, FMT_OPENMETRICS, FMT_PROMETHEUS };

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

/* Whether @l only grows between resets: the name tables say (stats_names.c). */
static bool is_counter(const struct stat_line *l)
{
	const struct stats_name *sn;

	if (!l->number || l->note || l->name[0] == '-')
		return false;
	sn = stats_name_find(l->name, NULL);
	return sn && sn->kind == STATS_COUNTER;
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

/* One sample of the Prometheus form: its family (base units, dimensions as labels). */
struct om_sample {
	char family[160];	/* "plugdisk_bios" */
	bool counter;		/* the sample is FAMILY_total */
	const char *help;
	char labels[320];	/* after disk="...": ",op=\"read\"" */
	char value[48];
};

static bool strip_suffix(char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	if (n < m || strcmp(s + n - m, suffix))
		return false;
	s[n - m] = '\0';
	return true;
}

/* The Prometheus form of stats line @l: the op, the request size bucket, the NBD connection
 * become labels; microseconds and milliseconds become seconds, "per_s" "per_second"; a
 * counter's samples end in _total. */
static void om_sample_of(const struct stat_line *l, struct om_sample *o)
{
	const struct stats_table *t = NULL;
	const struct stats_name *sn = stats_name_find(l->name, &t);
	const char *n_at = sn ? strchr(sn->pattern, 'N') : NULL;
	char base[160], *p;
	size_t lab = 0;
	double scale = 0;

	memset(o, 0, sizeof(*o));
	o->help = sn ? sn->help : "a plugdisk statistic (plugdisk(8), PLUGDISK STATS)";
	snprintf(base, sizeof(base), "%s", l->name);
	/* per op: the table's pattern starts with the ops */
	if (sn && !strncmp(sn->pattern, "{read,write", 11)) {
		for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
			size_t n = strlen(op_names[i]);

			if (!strncmp(base, op_names[i], n) && base[n] == '_') {
				lab += (size_t)snprintf(o->labels + lab, sizeof(o->labels) - lab,
							",op=\"%s\"", op_names[i]);
				memmove(base, base + n + 1, strlen(base + n + 1) + 1);
				break;
			}
		}
		if (!strncmp(base, "size_", 5)) {
			lab += (size_t)snprintf(o->labels + lab, sizeof(o->labels) - lab,
						",size=\"%s\"", base + 5);
			snprintf(base, sizeof(base), "requests_by_size");
		}
	}
	if (n_at) {
		/* the number N stands for is a label: its literal prefix is the name's */
		char *num = base + (n_at - sn->pattern), *end = num;

		while (*end >= '0' && *end <= '9')
			end++;
		lab += (size_t)snprintf(o->labels + lab, sizeof(o->labels) - lab, ",%s=\"%.*s\"",
					t->number_label, (int)(end - num), num);
		/* "fault_3_matched" -> "fault_matched", "nbd_conn2_state" -> "nbd_conn_state" */
		if (num > base && num[-1] == '_' && *end == '_')
			end++;
		memmove(num, end, strlen(end) + 1);
	}
	if (!strncmp(base, "lat_", 4)) {
		/* "lat_" -> "latency_": room for the 4 more bytes is kept below */
		if (strlen(base) + 4 < sizeof(base)) {
			memmove(base + 8, base + 4, strlen(base + 4) + 1);
			memcpy(base, "latency_", 8);
		}
	}
	/* units: base units, said in full */
	if ((p = strstr(base, "_us")) && (p[3] == '\0' || p[3] == '_') &&
	    strlen(base) + 5 < sizeof(base)) {
		memmove(p + 8, p + 3, strlen(p + 3) + 1);
		memcpy(p, "_seconds", 8);
		scale = 1e-6;
	} else if ((p = strstr(base, "_ms")) && (p[3] == '\0' || p[3] == '_') &&
		   strlen(base) + 5 < sizeof(base)) {
		memmove(p + 8, p + 3, strlen(p + 3) + 1);
		memcpy(p, "_seconds", 8);
		scale = 1e-3;
	}
	if (strip_suffix(base, "_per_s"))
		strncat(base, "_per_second", sizeof(base) - strlen(base) - 1);
	o->counter = is_counter(l);
	snprintf(o->family, sizeof(o->family), "plugdisk_%s", base);
	if (!l->number) {
		/* a word ("stop_reason none"): a gauge of 1 with the word as its label */
		o->counter = false;
		snprintf(o->value, sizeof(o->value), "1");
		lab += (size_t)snprintf(o->labels + lab, sizeof(o->labels) - lab, ",%s=\"", l->name);
		for (const char *c = l->value; *c && lab + 3 < sizeof(o->labels); c++) {
			if (*c == '"' || *c == '\\')
				o->labels[lab++] = '\\';
			o->labels[lab++] = *c == '\n' ? ' ' : *c;
		}
		snprintf(o->labels + lab, sizeof(o->labels) - lab, "\"");
	} else if (scale) {
		snprintf(o->value, sizeof(o->value), "%.9g", strtod(l->value, NULL) * scale);
	} else {
		snprintf(o->value, sizeof(o->value), "%s", l->value);
	}
}

static void om_disk(FILE *f, const struct stats_doc *doc)
{
	fputs("{disk=\"", f);
	om_label_value(f, doc->disk);
	fputc('"', f);
}

/* OpenMetrics (@om: a counter's family is named without _total, "# EOF" ends it) or the
 * Prometheus text format (0.0.4: the family is the sample's name, _total included; what
 * promtool checks and node_exporter's textfile collector reads). */
static void print_openmetrics(const struct stats_doc *doc, FILE *f, bool om)
{
	struct om_sample *s = calloc(doc->n ? doc->n : 1, sizeof(*s));
	bool *done = calloc(doc->n ? doc->n : 1, sizeof(*done));
	size_t ns = 0;
	uint64_t bound;

	if (!s || !done) {
		free(s);
		free(done);
		if (om)
			fputs("# EOF\n", f);
		return;
	}
	for (size_t i = 0; i < doc->n; i++) {
		const struct stat_line *l = &doc->l[i];

		if (lat_hist_op(l->name, &bound) || !is_metric_name(l->name) ||
		    has_suffix(l->name, "_lat_sum_us"))
			continue;	/* the histograms follow; odd names are not metrics */
		om_sample_of(l, &s[ns++]);
	}
	/* One family's samples together, under one HELP and TYPE, in order of first sight. */
	for (size_t i = 0; i < ns; i++) {
		if (done[i])
			continue;
		const char *total = s[i].counter && !om ? "_total" : "";

		fprintf(f, "# HELP %s%s %s\n# TYPE %s%s %s\n", s[i].family, total, s[i].help,
			s[i].family, total, s[i].counter ? "counter" : "gauge");
		for (size_t j = i; j < ns; j++) {
			if (done[j] || strcmp(s[j].family, s[i].family))
				continue;
			done[j] = true;
			fprintf(f, "%s%s", s[j].family, s[i].counter ? "_total" : "");
			om_disk(f, doc);
			fprintf(f, "%s} %s\n", s[j].labels, s[j].value);
		}
	}
	free(s);
	free(done);
	/* The latency histograms: one family, the op a label, in seconds. */
	fputs("# HELP plugdisk_latency_seconds latency of one bio, submit to completion\n"
	      "# TYPE plugdisk_latency_seconds histogram\n", f);
	for (size_t o = 0; o < sizeof(op_names) / sizeof(op_names[0]); o++) {
		const struct stat_line *inf = NULL, *sum = NULL;
		char sum_name[64];

		snprintf(sum_name, sizeof(sum_name), "%s_lat_sum_us", op_names[o]);
		for (size_t i = 0; i < doc->n; i++) {
			const struct stat_line *l = &doc->l[i];
			const char *op = lat_hist_op(l->name, &bound);

			if (!strcmp(l->name, sum_name) && l->number)
				sum = l;
			if (!op || strcmp(op, op_names[o]) || !l->number)
				continue;
			if (!bound) {
				inf = l;
				continue;
			}
			fputs("plugdisk_latency_seconds_bucket", f);
			om_disk(f, doc);
			fprintf(f, ",op=\"%s\",le=\"%.9g\"} %s\n", op_names[o], (double)bound / 1e6,
				l->value);
		}
		if (!inf)
			continue;
		fputs("plugdisk_latency_seconds_bucket", f);
		om_disk(f, doc);
		fprintf(f, ",op=\"%s\",le=\"+Inf\"} %s\n", op_names[o], inf->value);
		fputs("plugdisk_latency_seconds_sum", f);
		om_disk(f, doc);
		fprintf(f, ",op=\"%s\"} %.9g\n", op_names[o],
			sum ? strtod(sum->value, NULL) / 1e6 : 0.0);
		fputs("plugdisk_latency_seconds_count", f);
		om_disk(f, doc);
		fprintf(f, ",op=\"%s\"} %s\n", op_names[o], inf->value);
	}
	if (om)
		fputs("# EOF\n", f);
}

int stats_to_prometheus(char *text, FILE *f)
{
	struct stats_doc doc = { .text = text };
	int ret = stats_parse(&doc);

	if (!ret)
		print_openmetrics(&doc, f, false);
	free(doc.l);
	return ret;
}

static void stats_usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk stats MOUNTPOINT [--format=text|json|openmetrics|prometheus]\n"
		"       plugdisk stats --list-names[=markdown]\n"
		"\n"
		"Print one snapshot of MOUNTPOINT/stats: as it is (text, the default), as one JSON\n"
		"object ({\"disk\": NAME, \"stats\": {NAME: VALUE...}, \"latency_histogram_us\":\n"
		"{OP: {BOUND: COUNT... \"+Inf\": COUNT}}}), or as OpenMetrics text (plugdisk_*\n"
		"metrics with a disk label, latency histograms in seconds, ending in # EOF) for\n"
		"Prometheus or node_exporter's textfile collector.\n"
		"\n"
		"--list-names prints every name the stats file may hold, one a line: its pattern\n"
		"({read,write}_bios; N a number), unit, counter or gauge, meaning, and the part\n"
		"that writes it, tab-separated; =markdown prints them as Markdown table rows.\n");
	pd_exit_help(f);
}

/* --list-names: every name of the tables, checked first (a bad table fails, exit 1), as
 * doc/stats.md's rows (@markdown, doc/gen-stats.sh) or as "pattern unit kind help producer". */
static int list_names(bool markdown)
{
	const struct stats_table *t;
	char err[256];

	if (stats_names_check(err, sizeof(err))) {
		fprintf(stderr, "plugdisk stats: %s\n", err);
		return EXIT_FAILURE;
	}
	for (size_t k = 0; (t = stats_table_at(k)); k++)
		for (const struct stats_name *sn = t->names; sn < t->names + t->nr; sn++) {
			if (markdown)
				printf("| `%s` | %s | %s |\n", sn->pattern, sn->unit, sn->doc);
			else
				printf("%s\t%s\t%s\t%s\t%s\n", sn->pattern, sn->unit,
				       sn->kind == STATS_COUNTER ? "counter" : "gauge",
				       sn->help, t->producer);
		}
	return EXIT_OK;
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
		} else if (!strcmp(a, "--list-names=markdown") || !strcmp(a, "--list-names")) {
			return list_names(!strcmp(a, "--list-names=markdown"));
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
	} else if (!strcmp(format, "openmetrics")) {
		fmt = FMT_OPENMETRICS;
	} else if (!strcmp(format, "prometheus")) {
		fmt = FMT_PROMETHEUS;
	} else {
		fprintf(stderr, "plugdisk stats: --format %s: must be text, json, openmetrics or prometheus\n",
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
			print_openmetrics(&doc, stdout, fmt == FMT_OPENMETRICS);
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
