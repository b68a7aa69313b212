/* CPU budgets (SPEC §8): a call under a budget has a deadline; one watchdog thread for the
 * process notices calls past theirs and arms a hook that raises the budget error. Within
 * budget no hook runs, so the VM runs at full speed. Once spent, the budget stays spent until
 * the call returns to the host: the hook raises again at every instruction and call, so
 * pcall, xpcall, coroutines and __close handlers cannot swallow it, allocation is refused
 * (C functions that allocate stop), and the sandbox's own C library functions check it. */
#include "internal.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t sf_watch_lock = PTHREAD_MUTEX_INITIALIZER;

long long sf_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The one hook of a state (Lua keeps one): the budget's, and coverage's line hook when
 * `shareflow test --coverage` runs (coverage.c). */
void sf_hook(lua_State *L, lua_Debug *ar) {
    sf_limits *lim = sf_limits_of(L);
    if (lim == NULL || !SF_GET(lim->expired)) {
        if (ar->event == LUA_HOOKLINE) {
            sf_coverage_record(L, ar);
            return;
        }
        /* Armed for a call that has returned since: stand down (to coverage's line hook
         * alone, when it runs). */
        sf_coverage_standby(L);
        return;
    }
    if (ar->event == LUA_HOOKCALL && lua_getinfo(L, "f", ar)) {
        /* The message handler is a call too; raising there would only turn the budget's
         * message into "error in error handling". */
        int handler = lua_tocfunction(L, -1) == sf_traceback;
        lua_pop(L, 1);
        if (handler) return;
    }
    sf_push_spent_reason(L, lim);
    lua_error(L);
}

void sf_arm(lua_State *L) {
    if (L) lua_sethook(L, sf_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT | (sf_coverage_is_on() ? LUA_MASKLINE : 0), 1);
}

void sf_limits_expire(sf_limits *limits, int interrupted) {
    SF_SET(limits->interrupted, interrupted);
    SF_SET(limits->expired, 1);
    sf_arm(limits->main);
    int n = SF_GET(limits->nthreads);
    for (int i = 0; i < n && i < SF_MAX_THREADS; i++) sf_arm(SF_GET(limits->threads[i]));
}

void sf_limits_reset(sf_limits *limits) {
    SF_SET(limits->expired, 0);
    SF_SET(limits->interrupted, 0);
    sf_coverage_standby(limits->main);
}

int sf_budget_spent(sf_limits *lim) {
    if (SF_GET(lim->expired)) return 1;
    long long deadline = SF_GET(lim->deadline_ns);
    if (deadline == 0 || sf_now_ns() <= deadline) return 0;
    pthread_mutex_lock(&sf_watch_lock);
    if (SF_GET(lim->deadline_ns) != 0) sf_limits_expire(lim, 0);
    pthread_mutex_unlock(&sf_watch_lock);
    return SF_GET(lim->expired);
}

int sf_budget_running(sf_limits *lim) { return SF_GET(lim->deadline_ns) != 0; }

int sf_budget_interrupted(sf_limits *lim) { return SF_GET(lim->interrupted); }

void sf_budget_checkpoint(lua_State *L) {
    sf_limits *lim = sf_limits_of(L);
    if (lim == NULL) return;
    if (!SF_GET(lim->expired)) {
        long long deadline = SF_GET(lim->deadline_ns);
        if (deadline == 0 || sf_now_ns() <= deadline) return;
        pthread_mutex_lock(&sf_watch_lock);
        if (SF_GET(lim->deadline_ns) != 0) sf_limits_expire(lim, 0);
        pthread_mutex_unlock(&sf_watch_lock);
        if (!SF_GET(lim->expired)) return;
    }
    sf_push_spent_reason(L, lim);
    lua_error(L);
}

/* The watchdog: one thread, a list of the states with budgets. */
#define SF_MAX_WATCHED 1024
static sf_limits *watched[SF_MAX_WATCHED];
static int nwatched = 0;
static int watchdog_started = 0;

/* A state being closed: its finalizers run with no hook, so nothing can stop a Lua __gc that
 * loops; past its deadline the process says so and ends instead of hanging. One deadline per
 * thread closing a state (threads close their own states at once: a shared one was cleared
 * by whichever finished first), set by its outermost close: a close a finalizer causes (a
 * plugin unloaded from a __gc) runs within the outer one's time, and ending it must not
 * lift the outer's deadline. */
#define SF_MAX_CLOSING 64
static long long closing_deadlines[SF_MAX_CLOSING];  /* atomic each, 0 for a free place */
static _Thread_local int closing_place = -1;
static _Thread_local int closing_depth = 0;

static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        usleep(2000);
        long long now = sf_now_ns();
        for (int i = 0; i < SF_MAX_CLOSING; i++) {
            long long closing = SF_GET(closing_deadlines[i]);
            if (closing != 0 && now > closing) {
                static const char msg[] = "shareflow: a Lua __gc finalizer was still running after 2 s while closing a Lua state; exiting\n";
                ssize_t ignored = write(2, msg, sizeof msg - 1);
                (void)ignored;
                _exit(70);
            }
        }
        pthread_mutex_lock(&sf_watch_lock);
        for (int i = 0; i < nwatched; i++) {
            sf_limits *lim = watched[i];
            long long deadline = SF_GET(lim->deadline_ns);
            if (deadline != 0 && now > deadline && !SF_GET(lim->expired)) sf_limits_expire(lim, 0);
        }
        pthread_mutex_unlock(&sf_watch_lock);
    }
    return NULL;
}

/* With sf_watch_lock held. */
static void start_watchdog(void) {
    if (!watchdog_started) {
        pthread_t t;
        if (pthread_create(&t, NULL, watchdog, NULL) == 0) {
            pthread_detach(t);
            watchdog_started = 1;
        }
    }
}

/* `release`: give back what the state's userdata held once it is closed (held.c); not when
 * the process ends right after (os.exit): a Swift deinit then would reach the freed state. */
static void close_state(lua_State *L, int release) {
    if (closing_depth++ == 0) {
        long long deadline = sf_now_ns() + 2000000000LL;
        pthread_mutex_lock(&sf_watch_lock);
        start_watchdog();
        for (int i = 0; i < SF_MAX_CLOSING; i++) {
            if (SF_GET(closing_deadlines[i]) == 0) {
                SF_SET(closing_deadlines[i], deadline);
                closing_place = i;
                break;
            }
        }
        pthread_mutex_unlock(&sf_watch_lock);
    }
    sf_limits *lim = sf_limits_of(L);
    if (lim) sf_held_begin_close(lim);
    lua_close(L);
    if (--closing_depth == 0 && closing_place >= 0) {
        SF_SET(closing_deadlines[closing_place], 0);
        closing_place = -1;
    }
    /* After the deadline: what is released now is Swift's, not a finalizer's. */
    if (lim) sf_release_unfinalized(lim, release);
}

void sf_close(lua_State *L) { close_state(L, 1); }

/* os.exit for trusted scripts (Lua's own, but closing through sf_close): Lua's closes the
 * state with lua_close when asked (os.exit(code, true)), and so with no count of references (what the
 * finalizers got from Swift leaked) and no deadline (a finalizer that loops hung the process).
 * The sandbox has no os.exit. */
static int sf_os_exit(lua_State *L) {
    int status;
    if (lua_isboolean(L, 1)) status = lua_toboolean(L, 1) ? EXIT_SUCCESS : EXIT_FAILURE;
    else status = (int)luaL_optinteger(L, 1, EXIT_SUCCESS);
    if (lua_toboolean(L, 2)) close_state(L, 0);
    exit(status);
}

void sf_replace_os_exit(lua_State *L) {
    if (!lua_checkstack(L, 2)) return;
    if (lua_getglobal(L, "os") == LUA_TTABLE) {
        lua_pushcfunction(L, sf_os_exit);
        lua_setfield(L, -2, "exit");
    }
    lua_pop(L, 1);
}

int sf_watchdog_register(sf_limits *limits) {
    int ok = 0;
    pthread_mutex_lock(&sf_watch_lock);
    start_watchdog();
    if (watchdog_started && nwatched < SF_MAX_WATCHED) {
        watched[nwatched++] = limits;
        ok = 1;
    }
    pthread_mutex_unlock(&sf_watch_lock);
    return ok;
}

void sf_watchdog_unregister(sf_limits *limits) {
    pthread_mutex_lock(&sf_watch_lock);
    for (int i = 0; i < nwatched; i++) {
        if (watched[i] == limits) {
            watched[i] = watched[--nwatched];
            break;
        }
    }
    pthread_mutex_unlock(&sf_watch_lock);
}

/* The deadline of the outermost budgeted call under way on this thread. A plugin's call that
 * makes the engine call another plugin (its policy saves a share, which another plugin
 * observes) is one call: the nested one ends by the outer deadline if that comes first, so a
 * chain of plugins cannot add their budgets up. */
static _Thread_local long long outer_deadline = 0;

void sf_begin_budget(sf_limits *limits) {
    sf_limits_reset(limits);
    long long deadline = sf_now_ns() + limits->budget_ns;
    if (outer_deadline != 0 && outer_deadline < deadline) deadline = outer_deadline;
    limits->saved_outer_deadline = outer_deadline;
    if (outer_deadline == 0 || deadline < outer_deadline) outer_deadline = deadline;
    SF_SET(limits->deadline_ns, deadline);
}

void sf_end_budget(sf_limits *limits) {
    outer_deadline = limits->saved_outer_deadline;
    SF_SET(limits->deadline_ns, 0);
    pthread_mutex_lock(&sf_watch_lock);  /* the watchdog is not between its check and its arm */
    sf_limits_reset(limits);
    pthread_mutex_unlock(&sf_watch_lock);
}

int sf_guarded_pcall(lua_State *L, sf_limits *limits, int nargs, int nresults) {
    int budgeted = limits->budget_ns != 0 && SF_GET(limits->deadline_ns) == 0;
    if (budgeted) sf_begin_budget(limits);
    int status = sf_pcall(L, nargs, nresults);
    if (budgeted) sf_end_budget(limits);
    return status;
}

/* Coroutines: hooks are per thread, so the running ones are listed for the watchdog, and a
 * coroutine resumed (or closed, which runs its __close handlers) after the budget is spent is
 * armed before it runs. Lua's own C-stack limit keeps nesting far below SF_MAX_THREADS; past
 * it, resuming is refused rather than left unwatched. */
static int push_thread(lua_State *L, lua_State *co) {
    sf_limits *lim = sf_limits_of(L);
    if (lim == NULL) return 0;
    pthread_mutex_lock(&sf_watch_lock);
    int ok = lim->nthreads < SF_MAX_THREADS;
    if (ok) {
        SF_SET(lim->threads[lim->nthreads], co);
        SF_SET(lim->nthreads, lim->nthreads + 1);
        if (SF_GET(lim->expired)) sf_arm(co);
    }
    pthread_mutex_unlock(&sf_watch_lock);
    if (!ok) luaL_error(L, "too many nested coroutines (limit %d)", SF_MAX_THREADS);
    return 1;
}

static void pop_thread(lua_State *L) {
    sf_limits *lim = sf_limits_of(L);
    pthread_mutex_lock(&sf_watch_lock);
    SF_SET(lim->nthreads, lim->nthreads - 1);
    pthread_mutex_unlock(&sf_watch_lock);
}

/* Calls the original function (upvalue 1) with the arguments, with the coroutine at 1 listed;
 * `closing`, when given, counts the call for its duration. */
static int tracked_call(lua_State *L, int *closing) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co != NULL, 1, "coroutine");
    int pushed = push_thread(L, co);
    int nargs = lua_gettop(L);
    luaL_checkstack(L, 1, NULL);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    if (closing) (*closing)++;
    int status = lua_pcall(L, nargs, LUA_MULTRET, 0);
    if (closing) (*closing)--;
    if (pushed) pop_thread(L);
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

static int tracked(lua_State *L) { return tracked_call(L, NULL); }

/* How many coroutine.close calls may run one inside another's __close handler. Lua 5.4.4
 * (Debian's) runs a closed coroutine's handlers with that coroutine's own C-call count, not
 * the closer's (fixed in 5.4.6 by lua_closethread), so each nested close may use Lua's whole
 * C-call allowance (200 levels) again: about 60 levels of it overflowed the C stack. Capped,
 * the worst is (SF_MAX_NESTED_CLOSE + 1) allowances, a few hundred KiB. */
#define SF_MAX_NESTED_CLOSE 4

/* coroutine.close, tracked. A coroutine that died of an error raised by the budget's hook
 * keeps Lua's "no hooks inside a hook" flag set, so its pending __close handlers would run
 * with no hook at all: they are not run; close reports the error, as it would after them. */
static int tracked_close(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co != NULL, 1, "coroutine");
    int status = lua_status(co);
    if (status != LUA_OK && status != LUA_YIELD) {
        lua_pushboolean(L, 0);
        if (lua_gettop(co) > 0) {
            luaL_checkstack(L, 1, NULL);
            lua_pushvalue(co, -1);
            lua_xmove(co, L, 1);
        } else {
            lua_pushnil(L);
        }
        return 2;
    }
    sf_limits *lim = sf_limits_of(L);
    if (lim == NULL) return tracked_call(L, NULL);
    if (lim->closing >= SF_MAX_NESTED_CLOSE)
        return luaL_error(L, "coroutine.close nested too deeply (limit %d): a __close handler closes another coroutine", SF_MAX_NESTED_CLOSE);
    return tracked_call(L, &lim->closing);
}

static void track(lua_State *L, const char *name, lua_CFunction f) {
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
}

static int track_main(lua_State *L) {
    if (lua_getglobal(L, "coroutine") != LUA_TTABLE) return 0;
    track(L, "resume", tracked);
    track(L, "close", tracked_close);
    return 0;
}

void sf_track_coroutines(lua_State *L) {
    lua_pushcfunction(L, track_main);
    if (sf_pcall(L, 0, 0) != LUA_OK) lua_pop(L, 1);
}
