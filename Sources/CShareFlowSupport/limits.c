/* The memory cap: an accounting allocator, one sf_limits per state. */
#include "internal.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>

void *sf_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    sf_limits *lim = (sf_limits *)ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        /* A block of a slot's size: if it is one of ours, what it holds is given back (held.c). */
        if (old != 0 && old == lim->held_block_size) sf_held_freed(lim, ptr);
        free(ptr);
        lim->used -= old;
        return NULL;
    }
    /* Growth is refused only while Lua code runs (host_depth == 0): a refusal raises, and
     * raising through Swift frames is never allowed. A spent budget refuses all growth, so
     * a C function that allocates (string.rep, table.concat, load) stops with the call. */
    if (nsize > old && lim->host_depth == 0) {
        if (SF_GET(lim->expired)) return NULL;
        if (lim->limit && lim->used + lim->host_bytes - old + nsize > lim->limit) return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p == NULL) return NULL;
    /* A new object's type comes as osize: a userdata's block is where its slot is found. */
    if (ptr == NULL && osize == LUA_TUSERDATA) {
        lim->last_userdata = p;
        lim->last_userdata_size = nsize;
    }
    lim->used = lim->used - old + nsize;
    if (lim->used > lim->peak) lim->peak = lim->used;
    return p;
}

void sf_charge_host_growth(lua_State *L, sf_limits *lim) {
    if (lim == NULL || lim->limit == 0 || lim->host_depth != 0 || lim->used + lim->host_bytes <= lim->limit) return;
    lua_gc(L, LUA_GCCOLLECT);  /* host objects no longer held give their charge back here */
    if (lim->used + lim->host_bytes > lim->limit)
        luaL_error(L, "not enough memory (limit of %d KiB reached)", (int)(lim->limit / 1024));
}

static int sf_panic(lua_State *L) {
    /* A last resort: the host makes every call under lua_pcall and raises only from C, so
     * no Lua code can get here. */
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "shareflow: unprotected Lua error: %s\n", msg ? msg : "?");
    abort();
    return 0;
}

static void sf_warn(void *ud, const char *msg, int tocont) {
    (void)ud; (void)msg; (void)tocont;
}

static const char SF_INTERRUPTED_KEY = 0;
static const char SF_SPENT_KEY = 0;

lua_State *sf_newstate(sf_limits *limits) {
    lua_State *L = lua_newstate(sf_alloc, limits);
    if (L) {
        limits->main = L;
        /* Swift holds the state until it calls Lua: growth is never refused outside Lua. */
        limits->host_depth = 1;
        lua_atpanic(L, sf_panic);
        lua_setwarnf(L, sf_warn, NULL);
        lua_pushliteral(L, "interrupted");
        lua_rawsetp(L, LUA_REGISTRYINDEX, &SF_INTERRUPTED_KEY);
        sf_set_budget_reason(limits, NULL);
        /* `shareflow test --coverage`: every state records the lines it runs (coverage.c);
         * without it, no hook until a budget is spent. */
        sf_coverage_standby(L);
    }
    return L;
}

void sf_set_budget_reason(sf_limits *limits, const char *reason) {
    snprintf(limits->reason, sizeof limits->reason, "%s", reason ? reason : "CPU budget exceeded");
    lua_State *L = limits->main;
    int depth = limits->host_depth;
    limits->host_depth++;
    if (lua_checkstack(L, 1)) {
        lua_pushstring(L, limits->reason);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &SF_SPENT_KEY);
    }
    limits->host_depth = depth;
}

void sf_push_spent_reason(lua_State *L, sf_limits *lim) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, SF_GET(lim->interrupted) ? &SF_INTERRUPTED_KEY : &SF_SPENT_KEY);
}
