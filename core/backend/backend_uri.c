// SPDX-License-Identifier: MIT
/* disk.image: a path or an NBD URI (https://github.com/NetworkBlockDevice/nbd/blob/master/doc/uri.md).
 * libnbd connects with the URI itself; this parser only checks it early, so that a bad URI is
 * a configuration error naming the key, and names its parts for the stats file. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/backend/backend.h"

/* The schemes: nbd or nbds (TLS), optionally +unix or +vsock. */
static int scheme_len(const char *s)
{
	size_t n = 0;

	if (strncmp(s, "nbd", 3) != 0)
		return -1;
	n = 3;
	if (s[n] == 's')
		n++;
	if (s[n] == '+') {
		n++;
		while (s[n] >= 'a' && s[n] <= 'z')
			n++;
	}
	return strncmp(s + n, "://", 3) == 0 ? (int)n : -1;
}

bool backend_uri_is_nbd(const char *image)
{
	return image && scheme_len(image) > 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* %-decode @n bytes of @s into @out (@outlen with the NUL). 0 or -1 (bad escape, too long, or
 * an encoded NUL). */
static int pct_decode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -1;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

int nbd_uri_parse(const char *uri, struct nbd_uri *u, char *err, size_t errlen)
{
	int sl = scheme_len(uri);
	const char *p, *auth, *auth_end, *q;
	char transport[16] = "";

	memset(u, 0, sizeof(*u));
	if (sl < 0) {
		snprintf(err, errlen, "not an NBD URI (nbd://, nbds://, nbd+unix://...)");
		return -EINVAL;
	}
	u->tls = uri[3] == 's';
	p = strchr(uri, '+');
	if (p && p < uri + sl) {
		size_t tl = (size_t)(uri + sl - p - 1);

		if (tl >= sizeof(transport))
			tl = sizeof(transport) - 1;
		memcpy(transport, p + 1, tl);
		transport[tl] = '\0';
		if (strcmp(transport, "unix") == 0) {
			u->unix_socket = true;
		} else if (strcmp(transport, "vsock") == 0) {
			u->vsock = true;
		} else if (strcmp(transport, "tcp") != 0) {
			snprintf(err, errlen, "unknown NBD transport '+%s' (tcp, unix or vsock)",
				 transport);
			return -EINVAL;
		}
	}
	auth = uri + sl + 3;
	auth_end = auth + strcspn(auth, "/?#");
	if (strchr(auth, '#')) {
		snprintf(err, errlen, "a fragment (#...) has no meaning in an NBD URI");
		return -EINVAL;
	}
	/* user@ (a TLS PSK user name): libnbd's business, not ours. */
	for (const char *a = auth; a < auth_end; a++)
		if (*a == '@')
			auth = a + 1;
	if (u->unix_socket) {
		if (auth != auth_end) {
			snprintf(err, errlen, "nbd+unix:// takes no host: write nbd+unix:///EXPORT?socket=PATH");
			return -EINVAL;
		}
	} else {
		const char *hs = auth, *he, *colon;

		if (*auth == '[') {
			he = memchr(auth, ']', (size_t)(auth_end - auth));
			if (!he) {
				snprintf(err, errlen, "unterminated [IPv6 address]");
				return -EINVAL;
			}
			hs = auth + 1;
			colon = he + 1 < auth_end ? he + 1 : NULL;
			if (colon && *colon != ':') {
				snprintf(err, errlen, "junk after ]");
				return -EINVAL;
			}
		} else {
			colon = memchr(auth, ':', (size_t)(auth_end - auth));
			he = colon ? colon : auth_end;
		}
		if (he == hs) {
			snprintf(err, errlen, "no host: write nbd://HOST[:PORT]/EXPORT");
			return -EINVAL;
		}
		if ((size_t)(he - hs) >= sizeof(u->host)) {
			snprintf(err, errlen, "host name too long");
			return -EINVAL;
		}
		memcpy(u->host, hs, (size_t)(he - hs));
		u->host[he - hs] = '\0';
		u->port = 10809;
		if (colon) {
			unsigned long port = 0;
			const char *d = colon + 1;

			if (d == auth_end) {
				snprintf(err, errlen, "empty port after ':'");
				return -EINVAL;
			}
			for (; d < auth_end; d++) {
				if (*d < '0' || *d > '9' || port > 65535) {
					snprintf(err, errlen, "port is not a number from 1 to 65535");
					return -EINVAL;
				}
				port = port * 10 + (unsigned long)(*d - '0');
			}
			if (port < 1 || port > 65535) {
				snprintf(err, errlen, "port is not a number from 1 to 65535");
				return -EINVAL;
			}
			u->port = (unsigned int)port;
		}
	}
	p = auth_end;
	q = strchr(p, '?');
	if (*p == '/') {
		size_t n = (size_t)((q ? q : p + strlen(p)) - (p + 1));

		if (pct_decode(p + 1, n, u->export_name, sizeof(u->export_name)) < 0) {
			snprintf(err, errlen, "bad %%-escape or too long export name");
			return -EINVAL;
		}
	}
	if (q) {
		const char *kv = q + 1;

		while (*kv) {
			size_t n = strcspn(kv, "&");

			if (n > 7 && strncmp(kv, "socket=", 7) == 0 &&
			    pct_decode(kv + 7, n - 7, u->socket, sizeof(u->socket)) < 0) {
				snprintf(err, errlen, "bad %%-escape or too long socket path");
				return -EINVAL;
			}
			kv += n;
			if (*kv == '&')
				kv++;
		}
	}
	if (u->unix_socket && !u->socket[0]) {
		snprintf(err, errlen, "nbd+unix:// needs ?socket=PATH");
		return -EINVAL;
	}
	if (!u->unix_socket && u->socket[0]) {
		snprintf(err, errlen, "socket= only goes with nbd+unix://");
		return -EINVAL;
	}
	return 0;
}

/* The length of the URI scheme @s starts with (RFC 3986: a letter, then letters, digits, '+',
 * '-' or '.', then ':'), or 0. */
static size_t uri_scheme_len(const char *s)
{
	size_t n = 0;

	if (!isalpha((unsigned char)s[0]))
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '+' || s[n] == '-' || s[n] == '.')
		n++;
	return s[n] == ':' ? n : 0;
}

int backend_image_check(const char *image, char *err, size_t errlen)
{
	size_t n;
	struct nbd_uri *u;
	int ret;

	if (backend_uri_is_nbd(image)) {
		u = malloc(sizeof(*u));
		if (!u) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		ret = nbd_uri_parse(image, u, err, errlen);
		free(u);
		return ret;
	}
	n = uri_scheme_len(image);
	if (!n)
		return 0;
	/* "NBD://", "nbd:/x", "nbds:host": an NBD URI mistyped, never a file the user meant. */
	if (!strncasecmp(image, "nbd", 3)) {
		snprintf(err, errlen,
			 "\"%s\" is not an NBD URI: write nbd://HOST[:PORT]/EXPORT, nbds://... or "
			 "nbd+unix:///EXPORT?socket=PATH (lower case, two slashes)", image);
		return -EINVAL;
	}
	/* Another scheme: only a URI is written with "SCHEME:/". */
	if (image[n + 1] == '/') {
		snprintf(err, errlen,
			 "unknown URI scheme \"%.*s:\": disk.image is a path or an NBD URI "
			 "(nbd://, nbds://, nbd+unix://, nbd+vsock://); a file of that name is "
			 "./%s", (int)n, image, image);
		return -EINVAL;
	}
	return 0;
}
