// SPDX-License-Identifier: MIT
/* The stats keys: the HTTP endpoint that serves the stats to Prometheus. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "conf/keys/key.h"

static const struct conf_key stats_keys[] = {
	CONF_KEY("stats.listen", CONF_STRING, stats_listen, 0, 64, 0, CONF_RESTART,
		 "ADDRESS:PORT where an HTTP server serves the stats at /metrics for Prometheus "
		 "(\"127.0.0.1:9469\", \"[::1]:9469\"); \"\" = none"),
};

static void stats_defaults(struct pd_config *c)
{
	c->stats_listen = strdup("");
}

int conf_parse_listen(const char *s, struct sockaddr_storage *ss, unsigned int *len)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;
	size_t n;

	if (!colon || colon == s)
		return -1;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port < 1 || port > 65535)
		return -1;
	n = (size_t)(colon - s);
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(host))
			return -1;
		memcpy(host, s + 1, n - 2);
		host[n - 2] = '\0';
	} else {
		if (n >= sizeof(host))
			return -1;
		memcpy(host, s, n);
		host[n] = '\0';
	}
	memset(ss, 0, sizeof(*ss));
	if (s[0] != '[') {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof(*in);
		return inet_pton(AF_INET, host, &in->sin_addr) == 1 ? 0 : -1;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1 ? 0 : -1;
	}
}

static int stats_validate(struct conf_load *ld, const struct pd_config *c)
{
	struct sockaddr_storage ss;
	unsigned int len;

	if (c->stats_listen[0] && conf_parse_listen(c->stats_listen, &ss, &len))
		return conf_reject(ld, "stats.listen", "must be ADDRESS:PORT, an IPv4 address or "
				   "an IPv6 one in brackets, and a port 1..65535 (got \"%s\")",
				   c->stats_listen);
	return 0;
}

const struct conf_table conf_stats_table = CONF_TABLE(stats_keys, stats_defaults, stats_validate);
