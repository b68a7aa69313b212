/* The boundary between Lua and Swift. Lua reports errors with longjmp, which must never
 * cross Swift frames, so:
 *   - Swift functions are called from Lua through sf_trampoline: Swift catches its own errors,
 *     pushes the error value and returns SF_SWIFT_ERROR; only then, back in C, is it raised.
 *   - Swift reaches into a state only inside sf_protected or sf_call_hook (the pmain pattern
 *     of lua.c): C runs the Swift part inside lua_pcall, and raises on its behalf.
 *   - While Swift runs, the allocator never refuses growth (host_depth > 0), and Swift uses
 *     only functions that cannot raise otherwise (raw access, pushes after lua_checkstack). */
#include "internal.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sf_swift_dispatch_fn sf_dispatch = NULL;
static sf_swift_release_fn sf_release = NULL;

#define SF_BOX_META "shareflow.box"
#define SF_OBJECT_KEY "__shareflow_object"

void sf_install(sf_swift_dispatch_fn dispatch, sf_swift_release_fn release) {
    sf_dispatch = dispatch;
    sf_release = release;
}

/* Notes the new slot in its state's set (held.c): its reference is given back by its __gc, or
 * when Lua frees its block without calling that. Unnoted only if the set cannot grow (out of
 * memory): then the userdata's __gc alone releases it, as before there was a set. */
static void sf_hold(lua_State *L, sf_object_slot *slot) {
    sf_limits *lim = sf_limits_of(L);
    slot->held = lim != NULL && sf_held_add(lim, slot, SF_SLOT_BYTES);
}

/* Gives up the slot's reference (its __gc): released now, unless its state is closing, when
 * lua_close's free of the block puts it aside until the close is over (held.c says why). */
static void sf_slot_release(lua_State *L, sf_object_slot *slot) {
    if (slot->object == NULL) return;
    if (slot->held) {
        sf_limits *lim = sf_limits_of(L);
        if (lim != NULL && sf_held_closing(lim)) return;
    }
    void *object = slot->object;
    slot->object = NULL;
    sf_release(object);
}

/* The end of an outermost call into the state: what freed slots put aside is released (a
 * deinit may call Lua: the stack gets room first). */
static void sf_settle_at_rest(lua_State *L, sf_limits *lim) {
    if (lim->busy != 0 || !lim->held_pending || !lua_checkstack(L, LUA_MINSTACK)) return;
    int depth = lim->host_depth;
    lim->host_depth++;
    sf_held_settle(lim, sf_release);
    lim->host_depth = depth;
}

void sf_release_unfinalized(sf_limits *lim, int release) {
    sf_held_end_close(lim, release ? sf_release : NULL);
}

static int sf_trampoline(lua_State *L) {
    sf_object_slot *slot = (sf_object_slot *)lua_touserdata(L, lua_upvalueindex(1));
    /* Only a finalized box called again (a trusted script's __gc can bring a value back). */
    if (slot->object == NULL) return luaL_error(L, "a ShareFlow function called after its state released it");
    sf_limits *lim = sf_limits_of(L);
    /* What Swift may push without checking (it checks for more). */
    luaL_checkstack(L, LUA_MINSTACK, "calling a ShareFlow function");
    if (lim) lim->host_depth++;
    int n = sf_dispatch(L, slot->object);
    if (lim) lim->host_depth--;
    if (n == SF_SWIFT_ERROR) return lua_error(L);
    if (lim && lim->limit && lim->host_depth == 0 && lim->used + lim->host_bytes > lim->limit) {
        /* Over the cap: what the arguments held may go before the check, the results stay
         * (moved to the bottom). Clearing them too made a collection that brought the state
         * back under its cap return n values that were no longer there: Lua then took the
         * function and the caller's registers as its results. */
        if (n < 0 || n > lua_gettop(L)) return luaL_error(L, "a ShareFlow function gave %d results of %d values", n, lua_gettop(L));
        lua_rotate(L, 1, n);
        lua_settop(L, n);
        sf_charge_host_growth(L, lim);
    }
    return n;
}

static int sf_box_gc(lua_State *L) {
    sf_object_slot *slot = (sf_object_slot *)lua_touserdata(L, 1);
    if (slot && lua_rawlen(L, 1) == SF_SLOT_BYTES) sf_slot_release(L, slot);
    return 0;
}

void sf_push_swift_function(lua_State *L, void *box) {
    sf_object_slot *slot = (sf_object_slot *)lua_newuserdatauv(L, SF_SLOT_BYTES, 0);
    slot->object = box;
    slot->charge = 0;
    sf_hold(L, slot);
    if (luaL_newmetatable(L, SF_BOX_META)) {
        lua_pushcfunction(L, sf_box_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "__metatable");
    }
    lua_setmetatable(L, -2);
    lua_pushcclosure(L, sf_trampoline, 1);
}

static int sf_class_index(lua_State *L) {
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

void sf_push_class_index(lua_State *L) {
    lua_pushcclosure(L, sf_class_index, 2);
}

void sf_push_object(lua_State *L, void *object, const char *tname) {
    sf_object_slot *slot = (sf_object_slot *)lua_newuserdatauv(L, SF_SLOT_BYTES, 0);
    slot->object = object;
    slot->charge = 0;
    sf_hold(L, slot);
    luaL_setmetatable(L, tname);
}

static int sf_object_gc(lua_State *L) {
    sf_object_slot *slot = (sf_object_slot *)lua_touserdata(L, 1);
    if (slot == NULL || lua_rawlen(L, 1) != SF_SLOT_BYTES) return 0;
    if (slot->charge != 0) {  /* most objects carry none: no look-up on the event path */
        sf_limits *lim = sf_limits_of(L);
        if (lim) lim->host_bytes -= slot->charge;
        slot->charge = 0;
    }
    sf_slot_release(L, slot);
    return 0;
}

void sf_charge_object(lua_State *L, int idx, size_t bytes) {
    sf_object_slot *slot = (sf_object_slot *)lua_touserdata(L, idx);
    sf_limits *lim = sf_limits_of(L);
    if (slot == NULL || lim == NULL || lua_rawlen(L, idx) != SF_SLOT_BYTES) return;
    lim->host_bytes = lim->host_bytes - slot->charge + bytes;
    slot->charge = bytes;
}

int sf_push_cached_object(lua_State *L, int cache, void *address) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, cache);
    if (lua_rawgetp(L, -1, address) == LUA_TUSERDATA) {
        lua_replace(L, -2);  /* a copy and a pop: cheaper than lua_remove's rotation */
        return 1;
    }
    lua_pop(L, 2);
    return 0;
}

void *sf_to_object(lua_State *L, int idx) {
    void **slot = (void **)lua_touserdata(L, idx);
    if (slot == NULL || !lua_getmetatable(L, idx)) return NULL;
    lua_pushliteral(L, SF_OBJECT_KEY);
    int ours = lua_rawget(L, -2) == LUA_TBOOLEAN;
    lua_pop(L, 2);
    return ours ? *slot : NULL;
}

void sf_set_gc(lua_State *L) {
    lua_pushcfunction(L, sf_object_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, SF_OBJECT_KEY);
}

/* luaL_traceback finds the last level by a search of lua_getstack calls, each walking the
 * stack from the top: on a stack a million levels deep (unbounded recursion) that took half a
 * second in the message handler, where no budget reaches. Past SF_TRACEBACK_DEPTH levels, the
 * first ten are shown and the rest summed up. */
#define SF_TRACEBACK_DEPTH 1000

static void bounded_traceback(lua_State *L, const char *msg, int level) {
    lua_Debug ar;
    if (!lua_getstack(L, level + SF_TRACEBACK_DEPTH, &ar)) {
        luaL_traceback(L, L, msg, level);
        return;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (msg) {
        luaL_addstring(&b, msg);
        luaL_addchar(&b, '\n');
    }
    luaL_addstring(&b, "stack traceback:");
    for (int i = level; i < level + 10 && lua_getstack(L, i, &ar); i++) {
        lua_getinfo(L, "Slnt", &ar);
        if (ar.currentline <= 0) lua_pushfstring(L, "\n\t%s: in ", ar.short_src);
        else lua_pushfstring(L, "\n\t%s:%d: in ", ar.short_src, ar.currentline);
        luaL_addvalue(&b);
        if (*ar.namewhat != '\0') lua_pushfstring(L, "%s '%s'", ar.namewhat, ar.name);
        else if (*ar.what == 'm') lua_pushliteral(L, "main chunk");
        else if (*ar.what != 'C') lua_pushfstring(L, "function <%s:%d>", ar.short_src, ar.linedefined);
        else lua_pushliteral(L, "?");
        luaL_addvalue(&b);
        if (ar.istailcall) luaL_addstring(&b, "\n\t(...tail calls...)");
    }
    lua_pushfstring(L, "\n\t...\t(the stack is more than %d levels deep; the rest is not shown)", SF_TRACEBACK_DEPTH);
    luaL_addvalue(&b);
    luaL_pushresult(&b);
}

/* An error value the host raised (an `Error` table: code, codeNumber, message) as the line a
 * person reads, "code (n): message"; read raw, so no metamethod runs in the handler. */
static int describe_host_error(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx)) return 0;
    luaL_getmetatable(L, "shareflow.Error");
    int ours = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (!ours) return 0;
    lua_pushliteral(L, "code");
    int code = lua_rawget(L, idx) == LUA_TSTRING;
    lua_pushliteral(L, "codeNumber");
    int number = lua_rawget(L, idx) == LUA_TNUMBER;
    lua_pushliteral(L, "message");
    int message = lua_rawget(L, idx) == LUA_TSTRING;
    if (!code || !message) { lua_pop(L, 3); return 0; }
    if (number) lua_pushfstring(L, "%s (%d): %s", lua_tostring(L, -3), (int)lua_tointeger(L, -2), lua_tostring(L, -1));
    else lua_pushfstring(L, "%s: %s", lua_tostring(L, -3), lua_tostring(L, -1));
    lua_replace(L, -4);
    lua_pop(L, 2);
    return 1;
}

int sf_traceback(lua_State *L) {
    sf_limits *lim = sf_limits_of(L);
    /* A spent budget's message needs no traceback (and growth is refused now). */
    if (lim && SF_GET(lim->expired)) return 1;
    if (lim) lim->host_depth++;  /* a traceback near the memory cap still gets made */
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL && describe_host_error(L, 1)) msg = lua_tostring(L, -1);
    if (msg == NULL) {
        if (luaL_getmetafield(L, 1, "__name") == LUA_TSTRING)
            msg = lua_pushfstring(L, "(error object is a %s value)", lua_tostring(L, -1));
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    bounded_traceback(L, msg, 1);
    if (lim) lim->host_depth--;
    return 1;
}

int sf_pcall(lua_State *L, int nargs, int nresults) {
    sf_limits *lim = sf_limits_of(L);
    int depth = 0;
    /* Lua code called from Swift is limited again, even inside a trampoline. */
    int base = lua_gettop(L) - nargs;
    if (!lua_checkstack(L, 1)) {  /* no room for the handler: the call fails, leaving a message */
        lua_settop(L, base - 1);
        lua_pushliteral(L, "stack overflow");
        return LUA_ERRMEM;
    }
    if (lim) {
        if (lim->busy == 0) lim->calls++;
        depth = lim->host_depth; lim->host_depth = 0; lim->busy++;
    }
    lua_pushcfunction(L, sf_traceback);
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    if (lim) {
        lim->host_depth = depth;
        lim->busy--;
        if (status != LUA_OK && SF_GET(lim->expired)) {
            /* Whatever the spent budget turned into on its way out (a refused allocation, an
             * error in a handler), the call ended because of it. */
            lua_pop(L, 1);
            sf_push_spent_reason(L, lim);
            status = LUA_ERRRUN;
        }
        if (lim->held_pending) sf_settle_at_rest(L, lim);
    }
    return status;
}

int sf_next_skipping(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    while (lua_next(L, 1)) {
        if (lua_touserdata(L, -2) != lua_touserdata(L, lua_upvalueindex(1))) return 2;
        lua_pop(L, 1);
    }
    lua_pushnil(L);
    return 1;
}

/* sf_protected: Swift code run inside lua_pcall. */
struct protected_args {
    sf_body_fn body;
    void *ctx;
};

static int protected_main(lua_State *L) {
    struct protected_args *a = (struct protected_args *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    luaL_checkstack(L, LUA_MINSTACK, "entering the host");
    sf_limits *lim = sf_limits_of(L);
    if (lim) lim->host_depth++;
    int n = a->body(L, a->ctx);
    if (lim) lim->host_depth--;
    if (n == SF_SWIFT_ERROR) return lua_error(L);
    if (lim && lim->host_depth == 0) sf_charge_host_growth(L, lim);
    return n;
}

int sf_protected(lua_State *L, int nargs, int nresults, sf_body_fn body, void *ctx) {
    struct protected_args a = { body, ctx };
    if (!lua_checkstack(L, 3)) return LUA_ERRMEM;
    lua_pushcfunction(L, protected_main);
    lua_insert(L, lua_gettop(L) - nargs);
    lua_pushlightuserdata(L, &a);
    return sf_pcall(L, nargs + 1, nresults);
}

/* Verdicts (SPEC §6): only nothing, true and sf.allow() allow. */
#define SF_MAX_REASON 1024
static const char SF_ALLOW_KEY = 0;
static const char SF_DENY_META_KEY = 0;
static const char SF_APPROVE_META_KEY = 0;
/* A verdict's `file:line` (SPEC §18 P3): kept in sf.deny's and sf.approve's tables under this
 * key (no script can name it), and by read_verdict in the registry under the next, where
 * sf_push_verdict_location reads it after a denial or an approval. */
static const char SF_WHERE_KEY = 0;
static const char SF_LAST_WHERE_KEY = 0;

/* Stores where the policy called sf.deny/sf.approve in the verdict table on top. */
static void mark_where(lua_State *L) {
    luaL_where(L, 1);
    lua_rawsetp(L, -2, &SF_WHERE_KEY);
}

int sf_push_verdict_location(lua_State *L) {
    return lua_rawgetp(L, LUA_REGISTRYINDEX, &SF_LAST_WHERE_KEY);
}

int sf_verdict_allow(lua_State *L) {
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SF_ALLOW_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 1);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "allow");
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &SF_ALLOW_KEY);
    }
    return 1;
}

int sf_verdict_deny(lua_State *L) {
    size_t len = 0;
    const char *reason = luaL_optlstring(L, 1, "denied", &len);
    lua_createtable(L, 0, 2);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "allow");
    lua_pushlstring(L, reason, len);
    lua_setfield(L, -2, "reason");
    mark_where(L);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SF_DENY_META_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 2);
        lua_pushliteral(L, "Verdict");
        lua_setfield(L, -2, "__name");
        lua_pushliteral(L, "Verdict");
        lua_setfield(L, -2, "__metatable");  /* getmetatable cannot hand it out to forge one */
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &SF_DENY_META_KEY);
    }
    lua_setmetatable(L, -2);
    return 1;
}

/* Whether the string at idx is exactly `word` (a NUL inside it is no match). */
static int is_word(lua_State *L, int idx, const char *word) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    return s && len == strlen(word) && memcmp(s, word, len) == 0;
}

/* sf.approve{ permission =, role = } (SPEC §17): share.requestAccess's own verdict, approving
 * the requester at once. Its options are read raw and checked here, so the verdict holds two
 * known words and nothing a plugin can change after: permission readOnly (default) or
 * readWrite, role privateUser (default) or administrator. */
int sf_verdict_approve(lua_State *L) {
    const char *permission = "readOnly", *role = "privateUser";
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            if (lua_type(L, -2) == LUA_TSTRING && is_word(L, -2, "permission")) {
                if (is_word(L, -1, "readOnly") && lua_type(L, -1) == LUA_TSTRING) permission = "readOnly";
                else if (is_word(L, -1, "readWrite") && lua_type(L, -1) == LUA_TSTRING) permission = "readWrite";
                else return luaL_argerror(L, 1, "sf.approve: permission must be 'readOnly' or 'readWrite'");
            } else if (lua_type(L, -2) == LUA_TSTRING && is_word(L, -2, "role")) {
                if (is_word(L, -1, "privateUser") && lua_type(L, -1) == LUA_TSTRING) role = "privateUser";
                else if (is_word(L, -1, "administrator") && lua_type(L, -1) == LUA_TSTRING) role = "administrator";
                else return luaL_argerror(L, 1, "sf.approve: role must be 'privateUser' or 'administrator'");
            } else {
                return luaL_argerror(L, 1, "sf.approve takes { permission =, role = } only");
            }
            lua_pop(L, 1);
        }
    }
    lua_createtable(L, 0, 3);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "allow");
    lua_pushstring(L, permission);
    lua_setfield(L, -2, "permission");
    lua_pushstring(L, role);
    lua_setfield(L, -2, "role");
    mark_where(L);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SF_APPROVE_META_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 2);
        lua_pushliteral(L, "Verdict");
        lua_setfield(L, -2, "__name");
        lua_pushliteral(L, "Verdict");
        lua_setfield(L, -2, "__metatable");
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &SF_APPROVE_META_KEY);
    }
    lua_setmetatable(L, -2);
    return 1;
}

/* A short rendering of what a policy returned, for the denial's reason. */
static void push_returned(lua_State *L, int idx) {
    switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
        char shown[44];
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        snprintf(shown, sizeof shown, "%.40s%s", s, len > 40 ? "..." : "");
        lua_pushfstring(L, "the string \"%s\"", shown);
        break;
    }
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) lua_pushfstring(L, "the number %I", (LUAI_UACINT)lua_tointeger(L, idx));
        else lua_pushfstring(L, "the number %f", (LUAI_UACNUMBER)lua_tonumber(L, idx));
        break;
    case LUA_TBOOLEAN:
        lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false");
        break;
    default:
        lua_pushfstring(L, "a %s", luaL_typename(L, idx));
    }
}

/* Reads the two results at -2, -1 raw (no metamethod runs) and leaves
 * allow (boolean), reason (string or nil) in their place. */
static void read_verdict(lua_State *L) {
    int first = lua_gettop(L) - 1;
    int allow = 0, located = 0;
    switch (lua_type(L, first)) {
    case LUA_TNIL:
        allow = 1;
        lua_pushnil(L);
        break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, first)) { allow = 1; lua_pushnil(L); }
        else if (lua_type(L, first + 1) == LUA_TSTRING) lua_pushvalue(L, first + 1);
        else lua_pushliteral(L, "denied");
        break;
    case LUA_TTABLE:
        lua_rawgetp(L, LUA_REGISTRYINDEX, &SF_ALLOW_KEY);
        allow = lua_rawequal(L, first, -1);
        lua_pop(L, 1);
        if (allow) { lua_pushnil(L); break; }
        if (lua_getmetatable(L, first)) {
            lua_rawgetp(L, LUA_REGISTRYINDEX, &SF_DENY_META_KEY);
            int deny = lua_rawequal(L, -1, -2);
            lua_pop(L, 1);
            lua_rawgetp(L, LUA_REGISTRYINDEX, &SF_APPROVE_META_KEY);
            int approve = lua_rawequal(L, -1, -2);
            lua_pop(L, 2);
            if (deny || approve) {
                lua_rawgetp(L, first, &SF_WHERE_KEY);
                lua_rawsetp(L, LUA_REGISTRYINDEX, &SF_LAST_WHERE_KEY);
                located = 1;
            }
            if (deny) {
                lua_pushliteral(L, "reason");
                if (lua_rawget(L, first) != LUA_TSTRING) { lua_pop(L, 1); lua_pushliteral(L, "denied"); }
                break;
            }
            if (approve) {
                /* allow 2 and "permission role", read raw and checked again: the table's
                 * fields are a plugin's to change after sf.approve made them. */
                lua_pushliteral(L, "permission");
                lua_rawget(L, first);
                int rw = lua_type(L, -1) == LUA_TSTRING && is_word(L, -1, "readWrite");
                int ro = lua_type(L, -1) == LUA_TSTRING && is_word(L, -1, "readOnly");
                lua_pop(L, 1);
                lua_pushliteral(L, "role");
                lua_rawget(L, first);
                int admin = lua_type(L, -1) == LUA_TSTRING && is_word(L, -1, "administrator");
                int user = lua_type(L, -1) == LUA_TSTRING && is_word(L, -1, "privateUser");
                lua_pop(L, 1);
                if ((rw || ro) && (admin || user)) {
                    allow = 2;
                    lua_pushfstring(L, "%s %s", rw ? "readWrite" : "readOnly", admin ? "administrator" : "privateUser");
                    break;
                }
                lua_pushliteral(L, "policy returned an sf.approve{} changed after it was made");
                break;
            }
        }
        lua_pushliteral(L, "policy returned a table that is not sf.allow(), sf.deny(reason) or sf.approve{}");
        break;
    default:
        push_returned(L, first);
        lua_pushfstring(L, "policy returned %s (expected nothing, true, sf.allow() or sf.deny(reason))", lua_tostring(L, -1));
        lua_remove(L, -2);
    }
    /* A reason is kept in the decision log and shown to the caller: at most 1 KiB of it. */
    if (lua_type(L, -1) == LUA_TSTRING) {
        size_t len;
        const char *reason = lua_tolstring(L, -1, &len);
        if (len > SF_MAX_REASON) {
            lua_pushlstring(L, reason, SF_MAX_REASON);
            lua_pushliteral(L, "...");
            lua_concat(L, 2);
            lua_replace(L, -2);
        }
    }
    if (allow != 1 && !located) {
        /* A denial without sf.deny's line: none is read, not an earlier one's. */
        lua_pushnil(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &SF_LAST_WHERE_KEY);
    }
    if (allow == 2) lua_pushinteger(L, 2); else lua_pushboolean(L, allow);
    lua_replace(L, first);
    lua_replace(L, first + 1);
}

static int hook_main(lua_State *L) {
    /* A C function called by Lua has LUA_MINSTACK free slots: the builders need fewer. */
    sf_hook_call *h = (sf_hook_call *)lua_touserdata(L, 1);
    lua_settop(L, 0);
    if (lua_rawgeti(L, LUA_REGISTRYINDEX, h->function) != LUA_TFUNCTION)
        return luaL_error(L, "the hook's function is gone");
    sf_limits *lim = h->limits;
    lim->host_depth++;
    int ok = h->build(L, h->ctx);
    lim->host_depth--;
    if (!ok) return lua_error(L);
    if (lim->used > lim->limit && lim->limit) sf_charge_host_growth(L, lim);
    if (!h->policy) {
        lua_call(L, 1, 0);
        return 0;
    }
    lua_call(L, 1, 2);
    read_verdict(L);
    return 2;
}

int sf_call_hook(lua_State *L, sf_limits *limits, sf_hook_call *h) {
    if (!lua_checkstack(L, 4)) return LUA_ERRMEM;
    h->limits = limits;
    /* sf_guarded_pcall's work, with the handler pushed first rather than rotated into place:
     * this runs on every event. */
    int budgeted = limits->budget_ns != 0 && SF_GET(limits->deadline_ns) == 0;
    if (budgeted) sf_begin_budget(limits);
    int depth = limits->host_depth;
    limits->host_depth = 0;
    if (limits->busy == 0) limits->calls++;
    limits->busy++;
    int base = lua_gettop(L) + 1;
    lua_pushcfunction(L, sf_traceback);
    lua_pushcfunction(L, hook_main);
    lua_pushlightuserdata(L, h);
    int status = lua_pcall(L, 1, h->policy ? 2 : 0, base);
    /* The handler stays at `base`, below the results: the caller resets the stack to where it
     * was (HookCall does), and removing it here rotated the results down on every event. */
    limits->host_depth = depth;
    limits->busy--;
    if (status != LUA_OK && SF_GET(limits->expired)) {
        lua_pop(L, 1);
        sf_push_spent_reason(L, limits);
        status = LUA_ERRRUN;
    }
    if (budgeted) sf_end_budget(limits);
    if (limits->held_pending) sf_settle_at_rest(L, limits);
    return status;
}
