// SPDX-License-Identifier: MIT
/* stats.listen: GET /metrics answers one snapshot of the stats file in Prometheus' text
 * format, the same text as `plugdisk stats --format=prometheus`; any other path is 404 and
 * any other method 405. libmicrohttpd runs its own thread; each request takes a snapshot as
 * an open of MOUNTPOINT/stats does. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "core/util/log.h"
#include "daemon/client/stats_names.h"
#include "daemon/daemon.h"
#include "daemon/fuse/metrics_http.h"
#include "daemon/fuse/statfile.h"

static struct MHD_Daemon *metrics_mhd; /* main thread only: set at start, cleared at stop */

static enum MHD_Result metrics_reply(struct MHD_Connection *conn, unsigned int status,
				     char *body, size_t len, enum MHD_ResponseMemoryMode mode,
				     const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result metrics_handler(void *cls, struct MHD_Connection *conn, const char *url,
				       const char *method, const char *version,
				       const char *upload_data, size_t *upload_size, void **req)
{
	struct pd *pd = cls;
	char *text, *body = NULL;
	size_t len = 0;
	FILE *f;

	(void)version, (void)upload_data, (void)upload_size, (void)req;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return metrics_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, (char *)"GET only\n", 9,
				     MHD_RESPMEM_PERSISTENT, "text/plain");
	if (strcmp(url, "/metrics"))
		return metrics_reply(conn, MHD_HTTP_NOT_FOUND, (char *)"plugdisk: see /metrics\n",
				     23, MHD_RESPMEM_PERSISTENT, "text/plain");
	text = pd_stats_text(pd);
	f = text ? open_memstream(&body, &len) : NULL;
	if (!f || stats_to_prometheus(text, f)) {
		if (f)
			fclose(f);
		free(body);
		free(text);
		return metrics_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				     (char *)"out of memory\n", 14, MHD_RESPMEM_PERSISTENT,
				     "text/plain");
	}
	fclose(f);
	free(text);
	return metrics_reply(conn, MHD_HTTP_OK, body, len, MHD_RESPMEM_MUST_FREE,
			     "text/plain; version=0.0.4; charset=utf-8");
}

int pd_metrics_start(struct pd *pd)
{
	struct sockaddr_storage ss;
	unsigned int len;

	if (!pd->cfg.stats_listen || !pd->cfg.stats_listen[0])
		return 0;
	if (conf_parse_listen(pd->cfg.stats_listen, &ss, &len)) {
		log_err("stats.listen %s: not ADDRESS:PORT", pd->cfg.stats_listen);
		return -1;
	}
	metrics_mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
					       (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				       0, NULL, NULL, metrics_handler, pd, MHD_OPTION_SOCK_ADDR,
				       (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 16u,
				       MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	if (!metrics_mhd) {
		log_err("stats.listen %s: cannot serve /metrics there (address in use, or not "
			"this machine's?)", pd->cfg.stats_listen);
		return -1;
	}
	log_info("stats.listen: serving http://%s/metrics", pd->cfg.stats_listen);
	return 0;
}

void pd_metrics_stop(void)
{
	if (metrics_mhd)
		MHD_stop_daemon(metrics_mhd);
	metrics_mhd = NULL;
}
