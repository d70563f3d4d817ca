// SPDX-License-Identifier: MIT
/* The backing store's keys: what only the NBD backend uses (controller.connections,
 * backend.timeout_ms, backend.structured_replies), and the check that an NBD URI in
 * disk.image is well formed. */
#include <errno.h>
#include <stdlib.h>

#include "conf/key.h"
#include "core/backend.h"

static const struct conf_key backend_keys[] = {
	CONF_KEY("controller.connections", CONF_U32, backend.connections, 0,
		 BACKEND_MAX_CONNECTIONS, 0, 0,
		 "NBD connections (multi-conn servers only), 0 = two per CPU, at most 4"),
	CONF_KEY("backend.timeout_ms", CONF_U32, backend.timeout_ms, 100, 3600000, 0, 0,
		 "NBD: a connection with no reply for this long is dropped; its I/O fails with EIO"),
	CONF_KEY("backend.structured_replies", CONF_BOOL, backend.structured_replies, 0, 1, 0, 0,
		 "NBD: ask for structured replies (holes need not cross the wire as zeroes)"),
};

static void backend_defaults(struct pd_config *c)
{
	backend_params_default(&c->backend);
}

/* disk.image: an NBD URI must parse (a path is checked when it is opened). */
static int backend_validate(struct conf_load *ld, const struct pd_config *c)
{
	struct nbd_uri *u;
	char why[256];
	int ret = 0;

	if (!backend_uri_is_nbd(c->disk_image))
		return 0;
	u = malloc(sizeof(*u));
	if (!u)
		return -ENOMEM;
	if (nbd_uri_parse(c->disk_image, u, why, sizeof(why)) < 0)
		ret = conf_reject(ld, "disk.image", "bad NBD URI \"%s\": %s", c->disk_image, why);
	free(u);
	return ret;
}

const struct conf_table conf_backend_table =
	CONF_TABLE(backend_keys, backend_defaults, backend_validate);
