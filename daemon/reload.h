/* SPDX-License-Identifier: MIT */
/* Reloading the settings (SIGHUP), and the status line systemd shows (daemon/reload.c). */
#ifndef PLUGDISK_RELOAD_H
#define PLUGDISK_RELOAD_H

struct chain_params;
struct pd;
struct pd_config;
struct queue_params;

/* What the chain of stages is built from, and what a reload gives it: the backend's size,
 * the write cache's settings and the configured faults of @c. */
void pd_chain_params(const struct pd *pd, const struct pd_config *c, struct chain_params *p);

/* Send systemd the one-line status (disk, limits, queue state) after @prefix ("READY=1\n",
 * ...), when it runs the daemon (NOTIFY_SOCKET). Main thread. */
void pd_notify_status(struct pd *pd, const char *prefix);

/* Cap queue.max_request_size in @qp at the largest command the backend takes. */
void pd_cap_request_size(struct pd *pd, struct queue_params *qp);

/* Load the configuration again and apply what a running disk can take: the queue, the
 * controller, the stages below it (faults, the write cache's live keys) and readahead. A
 * bad configuration is refused whole; keys that need a restart are named. Main thread. */
void pd_reload(struct pd *pd);

#endif
