// SPDX-License-Identifier: MIT
/* The daemon's command line: the options (those that set a configuration key become
 * settings in pd->args, applied by the config loader as --set is), --help, and the
 * MOUNTPOINT argument. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/profile.h"
#include "core/backend/backend.h"
#include "core/util/log.h"
#include "daemon/cli.h"
#include "daemon/daemon.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk [OPTIONS] MOUNTPOINT\n"
		"       plugdisk top MOUNTPOINT [INTERVAL [COUNT]] [--once|--batch]\n"
		"       plugdisk ctl MOUNTPOINT [COMMAND...]\n"
		"       plugdisk stats MOUNTPOINT [--format=text|json|openmetrics]\n"
		"       plugdisk replay LOG [IMAGE] --list | --flush N | --crash N [...]\n"
		"       plugdisk explore [OPTIONS] LOG BASE_IMAGE -- CHECKER [ARG...]\n"
		"\n"
		"Mount a virtual disk: MOUNTPOINT/disk is the disk, MOUNTPOINT/stats its queue.\n"
		"\n"
		"  -c, --config FILE      read settings from FILE (libconfig syntax)\n"
		"  -i, --image IMAGE      backing image (disk.image; created sparse if missing),\n"
		"                         or an NBD URI: nbd://HOST/EXPORT, nbd+unix:///?socket=PATH\n"
		"  -s, --size SIZE        disk size: 1G, 1.5GiB, 1P (disk.size)\n"
		"  -f, --foreground       stay in the foreground and log to stderr\n"
		"  -r, --readonly         a read-only disk: writes fail with EROFS, the image is\n"
		"                         opened read-only (disk.read_only)\n"
		"  -v, --verbose          log debug messages too (--log-level=debug)\n"
		"      --log-level LEVEL  error, warning, info (default) or debug\n"
		"      --pidfile PATH     write the daemon's PID to PATH, locked while it runs (a\n"
		"                         second daemon with the same PATH is refused); removed at exit\n"
		"      --log-file PATH    log to PATH (appended) instead of syslog or the journal\n"
		"  -o, --options OPTS     extra FUSE mount options (mount.options)\n"
		"      --set KEY=VALUE    set any configuration key; may be repeated\n"
		"      --profile NAME     emulate a named device (profile); keys you set win\n"
		"      --list-profiles    print the device profiles with their sources and exit\n"
		"      --list-keys        print every configuration key, its type and words, and exit\n"
		"      --list-exit-codes  print the exit statuses of plugdisk and its subcommands\n"
		"      --dump-config      print the settings in force and exit\n"
		"  -h, --help             this text\n"
		"  -V, --version          the version\n"
		"\n"
		"Signals: SIGTERM/SIGINT drain, fdatasync, unmount and exit; SIGHUP reloads the\n"
		"config file and applies queue and controller settings live.\n"
		"See plugdisk(8) and plugdisk.conf(5).\n");
	pd_exit_help(f);
}

enum {
	OPT_SET = 256, OPT_DUMP, OPT_PROFILE, OPT_LIST_PROFILES, OPT_LOG_LEVEL, OPT_PIDFILE,
	OPT_LIST_KEYS,
	OPT_DOC_KEYS, OPT_LOG_FILE, OPT_LIST_EXIT,
};

/* --log-level's words, in enum log_level's order, and their other spellings. */
static int parse_log_level(const char *s)
{
	static const char *const words[][3] = {
		[LOG_LVL_ERR] = { "error", "err", "0" },
		[LOG_LVL_WARN] = { "warning", "warn", "1" },
		[LOG_LVL_INFO] = { "info", "notice", "2" },
		[LOG_LVL_DEBUG] = { "debug", "3", NULL },
	};

	for (int l = 0; l <= LOG_LVL_DEBUG; l++)
		for (int i = 0; i < 3; i++)
			if (words[l][i] && !strcmp(s, words[l][i]))
				return l;
	return -1;
}

/* The options that set a configuration key. A message about the value names the option as
 * the user typed it ("-s 1000: disk.size: ..."), so both spellings are here. */
static const struct key_opt {
	int val;		/* getopt_long's value */
	const char *shortopt;	/* "-s", or NULL */
	const char *longopt;	/* "--size" */
	const char *key;	/* NULL: the argument is KEY=VALUE */
} key_opts[] = {
	{ 'i', "-i", "--image", "disk.image" },
	{ 's', "-s", "--size", "disk.size" },
	{ 'o', "-o", "--options", "mount.options" },
	{ OPT_SET, NULL, "--set", NULL },
	{ OPT_PROFILE, NULL, "--profile", "profile" },
};

static const struct key_opt *key_opt_find(int val)
{
	for (size_t i = 0; i < sizeof(key_opts) / sizeof(key_opts[0]); i++)
		if (key_opts[i].val == val)
			return &key_opts[i];
	return NULL;
}

/* Append a command-line setting; @arg points into argv and lives as long as the process. */
static int add_arg(struct pd *pd, const char *opt, const char *key, const char *arg)
{
	struct conf_arg *v = realloc(pd->args, (pd->nargs + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	pd->args = v;
	pd->args[pd->nargs++] = (struct conf_arg){ .opt = opt, .key = key, .arg = arg };
	return 0;
}

int pd_cli_parse(struct pd *pd, int argc, char **argv, struct pd_cli *cli)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "image", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "readonly", no_argument, NULL, 'r' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "pidfile", required_argument, NULL, OPT_PIDFILE },
		{ "log-file", required_argument, NULL, OPT_LOG_FILE },
		{ "options", required_argument, NULL, 'o' },
		{ "set", required_argument, NULL, OPT_SET },
		{ "dump-config", no_argument, NULL, OPT_DUMP },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "list-profiles", no_argument, NULL, OPT_LIST_PROFILES },
		{ "list-keys", no_argument, NULL, OPT_LIST_KEYS },
		{ "list-exit-codes", no_argument, NULL, OPT_LIST_EXIT },
		/* hidden: the key reference, for `make doc` (man/plugdisk.conf.5) */
		{ "doc-keys", required_argument, NULL, OPT_DOC_KEYS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct conf_arg cli_opts = { 0 };
	int c, longindex;

	memset(cli, 0, sizeof(*cli));
	cli->log_level = LOG_LVL_INFO;
	/* getopt_long sets longindex for a long option only */
	while ((longindex = -1, c = getopt_long(argc, argv, "c:i:s:fo:rvhV", longopts, &longindex)) !=
	       -1) {
		const struct key_opt *ko = key_opt_find(c);

		if (ko) {
			/* the option as the user spelled it */
			const char *typed = longindex >= 0 || !ko->shortopt ? ko->longopt
									    : ko->shortopt;

			if (c == 'o') {
				/* applied after every --set, whatever the order: -o wins */
				cli_opts = (struct conf_arg){ .opt = typed, .key = ko->key,
							      .arg = optarg };
			} else if (add_arg(pd, typed, ko->key, optarg)) {
				fprintf(stderr, "plugdisk: out of memory\n");
				return EXIT_RUNTIME;
			}
			continue;
		}
		switch (c) {
		case 'c':
			pd->config_file = optarg;
			break;
		case 'f':
			cli->foreground = true;
			break;
		case 'r':
			/* a setting like the others: SIGHUP re-applies it, the file may set it */
			if (add_arg(pd, longindex >= 0 ? "--readonly" : "-r", "disk.read_only",
				    "true")) {
				fprintf(stderr, "plugdisk: out of memory\n");
				return EXIT_RUNTIME;
			}
			break;
		case 'v':
			cli->log_level = LOG_LVL_DEBUG;
			break;
		case OPT_LOG_LEVEL:
			cli->log_level = parse_log_level(optarg);
			if (cli->log_level < 0) {
				fprintf(stderr, "plugdisk: --log-level %s: must be error, warning, "
						"info or debug\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_PIDFILE:
			if (!*optarg) {
				fprintf(stderr, "plugdisk: --pidfile '': must not be empty\n");
				return EXIT_USAGE;
			}
			cli->pidfile = optarg;
			break;
		case OPT_LOG_FILE:
			if (!*optarg) {
				fprintf(stderr, "plugdisk: --log-file '': must not be empty\n");
				return EXIT_USAGE;
			}
			cli->log_file = optarg;
			break;
		case OPT_DUMP:
			cli->dump = true;
			break;
		case OPT_LIST_PROFILES:
			conf_profile_list(stdout);
			return EXIT_OK;
		case OPT_LIST_KEYS:
			conf_list_keys(stdout);
			return EXIT_OK;
		case OPT_LIST_EXIT:
			pd_exit_list(stdout);
			return EXIT_OK;
		case OPT_DOC_KEYS:
			if (conf_doc_keys(optarg, stdout)) {
				fprintf(stderr, "plugdisk: --doc-keys %s: must be man, conf or md\n",
					optarg);
				return EXIT_USAGE;
			}
			return EXIT_OK;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("plugdisk %s\n", PLUGDISK_VERSION);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'plugdisk --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (cli_opts.arg && add_arg(pd, cli_opts.opt, cli_opts.key, cli_opts.arg)) {
		fprintf(stderr, "plugdisk: out of memory\n");
		return EXIT_RUNTIME;
	}
	cli->pos = argv + optind;
	cli->npos = argc - optind;
	return -1;
}

/*
 * Strings made at start that live as long as the process: each is linked from here, so that
 * it stays reachable (and a leak checker sees it as such) after the stack that used it is gone.
 */
struct kept_str {
	struct kept_str *next;
	char s[];
};
static struct kept_str *kept_strs;

/* @a and @b, a '/', then @c, in memory that lives as long as the process; NULL when out
 * of memory. */
static const char *keep_path(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	struct kept_str *k = malloc(sizeof(*k) + la + lb + lc + 2);

	if (!k)
		return NULL;
	memcpy(k->s, a, la);
	memcpy(k->s + la, b, lb);
	k->s[la + lb] = '/';
	memcpy(k->s + la + lb + 1, c, lc + 1);
	k->next = kept_strs;
	kept_strs = k;
	return k->s;
}

/* @path made absolute against @cwd, in memory that lives as long as the process; NULL when
 * out of memory. An absolute or empty @path is returned as it is. */
static const char *abs_path(const char *cwd, const char *path)
{
	if (path[0] == '/' || !path[0]) /* an empty one is refused as it was typed */
		return path;
	return keep_path("", cwd, path);
}

/* A URI, or what the config loader refuses as a mistyped one ("NBD://h", "nbd:/x"): left as
 * it is, for the loader to judge. */
static bool looks_like_uri(const char *s)
{
	const char *colon = strchr(s, ':');

	return backend_uri_is_nbd(s) || (colon && !memchr(s, '/', (size_t)(colon - s)));
}

int pd_cli_absolute(struct pd *pd, struct pd_cli *cli)
{
	static const char set_image[] = "disk.image=";
	char cwd[PATH_MAX];
	const char *p;

	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "plugdisk: getcwd: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	if (pd->config_file && !(pd->config_file = abs_path(cwd, pd->config_file)))
		goto oom;
	if (cli->pidfile && !(cli->pidfile = abs_path(cwd, cli->pidfile)))
		goto oom;
	if (cli->log_file && !(cli->log_file = abs_path(cwd, cli->log_file)))
		goto oom;
	/* disk.image, unless it is an NBD URI: -i IMAGE or --set disk.image=IMAGE */
	for (size_t i = 0; i < pd->nargs; i++) {
		struct conf_arg *a = &pd->args[i];

		if (a->key && !strcmp(a->key, "disk.image")) {
			if (!looks_like_uri(a->arg) && !(a->arg = abs_path(cwd, a->arg)))
				goto oom;
		} else if (!a->key && !strncmp(a->arg, set_image, strlen(set_image))) {
			p = a->arg + strlen(set_image);
			if (*p && *p != '/' && !looks_like_uri(p)) {
				if (!(a->arg = keep_path(set_image, cwd, p)))
					goto oom;
			}
		}
	}
	return 0;
oom:
	fprintf(stderr, "plugdisk: out of memory\n");
	return EXIT_RUNTIME;
}

int pd_cli_mountpoint(const struct pd_cli *cli, const struct pd_config *cfg, char **mp)
{
	if (cli->npos > 0) {
		if (cli->npos > 1) {
			fprintf(stderr, "plugdisk: unexpected argument '%s'\nTry 'plugdisk --help'.\n",
				cli->pos[1]);
			return EXIT_USAGE;
		}
		*mp = cli->pos[0];
	} else if (cfg->mount_point && *cfg->mount_point) {
		*mp = cfg->mount_point;
	} else {
		fprintf(stderr, "plugdisk: no MOUNTPOINT given (argument or mount.point)\n"
				"Try 'plugdisk --help'.\n");
		return EXIT_USAGE;
	}
	return 0;
}
