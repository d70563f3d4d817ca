// SPDX-License-Identifier: MIT
/* plugdisk top: a live iostat-style view of a mounted plugdisk, from its stats file alone.
 * Rates come from the difference of two snapshots of MOUNTPOINT/stats, so top works on any
 * mounted plugdisk (one started by hand or by systemd) and needs no access to the daemon. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"

#define TOP_MAX_STATS (1u << 20)	/* refuse a stats file larger than this */
#define TOP_BAR_WIDTH 32

/* Top's exit statuses follow the daemon's: 1 runtime failure, 2 usage error. */

enum top_mode { MODE_SCREEN, MODE_ONCE, MODE_BATCH };

/* Ops in display order (the stats file's names). */
enum { T_READ, T_WRITE, T_DISCARD, T_FLUSH, T_NR };
static const char *const top_op_name[T_NR] = { "read", "write", "discard", "flush" };

enum { DIR_ALL, DIR_READ, DIR_WRITE, DIR_NR };
static const char *const dir_label[DIR_NR] = { "all", "read", "write" };

struct op_sample {
	uint64_t bios, ios, merges, bytes, errors, ticks_us, wait_us;
	uint64_t p50, p90, p99, p999, max;
	uint64_t fault_errors, fault_delays, fault_stalls, fault_lies, fault_corruptions;
};

/* One parsed snapshot of the stats file. Every numeric field is 8 bytes wide, so that the
 * parser can store any of them through the same table. */
struct sample {
	double t;			/* seconds: the daemon's snapshot_us, else our own clock */
	bool have_snapshot_time;
	char name[64];			/* the disk's name, from the first comment line */
	char stop_reason[16];
	uint64_t snapshot_us, disk_size_bytes;
	uint64_t plugged, stopped, queued_requests, queued_bytes, in_flight, queue_depth;
	uint64_t queue_nr_requests, limit_burst_ms;
	int64_t bucket_bw[DIR_NR], bucket_iops[DIR_NR];
	uint64_t limit_bw[DIR_NR], limit_iops[DIR_NR];
	int64_t credit_balance;		/* burst credits (0 capacity: none) */
	uint64_t limit_credit_capacity, limit_credit_baseline_iops;
	uint64_t credit_earn_per_s, credit_spend_per_s;
	uint64_t plugs, unplug_idle, unplug_threshold, unplug_size, unplug_timer, unplug_flush;
	uint64_t queue_stops, queue_stops_slots, queue_stops_budget, depletion_waits;
	uint64_t io_ticks_us, time_in_queue_us;
	uint64_t faults_active, faults_held;
	uint64_t cache_size_bytes, cache_dirty_bytes, cache_powered, cache_destaged_bytes;
	struct op_sample op[T_NR];
};

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

struct top {
	const char *mnt;
	char path[4096];
	double interval;
	enum top_mode mode;
	bool tty_in;			/* keys are read from stdin */
	struct termios saved_tio;
	bool tio_saved, screen_on;
	char *buf;			/* the raw stats text */
	size_t buf_len;
	char err[8192];			/* why the last sample failed */
};

static volatile sig_atomic_t top_quit, top_suspend;

static void top_on_signal(int sig)
{
	if (sig == SIGTSTP)
		top_suspend = 1;	/* the main loop restores the terminal, then stops */
	else
		top_quit = 1;
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- reading and parsing ---- */

/* Read the whole stats file in one open (one open is one consistent snapshot). */
static int top_read(struct top *t)
{
	size_t cap = 16384, len = 0;
	int fd, saved;

	fd = open(t->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		snprintf(t->err, sizeof(t->err), "cannot open %s: %s%s", t->path, strerror(saved),
			 saved == ENOENT || saved == ENOTDIR
				 ? " (is a plugdisk mounted there?)"
				 : saved == ENOTCONN ? " (the daemon is gone; unmount it)" : "");
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (!t->buf || len + 1 >= t->buf_len) {
			char *nb;

			if (t->buf_len)
				cap = t->buf_len * 2;
			if (cap > TOP_MAX_STATS) {
				snprintf(t->err, sizeof(t->err), "%s is larger than %u bytes", t->path,
					 TOP_MAX_STATS);
				goto err;
			}
			nb = realloc(t->buf, cap);
			if (!nb) {
				snprintf(t->err, sizeof(t->err), "out of memory");
				goto err;
			}
			t->buf = nb;
			t->buf_len = cap;
		}
		n = read(fd, t->buf + len, t->buf_len - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			saved = errno;
			snprintf(t->err, sizeof(t->err), "cannot read %s: %s", t->path,
				 strerror(saved));
			goto err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	t->buf[len] = '\0';
	return 0;
err:
	close(fd);
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
static int top_parse(struct top *t, struct sample *s)
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
			snprintf(t->err, sizeof(t->err),
				 "%s is not a plugdisk stats file (no '%s')", t->path,
				 sample_fields[i].name);
			return -1;
		}
	}
	for (int op = 0; op < T_NR; op++) {
		for (size_t i = 0; i < NR_OP_FIELDS; i++) {
			if (op_fields[i].required && !op_seen[op][i]) {
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

static int top_sample(struct top *t, struct sample *s)
{
	double before = mono_now(), after;

	if (top_read(t))
		return -1;
	after = mono_now();
	if (top_parse(t, s))
		return -1;
	s->t = s->have_snapshot_time ? (double)s->snapshot_us / 1e6 : (before + after) / 2;
	return 0;
}

/* ---- derived values ---- */

/* What happened between two samples, per second or per command. */
struct delta {
	double dt;
	bool reset;			/* the counters went backwards: zeroed in between */
	double ios[T_NR], bytes[T_NR], merges[T_NR], bios[T_NR], wait_us[T_NR];
	double io_ticks_us, time_in_queue_us;
	double plugs, unplug[5], stops_slots, stops_budget, depletion_waits;
};

static double dsub(uint64_t a, uint64_t b)
{
	return b >= a ? (double)(b - a) : (double)b;
}

static void top_delta(const struct sample *a, const struct sample *b, struct delta *d)
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

/* The iostat -x figures of one interval. MB is 2^20 bytes and kB 2^10, as in iostat. */
struct iostat {
	double rs, ws, ds, fs, rmbs, wmbs, rrqms, wrqms, merged_pct, areq_kb, aqu, r_await,
		w_await, util;
};

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void top_iostat(const struct delta *d, struct iostat *x)
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
	x->merged_pct = 100 * ratio(merges, bios);
	x->areq_kb = ratio(bytes, ios) / 1024;
	x->aqu = d->time_in_queue_us / (d->dt * 1e6);
	x->r_await = ratio(d->wait_us[T_READ], d->ios[T_READ]) / 1000;
	x->w_await = ratio(d->wait_us[T_WRITE], d->ios[T_WRITE]) / 1000;
	x->util = 100 * d->io_ticks_us / (d->dt * 1e6);
	if (x->util > 100)
		x->util = 100;	/* the two snapshot times and the busy time differ by rounding */
}

/* One word for the queue's state: stopped:REASON, plugged, busy or idle. */
static void state_word(const struct sample *s, char *buf, size_t len)
{
	if (s->stopped)
		snprintf(buf, len, "stopped:%s%s", s->stop_reason, s->plugged ? "+plugged" : "");
	else if (s->plugged)
		snprintf(buf, len, "plugged");
	else if (s->queued_requests || s->in_flight)
		snprintf(buf, len, "busy");
	else
		snprintf(buf, len, "idle");
}

/* Injected faults in force (MOUNTPOINT/control "fault list"), and what they did since the
 * counters were reset: one line, only while there is something to show. */
static void print_faults(FILE *f, const struct sample *b, const char *eol)
{
	uint64_t tot[5] = { 0 };
	char per[128] = "";
	size_t n = 0;

	for (int op = 0; op < T_NR; op++) {
		const struct op_sample *o = &b->op[op];

		tot[0] += o->fault_errors;
		tot[1] += o->fault_delays;
		tot[2] += o->fault_stalls;
		tot[3] += o->fault_lies;
		tot[4] += o->fault_corruptions;
		if (o->fault_errors && n < sizeof(per))
			n += (size_t)snprintf(per + n, sizeof(per) - n, "%s%s %" PRIu64, n ? ", " : " (",
					      top_op_name[op], o->fault_errors);
	}
	if (n && n < sizeof(per) - 1)
		snprintf(per + n, sizeof(per) - n, ")");
	if (!b->faults_active && !b->faults_held && !tot[0] && !tot[1] && !tot[2] && !tot[3] &&
	    !tot[4])
		return;
	fprintf(f, "faults   %" PRIu64 " active, %" PRIu64 " held; errors %" PRIu64 "%s, delays %" PRIu64
		   ", stalls %" PRIu64 ", lies %" PRIu64 ", corruptions %" PRIu64 "%s",
		b->faults_active, b->faults_held, tot[0], per, tot[1], tot[2], tot[3], tot[4], eol);
}

static void human_bytes(char *buf, size_t len, double b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double a = fabs(b);
	int u = 0;

	while (a >= 1024 && u < 4) {
		a /= 1024;
		b /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f %s", b, unit[u]);
	else
		snprintf(buf, len, "%.*f %s", a < 10 ? 2 : a < 100 ? 1 : 0, b, unit[u]);
}

static void bar(char *buf, size_t len, double frac, int width)
{
	int fill, i;

	if (frac < 0)
		frac = 0;
	if (frac > 1)
		frac = 1;
	fill = (int)(frac * width + 0.5);
	if (fill == 0 && frac > 0)
		fill = 1;	/* anything queued shows */
	if ((size_t)width + 3 > len)
		width = (int)len - 3;
	buf[0] = '[';
	for (i = 0; i < width; i++)
		buf[1 + i] = i < fill ? '#' : '.';
	buf[1 + width] = ']';
	buf[2 + width] = '\0';
}

/* ---- output ---- */

#define IOSTAT_HEAD                                                                        \
	"     r/s      w/s    rMB/s    wMB/s   rrqm/s   wrqm/s %%merged  areq-sz   aqu-sz " \
	"r_await w_await  %%util"

static void print_iostat_row(FILE *f, const struct iostat *x)
{
	fprintf(f, "%8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.1f %8.1f %8.2f %7.2f %7.2f %6.1f",
		x->rs, x->ws, x->rmbs, x->wmbs, x->rrqms, x->wrqms, x->merged_pct, x->areq_kb,
		x->aqu, x->r_await, x->w_await, x->util);
}

/* The full report: the interactive screen (with @eol = "\033[K\n") or --once (with "\n").
 * @a may be NULL for the first screen, before any rate can be known. */
static void print_report(FILE *f, const struct top *t, const struct sample *a,
			 const struct sample *b, const char *eol, bool bold)
{
	struct delta d;
	struct iostat x;
	char st[48], q[24], qb[24], b1[TOP_BAR_WIDTH + 4], b2[TOP_BAR_WIDTH + 4], size[24];
	char clock[16];
	time_t now = time(NULL);
	struct tm tm;
	bool any_limit = false;

	localtime_r(&now, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	human_bytes(size, sizeof(size), (double)b->disk_size_bytes);
	fprintf(f, "%splugdisk top%s - %s  disk %s, %s  interval %.2f s  %s%s", bold ? "\033[1m" : "",
		bold ? "\033[0m" : "", t->mnt, b->name[0] ? b->name : "?", size, t->interval, clock,
		eol);

	state_word(b, st, sizeof(st));
	fprintf(f, "state    %-24s (plugged %" PRIu64 ", stopped %" PRIu64 ", stop_reason %s)%s", st,
		b->plugged, b->stopped, b->stop_reason, eol);

	bar(b1, sizeof(b1), ratio((double)b->in_flight, (double)b->queue_depth), TOP_BAR_WIDTH);
	fprintf(f, "slots    %s %4" PRIu64 "/%-4" PRIu64 " in flight / queue_depth%s", b1,
		b->in_flight, b->queue_depth, eol);
	human_bytes(qb, sizeof(qb), (double)b->queued_bytes);
	if (b->queue_nr_requests)
		snprintf(q, sizeof(q), "%" PRIu64, b->queue_nr_requests);
	else
		snprintf(q, sizeof(q), "?");
	bar(b2, sizeof(b2), ratio((double)b->queued_requests, (double)b->queue_nr_requests),
	    TOP_BAR_WIDTH);
	fprintf(f, "queue    %s %4" PRIu64 "/%-4s queued / nr_requests, %s%s", b2,
		b->queued_requests, q, qb, eol);
	if (b->cache_size_bytes) {
		char dirty[24], csize[24], rate[24] = "";

		human_bytes(dirty, sizeof(dirty), (double)b->cache_dirty_bytes);
		human_bytes(csize, sizeof(csize), (double)b->cache_size_bytes);
		if (a && b->t > a->t && b->cache_destaged_bytes >= a->cache_destaged_bytes)
			human_bytes(rate, sizeof(rate), (double)(b->cache_destaged_bytes -
								 a->cache_destaged_bytes) /
								(b->t - a->t));
		bar(b2, sizeof(b2), ratio((double)b->cache_dirty_bytes, (double)b->cache_size_bytes),
		    TOP_BAR_WIDTH);
		fprintf(f, "cache    %s %s / %s dirty, destaging %s/s, power %s%s", b2, dirty, csize,
			rate[0] ? rate : "-", b->cache_powered ? "on" : "OFF (powercut)", eol);
	}

	for (int dir = 0; dir < DIR_NR; dir++) {
		char lv[24], cap[24], lim[24];

		if (b->limit_bw[dir]) {
			human_bytes(lv, sizeof(lv), (double)b->bucket_bw[dir]);
			human_bytes(cap, sizeof(cap),
				    (double)b->limit_bw[dir] * (double)b->limit_burst_ms / 1000);
			human_bytes(lim, sizeof(lim), (double)b->limit_bw[dir]);
			fprintf(f, "bucket   %-5s bandwidth %10s of %10s  (limit %s/s)%s",
				dir_label[dir], lv, cap, lim, eol);
			any_limit = true;
		}
		if (b->limit_iops[dir]) {
			fprintf(f, "bucket   %-5s iops      %10" PRId64 " of %10.1f  (limit %" PRIu64
				   "/s)%s",
				dir_label[dir], b->bucket_iops[dir],
				(double)b->limit_iops[dir] * (double)b->limit_burst_ms / 1000,
				b->limit_iops[dir], eol);
			any_limit = true;
		}
	}
	if (!any_limit)
		fprintf(f, "bucket   no bandwidth or IOPS limit%s", eol);
	if (b->limit_credit_capacity) {
		int64_t net = (int64_t)b->credit_spend_per_s - (int64_t)b->credit_earn_per_s;
		char left[32];

		bar(b1, sizeof(b1),
		    ratio(b->credit_balance > 0 ? (double)b->credit_balance : 0,
			  (double)b->limit_credit_capacity),
		    TOP_BAR_WIDTH);
		if (net > 0 && b->credit_balance > 0)
			snprintf(left, sizeof(left), ", empty in %.0f s",
				 (double)b->credit_balance / (double)net);
		else
			left[0] = '\0';
		fprintf(f, "credits  %s %" PRId64 "/%" PRIu64 "  baseline %" PRIu64 "/s, earn %" PRIu64
			   "/s, spend %" PRIu64 "/s%s%s",
			b1, b->credit_balance, b->limit_credit_capacity, b->limit_credit_baseline_iops,
			b->credit_earn_per_s, b->credit_spend_per_s, left, eol);
	}
	print_faults(f, b, eol);

	if (a) {
		top_delta(a, b, &d);
		top_iostat(&d, &x);
		fprintf(f, "per s    plugs %.1f  unplugs idle %.1f threshold %.1f size %.1f timer %.1f "
			   "flush %.1f%s",
			d.plugs / d.dt, d.unplug[0] / d.dt, d.unplug[1] / d.dt, d.unplug[2] / d.dt,
			d.unplug[3] / d.dt, d.unplug[4] / d.dt, eol);
		fprintf(f, "per s    stops slots %.1f budget %.1f  depletion waits %.1f%s%s",
			d.stops_slots / d.dt, d.stops_budget / d.dt, d.depletion_waits / d.dt,
			d.reset ? "  (counters were reset)" : "", eol);
	} else {
		fprintf(f, "per s    (first sample: rates after one interval)%s%s", eol, eol);
	}
	fprintf(f, "%s", eol);
	fprintf(f, IOSTAT_HEAD "%s", eol);
	if (a) {
		print_iostat_row(f, &x);
		fprintf(f, "%s", eol);
	} else {
		fprintf(f, "%8s%s", "-", eol);
	}
	fprintf(f, "%s", eol);
	fprintf(f, "op           ios/s     MB/s    rqm/s %%merged areq-sz   await  p50_us  p90_us  "
		   "p99_us p999_us  max_us%s",
		eol);
	for (int op = 0; op < T_NR; op++) {
		const struct op_sample *o = &b->op[op];

		if (a) {
			fprintf(f, "%-8s %9.2f %8.2f %8.2f %7.1f %7.1f %7.2f", top_op_name[op],
				d.ios[op] / d.dt, d.bytes[op] / d.dt / 1048576, d.merges[op] / d.dt,
				100 * ratio(d.merges[op], d.bios[op]),
				ratio(d.bytes[op], d.ios[op]) / 1024,
				ratio(d.wait_us[op], d.ios[op]) / 1000);
		} else {
			fprintf(f, "%-8s %9s %8s %8s %7s %7s %7s", top_op_name[op], "-", "-", "-", "-",
				"-", "-");
		}
		fprintf(f, " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 "%s",
			o->p50, o->p90, o->p99, o->p999, o->max, eol);
	}
	fprintf(f, "(MB = 2^20 bytes, areq-sz in kB, await in ms; latency percentiles since the "
		   "last reset)%s",
		eol);
}

static void print_batch_header(FILE *f)
{
	fprintf(f, "%-19s " IOSTAT_HEAD
		   "      d/s      f/s inflight queued state            r_p50us  r_p99us  "
		   "w_p50us  w_p99us\n",
		"time");
}

static void print_batch_line(FILE *f, const struct sample *a, const struct sample *b)
{
	struct delta d;
	struct iostat x;
	char ts[32], st[48], slots[32];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	top_delta(a, b, &d);
	top_iostat(&d, &x);
	state_word(b, st, sizeof(st));
	snprintf(slots, sizeof(slots), "%" PRIu64 "/%" PRIu64, b->in_flight, b->queue_depth);
	fprintf(f, "%-19s ", ts);
	print_iostat_row(f, &x);
	fprintf(f, " %8.2f %8.2f %8s %6" PRIu64 " %-16s %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		   " %8" PRIu64 "\n",
		x.ds, x.fs, slots, b->queued_requests, st, b->op[T_READ].p50, b->op[T_READ].p99,
		b->op[T_WRITE].p50, b->op[T_WRITE].p99);
	fflush(f);
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

/* Wait until @deadline (mono_now() seconds) or a signal. In screen mode also watch the
 * keyboard: q quits, any other key redraws at once. Returns false to quit. */
static bool top_wait(struct top *t, double deadline)
{
	while (!top_quit) {
		double left = deadline - mono_now();
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
		"Usage: plugdisk top MOUNTPOINT [INTERVAL] [--once|--batch]\n"
		"\n"
		"Show a mounted plugdisk's I/O rates (iostat -x style), queue state, command slots,\n"
		"rate-limit buckets and latency, from MOUNTPOINT/stats every INTERVAL seconds\n"
		"(default 1, fractions allowed).\n"
		"\n"
		"      --once     take two samples INTERVAL apart, print one report and exit\n"
		"  -b, --batch    print a header and then one plain line per interval, until killed\n"
		"  -h, --help     this text\n"
		"\n"
		"Without --once or --batch the screen is redrawn each interval; q or Ctrl-C quits.\n"
		"When standard output is not a terminal, --batch is assumed.\n"
		"Exit status: 0 ok, 1 the stats file cannot be read, 2 usage error.\n");
}

static int top_parse_args(struct top *t, int argc, char **argv)
{
	const char *interval = NULL;
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
		char *end;

		errno = 0;
		t->interval = strtod(interval, &end);
		if (errno || end == interval || *end || !isfinite(t->interval) ||
		    t->interval < 0.01 || t->interval > 86400) {
			fprintf(stderr,
				"plugdisk top: INTERVAL must be a number of seconds from 0.01 to "
				"86400 (got '%s')\n",
				interval);
			return -1;
		}
	}
	t->mode = once ? MODE_ONCE : batch ? MODE_BATCH : MODE_SCREEN;
	if (t->mode == MODE_SCREEN && !isatty(STDOUT_FILENO))
		t->mode = MODE_BATCH;
	if (snprintf(t->path, sizeof(t->path), "%s/stats", t->mnt) >= (int)sizeof(t->path)) {
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

	if (top_sample(&t, &s[cur]))
		goto err;
	next = mono_now() + t.interval;

	if (t.mode == MODE_SCREEN) {
		screen_enter(&t);
		fputs("\033[H", stdout);
		print_report(stdout, &t, NULL, &s[cur], "\033[K\n", true);
		fputs("\033[J", stdout);
		fflush(stdout);
	} else if (t.mode == MODE_BATCH) {
		print_batch_header(stdout);
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
		if (top_sample(&t, &s[!cur]))
			goto err;
		cur = !cur;
		/* Fixed cadence; after a stall (suspended terminal, slow mount) start afresh. */
		next += t.interval;
		if (next < mono_now())
			next = mono_now() + t.interval;
		switch (t.mode) {
		case MODE_ONCE:
			print_report(stdout, &t, &s[!cur], &s[cur], "\n", false);
			ret = 0;
			goto out;
		case MODE_BATCH:
			print_batch_line(stdout, &s[!cur], &s[cur]);
			if (ferror(stdout)) {	/* a closed pipe: nobody is reading */
				ret = 0;
				goto out;
			}
			break;
		case MODE_SCREEN:
			fputs("\033[H", stdout);
			print_report(stdout, &t, &s[!cur], &s[cur], "\033[K\n", true);
			fputs("\033[J", stdout);
			fflush(stdout);
			break;
		}
	}
	ret = 0;
	goto out;
err:
	screen_leave(&t);
	fprintf(stderr, "plugdisk top: %s\n", t.err);
	ret = EXIT_RUNTIME;
out:
	screen_leave(&t);
	free(t.buf);
	return ret;
}
