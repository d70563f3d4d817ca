// SPDX-License-Identifier: MIT
/* The queue's stats names (core/util/stats_table.h): the disk, the queue's state, the
 * controller's limits, the FUSE transport, plugging, stop and start, and the requests of each
 * op, read from a struct stats_snapshot. stats_format() writes them; doc/stats.md's tables,
 * the Prometheus names and `plugdisk top` read them. The stages' names are in their folders. */
#include <stddef.h>
#include <stdint.h>

#include "core/queue/stats.h"
#include "core/util/clock.h"

#define F(member) STATS_FIELD(struct stats_snapshot, member)

static struct stats_value stop_reason_now(const void *snap, const unsigned int *a)
{
	const struct stats_snapshot *ss = snap;

	(void)a;
	return stats_word(stop_reason_name[ss->stopped ? ss->stop_reason : STOP_NONE]);
}

/* {,read_,write_}: all ops, reads, writes (enum rate_dir's order) */
static struct stats_value limit_bandwidth(const void *snap, const unsigned int *a)
{
	const struct ctrl_params *cp = &((const struct stats_snapshot *)snap)->cp;
	const uint64_t v[RATE_NR_DIRS] = { cp->bandwidth, cp->read_bandwidth, cp->write_bandwidth };

	return stats_u64(v[a[0]]);
}

static struct stats_value limit_iops(const void *snap, const unsigned int *a)
{
	const struct ctrl_params *cp = &((const struct stats_snapshot *)snap)->cp;
	const uint64_t v[RATE_NR_DIRS] = { cp->iops, cp->read_iops, cp->write_iops };

	return stats_u64(v[a[0]]);
}

/* {read,write,flush} */
static struct stats_value limit_op_latency(const void *snap, const unsigned int *a)
{
	const struct ctrl_params *cp = &((const struct stats_snapshot *)snap)->cp;
	const uint64_t v[] = { cp->read_latency_us, cp->write_latency_us, cp->flush_latency_us };

	return stats_u64(v[a[0]]);
}

static struct stats_value fuse_transport(const void *snap, const unsigned int *a)
{
	const struct stats_snapshot *ss = snap;

	(void)a;
	return stats_word(ss->transport ? ss->transport : "classic");
}

static struct stats_value queue_stops(const void *snap, const unsigned int *a)
{
	const struct queue_stats *s = &((const struct stats_snapshot *)snap)->s;
	uint64_t n = 0;

	(void)a;
	for (int r = STOP_SLOTS; r < STOP_NR; r++)
		n += s->stops[r];
	return stats_u64(n);
}

static struct stats_value queue_starts(const void *snap, const unsigned int *a)
{
	const struct queue_stats *s = &((const struct stats_snapshot *)snap)->s;
	uint64_t n = 0;

	(void)a;
	for (int r = STOP_SLOTS; r < STOP_NR; r++)
		n += s->starts[r];
	return stats_u64(n);
}

/* {stops,starts}_{slots,budget,head}: enum stop_reason from STOP_SLOTS on */
static struct stats_value queue_stops_by_reason(const void *snap, const unsigned int *a)
{
	const struct queue_stats *s = &((const struct stats_snapshot *)snap)->s;

	return stats_u64((a[0] ? s->starts : s->stops)[STOP_SLOTS + a[1]]);
}

static const struct op_stats *op_of(const void *snap, unsigned int op)
{
	return &((const struct stats_snapshot *)snap)->s.op[op];
}

static struct stats_value op_merges(const void *snap, const unsigned int *a)
{
	const struct op_stats *st = op_of(snap, a[0]);

	return stats_u64(st->merges_back + st->merges_front + st->merges_gap);
}

static struct stats_value op_avg_request(const void *snap, const unsigned int *a)
{
	const struct op_stats *st = op_of(snap, a[0]);

	return stats_u64(st->ios ? st->bytes / st->ios : 0);
}

/* {read,write,discard}_size_{512,...}: a flush moves no data */
static struct stats_value op_size(const void *snap, const unsigned int *a)
{
	static const unsigned int op[] = { BIO_OP_READ, BIO_OP_WRITE, BIO_OP_DISCARD };

	return stats_u64(op_of(snap, op[a[0]])->size_hist[a[1]]);
}

/* {p50,p90,p99,p999,max} */
static struct stats_value op_lat_quantile(const void *snap, const unsigned int *a)
{
	static const double q[] = { 0.50, 0.90, 0.99, 0.999 };
	const struct lat_hist *h = &op_of(snap, a[0])->lat;

	return stats_u64(a[1] < 4 ? lat_hist_quantile(h, q[a[1]]) : h->max_us);
}

/* lat_le_{1,2,4...}us: cumulative, as Prometheus histograms are (the quantiles are read off
 * the same counts) */
static struct stats_value op_lat_le(const void *snap, const unsigned int *a)
{
	return stats_u64(lat_hist_count_below(&op_of(snap, a[0])->lat, (uint64_t)1 << a[1]));
}

static const struct stats_name queue_names[] = {
	{ "disk_size_bytes", STATS_GAUGE, "bytes",
	  "size of the virtual disk",
	  "size of the virtual disk",
	  F(disk_size) },
	{ "snapshot_us", STATS_GAUGE, "µs",
	  "CLOCK_MONOTONIC time of this snapshot; the difference between two snapshots is the interval to divide counter deltas by",
	  "`CLOCK_MONOTONIC` time of this snapshot; the difference between two snapshots is the interval to divide counter deltas by",
	  F(now_ns), .div = NSEC_PER_USEC },
	{ "plugged", STATS_GAUGE, "0/1",
	  "the queue is plugged: arriving bios are held to be merged",
	  "the queue is plugged: arriving bios are held to be merged",
	  .section = "state", F(plugged) },
	{ "stopped", STATS_GAUGE, "0/1",
	  "the queue is stopped: the controller admits no more commands for now",
	  "the queue is stopped: the controller admits no more commands for now",
	  F(stopped) },
	{ "stop_reason", STATS_GAUGE, "word",
	  "why the queue is stopped: slots (every command slot busy), budget (a bandwidth, IOPS or credit bucket is empty), head (seek model: the disk's head is busy...",
	  "why the queue is stopped: `slots` (every command slot busy), `budget` (a bandwidth, IOPS or credit bucket is empty), `head` (seek model: the disk's head is busy with a command; the next waits in the queue, where `controller.reorder = \"sptf\"` may pick it), `none` when not stopped",
	  .fn = stop_reason_now },
	{ "held", STATS_GAUGE, "0/1",
	  "the queue is held by hand (stop, plug or freeze on the control file, whose listing says which): nothing is dispatched until the command that ends the hold,...",
	  "the queue is held by hand (`stop`, `plug` or `freeze` on the control file, whose listing says which): nothing is dispatched until the command that ends the hold, whatever `stopped` says",
	  F(held) },
	{ "queued_requests", STATS_GAUGE, "requests",
	  "requests waiting in the queue, not yet dispatched",
	  "requests waiting in the queue, not yet dispatched",
	  F(queued_requests) },
	{ "queued_bytes", STATS_GAUGE, "bytes",
	  "bytes in the queued requests",
	  "bytes in the queued requests",
	  F(queued_bytes) },
	{ "in_flight", STATS_GAUGE, "commands",
	  "commands the controller is executing (command slots in use)",
	  "commands the controller is executing (command slots in use)",
	  F(in_flight) },
	{ "queue_depth", STATS_GAUGE, "commands",
	  "command slots of the controller (controller.queue_depth)",
	  "command slots of the controller (`controller.queue_depth`)",
	  F(cp.queue_depth) },
	{ "bucket_{,read_,write_}bandwidth_bytes", STATS_GAUGE, "bytes",
	  "level of the bandwidth bucket (all ops, reads, writes): budget available now",
	  "level of the bandwidth bucket (all ops, reads, writes): budget available now; negative is debt being paid off; at most limit × `limit_burst_ms`; 0 when that limit is off",
	  F(bw_level[0]), .step = { sizeof(int64_t) } },
	{ "bucket_{,read_,write_}iops", STATS_GAUGE, "I/Os",
	  "level of the IOPS bucket, same rules (I/Os counted by controller.iops_size)",
	  "level of the IOPS bucket, same rules (I/Os counted by `controller.iops_size`)",
	  F(iops_level[0]), .step = { sizeof(int64_t) } },
	{ "credit_balance", STATS_GAUGE, "credits",
	  "burst credits in the bucket (controller.credit_capacity): a new disk starts full",
	  "burst credits in the bucket (`controller.credit_capacity`): a new disk starts full; each I/O (by `controller.iops_size`) spends one, the baseline earns them back; negative while the last command's cost is being paid off; 0 without a credit bucket",
	  F(credit_level) },
	{ "credit_earn_per_s", STATS_GAUGE, "credits/s",
	  "credits earned per second now: the baseline, or 0 while the bucket is full or off",
	  "credits earned per second now: the baseline, or 0 while the bucket is full or off",
	  F(credit_earn) },
	{ "credit_spend_per_s", STATS_GAUGE, "credits/s",
	  "credits spent per second over the last second or so (the I/O rate charged to the bucket)",
	  "credits spent per second over the last second or so (the I/O rate charged to the bucket)",
	  F(credit_spend) },
	{ "credits_spent", STATS_COUNTER, "credits",
	  "credits spent since the daemon started (not zeroed by a reset)",
	  "credits spent since the daemon started (not zeroed by a reset)",
	  F(credits_spent) },
	{ "write_cache_bytes", STATS_GAUGE, "bytes",
	  "write cliff: bytes in the fast write cache now (controller.write_cliff_bytes); 0 without a write cliff",
	  "write cliff: bytes in the fast write cache now (`controller.write_cliff_bytes`); 0 without a write cliff",
	  F(cache_bytes) },
	{ "write_cliff_bytes", STATS_COUNTER, "bytes",
	  "write cliff: bytes written past a full cache since the daemon started, at controller.write_cliff_bandwidth (not zeroed by a reset)",
	  "write cliff: bytes written past a full cache since the daemon started, at `controller.write_cliff_bandwidth` (not zeroed by a reset)",
	  F(cliff_bytes) },
	{ "latency_absorbed_us", STATS_GAUGE, "µs",
	  "with controller.latency_absorb: the path's median lateness after a deadline (timer wake-up, completion, reply), by which each service time now ends early...",
	  "with `controller.latency_absorb`: the path's median lateness after a deadline (timer wake-up, completion, reply), by which each service time now ends early (at most half of it); 0 when off or before any timed command",
	  F(absorb_ns), .div = NSEC_PER_USEC },
	{ "latency_host_us", STATS_GAUGE, "µs",
	  "the host's turnaround: the median time from the end of a command that left the device idle to the next command's arrival, when under 500 µs (the reply's way...",
	  "the host's turnaround: the median time from the end of a command that left the device idle to the next command's arrival, when under 500 µs (the reply's way to the submitter and the next request's way in)",
	  F(host_ns), .div = NSEC_PER_USEC },
	{ "latency_host_starts", STATS_COUNTER, "count",
	  "with controller.latency_absorb_host: commands that came back within that turnaround and started, in device time, where the command before ended",
	  "with `controller.latency_absorb_host`: commands that came back within that turnaround and started, in device time, where the command before ended",
	  F(host_starts) },
	{ "limit_{,read_,write_}bandwidth_bytes", STATS_GAUGE, "bytes/s",
	  "controller.bandwidth, controller.read_bandwidth, controller.write_bandwidth in force; 0 = unlimited",
	  "`controller.bandwidth`, `controller.read_bandwidth`, `controller.write_bandwidth` in force; 0 = unlimited",
	  .section = "limits and settings", .fn = limit_bandwidth },
	{ "limit_{,read_,write_}iops", STATS_GAUGE, "commands/s",
	  "controller.iops, controller.read_iops, controller.write_iops in force; 0 = unlimited",
	  "`controller.iops`, `controller.read_iops`, `controller.write_iops` in force; 0 = unlimited",
	  .fn = limit_iops },
	{ "limit_burst_ms", STATS_GAUGE, "ms",
	  "controller.burst_ms: how much budget a bucket may save up while idle",
	  "`controller.burst_ms`: how much budget a bucket may save up while idle",
	  F(cp.burst_ms) },
	{ "limit_iops_size_bytes", STATS_GAUGE, "bytes",
	  "controller.iops_size: an I/O of up to this size counts once against the IOPS buckets and the credits, a larger one ceil(size / this); 0 = one per command",
	  "`controller.iops_size`: an I/O of up to this size counts once against the IOPS buckets and the credits, a larger one ceil(size / this); 0 = one per command",
	  F(cp.iops_size) },
	{ "limit_credit_capacity", STATS_GAUGE, "credits",
	  "controller.credit_capacity in force; 0 = no credit bucket (also when the baseline reaches controller.iops)",
	  "`controller.credit_capacity` in force; 0 = no credit bucket (also when the baseline reaches `controller.iops`)",
	  F(credit_capacity) },
	{ "limit_credit_baseline_iops", STATS_GAUGE, "credits/s",
	  "baseline of the credit bucket: controller.credit_baseline_iops, or controller.credit_iops_per_gib × the disk's size in GiB if more; 0 without a credit bucket",
	  "baseline of the credit bucket: `controller.credit_baseline_iops`, or `controller.credit_iops_per_gib` × the disk's size in GiB if more; 0 without a credit bucket",
	  F(credit_baseline) },
	{ "limit_latency_us", STATS_GAUGE, "µs",
	  "controller.latency_us: service time of one command",
	  "`controller.latency_us`: service time of one command",
	  F(cp.latency_us) },
	{ "limit_{read,write,flush}_latency_us", STATS_GAUGE, "µs",
	  "controller.read_latency_us, controller.write_latency_us, controller.flush_latency_us",
	  "`controller.read_latency_us`, `controller.write_latency_us`, `controller.flush_latency_us`",
	  .fn = limit_op_latency },
	{ "latency_absorb_host", STATS_GAUGE, "0/1",
	  "controller.latency_absorb_host (on in every device profile)",
	  "`controller.latency_absorb_host` (on in every device profile)",
	  F(cp.latency_absorb_host) },
	{ "queue_plug", STATS_GAUGE, "0/1",
	  "queue.plug in force",
	  "`queue.plug` in force",
	  F(qp.plug) },
	{ "queue_unplug_threshold", STATS_GAUGE, "requests",
	  "queue.unplug_threshold in force",
	  "`queue.unplug_threshold` in force",
	  F(qp.unplug_threshold) },
	{ "queue_unplug_delay_us", STATS_GAUGE, "µs",
	  "queue.unplug_delay_us in force",
	  "`queue.unplug_delay_us` in force",
	  F(qp.unplug_delay_us) },
	{ "queue_nomerges", STATS_GAUGE, "0/1/2",
	  "queue.nomerges in force",
	  "`queue.nomerges` in force",
	  F(qp.nomerges) },
	{ "queue_max_request_size_bytes", STATS_GAUGE, "bytes",
	  "queue.max_request_size in force",
	  "`queue.max_request_size` in force",
	  F(qp.max_request_size) },
	{ "queue_nr_requests", STATS_GAUGE, "requests",
	  "queue.nr_requests in force: the most requests that may be queued",
	  "`queue.nr_requests` in force: the most requests that may be queued",
	  F(qp.nr_requests) },
	{ "fuse_transport", STATS_GAUGE, "word",
	  "io_uring (FUSE over io_uring) or classic (/dev/fuse read and writev); see design.md",
	  "`io_uring` (FUSE over io_uring) or `classic` (`/dev/fuse` read and writev); see [design.md](design.md#fuse-over-io_uring)",
	  .section = "FUSE transport", .fn = fuse_transport },
	{ "fuse_ring_queues", STATS_GAUGE, "queues",
	  "io_uring queues, one per possible CPU (0 on classic)",
	  "io_uring queues, one per possible CPU (0 on classic)",
	  F(ring_queues) },
	{ "fuse_ring_depth", STATS_GAUGE, "entries",
	  "ring entries per queue, mount.io_uring_depth (0 on classic)",
	  "ring entries per queue, `mount.io_uring_depth` (0 on classic)",
	  F(ring_depth) },
	{ "fuse_ring_requests", STATS_COUNTER, "count",
	  "requests received through the rings (reading stats is one)",
	  "requests received through the rings (reading `stats` is one)",
	  F(ring_requests) },
	{ "fuse_ring_commit_waits", STATS_COUNTER, "count",
	  "replies sent by another thread that had to wake their queue's thread (through its eventfd) to be committed",
	  "replies sent by another thread that had to wake their queue's thread (through its eventfd) to be committed",
	  F(ring_commit_waits) },
	{ "fuse_parked", STATS_GAUGE, "requests",
	  "classic transport: requests parked now by the last receive thread not waiting for the data budget, so that it can go back to /dev/fuse (0 on io_uring)",
	  "classic transport: requests parked now by the last receive thread not waiting for the data budget, so that it can go back to `/dev/fuse` (0 on io_uring)",
	  F(parked) },
	{ "fuse_parks", STATS_GAUGE, "count",
	  "classic transport: requests ever parked that way",
	  "classic transport: requests ever parked that way",
	  F(parks) },
	{ "fuse_parked_peak", STATS_GAUGE, "requests",
	  "classic transport: the most requests parked at once since start; each parked write holds its data, so this bounds the memory parking took",
	  "classic transport: the most requests parked at once since start; each parked write holds its data, so this bounds the memory parking took",
	  F(parked_peak) },
	{ "fuse_max_background", STATS_GAUGE, "requests",
	  "the kernel's limit on asynchronous FUSE requests (direct I/O, readahead) in force: mount.max_background, or under auto on FUSE over io_uring 12 while...",
	  "the kernel's limit on asynchronous FUSE requests (direct I/O, readahead) in force: `mount.max_background`, or under auto on FUSE over io_uring 12 while nothing in plugdisk holds requests and the transport's most while something does (always the most on classic) ([configuration.md](configuration.md))",
	  F(max_background) },
	{ "disk_opens_fenced", STATS_COUNTER, "count",
	  "opens of disk made before a power cut and still open at the poweron after it, which fenced them: every request of theirs fails with EIO for good (0 with...",
	  "opens of `disk` made before a power cut and still open at the `poweron` after it, which fenced them: every request of theirs fails with `EIO` for good (0 with `cache.keep_opens`); see [power-loss.md](power-loss.md#opens-from-before-a-cut)",
	  F(opens_fenced) },
	{ "disk_requests_fenced", STATS_COUNTER, "count",
	  "requests of such opens refused with EIO (those the kernel's page cache answers never come)",
	  "requests of such opens refused with `EIO` (those the kernel's page cache answers never come)",
	  F(requests_fenced) },
	{ "plugs", STATS_COUNTER, "count",
	  "times the queue plugged (a bio arrived at an idle queue)",
	  "times the queue plugged (a bio arrived at an idle queue)",
	  .section = "plugging, stop and start", F(s.plugs) },
	{ "unplug_{idle,threshold,size,timer,flush}", STATS_COUNTER, "count",
	  "unplugs by reason: the submitters had nothing more to send",
	  "unplugs by reason: the submitters had nothing more to send; `queue.unplug_threshold` requests were queued (or the queue was full); a request reached `queue.max_request_size`; `queue.unplug_delay_us` passed; a flush arrived",
	  F(s.unplugs[0]), .step = { sizeof(uint64_t) } },
	{ "plugged_us", STATS_COUNTER, "µs",
	  "total time the queue spent plugged",
	  "total time the queue spent plugged",
	  F(s.plugged_ns), .div = NSEC_PER_USEC },
	{ "stopped_us", STATS_COUNTER, "µs",
	  "total time the queue spent stopped",
	  "total time the queue spent stopped",
	  F(s.stopped_ns), .div = NSEC_PER_USEC },
	{ "queue_stops", STATS_COUNTER, "count",
	  "times the queue stopped, all reasons",
	  "times the queue stopped, all reasons",
	  .fn = queue_stops },
	{ "queue_starts", STATS_COUNTER, "count",
	  "times a stopped queue started again, all reasons",
	  "times a stopped queue started again, all reasons",
	  .fn = queue_starts },
	{ "queue_{stops,starts}_{slots,budget,head}", STATS_COUNTER, "count",
	  "stops by reason, and starts by the reason of the stop they ended",
	  "stops by reason, and starts by the reason of the stop they ended",
	  .fn = queue_stops_by_reason },
	{ "depletion_waits", STATS_COUNTER, "count",
	  "times a submitter found queue.nr_requests requests queued and had to wait for one to be dispatched (request-depletion throttling)",
	  "times a submitter found `queue.nr_requests` requests queued and had to wait for one to be dispatched (request-depletion throttling)",
	  F(s.depletion_waits) },
	{ "io_ticks_us", STATS_COUNTER, "µs",
	  "time with at least one request queued or in flight (%util is its rate of change)",
	  "time with at least one request queued or in flight (`%util` is its rate of change)",
	  .section = "device time (as in /sys/block/<dev>/stat)", F(s.busy_ns), .div = NSEC_PER_USEC },
	{ "time_in_queue_us", STATS_COUNTER, "µs",
	  "integral over time of queued + in-flight requests (the average queue size aqu-sz is its rate of change)",
	  "integral over time of queued + in-flight requests (the average queue size `aqu-sz` is its rate of change)",
	  F(s.weighted_ns), .div = NSEC_PER_USEC },
	{ "{read,write,flush,discard}_bios", STATS_COUNTER, "bios",
	  "bios submitted: reads and writes of disk, fsync/fdatasync (flush), punched holes (discard)",
	  "bios submitted: reads and writes of `disk`, `fsync`/`fdatasync` (flush), punched holes (discard)",
	  .section = "requests, by op", F(s.op[0].bios), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_ios", STATS_COUNTER, "requests",
	  "requests the controller completed, each one command, after merging; failed ones included",
	  "requests the controller completed, each one command, after merging; failed ones included",
	  F(s.op[0].ios), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_merges", STATS_COUNTER, "bios",
	  "merges of all kinds: back + front + gap",
	  "merges of all kinds: back + front + gap",
	  .fn = op_merges },
	{ "{read,write,flush,discard}_merges_back", STATS_COUNTER, "bios",
	  "bios appended to the end of a queued request",
	  "bios appended to the end of a queued request",
	  F(s.op[0].merges_back), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_merges_front", STATS_COUNTER, "bios",
	  "bios prepended to the start of a queued request",
	  "bios prepended to the start of a queued request",
	  F(s.op[0].merges_front), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_merges_gap", STATS_COUNTER, "requests",
	  "queued requests joined to their neighbour because a bio filled the gap between them (the filling bio counts as a back or front merge)",
	  "queued requests joined to their neighbour because a bio filled the gap between them (the filling bio counts as a back or front merge)",
	  F(s.op[0].merges_gap), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_bytes", STATS_COUNTER, "bytes",
	  "bytes moved by completed requests without error; always 0 for flush",
	  "bytes moved by completed requests without error; always 0 for flush",
	  F(s.op[0].bytes), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_errors", STATS_COUNTER, "requests",
	  "completed requests that failed (the error reached the caller)",
	  "completed requests that failed (the error reached the caller)",
	  F(s.op[0].errors), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_ticks_us", STATS_COUNTER, "µs",
	  "service time summed over requests: dispatch to the controller until completion",
	  "service time summed over requests: dispatch to the controller until completion",
	  F(s.op[0].ticks_ns), .step = { sizeof(struct op_stats) }, .div = NSEC_PER_USEC },
	{ "{read,write,flush,discard}_wait_us", STATS_COUNTER, "µs",
	  "request lifetime summed over requests: first bio queued until completion (as the kernel's \"ms reading/writing\"; await = delta wait_us / delta ios)",
	  "request lifetime summed over requests: first bio queued until completion (as the kernel's \"ms reading/writing\"; `await` = delta `wait_us` / delta `ios`)",
	  F(s.op[0].wait_ns), .step = { sizeof(struct op_stats) }, .div = NSEC_PER_USEC },
	{ "{read,write,flush,discard}_avg_request_bytes", STATS_GAUGE, "bytes",
	  "average size of a request after merging: bytes / ios; 0 with no requests",
	  "average size of a request after merging: `bytes / ios`; 0 with no requests",
	  .fn = op_avg_request },
	{ "{read,write,discard}_size_{512,1k,2k,4k,8k,16k,32k,64k,128k,256k,512k,1m,2m,4m,8m,16m}", STATS_COUNTER, "requests",
	  "size histogram of dispatched requests after merging, power-of-two buckets: size_4k counts sizes in [4 KiB, 8 KiB), size_512 also counts anything smaller,...",
	  "size histogram of dispatched requests after merging, power-of-two buckets: `size_4k` counts sizes in [4 KiB, 8 KiB), `size_512` also counts anything smaller, `size_16m` anything from 16 MiB up",
	  .fn = op_size },
	{ "{read,write,flush,discard}_lat_{p50,p90,p99,p999,max}_us", STATS_GAUGE, "µs",
	  "latency of one bio, submit to completion: median, 90th, 99th, 99.9th percentile and maximum",
	  "latency of one bio, submit to completion: median, 90th, 99th, 99.9th percentile and maximum; from a log-linear histogram (error at most 6.25%, never above the maximum); 0 with no bios",
	  .section = "latency: quantiles and the histogram of bios completed in under N us, and all", .fn = op_lat_quantile },
	{ "{read,write,flush,discard}_lat_le_{1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144,524288,1048576,2097152,4194304,8388608,16777216}us", STATS_GAUGE, "bios",
	  "latency histogram, cumulative as Prometheus keeps one: the bios of the op completed in under N µs (exact counts of the same histogram)",
	  "latency histogram, cumulative as Prometheus keeps one: the bios of the op completed in under N µs (exact counts of the same histogram); `plugdisk stats --format=openmetrics` turns them into `plugdisk_*_latency_seconds` histograms",
	  .fn = op_lat_le },
	{ "{read,write,flush,discard}_lat_count", STATS_GAUGE, "bios",
	  "every bio of the op the latency histogram counted (its +Inf bucket)",
	  "every bio of the op the latency histogram counted (its `+Inf` bucket)",
	  F(s.op[0].lat.count), .step = { sizeof(struct op_stats) } },
	{ "{read,write,flush,discard}_lat_sum_us", STATS_GAUGE, "µs",
	  "the latencies of those bios, summed (the histogram's sum: the average is its delta over lat_count's)",
	  "the latencies of those bios, summed (the histogram's sum: the average is its delta over `lat_count`'s)",
	  F(s.op[0].lat.sum_us), .step = { sizeof(struct op_stats) } },
};

const struct stats_table queue_stats_table = {
	.producer = "queue",
	.names = queue_names,
	.nr = STATS_TABLE_SIZE(queue_names),
};
