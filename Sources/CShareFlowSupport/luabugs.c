/* The system Lua's known bugs, kept out of a plugin's reach (SPEC §8; the list, with each
 * upstream commit, is docs/reference/lua-bugs.md).
 *
 * The sandbox's promises rest on a library it does not control: Debian 12's liblua5.4 is Lua
 * 5.4.4 with the CVE-2022-33099 fix (upstream 42d40581) but not its follow-up (603b2c64), so
 * `..` keeps a stack pointer across a __concat metamethod and writes into freed memory when
 * the stack moves meanwhile; and 5.4.4's own bugs around to-be-closed variables (997f11f5,
 * 196bb94d, 1e64c139) and getobjname's recursion (7923dbbf, 5.4.6) crash from plain Lua.
 * None can be patched from outside the library; each is made unreachable here:
 *  - no __concat and no __close on any value a plugin can make (the sandbox's setmetatable
 *    refuses them; the string metatable is hidden behind __metatable; host metatables have
 *    neither, which a test checks);
 *  - no function of more than SF_MAX_FUNCTION_INSTRUCTIONS instructions compiles in a
 *    sandboxed state: an error message walks a chain of field reads back through the
 *    function, in C, recursively and in quadratic time (7923dbbf);
 *  - a release this list was not made for is refused a plugin state (sf_lua_release_checked). */
#include "internal.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Long enough for any function a person writes (a few thousand lines), short enough that the
 * error message's walk (7923dbbf) stays near a tenth of a second and a few hundred KiB of C
 * stack. */
#define SF_MAX_FUNCTION_INSTRUCTIONS 16384

typedef struct dump_buffer {
    unsigned char *bytes;
    size_t size, capacity;
    int failed;
} dump_buffer;

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud) {
    (void)L;
    dump_buffer *b = (dump_buffer *)ud;
    if (b->failed) return 1;
    if (b->size + sz > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 4096;
        while (capacity < b->size + sz) capacity *= 2;
        unsigned char *grown = realloc(b->bytes, capacity);
        if (grown == NULL) { b->failed = 1; return 1; }
        b->bytes = grown;
        b->capacity = capacity;
    }
    memcpy(b->bytes + b->size, p, sz);
    b->size += sz;
    return 0;
}

/* A reader of a stripped binary chunk (ldump.c's format in 5.4): only sizes are read. */
typedef struct chunk_reader {
    const unsigned char *p, *end;
    int bad;
    size_t largest;
} chunk_reader;

static int take(chunk_reader *r, size_t n) {
    if (r->bad || (size_t)(r->end - r->p) < n) { r->bad = 1; return 0; }
    r->p += n;
    return 1;
}

static int byte_of(chunk_reader *r) {
    if (r->bad || r->p >= r->end) { r->bad = 1; return 0; }
    return *r->p++;
}

/* dumpSize: 7 bits a byte, most significant first, the last byte's high bit set. */
static size_t size_of(chunk_reader *r) {
    size_t x = 0;
    for (int i = 0; i < 10; i++) {
        int b = byte_of(r);
        if (r->bad) return 0;
        x = (x << 7) | (size_t)(b & 0x7f);
        if (b & 0x80) return x;
    }
    r->bad = 1;
    return 0;
}

static void skip_string(chunk_reader *r) {
    size_t n = size_of(r);
    if (n > 0) take(r, n - 1);
}

static void read_function(chunk_reader *r, int depth) {
    if (depth > 1000) { r->bad = 1; return; }
    skip_string(r);                 /* source */
    size_of(r); size_of(r);         /* linedefined, lastlinedefined */
    take(r, 3);                     /* numparams, is_vararg, maxstacksize */
    size_t code = size_of(r);
    if (code > r->largest) r->largest = code;
    if (code > (size_t)(r->end - r->p) / 4) { r->bad = 1; return; }
    take(r, code * 4);
    size_t constants = size_of(r);
    for (size_t i = 0; i < constants && !r->bad; i++) {
        switch (byte_of(r)) {
        case 3: case 19: take(r, 8); break;        /* integer, float */
        case 4: case 20: skip_string(r); break;    /* short, long string */
        default: break;                            /* nil, false, true */
        }
    }
    size_t upvalues = size_of(r);
    if (upvalues > (size_t)(r->end - r->p) / 3) { r->bad = 1; return; }
    take(r, upvalues * 3);
    size_t protos = size_of(r);
    for (size_t i = 0; i < protos && !r->bad; i++) read_function(r, depth + 1);
    /* Debug information: stripped, but the counts are there. */
    take(r, size_of(r));                                        /* lineinfo */
    size_t abslines = size_of(r);
    for (size_t i = 0; i < abslines && !r->bad; i++) { size_of(r); size_of(r); }
    size_t locvars = size_of(r);
    for (size_t i = 0; i < locvars && !r->bad; i++) { skip_string(r); size_of(r); size_of(r); }
    size_t names = size_of(r);
    for (size_t i = 0; i < names && !r->bad; i++) skip_string(r);
}

/* The most instructions of any function in the Lua function on top of the stack (itself and
 * every function nested in it), or -1 when it cannot be told. */
static long largest_function(lua_State *L) {
    dump_buffer b = {0};
    int status = lua_dump(L, dump_writer, &b, 1);
    long largest = -1;
    /* Header: signature 4, version 1, format 1, data 6, three sizes, an integer and a
     * number (8 each), then the main function's upvalue count. */
    const size_t header = 4 + 1 + 1 + 6 + 3 + 8 + 8 + 1;
    if (status == 0 && !b.failed && b.size > header) {
        chunk_reader r = {b.bytes + header, b.bytes + b.size, 0, 0};
        read_function(&r, 0);
        if (!r.bad) largest = (long)r.largest;
    }
    free(b.bytes);
    return largest;
}

int sf_check_loaded_function(lua_State *L) {
    if (lua_type(L, -1) != LUA_TFUNCTION || lua_iscfunction(L, -1)) return 1;
    long largest = largest_function(L);
    if (largest < 0) {
        lua_pushliteral(L, "the chunk's compiled size cannot be checked");
        return 0;
    }
    if (largest > SF_MAX_FUNCTION_INSTRUCTIONS) {
        lua_pushfstring(L, "a function of this chunk compiles to %d instructions; plugins may have at most %d in one function "
                           "(split it: Lua 5.4.4's error messages walk long functions in C, out of the budget's reach)",
                        (int)largest, SF_MAX_FUNCTION_INSTRUCTIONS);
        return 0;
    }
    return 1;
}

/* In a protected call: the function at 1 is checked; its error, if any, is raised. */
static int check_protected(lua_State *L) {
    lua_settop(L, 1);
    if (!sf_check_loaded_function(L)) return lua_error(L);
    return 0;
}

int sf_check_chunk(lua_State *L) {
    if (!lua_checkstack(L, 3)) return LUA_ERRMEM;
    lua_pushcfunction(L, check_protected);
    lua_pushvalue(L, -2);
    return lua_pcall(L, 1, 0, 0);  /* an error message is left on top */
}

/* The release of the linked library, read from lua_ident ("$LuaVersion: Lua 5.4.4 ...").
 * Returns major*10000 + minor*100 + release, or 0. */
int sf_lua_release(void) {
    const char *v = strstr(lua_ident, "Lua ");
    int major = 0, minor = 0, release = 0;
    if (v == NULL || sscanf(v, "Lua %d.%d.%d", &major, &minor, &release) != 3) return 0;
    return major * 10000 + minor * 100 + release;
}

/* Whether plugin states may run on this release: 5.4.4 (Debian 12's, every bug lua.org lists
 * for 5.4.4-5.4.6 kept out of reach here) up to 5.4.8. Earlier 5.4 releases have bugs this
 * list does not cover (CVE-2021-43519, CVE-2021-44647 among them). */
int sf_lua_release_checked(int release) {
    return release >= 50404 && release <= 50408;
}
