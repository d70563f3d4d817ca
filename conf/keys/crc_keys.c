/* SPDX-License-Identifier: MIT */
/* The keys of the crc stage (crc.*, core/crc/crc.h). */
#include <stdlib.h>
#include <string.h>

#include "conf/keys/key.h"

#define PATH_LEN 4095	/* PATH_MAX - 1 */

static const struct conf_key crc_keys[] = {
	CONF_KEY("crc.file", CONF_STRING, crc.file, 0, PATH_LEN, 0, CONF_RESTART,
		 "side file of the crc stage's checksums, one per block; \"\" = none"),
	CONF_KEY("crc.block_size", CONF_U32, crc.block_size, 512, 65536, 0, CONF_RESTART,
		 "bytes per checksum of the crc stage: a power of two, 512 .. 65536"),
};

static void crc_defaults(struct pd_config *c)
{
	c->crc.file = strdup("");
	c->crc.block_size = CRC_DEFAULT_BLOCK_SIZE;
}

/* Whether stages.order names the crc stage. */
static bool crc_listed(const char *order)
{
	for (const char *p = strstr(order, "crc"); p; p = strstr(p + 1, "crc"))
		if ((p == order || strchr(", \t", p[-1])) && strchr(", \t", p[3]))
			return true;
	return false;
}

static int crc_validate(struct conf_load *ld, const struct pd_config *c)
{
	uint32_t b = c->crc.block_size;
	bool listed = crc_listed(c->stages_order);

	if (b & (b - 1))
		return conf_reject(ld, "crc.block_size", "must be a power of two (got %u)", b);
	if (listed && !c->crc.file[0])
		return conf_reject(ld, "stages.order", "the crc stage needs crc.file");
	if (!listed && c->crc.file[0])
		return conf_reject(ld, "crc.file", "needs stages.order to name crc");
	return 0;
}

const struct conf_table conf_crc_table = CONF_TABLE(crc_keys, crc_defaults, crc_validate);
