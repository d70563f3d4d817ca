// SPDX-License-Identifier: MIT
/* The control file's fault commands, over the daemon's fault set (core/fault/fault.h). */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <string.h>

#include "conf/parse.h"
#include "daemon/daemon.h"
#include "daemon/control/fault_ctl.h"

static void show_line(void *arg, const char *line)
{
	ctl_printf(arg, "%s\n", line);
}

void fault_ctl_show(struct pd *pd, struct ctl_out *out)
{
	if (fault_list(chain_find(&pd->chain, "faults"), show_line, out))
		out->oom = 1;
}

/* A fault id: a decimal > 0, without leading zeros. */
static int parse_id(const char *s, unsigned int *id)
{
	uint64_t v;

	if (*s == '0' || conf_parse_u64_whole(s, &v) || v > UINT32_MAX)
		return -EINVAL;
	*id = (unsigned int)v;
	return 0;
}

static int fault_ctl_add(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	char text[FAULT_SPEC_LEN], err[512];
	size_t len = 0;
	int id;

	/* The listing's lines are commands: "fault add SPEC # id=3 ..."; the note is not. */
	for (int i = 2; i < argc && argv[i][0] != '#'; i++) {
		size_t n = strlen(argv[i]);

		if (len + n + 2 > sizeof(text)) {
			ctl_printf(out, "fault add: longer than %d characters\n", FAULT_SPEC_LEN - 1);
			return -EINVAL;
		}
		if (len)
			text[len++] = ' ';
		memcpy(text + len, argv[i], n);
		len += n;
	}
	text[len] = '\0';
	id = fault_add(chain_find(&pd->chain, "faults"), text, FAULT_FROM_CONTROL, err, sizeof(err));
	if (id < 0) {
		ctl_printf(out, "fault add: %s\n", err);
		return id == -ENOMEM || id == -ENOSPC || id == -ESHUTDOWN ? id : -EINVAL;
	}
	ctl_printf(out, "%d\n", id);
	return 0;
}

int fault_ctl_cmd(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	const char *sub = argc > 1 ? argv[1] : "";
	unsigned int id;

	if (!strcmp(sub, "add"))
		return fault_ctl_add(pd, argc, argv, out);
	if (!strcmp(sub, "del")) {
		if (argc != 3 || parse_id(argv[2], &id)) {
			ctl_printf(out, "usage: fault del ID\n");
			return -EINVAL;
		}
		if (fault_del(chain_find(&pd->chain, "faults"), id)) {
			ctl_printf(out, "fault del: no fault %u\n", id);
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(sub, "clear") && argc == 2) {
		fault_clear(chain_find(&pd->chain, "faults"));
		return 0;
	}
	if (!strcmp(sub, "list") && argc == 2) {
		fault_ctl_show(pd, out);
		return 0;
	}
	ctl_printf(out, "usage: " FAULT_CTL_USAGE "\n");
	return -EINVAL;
}

int fault_ctl_release(struct pd *pd, int argc, char **argv, struct ctl_out *out)
{
	unsigned int id = 0;
	int n;

	if (argc > 2 || (argc == 2 && parse_id(argv[1], &id))) {
		ctl_printf(out, "usage: release [ID]\n");
		return -EINVAL;
	}
	n = fault_release(chain_find(&pd->chain, "faults"), id);
	if (n < 0) {
		ctl_printf(out, "release: no fault %u\n", id);
		return -EINVAL;
	}
	ctl_printf(out, "%d\n", n);
	return 0;
}
