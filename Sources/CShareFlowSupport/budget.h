#ifndef SHAREFLOW_BUDGET_H
#define SHAREFLOW_BUDGET_H

/* Internal to the C support target: what C library functions of the sandbox call to stay
 * inside a call's CPU budget (SPEC §8). */

#include <lua.h>

/* How many steps (pattern-matcher steps, comparisons, element moves) a bounded library
 * function may take between two budget checks. */
#define SF_STEPS_PER_CHECK 1024

/* Raises the running call's budget error (luaL_error) when its CPU budget is spent or it
 * was interrupted; returns otherwise. Cheap: a few loads and, at most, one clock read.
 * Call it only from C functions that Lua calls (never from Swift frames). */
void sf_budget_checkpoint(lua_State *L);

#endif
