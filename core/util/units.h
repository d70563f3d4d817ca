/* SPDX-License-Identifier: MIT */
/* Sizes and durations as people write them ("1.5G", "4 KiB", "2ms", "1min 30s"): the one
 * parser behind every size and duration of the configuration, the command line and the fault
 * specs. The suffixes follow systemd and coreutils (fio's kb_base=1000 reads them alike):
 *   sizes:     K M G T P E, alone or with iB (KiB, MiB...), are binary (1024^n);
 *              KB MB GB TB PB EB are decimal (1000^n); B is bytes. Letters in any case.
 *   durations: ns nsec, us usec µs, ms msec, s sec second(s), m min minute(s),
 *              h hr hour(s), d day(s); terms add up ("1h 30min", "1m30s").
 * A number may have a decimal fraction ("1.5G", "0.5ms") if the result is whole (bytes,
 * nanoseconds). Plain data, no locks. */
#ifndef PLUGDISK_UNITS_H
#define PLUGDISK_UNITS_H

#include <stdint.h>

/* @s whole as bytes. 0, -EINVAL (not a size, or not a whole number of bytes), -ERANGE (does
 * not fit in 64 bits). @out is written only on success. */
int units_parse_size(const char *s, uint64_t *out);

/* @s whole as nanoseconds. A bare number ("250") is @bare_ns nanoseconds each, or refused
 * when @bare_ns is 0. 0, -EINVAL (not a duration, a unit missing or unknown, a fraction of a
 * nanosecond), -ERANGE (does not fit in 64 bits). */
int units_parse_duration(const char *s, uint64_t bare_ns, uint64_t *out);

/* Whether @s is a bare number (digits only): a size or duration in its key's own unit. */
int units_is_bare(const char *s);

#endif
