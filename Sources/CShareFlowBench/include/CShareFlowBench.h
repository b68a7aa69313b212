/* The raw C baselines of `shareflow bench` (SPEC §12): the same Lua function called with an
 * equivalent table built in C, with no host in between. */
#pragma once
#include <lua.h>

long long sf_bench_event_baseline(lua_State *L, int fn, int caller, int participant, int lookup_meta, int n);
long long sf_bench_policy_baseline(lua_State *L, int fn, int caller, int share, int participant, int n);
