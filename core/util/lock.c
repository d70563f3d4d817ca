// SPDX-License-Identifier: MIT
/* The checking builds' record of the locks each thread holds (see core/util/lock.h). */
#include "core/util/lock.h"

#ifdef PLUGDISK_CHECKS
#include <stdio.h>
#include <stdlib.h>

#define LOCK_MAX_HELD 8

static __thread const pthread_mutex_t *held[LOCK_MAX_HELD];
static __thread unsigned int nheld;

static void lock_fail(const char *what, const pthread_mutex_t *m)
{
	fprintf(stderr, "plugdisk: lock check failed: %s (lock %p, %u held)\n", what,
		(const void *)m, nheld);
	abort();
}

void lock_take(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	if (nheld == LOCK_MAX_HELD)
		lock_fail("too many locks held at once", m);
	held[nheld++] = m;
}

void lock_drop(pthread_mutex_t *m)
{
	for (unsigned int i = nheld; i-- > 0;)
		if (held[i] == m) {
			held[i] = held[--nheld];
			pthread_mutex_unlock(m);
			return;
		}
	lock_fail("dropping a lock this thread does not hold", m);
}

void lock_assert_held(const pthread_mutex_t *m)
{
	for (unsigned int i = 0; i < nheld; i++)
		if (held[i] == m)
			return;
	lock_fail("the caller does not hold the lock", m);
}

void lock_assert_none(void)
{
	if (nheld)
		lock_fail("a lock is held across a stage's exec", held[0]);
}
#endif
