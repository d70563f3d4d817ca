/* SPDX-License-Identifier: MIT */
/* stats.listen: an HTTP server (libmicrohttpd) that serves the stats at /metrics in
 * Prometheus' text format (daemon/fuse/metrics_http.c). */
#ifndef PLUGDISK_METRICS_HTTP_H
#define PLUGDISK_METRICS_HTTP_H

struct pd;

/* Start serving @pd's stats on stats.listen, if set. 0, or -1 with the reason logged. */
int pd_metrics_start(struct pd *pd);

/* Stop serving (nothing if not started). */
void pd_metrics_stop(void);

#endif
