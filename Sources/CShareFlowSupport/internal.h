#ifndef SHAREFLOW_INTERNAL_H
#define SHAREFLOW_INTERNAL_H

/* Shared by the C files of the support target; not part of its public header. */

#include "CShareFlowSupport.h"
#include "budget.h"
#include <pthread.h>

/* A host object's userdata, and a Swift function's: the retained object first (what
 * sf_to_object and Swift read), then what it is charged against the state's cap (objects),
 * then whether the state's set of slots (held.c) has it. */
typedef struct sf_object_slot {
    void *object;
    size_t charge;
    int held;
} sf_object_slot;

/* A slot's userdata is made 3 bytes longer than the slot: the allocator looks up every free
 * of a slot's block size (held.c), and an odd size is one no object of Lua's hot path has. At
 * sizeof(sf_object_slot) the block was 56 bytes, a table's: every table freed was looked up
 * (+286 instructions an event dispatched to a plugin, callgrind). Call frames are 64 bytes,
 * arrays and stacks multiples of 16, hash parts of 24; only a string of 34 bytes shares it. */
#define SF_SLOT_BYTES (sizeof(sf_object_slot) + 3)

/* The Swift references a state's userdata hold (held.c): each slot noted when made, its
 * reference given back by its __gc or, when Lua frees the block without calling it, at the
 * next safe point (sf_held_settle) or by sf_close. */
int sf_held_add(sf_limits *lim, void *slot, size_t slot_size);
void sf_held_freed(sf_limits *lim, void *block);
int sf_held_closing(sf_limits *lim);
void sf_held_settle(sf_limits *lim, void (*release)(void *));
void sf_held_begin_close(sf_limits *lim);
/* After lua_close: releases (with `release`; NULL: none, the process is ending) and frees. */
void sf_held_end_close(sf_limits *lim, void (*release)(void *));
/* sf_held_end_close with the Swift release, or none (trampoline.c). */
void sf_release_unfinalized(sf_limits *lim, int release);

/* The limits of a state we created, or NULL for a foreign state. */
static inline sf_limits *sf_limits_of(lua_State *L) {
    void *ud = NULL;
    lua_Alloc f = lua_getallocf(L, &ud);
    return f == sf_alloc ? (sf_limits *)ud : NULL;
}

/* The fields of sf_limits the watchdog thread or a signal handler shares with the state's own
 * thread (expired, interrupted, deadline_ns, nthreads, threads[i]) are read and written
 * atomically: plain accesses from two threads are a data race (ThreadSanitizer sees them). */
#define SF_GET(field) __atomic_load_n(&(field), __ATOMIC_ACQUIRE)
#define SF_SET(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELEASE)

/* Held by the watchdog while it arms hooks, and by coroutine bookkeeping while it changes
 * the list of running coroutines, so the watchdog never arms a thread that has gone. */
extern pthread_mutex_t sf_watch_lock;

/* Arms the hook that raises the spent budget (or the interrupt) on `L`. */
void sf_arm(lua_State *L);

/* The state's one hook (budget.c): the spent budget's, and coverage's line hook. */
void sf_hook(lua_State *L, lua_Debug *ar);
/* The hook a state has when no budget is spent: coverage's line hook while coverage runs,
 * else none (coverage.c). Safe from another thread (lua_sethook is). */
void sf_coverage_standby(lua_State *L);
/* Notes the line of a line event (from sf_hook); never raises. */
void sf_coverage_record(lua_State *L, lua_Debug *ar);

/* Pushes the message of a spent budget (or "interrupted") without allocating: the strings
 * are made in advance and kept in the registry, because a spent budget refuses growth. */
void sf_push_spent_reason(lua_State *L, sf_limits *lim);

/* Charges what Swift allocated while it ran (always allowed, since a refusal would raise
 * through Swift frames): collects, and raises "not enough memory" if still over the cap. */
void sf_charge_host_growth(lua_State *L, sf_limits *lim);

#endif
