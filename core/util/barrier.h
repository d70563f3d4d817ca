/* SPDX-License-Identifier: MIT */
/* Memory ordering, named once (after the kernel's and liburing's barrier.h).
 *
 * Every macro takes the shared variable itself (an lvalue), not its address. Use these instead
 * of raw __atomic_* calls, and say at each ordered use what it pairs with. The rules:
 *
 *   READ_ONCE(x), WRITE_ONCE(x, v)
 *       Atomic but unordered. For a hint read without the lock that guards its writes, or a
 *       lone flag: the reader must cope with a stale value. Pairs with nothing.
 *   smp_store_release(x, v), smp_load_acquire(x)
 *       Publication. Whatever a thread wrote before its release is visible to a thread whose
 *       acquire reads the value released. A release pairs with the acquires of the same
 *       variable; one without the other orders nothing.
 *   smp_store_mb(x, v), smp_load_mb(x), atomic_add_return_mb(x, n), atomic_sub_return_mb(x, n)
 *       Sequentially consistent. For two-flag handshakes: A writes X then reads Y while B
 *       writes Y then reads X; with the _mb forms on all four accesses at least one of them
 *       sees the other's write. Both sides must use _mb forms; one side alone orders nothing.
 *   cmpxchg_weak_mb(x, old, new)
 *       A sequentially consistent compare-and-swap that may fail spuriously, for a retry
 *       loop; a failed attempt is relaxed. A success is both a release (pairs with the
 *       acquires that take the value it stored) and an _mb write in a handshake as above.
 *   xchg_acquire(x, v), cmpxchg_acquire(x, old, new)
 *       Taking over what another thread published: the exchange, or a compare-and-swap that
 *       succeeds, acquires the value it replaces and so sees what its publisher wrote before
 *       its release (or _mb) store. Pairs with those stores; a failed cmpxchg is relaxed and
 *       orders nothing.
 *   atomic_add_return_relaxed(x, n), atomic_sub_return_relaxed(x, n),
 *   cmpxchg_relaxed(x, old, new)
 *       Counters and claims that order no other memory (statistics, budgets checked again
 *       under a lock). Pair with nothing.
 *   atomic_sub_return_acq_rel(x, n)
 *       Reference counts: each put releases the writes made before it, and the put that
 *       reaches zero acquires all of them before it frees. Pairs with every other put.
 */
#ifndef PLUGDISK_BARRIER_H
#define PLUGDISK_BARRIER_H

#include <stdbool.h>

#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#define smp_store_release(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define smp_load_acquire(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)

#define smp_store_mb(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define smp_load_mb(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define atomic_add_return_mb(x, n) __atomic_add_fetch(&(x), (n), __ATOMIC_SEQ_CST)
#define atomic_sub_return_mb(x, n) __atomic_sub_fetch(&(x), (n), __ATOMIC_SEQ_CST)
/* Whether @x was @old and is now @new (may fail spuriously); on failure @old gets the value
 * seen. */
#define cmpxchg_weak_mb(x, old, new)                                                    \
	__atomic_compare_exchange_n(&(x), &(old), (new), true, __ATOMIC_SEQ_CST,         \
				    __ATOMIC_RELAXED)

/* The old value of @x, which is now @v. */
#define xchg_acquire(x, v) __atomic_exchange_n(&(x), (v), __ATOMIC_ACQUIRE)
/* Whether @x was @old and is now @new; on failure @old gets the value seen. */
#define cmpxchg_acquire(x, old, new)                                                    \
	__atomic_compare_exchange_n(&(x), &(old), (new), false, __ATOMIC_ACQUIRE,        \
				    __ATOMIC_RELAXED)

#define atomic_add_return_relaxed(x, n) __atomic_add_fetch(&(x), (n), __ATOMIC_RELAXED)
#define atomic_sub_return_relaxed(x, n) __atomic_sub_fetch(&(x), (n), __ATOMIC_RELAXED)
/* Whether @x was @old and is now @new; on failure @old gets the value seen. */
#define cmpxchg_relaxed(x, old, new)                                                    \
	__atomic_compare_exchange_n(&(x), &(old), (new), false, __ATOMIC_RELAXED,        \
				    __ATOMIC_RELAXED)

#define atomic_sub_return_acq_rel(x, n) __atomic_sub_fetch(&(x), (n), __ATOMIC_ACQ_REL)

#endif
