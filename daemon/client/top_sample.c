// SPDX-License-Identifier: MIT
/* plugdisk top's samples: MOUNTPOINT/stats read in one open and parsed by name into a struct
 * sample, and the per-second and iostat -x figures derived from two samples. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/client/stats_names.h"
#include "daemon/client/stats_read.h"
#include "daemon/client/top.h"


const char *const top_op_name[T_NR] = { "read", "write", "discard", "flush" };

struct field {
	const char *name;
	size_t off;
	bool required;
};

#define SF(member, req) { #member, offsetof(struct sample, member), req }
#define SFN(name, member) { name, offsetof(struct sample, member), false }
static const struct field sample_fields[] = {
	SF(snapshot_us, false), SF(disk_size_bytes, false),
	SF(plugged, true), SF(stopped, true), SF(queued_requests, true), SF(queued_bytes, false),
	SF(in_flight, true), SF(queue_depth, true), SF(queue_nr_requests, false),
	SF(limit_burst_ms, false),
	SFN("bucket_bandwidth_bytes", bucket_bw[DIR_ALL]),
	SFN("bucket_read_bandwidth_bytes", bucket_bw[DIR_READ]),
	SFN("bucket_write_bandwidth_bytes", bucket_bw[DIR_WRITE]),
	SFN("bucket_iops", bucket_iops[DIR_ALL]),
	SFN("bucket_read_iops", bucket_iops[DIR_READ]),
	SFN("bucket_write_iops", bucket_iops[DIR_WRITE]),
	SFN("limit_bandwidth_bytes", limit_bw[DIR_ALL]),
	SFN("limit_read_bandwidth_bytes", limit_bw[DIR_READ]),
	SFN("limit_write_bandwidth_bytes", limit_bw[DIR_WRITE]),
	SFN("limit_iops", limit_iops[DIR_ALL]),
	SFN("limit_read_iops", limit_iops[DIR_READ]),
	SFN("limit_write_iops", limit_iops[DIR_WRITE]),
	SF(credit_balance, false), SF(limit_credit_capacity, false),
	SF(limit_credit_baseline_iops, false), SF(credit_earn_per_s, false),
	SF(credit_spend_per_s, false),
	SF(plugs, false), SF(unplug_idle, false), SF(unplug_threshold, false),
	SF(unplug_size, false), SF(unplug_timer, false), SF(unplug_flush, false),
	SF(queue_stops, false), SF(queue_stops_slots, false), SF(queue_stops_budget, false),
	SF(depletion_waits, false), SF(io_ticks_us, false), SF(time_in_queue_us, false),
	SF(faults_active, false), SF(faults_held, false),
	SF(cache_size_bytes, false), SF(cache_dirty_bytes, false), SF(cache_powered, false),
	SF(cache_destaged_bytes, false),
};
#define NR_SAMPLE_FIELDS (sizeof(sample_fields) / sizeof(sample_fields[0]))

#define OF(member, req) { #member, offsetof(struct op_sample, member), req }
#define OFN(name, member) { name, offsetof(struct op_sample, member), false }
static const struct field op_fields[] = {
	OF(bios, true), OF(ios, true), OF(merges, true), OF(bytes, true), OF(errors, false),
	OF(ticks_us, false), OF(wait_us, false),
	OFN("lat_p50_us", p50), OFN("lat_p90_us", p90), OFN("lat_p99_us", p99),
	OFN("lat_p999_us", p999), OFN("lat_max_us", max),
	OF(fault_errors, false), OF(fault_delays, false), OF(fault_stalls, false),
	OF(fault_lies, false), OF(fault_corruptions, false),
};
#define NR_OP_FIELDS (sizeof(op_fields) / sizeof(op_fields[0]))

/* ---- the names, against the name table ---- */

int top_names_check(char *err, size_t errlen)
{
	char name[128];

	for (size_t i = 0; i < NR_SAMPLE_FIELDS; i++) {
		if (!stats_name_find(sample_fields[i].name, NULL)) {
			snprintf(err, errlen, "reads '%s', which the stats name table does not have",
				 sample_fields[i].name);
			return -ENOENT;
		}
	}
	for (int op = 0; op < T_NR; op++) {
		for (size_t i = 0; i < NR_OP_FIELDS; i++) {
			snprintf(name, sizeof(name), "%s_%s", top_op_name[op], op_fields[i].name);
			if (!stats_name_find(name, NULL)) {
				snprintf(err, errlen,
					 "reads '%s', which the stats name table does not have", name);
				return -ENOENT;
			}
		}
	}
	return 0;
}

/* ---- reading and parsing ---- */

/* Read the whole stats file (stats_read_file()), naming the problem in t->err. */
static int top_read(struct top_src *t)
{
	int ret = stats_read_file(t->path, &t->buf, &t->buf_len);

	if (!ret)
		return 0;
	t->not_mount = ret == -ENOENT || ret == -ENOTDIR || ret == -ENOTCONN || ret == -ENODEV;
	if (ret == -EFBIG)
		snprintf(t->err, sizeof(t->err), "%s is larger than %u bytes", t->path,
			 STATS_READ_MAX);
	else if (ret == -ENOMEM)
		snprintf(t->err, sizeof(t->err), "out of memory");
	else
		snprintf(t->err, sizeof(t->err), "cannot read %s: %s%s", t->path,
			 ret == -ENODEV ? "not a file of a FUSE mount" : strerror(-ret),
			 ret == -ENOENT || ret == -ENOTDIR || ret == -ENODEV
				 ? " (is a plugdisk mounted there?)"
				 : ret == -ENOTCONN ? " (the daemon is gone; unmount it)" : "");
	return -1;
}

static bool field_store(const struct field *tab, size_t n, void *base, bool *seen,
			const char *name, const char *val)
{
	for (size_t i = 0; i < n; i++) {
		char *end;
		uint64_t v;

		if (strcmp(tab[i].name, name))
			continue;
		errno = 0;
		if (val[0] == '-')
			v = (uint64_t)strtoll(val, &end, 10);
		else
			v = strtoull(val, &end, 10);
		if (errno || end == val)
			return false;
		memcpy((char *)base + tab[i].off, &v, sizeof(v));
		seen[i] = true;
		return true;
	}
	return true;	/* a name top does not use */
}

/* Parse t->buf into @s. Returns 0, or -1 with t->err set. */
static int top_parse(struct top_src *t, struct sample *s)
{
	bool seen[NR_SAMPLE_FIELDS] = { false };
	bool op_seen[T_NR][NR_OP_FIELDS] = { { false } };
	char *line, *save = NULL;

	memset(s, 0, sizeof(*s));
	snprintf(s->stop_reason, sizeof(s->stop_reason), "none");
	for (line = strtok_r(t->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *name = line, *val;
		bool ok = true;

		if (line[0] == '#') {
			if (!strncmp(line, "# plugdisk ", 11) && !s->name[0])
				snprintf(s->name, sizeof(s->name), "%s", line + 11);
			continue;
		}
		val = strchr(line, ' ');
		if (!val)
			continue;
		*val++ = '\0';
		if (!strcmp(name, "stop_reason")) {
			snprintf(s->stop_reason, sizeof(s->stop_reason), "%s", val);
			continue;
		}
		for (int op = 0; op < T_NR; op++) {
			size_t l = strlen(top_op_name[op]);

			if (!strncmp(name, top_op_name[op], l) && name[l] == '_') {
				ok = field_store(op_fields, NR_OP_FIELDS, &s->op[op], op_seen[op],
						 name + l + 1, val);
				goto next;
			}
		}
		ok = field_store(sample_fields, NR_SAMPLE_FIELDS, s, seen, name, val);
next:
		if (!ok) {
			snprintf(t->err, sizeof(t->err), "%s: bad value for %s: '%s'", t->path, name,
				 val);
			return -1;
		}
	}
	for (size_t i = 0; i < NR_SAMPLE_FIELDS; i++) {
		if (sample_fields[i].required && !seen[i]) {
			t->not_mount = true;
			snprintf(t->err, sizeof(t->err),
				 "%s is not a plugdisk stats file (no '%s')", t->path,
				 sample_fields[i].name);
			return -1;
		}
	}
	for (int op = 0; op < T_NR; op++) {
		for (size_t i = 0; i < NR_OP_FIELDS; i++) {
			if (op_fields[i].required && !op_seen[op][i]) {
				t->not_mount = true;
				snprintf(t->err, sizeof(t->err),
					 "%s is not a plugdisk stats file (no '%s_%s')", t->path,
					 top_op_name[op], op_fields[i].name);
				return -1;
			}
		}
	}
	s->have_snapshot_time = seen[0];
	return 0;
}

int top_sample(struct top_src *t, struct sample *s)
{
	double before = top_mono_now(), after;

	if (top_read(t))
		return -1;
	after = top_mono_now();
	if (top_parse(t, s))
		return -1;
	s->t = s->have_snapshot_time ? (double)s->snapshot_us / 1e6 : (before + after) / 2;
	return 0;
}

/* ---- derived values ---- */

static double dsub(uint64_t a, uint64_t b)
{
	return b >= a ? (double)(b - a) : (double)b;
}

void top_delta(const struct sample *a, const struct sample *b, struct delta *d)
{
	static const struct sample zero;

	memset(d, 0, sizeof(*d));
	d->dt = b->t - a->t;
	if (d->dt <= 0)
		d->dt = 1e-6;
	for (int op = 0; op < T_NR; op++)
		if (b->op[op].bios < a->op[op].bios || b->op[op].ios < a->op[op].ios)
			d->reset = true;
	if (b->io_ticks_us < a->io_ticks_us)
		d->reset = true;
	if (d->reset)
		a = &zero;	/* counters since the reset are all this interval saw */
	for (int op = 0; op < T_NR; op++) {
		d->ios[op] = dsub(a->op[op].ios, b->op[op].ios);
		d->bytes[op] = dsub(a->op[op].bytes, b->op[op].bytes);
		d->merges[op] = dsub(a->op[op].merges, b->op[op].merges);
		d->bios[op] = dsub(a->op[op].bios, b->op[op].bios);
		d->wait_us[op] = dsub(a->op[op].wait_us, b->op[op].wait_us);
	}
	d->io_ticks_us = dsub(a->io_ticks_us, b->io_ticks_us);
	d->time_in_queue_us = dsub(a->time_in_queue_us, b->time_in_queue_us);
	d->plugs = dsub(a->plugs, b->plugs);
	d->unplug[0] = dsub(a->unplug_idle, b->unplug_idle);
	d->unplug[1] = dsub(a->unplug_threshold, b->unplug_threshold);
	d->unplug[2] = dsub(a->unplug_size, b->unplug_size);
	d->unplug[3] = dsub(a->unplug_timer, b->unplug_timer);
	d->unplug[4] = dsub(a->unplug_flush, b->unplug_flush);
	d->stops_slots = dsub(a->queue_stops_slots, b->queue_stops_slots);
	d->stops_budget = dsub(a->queue_stops_budget, b->queue_stops_budget);
	d->depletion_waits = dsub(a->depletion_waits, b->depletion_waits);
}

double top_ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

void top_iostat(const struct delta *d, struct iostat *x)
{
	double ios = d->ios[T_READ] + d->ios[T_WRITE] + d->ios[T_DISCARD];
	double bytes = d->bytes[T_READ] + d->bytes[T_WRITE] + d->bytes[T_DISCARD];
	double bios = 0, merges = 0;

	for (int op = 0; op < T_NR; op++) {
		bios += d->bios[op];
		merges += d->merges[op];
	}
	x->rs = d->ios[T_READ] / d->dt;
	x->ws = d->ios[T_WRITE] / d->dt;
	x->ds = d->ios[T_DISCARD] / d->dt;
	x->fs = d->ios[T_FLUSH] / d->dt;
	x->rmbs = d->bytes[T_READ] / d->dt / 1048576;
	x->wmbs = d->bytes[T_WRITE] / d->dt / 1048576;
	x->rrqms = d->merges[T_READ] / d->dt;
	x->wrqms = d->merges[T_WRITE] / d->dt;
	x->merged_pct = 100 * top_ratio(merges, bios);
	x->areq_kb = top_ratio(bytes, ios) / 1024;
	x->aqu = d->time_in_queue_us / (d->dt * 1e6);
	x->r_await = top_ratio(d->wait_us[T_READ], d->ios[T_READ]) / 1000;
	x->w_await = top_ratio(d->wait_us[T_WRITE], d->ios[T_WRITE]) / 1000;
	x->util = 100 * d->io_ticks_us / (d->dt * 1e6);
	if (x->util > 100)
		x->util = 100;	/* the two snapshot times and the busy time differ by rounding */
}
