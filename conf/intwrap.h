/* SPDX-License-Identifier: MIT */
/* Finding the integers of a libconfig file that libconfig wrapped to 32 bits.
 *
 * libconfig 1.5 silently wraps an integer literal without the L suffix that does not fit in
 * 32 bits (4294967296 reads as 0), and a wrapped value cannot be told from a real one. So the
 * file's text is scanned for such literals, remembering the name and line of the setting each
 * belongs to, and the loader asks, for each 32-bit integer setting, whether it is one. */
#ifndef PLUGDISK_CONF_INTWRAP_H
#define PLUGDISK_CONF_INTWRAP_H

#include <stdbool.h>
#include <stddef.h>

struct intwrap_lit;

/* The scan of the file looked at last. Zero-initialise; release with intwrap_release(). */
struct intwrap {
	char *file;			/* the file scanned, or NULL */
	struct intwrap_lit *lits;	/* its literals that do not fit in 32 bits */
	size_t nlits;
};

/* Set *@wrapped to whether libconfig wrapped the integer of setting @name (its own name,
 * not group.name) at @file:@line. Scans @file when it is not the one scanned last. A file
 * that cannot be opened any more counts as holding none. 0 or -ENOMEM. */
int intwrap_check(struct intwrap *w, const char *file, const char *name, unsigned line,
		  bool *wrapped);

/* Forget the scan. @w may be reused. */
void intwrap_release(struct intwrap *w);

#endif
