// SPDX-License-Identifier: MIT
/* Reloading the settings (SIGHUP), and the status line systemd shows. */
#define FUSE_USE_VERSION 34

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "core/util/log.h"
#include "daemon/control/cache_ctl.h"
#include "daemon/daemon.h"
#include "daemon/fuse/background.h"
#include "daemon/fuse/bdi.h"
#include "daemon/reload.h"

/* ---- status line for systemd ---- */

static void fmt_rate(char *buf, size_t len, uint64_t v)
{
	static const char *const unit[] = { "", "K", "M", "G", "T" };
	int u = 0;
	double d = (double)v;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	snprintf(buf, len, "%.4g%s", d, unit[u]);
}

void pd_notify_status(struct pd *pd, const char *prefix)
{
	struct stats_snapshot *ss;
	char size[16], bw[16], buf[512];

	if (!getenv("NOTIFY_SOCKET"))
		return;
	ss = malloc(sizeof(*ss));
	if (!ss)
		return;
	queue_snapshot(&pd->q, ss);
	fmt_rate(size, sizeof(size), pd->be.size);
	fmt_rate(bw, sizeof(bw), ss->cp.bandwidth);
	snprintf(buf, sizeof(buf),
		 "%sSTATUS=%sB disk at %s; bw %s/s, iops %" PRIu64 ", latency %" PRIu64
		 "us; in flight %" PRIu64 "/%u, queued %" PRIu64 ", %s",
		 prefix, size, pd->mountpoint, ss->cp.bandwidth ? bw : "unlimited", ss->cp.iops,
		 ss->cp.latency_us, ss->in_flight, ss->cp.queue_depth, ss->queued_requests,
		 ss->stopped ? (ss->stop_reason == STOP_SLOTS ? "stopped (slots)" : "stopped (budget)")
			     : ss->plugged ? "plugged" : "running");
	sd_notify(0, buf);
	free(ss);
}

/* ---- reload ---- */

static bool faults_differ(const struct conf_faults *a, const struct conf_faults *b)
{
	if (a->n != b->n)
		return true;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->spec[i], b->spec[i]))
			return true;
	return false;
}

/* What the chain is built from: the backend's size, the cache and the configured faults of
 * @c. */
void pd_chain_params(const struct pd *pd, const struct pd_config *c,
			    struct chain_params *p)
{
	memset(p, 0, sizeof(*p));
	p->disk_size = pd->be.size;
	p->order = c->stages_order;
	p->crc = &c->crc;
	p->cache = &c->cache;
	p->faults = c->faults.spec;
	p->nfaults = c->faults.n;
}

/* The stages take @nc's reloadable settings. A changed `faults` list replaces the configured
 * faults; those added through the control file stay. An unchanged list keeps its faults,
 * their counters and their draws. */
static void pd_reload_chain(struct pd *pd, struct pd_config *nc)
{
	bool new_faults = faults_differ(&nc->faults, &pd->cfg.faults);
	struct chain_params p;
	char err[512];

	pd_chain_params(pd, nc, &p);
	p.keep_faults = !new_faults;
	if (chain_reconfigure(&pd->chain, &p, err, sizeof(err))) {
		log_err("reload: faults: %s; the configured faults stay", err);
	} else if (new_faults) {
		struct conf_faults tmp = pd->cfg.faults;

		pd->cfg.faults = nc->faults;
		nc->faults = tmp; /* freed with nc */
	}
	pd_cache_reload_cfg(pd, nc);
}

/* queue.max_request_size is capped by the largest command the backend takes. */
void pd_cap_request_size(struct pd *pd, struct queue_params *qp)
{
	uint32_t max = pd->be.max_request;

	if (!max || qp->max_request_size <= max)
		return;
	log_info("queue.max_request_size: %" PRIu32 " bytes, the backend's maximum (not %" PRIu32
		 ")", max, qp->max_request_size);
	qp->max_request_size = max;
}

/* Name the keys whose change a reload leaves for the next start (CONF_RESTART in the key
 * table, which plugdisk.conf(5) is made from): those the code below does not apply. */
static void pd_reload_warn(const struct pd *pd, const struct pd_config *nc)
{
	struct pd_config old = pd->cfg, new = *nc; /* shallow copies, compared only */
	char keys[1024];

	/* An image keeps its own size unless disk.size is given */
	old.disk_size = pd->be.size;
	if (!nc->disk_size_given)
		new.disk_size = pd->be.size;
	if (conf_restart_changed(&old, &new, keys, sizeof(keys)))
		log_warn("reload: %s: changed, takes effect at the next start", keys);
	if (nc->mount_read_ahead_kb != pd->cfg.mount_read_ahead_kb && !nc->mount_read_ahead_kb)
		log_warn("reload: mount.read_ahead_kb: back to the kernel's default at the next "
			 "start");
}

void pd_reload(struct pd *pd)
{
	struct pd_config nc;
	char err[512];
	int ret;

	sd_notify(0, "RELOADING=1");
	ret = conf_load_args(pd->config_file, pd->args, pd->nargs, &nc, err, sizeof(err));
	if (ret) {
		log_err("reload refused, old settings stay: %s", err);
		pd_notify_status(pd, "READY=1\n");
		return;
	}
	pd_reload_warn(pd, &nc);
	/* A new readahead applies to files opened from now on: the kernel copies it into each
	 * open file. (Back to the kernel's default only at a restart.) */
	if (nc.mount_read_ahead_kb != pd->cfg.mount_read_ahead_kb && nc.mount_read_ahead_kb &&
	    !pd_bdi_set_read_ahead(pd->mount_dev, nc.mount_read_ahead_kb))
		pd->cfg.mount_read_ahead_kb = nc.mount_read_ahead_kb;
	pd_cap_request_size(pd, &nc.queue);
	nc.ctrl.disk_size = pd->be.size; /* per-GiB rates (burst credits) */
	queue_reconfigure(&pd->q, &nc.queue, &nc.ctrl);
	pd->cfg.queue = nc.queue;
	pd->cfg.ctrl = nc.ctrl;
	pd->cfg.ctrl.workers = pd->ctrl.pool.nr_threads;
	pd_reload_chain(pd, &nc);
	pd->cfg.mount_max_background = nc.mount_max_background;
	pd_background_configure(pd, nc.mount_max_background);
	conf_free(&nc);
	log_info("reloaded %s", pd->config_file ? pd->config_file : "(no config file)");
	pd_notify_status(pd, "READY=1\n");
}
