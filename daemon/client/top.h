/* SPDX-License-Identifier: MIT */
/* plugdisk top's parts: a sample of MOUNTPOINT/stats and the figures derived from two
 * (daemon/client/top_sample.c), and their rendering (daemon/client/top_render.c); the terminal, the
 * options and the loop are daemon/client/top.c. */
#ifndef PLUGDISK_TOP_H
#define PLUGDISK_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Ops in display order (the stats file's names). */
enum { T_READ, T_WRITE, T_DISCARD, T_FLUSH, T_NR };
extern const char *const top_op_name[T_NR];

enum { DIR_ALL, DIR_READ, DIR_WRITE, DIR_NR };

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

/* The stats file a sample is read from, and the buffer and error text of reading it. */
struct top_src {
	char path[4096];
	char *buf;			/* the raw stats text (heap) */
	size_t buf_len;
	char err[8192];			/* why the last sample failed */
	bool not_mount;			/* because the path is not a live plugdisk mount */
};

/* What happened between two samples, per second or per command. */
struct delta {
	double dt;
	bool reset;			/* the counters went backwards: zeroed in between */
	double ios[T_NR], bytes[T_NR], merges[T_NR], bios[T_NR], wait_us[T_NR];
	double io_ticks_us, time_in_queue_us;
	double plugs, unplug[5], stops_slots, stops_budget, depletion_waits;
};

/* The iostat -x figures of one interval. MB is 2^20 bytes and kB 2^10, as in iostat. */
struct iostat {
	double rs, ws, ds, fs, rmbs, wmbs, rrqms, wrqms, merged_pct, areq_kb, aqu, r_await,
		w_await, util;
};

static inline double top_mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- daemon/client/top_sample.c */

/* Whether every name top reads is in the stats name tables (daemon/client/stats_names.c
 * gathers them), the one place a stats name is written: 0, or -ENOENT with the first
 * unknown name in @err. */
int top_names_check(char *err, size_t errlen);

/* Read @src's stats file in one open (one consistent snapshot) and parse it into @s. 0, or
 * -1 with src->err set. */
int top_sample(struct top_src *src, struct sample *s);

/* a / b, or 0 when b is not positive. */
double top_ratio(double a, double b);

/* What happened from @a to @b (counters reset in between: since the reset). */
void top_delta(const struct sample *a, const struct sample *b, struct delta *d);

/* The iostat -x figures of @d. */
void top_iostat(const struct delta *d, struct iostat *x);

/* --- daemon/client/top_render.c */

/* The full report of disk @mnt sampled every @interval s: the interactive screen (with
 * @eol = "\033[K\n") or --once (with "\n"). @a may be NULL for the first screen, before any
 * rate can be known. */
void top_print_report(FILE *f, const char *mnt, double interval, const struct sample *a,
		      const struct sample *b, const char *eol, bool bold);

/* --batch: the header, and one line per interval from @a to @b (flushed). */
void top_print_batch_header(FILE *f);
void top_print_batch_line(FILE *f, const struct sample *a, const struct sample *b);

#endif
