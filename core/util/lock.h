/* SPDX-License-Identifier: MIT */
/* Locks whose holder is checked: "caller holds the lock" as an assertion, not only a comment.
 *
 * A function that must be called with a lock held is named with a "_locked" suffix
 * (queue_run_locked, cache_cut_locked) and starts with lock_assert_held(&x->lock). Such a lock is
 * taken and dropped with lock_take() and lock_drop(). In the checking builds (SANITIZE=1 and
 * TSAN=1 define PLUGDISK_CHECKS) each thread records the locks it holds, so that
 * lock_assert_held() fails when the caller does not hold the lock, and lock_assert_none()
 * when it holds any (a stage's exec is never called with a caller's lock held). Elsewhere
 * they are plain pthread calls and the assertions compile to nothing.
 *
 * A pthread_cond_wait() on a recorded lock leaves the record as it is: the thread holds the
 * lock again when it runs again. */
#ifndef PLUGDISK_LOCK_H
#define PLUGDISK_LOCK_H

#include <pthread.h>

#ifdef PLUGDISK_CHECKS
void lock_take(pthread_mutex_t *m);
void lock_drop(pthread_mutex_t *m);
void lock_assert_held(const pthread_mutex_t *m);
void lock_assert_none(void);
#else
static inline void lock_take(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
}

static inline void lock_drop(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

static inline void lock_assert_held(const pthread_mutex_t *m)
{
	(void)m;
}

static inline void lock_assert_none(void)
{
}
#endif

#endif
