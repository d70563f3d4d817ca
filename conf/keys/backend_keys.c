// SPDX-License-Identifier: MIT
/* The backing store's keys: what only the NBD backend uses (controller.connections,
 * backend.timeout_ms, backend.structured_replies), and the check that an NBD URI in
 * disk.image is well formed. */
#include <errno.h>

#include "conf/keys/key.h"
#include "core/backend/backend.h"

static const struct conf_key backend_keys[] = {
	CONF_KEY("controller.connections", CONF_U32, backend.connections, 0,
		 BACKEND_MAX_CONNECTIONS, 0, CONF_RESTART,
		 "NBD connections (multi-conn servers only), 0 = two per CPU, at most 4"),
	CONF_KEY("backend.timeout_ms", CONF_U32, backend.timeout_ms, 100, 3600000, 0,
		 CONF_RESTART,
		 "NBD: a connection with no reply for this long is dropped; its I/O fails with EIO"),
	CONF_KEY("backend.structured_replies", CONF_BOOL, backend.structured_replies, 0, 1, 0,
		 CONF_RESTART,
		 "NBD: ask for structured replies (holes need not cross the wire as zeroes)"),
};

static void backend_defaults(struct pd_config *c)
{
	backend_params_default(&c->backend);
}

/* disk.image: an NBD URI must parse, and no other scheme is taken for a path (a path is
 * checked when it is opened). */
static int backend_validate(struct conf_load *ld, const struct pd_config *c)
{
	char why[512];
	int ret = backend_image_check(c->disk_image, why, sizeof(why));

	if (ret && backend_uri_is_nbd(c->disk_image))
		return conf_reject(ld, "disk.image", "bad NBD URI \"%s\": %s", c->disk_image, why);
	if (ret)
		return conf_reject(ld, "disk.image", "%s", why);
	return 0;
}

/* controller.connections too: plugdisk.conf(5) documents every NBD key in one place. */
const struct conf_table conf_backend_table =
	CONF_TABLE_SECTION(backend_keys, backend_defaults, backend_validate, "backend");
