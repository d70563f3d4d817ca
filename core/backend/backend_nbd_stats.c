// SPDX-License-Identifier: MIT
/* The NBD backend's stats names (core/util/stats_table.h) and its section of the stats file:
 * the URI, the export and the protocol as comments, then the names, read from one copy of the
 * backend's counters and flags. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/backend/backend_nbd_int.h"
#include "core/util/barrier.h"
#include "core/util/text.h"

struct nbd_conn_view {
	int state;		/* enum conn_state: 0 down, 1 connecting, 2 up */
	uint32_t in_flight;
};

/* What the names read. */
struct nbd_stats_view {
	uint32_t nconns, up;
	uint64_t reconnects, timeouts, failed_fast, deferred;
	bool tls, structured;
	bool flag[6];		/* read_only, can_flush, can_trim, can_zero, can_fua, can_multi_conn */
	uint32_t block[3];	/* min, preferred, max */
	uint32_t max_cmd;
	struct nbd_conn_view conn[BACKEND_MAX_CONNECTIONS];
};

#define F(member) STATS_FIELD(struct nbd_stats_view, member)

static unsigned int conn_nr(const void *snap)
{
	return ((const struct nbd_stats_view *)snap)->nconns;
}

static unsigned int conn_number(const void *snap, unsigned int k)
{
	(void)snap;
	return k;
}

static const struct stats_name nbd_names[] = {
	{ "nbd_connections", STATS_GAUGE, "connections",
	  "connections the backend keeps (1, or controller.connections where multi-conn is advertised)",
	  "connections the backend keeps (1, or `controller.connections` where multi-conn is advertised)",
	  F(nconns) },
	{ "nbd_connections_up", STATS_GAUGE, "connections",
	  "of those, the ones connected now",
	  "of those, the ones connected now",
	  F(up) },
	{ "nbd_reconnects", STATS_COUNTER, "count",
	  "reconnections after an outage",
	  "reconnections after an outage",
	  F(reconnects) },
	{ "nbd_timeouts", STATS_COUNTER, "count",
	  "connections dropped for no reply within backend.timeout_ms",
	  "connections dropped for no reply within `backend.timeout_ms`",
	  F(timeouts) },
	{ "nbd_failed_fast", STATS_COUNTER, "requests",
	  "requests failed with EIO at once because no connection was up",
	  "requests failed with EIO at once because no connection was up",
	  F(failed_fast) },
	{ "nbd_deferred", STATS_COUNTER, "commands",
	  "commands started by a connection's loop thread because they came while it read and ended replies",
	  "commands started by a connection's loop thread because they came while it read and ended replies",
	  F(deferred) },
	{ "nbd_connN_state", STATS_GAUGE, "0/1/2",
	  "connection N: 0 down, 1 connecting, 2 up",
	  "connection N: 0 down, 1 connecting, 2 up",
	  F(conn[0].state), .step = { sizeof(struct nbd_conn_view) } },
	{ "nbd_connN_in_flight", STATS_GAUGE, "commands",
	  "NBD commands in flight on connection N",
	  "NBD commands in flight on connection N",
	  F(conn[0].in_flight), .step = { sizeof(struct nbd_conn_view) } },
	{ "nbd_tls", STATS_GAUGE, "0/1",
	  "TLS was negotiated",
	  "TLS was negotiated",
	  F(tls) },
	{ "nbd_structured_replies", STATS_GAUGE, "0/1",
	  "structured replies were negotiated (backend.structured_replies)",
	  "structured replies were negotiated (`backend.structured_replies`)",
	  F(structured) },
	{ "nbd_{read_only,can_flush,can_trim,can_zero,can_fua,can_multi_conn}", STATS_GAUGE, "0/1",
	  "the export's flags",
	  "the export's flags",
	  F(flag[0]), .step = { sizeof(bool) } },
	{ "nbd_block_{min,preferred,max}_bytes", STATS_GAUGE, "bytes",
	  "the server's block size constraints (0 = none given for the maximum)",
	  "the server's block size constraints (0 = none given for the maximum)",
	  F(block[0]), .step = { sizeof(uint32_t) } },
	{ "nbd_max_command_bytes", STATS_GAUGE, "bytes",
	  "the largest command plugdisk sends: the server's maximum, at most 32 MiB",
	  "the largest command plugdisk sends: the server's maximum, at most 32 MiB",
	  F(max_cmd) },
};

const struct stats_table backend_nbd_stats_table = {
	.producer = "nbd",
	.names = nbd_names,
	.nr = STATS_TABLE_SIZE(nbd_names),
	.nr_numbers = conn_nr,
	.number = conn_number,
	.number_label = "conn",
};

size_t nb_stats(struct backend *be, char *buf, size_t len)
{
	struct nbd_be *nb = be->priv;
	struct nbd_stats_view v;
	size_t o = 0;

	memset(&v, 0, sizeof(v));
	v.nconns = nb->nconns < BACKEND_MAX_CONNECTIONS ? nb->nconns : BACKEND_MAX_CONNECTIONS;
	for (unsigned int i = 0; i < v.nconns; i++) {
		struct nbd_conn *c = &nb->conns[i];

		v.conn[i].state = smp_load_acquire(c->state);
		v.conn[i].in_flight = READ_ONCE(c->in_flight);
		v.up += v.conn[i].state == CONN_UP;
		v.reconnects += READ_ONCE(c->reconnects);
		v.timeouts += READ_ONCE(c->timeouts);
		v.deferred += READ_ONCE(c->deferred);
	}
	v.failed_fast = READ_ONCE(nb->failed_fast);
	v.tls = nb->tls;
	v.structured = nb->structured_negotiated;
	v.flag[0] = nb->read_only;
	v.flag[1] = nb->can_flush;
	v.flag[2] = nb->can_trim;
	v.flag[3] = nb->can_zero;
	v.flag[4] = nb->can_fua;
	v.flag[5] = nb->can_multi_conn;
	v.block[0] = nb->block_min;
	v.block[1] = nb->block_pref;
	v.block[2] = nb->block_max;
	v.max_cmd = nb->max_cmd;
	if (len)
		buf[0] = '\0';
	stats_put(buf, len, &o,
		  "\n# backend nbd\n# nbd_uri %s\n# nbd_export %s\n# nbd_protocol %s\n", nb->uri,
		  nb->export_name, nb->protocol);
	stats_table_write(&backend_nbd_stats_table, &v, buf, len, &o);
	return o;
}
