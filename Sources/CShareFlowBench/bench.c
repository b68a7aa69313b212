/* Raw C baselines for `shareflow bench` (SPEC §12): the same Lua function called with an
 * equivalent table built here, with no host in between. */
#include "CShareFlowBench.h"
#include <CShareFlowSupport.h>

static void set_string(lua_State *L, const char *k, const char *v) {
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static void set_ref(lua_State *L, const char *k, int ref) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_setfield(L, -2, k);
}

/* `lookup_meta`: the host's LookupInfo metatable. The event the host builds gives its lookupInfo
 * that metatable (tostring, the value tables' kind), so the baseline's equivalent table has it
 * too: the same work, not less. */
long long sf_bench_event_baseline(lua_State *L, int fn, int caller, int participant, int lookup_meta, int n) {
    static const char email[] = "bob@example.com";
    long long start = sf_now_ns();
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, fn);
        lua_createtable(L, 0, 8);
        set_string(L, "name", "participant.fetched");
        set_ref(L, "caller", caller);
        set_string(L, "container", "iCloud.com.example.bench");
        lua_pushnumber(L, 1.7e9 + i);
        lua_setfield(L, -2, "time");
        lua_createtable(L, 0, 1);
        /* The address as a host has it, read from a row, not a literal: lua_pushstring of the
         * same literal every time hit Lua's cache of C strings by address (luaS_new) and skipped
         * the interning every host string pays (the host's is a Swift string with no stable
         * address). */
        lua_pushlstring(L, email, sizeof email - 1);
        lua_setfield(L, -2, "emailAddress");
        lua_rawgeti(L, LUA_REGISTRYINDEX, lookup_meta);
        lua_setmetatable(L, -2);
        lua_setfield(L, -2, "lookupInfo");
        set_ref(L, "participant", participant);
        if (sf_pcall(L, 1, 0) != LUA_OK) { lua_pop(L, 1); return -1; }
    }
    return sf_now_ns() - start;
}

long long sf_bench_policy_baseline(lua_State *L, int fn, int caller, int share, int participant, int n) {
    long long start = sf_now_ns();
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, fn);
        lua_createtable(L, 0, 6);
        set_string(L, "point", "share.accept");
        set_ref(L, "caller", caller);
        set_string(L, "container", "iCloud.com.example.bench");
        set_ref(L, "share", share);
        set_ref(L, "participant", participant);
        if (sf_pcall(L, 1, 2) != LUA_OK) { lua_pop(L, 1); return -1; }
        /* read the verdict as the host does */
        int allow = lua_isnoneornil(L, -2) || lua_toboolean(L, -2);
        lua_pop(L, 2);
        (void)allow;
    }
    return sf_now_ns() - start;
}
