/* A sandboxed state's standard library, built up from an allow-list (SPEC §8).
 *
 * The state is made without luaL_openlibs. Each permitted library is opened on its own
 * (luaL_requiref) and then cut down to the names listed here: a name Lua adds to a library
 * in a later release is dropped, not exposed. io, debug and package are never opened, so
 * their functions exist nowhere in the state (not in package.loaded, not in the registry, not
 * as an upvalue). os is opened into a temporary table whose four time functions are copied
 * into a fresh one; the temporary is garbage. load, collectgarbage and setmetatable are the
 * sandbox's own (C, below), so no Lua closure holds the originals as upvalues. */
#include "internal.h"

#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

/* A chunk given to load is parsed in C, out of the budget's reach: 1 MiB at most. */
#define SF_MAX_CHUNK (1024 * 1024)
/* The heap past which collectgarbage("collect") takes one incremental step instead (a full
 * collection runs in C for about 2 ms per MiB). */
#define SF_GC_FULL_KIB 8192

static const char *const base_names[] = {
    "assert", "collectgarbage", "error", "getmetatable", "ipairs", "load", "next", "pairs",
    "pcall", "print", "rawequal", "rawget", "rawlen", "rawset", "select", "setmetatable",
    "tonumber", "tostring", "type", "xpcall", "_G", "_VERSION", NULL};
static const char *const coroutine_names[] = {
    "close", "create", "isyieldable", "resume", "running", "status", "wrap", "yield", NULL};
static const char *const table_names[] = {
    "concat", "insert", "move", "pack", "remove", "sort", "unpack", NULL};
/* string.dump stays: what it makes, load refuses (text only). */
static const char *const string_names[] = {
    "byte", "char", "dump", "find", "format", "gmatch", "gsub", "len", "lower", "match", "pack",
    "packsize", "rep", "reverse", "sub", "unpack", "upper", NULL};
static const char *const math_names[] = {
    "abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "huge", "log",
    "max", "maxinteger", "min", "mininteger", "modf", "pi", "rad", "random", "randomseed",
    "sin", "sqrt", "tan", "tointeger", "type", "ult", NULL};
static const char *const utf8_names[] = {
    "char", "charpattern", "codepoint", "codes", "len", "offset", NULL};
static const char *const os_names[] = {"clock", "date", "difftime", "time", NULL};

static int listed(const char *const names[], const char *name) {
    for (; *names != NULL; names++)
        if (strcmp(*names, name) == 0) return 1;
    return 0;
}

/* Removes from the table on top every key that is not a listed string. Clearing fields that
 * exist is allowed during a traversal. */
static void keep_only(lua_State *L, const char *const names[]) {
    int t = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING || !listed(names, lua_tostring(L, -1))) {
            lua_pushvalue(L, -1);
            lua_pushnil(L);
            lua_rawset(L, t);
        }
    }
}

/* load: text only, whatever mode is asked for; at most SF_MAX_CHUNK bytes, from a string or
 * a reader function. The rest as lbaselib.c's luaB_load. */
typedef struct reader_state {
    size_t total;
} reader_state;

#define RESERVED_SLOT 5

static const char *sandbox_reader(lua_State *L, void *ud, size_t *size) {
    reader_state *rs = (reader_state *)ud;
    luaL_checkstack(L, 2, "too many nested functions");
    lua_pushvalue(L, 1);
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        *size = 0;
        return NULL;
    } else if (lua_type(L, -1) != LUA_TSTRING) {
        luaL_error(L, "reader function must return a string");
    }
    lua_replace(L, RESERVED_SLOT);
    const char *s = lua_tolstring(L, RESERVED_SLOT, size);
    rs->total += *size;
    if (rs->total > SF_MAX_CHUNK) luaL_error(L, "load: chunk larger than 1 MiB");
    return s;
}

/* A chunk name a plugin gives is shown as `(load) NAME`: a plugin cannot pass its code off as
 * another file (`@Plugins/other/init.lua`), which would forge that file's coverage, the
 * `file:line` of a decision, or have a file outside the sandbox compiled and quoted (SPEC §18). */
static const char *public_chunkname(lua_State *L, int keep) {
    if (keep || lua_isnoneornil(L, 2)) return NULL;
    const char *name = luaL_checkstring(L, 2);
    lua_pushfstring(L, "=(load) %s", name[0] == '=' || name[0] == '@' ? name + 1 : name);
    lua_replace(L, 2);
    return lua_tostring(L, 2);
}

static int load_chunk(lua_State *L, int keep) {
    size_t l;
    int status;
    public_chunkname(L, keep);
    const char *s = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &l) : NULL;
    int env = !lua_isnone(L, 4) ? 4 : 0;
    if (s != NULL) {
        const char *chunkname = luaL_optstring(L, 2, s);
        if (l > SF_MAX_CHUNK) {
            luaL_pushfail(L);
            lua_pushliteral(L, "load: chunk larger than 1 MiB");
            return 2;
        }
        status = luaL_loadbufferx(L, s, l, chunkname, "t");
        if (status == LUA_OK && !sf_check_loaded_function(L)) status = LUA_ERRSYNTAX;
    } else {
        const char *chunkname = luaL_optstring(L, 2, "=(load)");
        luaL_checktype(L, 1, LUA_TFUNCTION);
        lua_settop(L, RESERVED_SLOT);
        reader_state rs = {0};
        status = lua_load(L, sandbox_reader, &rs, chunkname, "t");
        if (status == LUA_OK && !sf_check_loaded_function(L)) status = LUA_ERRSYNTAX;
    }
    if (status != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (env != 0) {
        lua_pushvalue(L, env);
        if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    }
    return 1;
}

static int sandbox_load(lua_State *L) { return load_chunk(L, 0); }

int sf_sandbox_load_module(lua_State *L) { return load_chunk(L, 1); }

/* collectgarbage: "collect" (or "step") and the two queries. Past SF_GC_FULL_KIB a collection
 * is one incremental step, which the budget can follow; stopping, restarting or retuning the
 * collector is the host's business. */
static int sandbox_collectgarbage(lua_State *L) {
    const char *opt = luaL_optstring(L, 1, "collect");
    if (strcmp(opt, "count") == 0) {
        int k = lua_gc(L, LUA_GCCOUNT);
        int b = lua_gc(L, LUA_GCCOUNTB);
        lua_pushnumber(L, (lua_Number)k + ((lua_Number)b / 1024));
        return 1;
    }
    if (strcmp(opt, "isrunning") == 0) {
        lua_pushboolean(L, lua_gc(L, LUA_GCISRUNNING));
        return 1;
    }
    if (strcmp(opt, "collect") == 0 || strcmp(opt, "step") == 0) {
        if (lua_gc(L, LUA_GCCOUNT) > SF_GC_FULL_KIB) {
            lua_pushboolean(L, lua_gc(L, LUA_GCSTEP, 0));
            return 1;
        }
        if (opt[0] == 's') {
            lua_pushboolean(L, lua_gc(L, LUA_GCSTEP, 0));
            return 1;
        }
        lua_gc(L, LUA_GCCOLLECT);
        lua_pushinteger(L, 0);
        return 1;
    }
    return luaL_error(L, "collectgarbage('%s') is not available to plugins", opt);
}

/* setmetatable: a table gets a checked copy of the metatable given, which the plugin never
 * holds. The garbage collector reads two fields of a live metatable in C, where no hook runs:
 * __gc (a finalizer no budget can stop) and __mode (weak keys alone make ephemeron tables,
 * whose collection can take seconds). getmetatable still answers the table given (the copy's
 * __metatable), and __index = mt, the usual class idiom, still finds methods added later.
 * Upvalue 1: a weak table, copy -> the metatable the plugin gave. */
static int sandbox_setmetatable(lua_State *L) {
    int t = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    lua_settop(L, 2);
    luaL_checkstack(L, 6, NULL);
    if (lua_getmetatable(L, 1)) {  /* 3: the metatable the table has now (a copy, or not) */
        lua_pushvalue(L, 3);
        int protectedField;
        if (lua_rawget(L, lua_upvalueindex(1)) == LUA_TTABLE) {  /* 4: the plugin's original */
            lua_pushliteral(L, "__metatable");
            protectedField = lua_rawget(L, 4) != LUA_TNIL;
        } else {
            lua_pushliteral(L, "__metatable");
            protectedField = lua_rawget(L, 3) != LUA_TNIL;
        }
        if (protectedField) return luaL_error(L, "cannot change a protected metatable");
        lua_settop(L, 2);
    }
    if (t == LUA_TNIL) {
        lua_setmetatable(L, 1);
        return 1;
    }
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL)
        return luaL_argerror(L, 2, "plugins cannot set __gc finalizers");
    lua_pop(L, 1);
    /* The system Lua's bugs (luabugs.c): a __concat metamethod lets '..' write into freed
     * memory (Debian's 5.4.4 lacks upstream 603b2c64), a __close one lets 'break' and
     * lua_settop do so (997f11f5, 196bb94d). Checked here, once: the metatable the table gets
     * is a copy the plugin never holds. */
    lua_pushliteral(L, "__concat");
    if (lua_rawget(L, 2) != LUA_TNIL)
        return luaL_argerror(L, 2, "plugins cannot set __concat (the system Lua 5.4.4 corrupts memory through it: upstream fix 603b2c64); use tostring or a method");
    lua_pop(L, 1);
    lua_pushliteral(L, "__close");
    if (lua_rawget(L, 2) != LUA_TNIL)
        return luaL_argerror(L, 2, "plugins cannot set __close (the system Lua 5.4.4 corrupts memory through to-be-closed variables: upstream fixes 997f11f5, 196bb94d)");
    lua_pop(L, 1);
    lua_pushliteral(L, "__mode");
    if (lua_rawget(L, 2) == LUA_TSTRING) {
        const char *mode = lua_tostring(L, -1);
        if (strchr(mode, 'k') != NULL && strchr(mode, 'v') == NULL)
            return luaL_argerror(L, 2, "plugins cannot make tables with weak keys only; use __mode = 'kv'");
    }
    lua_pop(L, 1);
    lua_newtable(L);  /* 3: the copy */
    int left = SF_STEPS_PER_CHECK;
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {  /* a metatable can be big: the copy stays in the budget */
        if (--left <= 0) {
            left = SF_STEPS_PER_CHECK;
            sf_budget_checkpoint(L);
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, 3);
    }
    lua_pushliteral(L, "__metatable");
    if (lua_rawget(L, 2) == LUA_TNIL) {
        lua_pushliteral(L, "__metatable");
        lua_pushvalue(L, 2);
        lua_rawset(L, 3);
    }
    lua_pop(L, 1);
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 2);
    lua_rawset(L, lua_upvalueindex(1));
    lua_setmetatable(L, 1);
    lua_settop(L, 1);
    return 1;
}

/* Sets f as field `name` of the table on top, raw. */
static void set_function(lua_State *L, const char *name, lua_CFunction f, int nup) {
    lua_pushcclosure(L, f, nup);
    lua_setfield(L, -2, name);
}

static void open_library(lua_State *L, const char *name, lua_CFunction open, const char *const names[]) {
    luaL_requiref(L, name, open, 1);
    keep_only(L, names);
    lua_pop(L, 1);
}

static int open_sandbox(lua_State *L) {
    open_library(L, LUA_GNAME, luaopen_base, base_names);
    open_library(L, LUA_COLIBNAME, luaopen_coroutine, coroutine_names);
    open_library(L, LUA_TABLIBNAME, luaopen_table, table_names);
    open_library(L, LUA_STRLIBNAME, luaopen_string, string_names);
    open_library(L, LUA_MATHLIBNAME, luaopen_math, math_names);
    open_library(L, LUA_UTF8LIBNAME, luaopen_utf8, utf8_names);

    /* os: the four time functions, copied out of a table that is then dropped. */
    lua_newtable(L);
    lua_pushcfunction(L, luaopen_os);
    lua_call(L, 0, 1);
    for (const char *const *n = os_names; *n != NULL; n++) {
        lua_getfield(L, -1, *n);
        lua_setfield(L, -3, *n);
    }
    lua_pop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, LUA_OSLIBNAME);
    lua_pop(L, 1);
    lua_setglobal(L, LUA_OSLIBNAME);

    /* package: the sandbox's own, never luaopen_package: loaded (the registry's), preload, and
     * empty paths.
     * require itself is set by the host (it reads modules from the plugin's folder). */
    lua_newtable(L);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, LUA_LOADLIBNAME);
    lua_setfield(L, -2, "loaded");
    lua_newtable(L);
    lua_setfield(L, -2, "preload");
    lua_pushliteral(L, "/\n;\n?\n!\n-\n");
    lua_setfield(L, -2, "config");
    lua_pushliteral(L, "");  /* no search paths: require reads the plugin's folder only */
    lua_setfield(L, -2, "path");
    lua_pushliteral(L, "");
    lua_setfield(L, -2, "cpath");
    lua_setglobal(L, LUA_LOADLIBNAME);

    /* The string metatable, hidden: getmetatable("") answers a table of its own, so a plugin
     * can add no metamethod to every string (a __concat there needs no setmetatable). */
    lua_pushliteral(L, "");
    if (lua_getmetatable(L, -1)) {
        lua_pushliteral(L, "__metatable");
        lua_createtable(L, 0, 1);
        lua_getglobal(L, LUA_STRLIBNAME);
        lua_setfield(L, -2, "__index");
        lua_rawset(L, -3);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);

    lua_pushglobaltable(L);
    set_function(L, "load", sandbox_load, 0);
    set_function(L, "collectgarbage", sandbox_collectgarbage, 0);
    lua_newtable(L);  /* copies: weak in keys and values (no ephemeron table here either) */
    lua_newtable(L);
    lua_pushliteral(L, "kv");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    set_function(L, "setmetatable", sandbox_setmetatable, 1);
    lua_pop(L, 1);
    return 0;
}

int sf_open_sandbox(lua_State *L) {
    if (!lua_checkstack(L, 2)) return LUA_ERRMEM;
    lua_pushcfunction(L, open_sandbox);
    int status = lua_pcall(L, 0, 0, 0);
    if (status != LUA_OK) lua_pop(L, 1);
    return status;
}
