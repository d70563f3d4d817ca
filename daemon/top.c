// SPDX-License-Identifier: MIT
/* plugdisk top: a live iostat-style view of a mounted plugdisk, from its stats file alone. */
#include <stdio.h>

#include "daemon/daemon.h"

int pd_top_main(int argc, char **argv)
{
	(void)argc, (void)argv;
	fprintf(stderr, "plugdisk top: not built yet\n");
	return 1;
}
