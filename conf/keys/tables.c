/* SPDX-License-Identifier: MIT */
/* The registry of configuration keys: every module's table, in the order --dump-config
 * prints their groups. A new module's keys: see "How to add a key" in config.h. */
#include "conf/keys/key.h"

extern const struct conf_table conf_profile_table, conf_disk_table, conf_mount_table,
	conf_uring_table, conf_queue_table, conf_ctrl_table, conf_model_table, conf_backend_table,
	conf_fault_table, conf_cache_table, conf_stage_table, conf_crc_table, conf_stats_table;

const struct conf_table *const conf_tables[] = {
	&conf_profile_table,
	&conf_disk_table,
	&conf_mount_table,
	&conf_uring_table,
	&conf_queue_table,
	&conf_ctrl_table,
	&conf_model_table,
	&conf_backend_table,
	&conf_fault_table,
	&conf_cache_table,
	&conf_stage_table,
	&conf_crc_table,
	&conf_stats_table,
	NULL,
};
