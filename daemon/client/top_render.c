// SPDX-License-Identifier: MIT
/* plugdisk top's rendering: the full report (the interactive screen and --once) and the
 * --batch lines, from samples and the figures derived from them (daemon/client/top_sample.c). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/client/top.h"

#define TOP_BAR_WIDTH 32

static const char *const dir_label[DIR_NR] = { "all", "read", "write" };

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

void top_print_report(FILE *f, const char *mnt, double interval, const struct sample *a,
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
		bold ? "\033[0m" : "", mnt, b->name[0] ? b->name : "?", size, interval, clock,
		eol);

	state_word(b, st, sizeof(st));
	fprintf(f, "state    %-24s (plugged %" PRIu64 ", stopped %" PRIu64 ", stop_reason %s)%s", st,
		b->plugged, b->stopped, b->stop_reason, eol);

	bar(b1, sizeof(b1), top_ratio((double)b->in_flight, (double)b->queue_depth), TOP_BAR_WIDTH);
	fprintf(f, "slots    %s %4" PRIu64 "/%-4" PRIu64 " in flight / queue_depth%s", b1,
		b->in_flight, b->queue_depth, eol);
	human_bytes(qb, sizeof(qb), (double)b->queued_bytes);
	if (b->queue_nr_requests)
		snprintf(q, sizeof(q), "%" PRIu64, b->queue_nr_requests);
	else
		snprintf(q, sizeof(q), "?");
	bar(b2, sizeof(b2), top_ratio((double)b->queued_requests, (double)b->queue_nr_requests),
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
		bar(b2, sizeof(b2), top_ratio((double)b->cache_dirty_bytes, (double)b->cache_size_bytes),
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
		    top_ratio(b->credit_balance > 0 ? (double)b->credit_balance : 0,
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
				100 * top_ratio(d.merges[op], d.bios[op]),
				top_ratio(d.bytes[op], d.ios[op]) / 1024,
				top_ratio(d.wait_us[op], d.ios[op]) / 1000);
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

void top_print_batch_header(FILE *f)
{
	fprintf(f, "%-19s " IOSTAT_HEAD
		   "      d/s      f/s inflight queued state            r_p50us  r_p99us  "
		   "w_p50us  w_p99us\n",
		"time");
}

void top_print_batch_line(FILE *f, const struct sample *a, const struct sample *b)
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
