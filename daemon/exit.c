// SPDX-License-Identifier: MIT
/* The exit statuses, said once (see exit.h). */
#include "daemon/exit.h"

const struct pd_exit pd_exits[] = {
	{ EXIT_OK, "ok", "success, including a clean stop on SIGTERM or SIGINT" },
	{ EXIT_RUNTIME, "failure",
	  "failure while running: an I/O error, a refused control command, a replay the log "
	  "cannot meet, a state that failed its check" },
	{ EXIT_USAGE, "usage",
	  "bad option, configuration or input; the message names the option, or the key, file "
	  "and line" },
	{ EXIT_IMAGE, "image",
	  "an image or NBD export cannot be used, or explore could not run its states" },
	{ EXIT_MOUNT, "mount",
	  "a mountpoint cannot be used, or is not a plugdisk mount, or its daemon has exited" },
	{ EXIT_INCOMPLETE, "incomplete",
	  "every state explore checked passed, but the write log is cut short (a write to it "
	  "failed): the states after its cut are unknown" },
};
const unsigned int pd_nr_exits = sizeof(pd_exits) / sizeof(pd_exits[0]);

void pd_exit_help(FILE *f)
{
	fputs("Exit status:", f);
	for (unsigned int i = 0; i < pd_nr_exits; i++)
		fprintf(f, "%s %d %s", i ? "," : "", pd_exits[i].status, pd_exits[i].name);
	fputs(" (plugdisk --list-exit-codes).\n", f);
}

void pd_exit_list(FILE *f)
{
	for (unsigned int i = 0; i < pd_nr_exits; i++)
		fprintf(f, "%d %s %s\n", pd_exits[i].status, pd_exits[i].name, pd_exits[i].meaning);
}
