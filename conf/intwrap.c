/* SPDX-License-Identifier: MIT */
/* Finding the integers of a libconfig file that libconfig wrapped to 32 bits (see intwrap.h). */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/intwrap.h"

/* An integer literal of the file that does not fit in libconfig's 32-bit int. */
struct intwrap_lit {
	char *name;		/* the setting it belongs to */
	unsigned line;		/* the line of that setting's name */
};

void intwrap_release(struct intwrap *w)
{
	for (size_t i = 0; i < w->nlits; i++)
		free(w->lits[i].name);
	free(w->lits);
	free(w->file);
	w->lits = NULL;
	w->nlits = 0;
	w->file = NULL;
}

static bool is_name_start(int ch)
{
	return isalpha(ch) || ch == '*';
}

static bool is_name_char(int ch)
{
	return isalnum(ch) || ch == '-' || ch == '_' || ch == '*';
}

/* Does the number token [s, e) (no L suffix, not a float) fit in libconfig's 32-bit int? */
static bool int_token_fits(const char *s, const char *e)
{
	bool neg = false, hex = false;
	uint64_t v = 0;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		hex = true;
		s += 2;
	}
	for (; s < e; s++) {
		unsigned d = isdigit((unsigned char)*s) ? (unsigned)(*s - '0')
							: (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
		v = v * (hex ? 16 : 10) + d;
		if (v > (uint64_t)INT32_MAX + 1)
			return false;
	}
	return neg ? v <= (uint64_t)INT32_MAX + 1 : v <= INT32_MAX;
}

static int lit_add(struct intwrap *w, const char *name, size_t nlen, unsigned line)
{
	struct intwrap_lit *n = realloc(w->lits, (w->nlits + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	w->lits = n;
	n[w->nlits].name = strndup(name, nlen);
	if (!n[w->nlits].name)
		return -ENOMEM;
	n[w->nlits].line = line;
	w->nlits++;
	return 0;
}

/* Tokenize @text the way libconfig does, just enough to skip comments and strings, and
 * record each 32-bit integer literal that does not fit, with the setting name before it. */
static int scan_text(struct intwrap *w, const char *text)
{
	const char *p = text, *name = NULL;
	size_t nlen = 0;
	unsigned line = 1, name_line = 0;

	while (*p) {
		if (*p == '\n') {
			line++;
			p++;
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
				if (*p == '\n')
					line++;
			if (*p)
				p += 2;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				if (*p == '\n')
					line++;
			}
			if (*p)
				p++;
		} else if (is_name_start((unsigned char)*p)) {
			name = p;
			name_line = line;
			while (is_name_char((unsigned char)*p))
				p++;
			nlen = (size_t)(p - name);
		} else if (isdigit((unsigned char)*p) ||
			   ((*p == '-' || *p == '+' || *p == '.') &&
			    (isdigit((unsigned char)p[1]) || p[1] == '.'))) {
			const char *s = p, *e;
			bool hex, flt;

			p++;
			while (isalnum((unsigned char)*p) || *p == '.' ||
			       ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E')))
				p++;
			e = p;
			hex = strcspn(s, "xX") < (size_t)(e - s);
			flt = strcspn(s, ".") < (size_t)(e - s) ||
			      (!hex && strcspn(s, "eE") < (size_t)(e - s));
			if (flt || e[-1] == 'L' || e[-1] == 'l' || !name)
				continue;
			if (!int_token_fits(s, e)) {
				int ret = lit_add(w, name, nlen, name_line);
				if (ret)
					return ret;
			}
		} else {
			p++;
		}
	}
	return 0;
}

/* The whole of @f as a string, or NULL (out of memory). */
static char *read_all(FILE *f)
{
	char *text = NULL, buf[4096];
	size_t len = 0, n;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, m);
	if (fclose(m)) {
		free(text);
		return NULL;
	}
	return text;
}

static int scan_file(struct intwrap *w, const char *file)
{
	char *text;
	FILE *f;
	int ret;

	intwrap_release(w);
	w->file = strdup(file);
	if (!w->file)
		return -ENOMEM;
	f = fopen(file, "re");
	if (!f)
		return 0;	/* libconfig read it; a racing change cannot be scanned, accept */
	text = read_all(f);
	fclose(f);
	if (!text)
		return -ENOMEM;
	ret = scan_text(w, text);
	free(text);
	return ret;
}

int intwrap_check(struct intwrap *w, const char *file, const char *name, unsigned line,
		  bool *wrapped)
{
	*wrapped = false;
	if (!w->file || strcmp(w->file, file)) {
		int ret = scan_file(w, file);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < w->nlits; i++)
		if (w->lits[i].line == line && !strcmp(w->lits[i].name, name))
			*wrapped = true;
	return 0;
}
