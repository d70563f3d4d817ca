/* SPDX-License-Identifier: MIT */
/* The daemon's command line: its options, --help, and the MOUNTPOINT argument. */
#ifndef PLUGDISK_CLI_H
#define PLUGDISK_CLI_H

#include <stdbool.h>

struct pd;
struct pd_config;

/* What the command line asked for, besides the settings it adds to pd->args. */
struct pd_cli {
	bool foreground;	/* -f */
	bool dump;		/* --dump-config */
	int log_level;		/* -v, --log-level: enum log_level */
	const char *pidfile;	/* --pidfile, or NULL */
	const char *log_file;	/* --log-file, or NULL */
	char **pos;		/* the arguments after the options */
	int npos;
};

/* Parse the options into @cli, pd->config_file and pd->args (every setting an option makes,
 * -o last so that it wins). Returns -1 to go on, or the exit status to end with: --help,
 * --version and --list-profiles printed what they ask for, or a message went to stderr. */
int pd_cli_parse(struct pd *pd, int argc, char **argv, struct pd_cli *cli);

/* Make every path the command line gave absolute (-c, -i and --set disk.image= for a file,
 * --pidfile, --log-file), from the working directory at start: the daemon runs in /, and a
 * reload reads -c again. 0, or EXIT_USAGE with a message on stderr. */
int pd_cli_absolute(struct pd *pd, struct pd_cli *cli);

/* The mountpoint: the argument, else mount.point from @cfg. 0 with *@mp set, or EXIT_USAGE
 * with a message on stderr. */
int pd_cli_mountpoint(const struct pd_cli *cli, const struct pd_config *cfg, char **mp);

#endif
