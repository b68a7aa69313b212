#include "CShareFlowSupport.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>

static sf_swift_dispatch_fn sf_dispatch = NULL;
static sf_swift_release_fn sf_release = NULL;

#define SF_BOX_META "shareflow.box"
#define SF_OBJECT_KEY "__shareflow_object"

void sf_install(sf_swift_dispatch_fn dispatch, sf_swift_release_fn release) {
    sf_dispatch = dispatch;
    sf_release = release;
}

/* The limits of a state we created, or NULL for a foreign state. */
static sf_limits *limits_of(lua_State *L) {
    void *ud = NULL;
    lua_Alloc f = lua_getallocf(L, &ud);
    return f == sf_alloc ? (sf_limits *)ud : NULL;
}

static int sf_trampoline(lua_State *L) {
    void **slot = (void **)lua_touserdata(L, lua_upvalueindex(1));
    sf_limits *lim = limits_of(L);
    if (lim) lim->host_depth++;
    int n = sf_dispatch(L, *slot);
    if (lim) lim->host_depth--;
    if (n == SF_SWIFT_ERROR) return lua_error(L);
    /* Growth made while Swift ran was allowed (a failure there would longjmp
     * through Swift); charge it now, in C. */
    if (lim && lim->limit && lim->host_depth == 0 && lim->used > lim->limit) {
        lua_settop(L, 0);
        lua_gc(L, LUA_GCCOLLECT);
        if (lim->used > lim->limit)
            return luaL_error(L, "not enough memory (limit of %d KiB reached)", (int)(lim->limit / 1024));
    }
    return n;
}

static int sf_box_gc(lua_State *L) {
    void **slot = (void **)lua_touserdata(L, 1);
    if (slot && *slot) {
        sf_release(*slot);
        *slot = NULL;
    }
    return 0;
}

void sf_push_swift_function(lua_State *L, void *box) {
    void **slot = (void **)lua_newuserdatauv(L, sizeof(void *), 0);
    *slot = box;
    if (luaL_newmetatable(L, SF_BOX_META)) {
        lua_pushcfunction(L, sf_box_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "__metatable");
    }
    lua_setmetatable(L, -2);
    lua_pushcclosure(L, sf_trampoline, 1);
}

void sf_push_object(lua_State *L, void *object, const char *tname) {
    void **slot = (void **)lua_newuserdatauv(L, sizeof(void *), 0);
    *slot = object;
    luaL_setmetatable(L, tname);
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
    int ours = lua_getfield(L, -1, SF_OBJECT_KEY) == LUA_TBOOLEAN;
    lua_pop(L, 2);
    return ours ? *slot : NULL;
}

void sf_set_gc(lua_State *L) {
    lua_pushcfunction(L, sf_box_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, SF_OBJECT_KEY);
}

int sf_traceback(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int sf_pcall(lua_State *L, int nargs, int nresults) {
    sf_limits *lim = limits_of(L);
    int depth = 0;
    /* Lua code called from Swift is limited again, even inside a trampoline. */
    if (lim) { depth = lim->host_depth; lim->host_depth = 0; }
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, sf_traceback);
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    if (lim) lim->host_depth = depth;
    return status;
}

void *sf_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    sf_limits *lim = (sf_limits *)ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        lim->used -= old;
        return NULL;
    }
    if (lim->limit && nsize > old && lim->host_depth == 0 && lim->used - old + nsize > lim->limit)
        return NULL;
    void *p = realloc(ptr, nsize);
    if (p == NULL) return NULL;
    lim->used = lim->used - old + nsize;
    if (lim->used > lim->peak) lim->peak = lim->used;
    return p;
}

static int sf_panic(lua_State *L) {
    /* Only reached for errors outside any pcall, which the host never makes. */
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "shareflow: unprotected Lua error: %s\n", msg ? msg : "?");
    abort();
    return 0;
}

static void sf_warn(void *ud, const char *msg, int tocont) {
    (void)ud; (void)msg; (void)tocont;
}

lua_State *sf_newstate(sf_limits *limits) {
    lua_State *L = lua_newstate(sf_alloc, limits);
    if (L) {
        limits->main = L;
        lua_atpanic(L, sf_panic);
        lua_setwarnf(L, sf_warn, NULL);
    }
    return L;
}

static void sf_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    sf_limits *lim = limits_of(L);
    lua_sethook(L, NULL, 0, 0);
    /* A hook armed late (the call already returned) must not fail the next call. */
    if (lim == NULL || !lim->expired) return;
    if (lim->interrupted) luaL_error(L, "interrupted");
    luaL_error(L, "%s", lim->reason[0] ? lim->reason : "CPU budget exceeded");
}

static void arm(lua_State *L) {
    if (L) lua_sethook(L, sf_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

void sf_limits_expire(sf_limits *limits, int interrupted) {
    limits->interrupted = interrupted;
    limits->expired = 1;
    arm(limits->main);
    int n = limits->nthreads;
    for (int i = 0; i < n && i < SF_MAX_THREADS; i++) arm(limits->threads[i]);
}

void sf_limits_reset(sf_limits *limits) {
    limits->expired = 0;
    limits->interrupted = 0;
    lua_sethook(limits->main, NULL, 0, 0);
}

long long sf_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The watchdog: one thread, a list of the states with budgets. */
#define SF_MAX_WATCHED 1024
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static sf_limits *watched[SF_MAX_WATCHED];
static int nwatched = 0;
static int watchdog_started = 0;

static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        usleep(2000);
        long long now = sf_now_ns();
        pthread_mutex_lock(&watch_lock);
        for (int i = 0; i < nwatched; i++) {
            sf_limits *lim = watched[i];
            long long deadline = lim->deadline_ns;
            if (deadline != 0 && now > deadline && !lim->expired) sf_limits_expire(lim, 0);
        }
        pthread_mutex_unlock(&watch_lock);
    }
    return NULL;
}

void sf_watchdog_register(sf_limits *limits) {
    pthread_mutex_lock(&watch_lock);
    if (!watchdog_started) {
        pthread_t t;
        if (pthread_create(&t, NULL, watchdog, NULL) == 0) {
            pthread_detach(t);
            watchdog_started = 1;
        }
    }
    if (nwatched < SF_MAX_WATCHED) watched[nwatched++] = limits;
    pthread_mutex_unlock(&watch_lock);
}

void sf_watchdog_unregister(sf_limits *limits) {
    pthread_mutex_lock(&watch_lock);
    for (int i = 0; i < nwatched; i++) {
        if (watched[i] == limits) {
            watched[i] = watched[--nwatched];
            break;
        }
    }
    pthread_mutex_unlock(&watch_lock);
}

void sf_set_budget_reason(sf_limits *limits, const char *reason) {
    snprintf(limits->reason, sizeof limits->reason, "%s", reason ? reason : "CPU budget exceeded");
}

void sf_begin_budget(sf_limits *limits) {
    sf_limits_reset(limits);
    limits->deadline_ns = sf_now_ns() + limits->budget_ns;
}

int sf_guarded_pcall(lua_State *L, sf_limits *limits, int nargs, int nresults) {
    int budgeted = limits->budget_ns != 0 && limits->deadline_ns == 0;
    if (budgeted) sf_begin_budget(limits);
    int status = sf_pcall(L, nargs, nresults);
    if (budgeted) sf_end_budget(limits);
    return status;
}

void sf_end_budget(sf_limits *limits) {
    limits->deadline_ns = 0;
    pthread_mutex_lock(&watch_lock);  /* the watchdog is not between its check and its arm */
    sf_limits_reset(limits);
    pthread_mutex_unlock(&watch_lock);
}

/* coroutine.resume that records the running coroutine for the watchdog. */
static int sf_resume(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    sf_limits *lim = limits_of(L);
    if (co == NULL) return luaL_argerror(L, 1, "coroutine expected");
    int pushed = 0;
    if (lim && lim->nthreads < SF_MAX_THREADS) {
        lim->threads[lim->nthreads] = co;
        lim->nthreads++;
        pushed = 1;
        if (lim->expired) arm(co);
    }
    int nargs = lua_gettop(L) - 1;
    lua_pushvalue(L, lua_upvalueindex(1));  /* the original resume */
    lua_insert(L, 1);
    int status = lua_pcall(L, nargs + 1, LUA_MULTRET, 0);
    if (pushed) lim->nthreads--;
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

void sf_track_coroutines(lua_State *L) {
    if (lua_getglobal(L, "coroutine") != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    lua_getfield(L, -1, "resume");
    lua_pushcclosure(L, sf_resume, 1);
    lua_setfield(L, -2, "resume");
    lua_pop(L, 1);
}

static sf_limits *volatile interrupt_target = NULL;
static volatile sig_atomic_t sigint_seen = 0;

static void on_sigint(int sig) {
    (void)sig;
    sigint_seen = 1;
    sf_limits *target = interrupt_target;
    if (target) sf_limits_expire(target, 1);
}

void sf_set_interrupt_target(sf_limits *limits) { interrupt_target = limits; }

void sf_install_sigint(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

int sf_take_sigint(void) {
    int seen = sigint_seen;
    sigint_seen = 0;
    return seen;
}

static void set_string(lua_State *L, const char *k, const char *v) {
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static void set_ref(lua_State *L, const char *k, int ref) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_setfield(L, -2, k);
}

long long sf_bench_event_baseline(lua_State *L, int fn, int caller, int participant, int n) {
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
        set_string(L, "emailAddress", "bob@example.com");
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
