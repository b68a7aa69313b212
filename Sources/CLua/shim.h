#ifndef SHAREFLOW_CLUA_SHIM_H
#define SHAREFLOW_CLUA_SHIM_H

/* Lua 5.4 from the system (pkg-config lua5.4 adds -I/usr/include/lua5.4). */
#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

/*
 * Swift cannot import function-like macros, so each macro the host uses is
 * re-exported here as a static inline function with the same meaning.
 */
static inline int clua_pcall(lua_State *L, int nargs, int nresults, int msgh) {
    return lua_pcall(L, nargs, nresults, msgh);
}
static inline void clua_pop(lua_State *L, int n) { lua_pop(L, n); }
static inline void clua_newtable(lua_State *L) { lua_newtable(L); }
static inline const char *clua_tostring(lua_State *L, int i) { return lua_tostring(L, i); }
static inline lua_Number clua_tonumber(lua_State *L, int i) { return lua_tonumber(L, i); }
static inline lua_Integer clua_tointeger(lua_State *L, int i) { return lua_tointeger(L, i); }
static inline int clua_isnil(lua_State *L, int i) { return lua_isnil(L, i); }
static inline int clua_isnoneornil(lua_State *L, int i) { return lua_isnoneornil(L, i); }
static inline int clua_istable(lua_State *L, int i) { return lua_istable(L, i); }
static inline int clua_isfunction(lua_State *L, int i) { return lua_isfunction(L, i); }
static inline void clua_pushglobaltable(lua_State *L) { lua_pushglobaltable(L); }
static inline int clua_upvalueindex(int i) { return lua_upvalueindex(i); }
static inline int clua_registryindex(void) { return LUA_REGISTRYINDEX; }
static inline void clua_insert(lua_State *L, int i) { lua_insert(L, i); }
static inline void clua_remove(lua_State *L, int i) { lua_remove(L, i); }
static inline void clua_replace(lua_State *L, int i) { lua_replace(L, i); }
static inline int clua_getextraspace_size(void) { return LUA_EXTRASPACE; }
static inline void *clua_getextraspace(lua_State *L) { return lua_getextraspace(L); }
static inline void *clua_newuserdata(lua_State *L, size_t size) { return lua_newuserdata(L, size); }
static inline int clua_loadbuffer(lua_State *L, const char *buff, size_t sz, const char *name, const char *mode) {
    return luaL_loadbufferx(L, buff, sz, name, mode);
}
static inline const char *clua_typename_at(lua_State *L, int i) { return luaL_typename(L, i); }
static inline int clua_multret(void) { return LUA_MULTRET; }
static inline lua_Integer clua_maxinteger(void) { return LUA_MAXINTEGER; }

#endif
