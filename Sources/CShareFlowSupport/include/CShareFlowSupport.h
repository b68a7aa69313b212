#ifndef SHAREFLOW_SUPPORT_H
#define SHAREFLOW_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <lua.h>

/*
 * Swift functions called from Lua.
 *
 * Lua reports errors with longjmp, which must never cross Swift frames. So every
 * Swift function reaches Lua through sf_trampoline: the Swift side catches its own
 * errors, pushes the error value and returns SF_SWIFT_ERROR; only then, back in C,
 * does the trampoline call lua_error.
 */
#define SF_SWIFT_ERROR (-1)

typedef struct sf_limits sf_limits;

/* box: an opaque retained Swift object; returns result count or SF_SWIFT_ERROR. */
typedef int (*sf_swift_dispatch_fn)(lua_State *L, void *box);
/* releases a box or an object pointer stored in userdata. */
typedef void (*sf_swift_release_fn)(void *box);

void sf_install(sf_swift_dispatch_fn dispatch, sf_swift_release_fn release);

/* Pushes a C closure that calls the Swift box; Lua's GC releases the box. */
void sf_push_swift_function(lua_State *L, void *box);
/* Pops a class's method table and its property function (Swift) and pushes the class's
 * __index: a method is found in the table without leaving C (as liolib's method table);
 * anything else goes to the function. */
void sf_push_class_index(lua_State *L);

/* Pushes a full userdata holding a retained Swift object, with the metatable
 * registered under tname (luaL_newmetatable); its __gc releases the object. */
void sf_push_object(lua_State *L, void *object, const char *tname);
/* Pushes the userdata cached for `address` in the weak table at registry[cache] and
   returns 1, or pushes nothing and returns 0. One call: this is on every event's path. */
int sf_push_cached_object(lua_State *L, int cache, void *address);
/* The Swift object in the userdata at idx, or NULL if it is not one of ours. */
void *sf_to_object(lua_State *L, int idx);
/* Adds __gc (release) to the metatable on top of the stack. */
void sf_set_gc(lua_State *L);
/* Sets what the host object in the userdata at idx costs the state (the Swift memory behind
 * it: a record's fields), counted with the state's own bytes against its memory cap until
 * the userdata is collected. Checked when control returns to Lua (sf_charge_host_growth). */
void sf_charge_object(lua_State *L, int idx, size_t bytes);

/* Traceback message handler for lua_pcall. */
int sf_traceback(lua_State *L);
/* lua_pcall with sf_traceback below the function; returns the status. A call that ended
 * because its budget was spent (or it was interrupted) leaves the budget's message. */
int sf_pcall(lua_State *L, int nargs, int nresults);

/* Swift code that works on a state from outside Lua (loading a plugin, running its setup):
 * returns its result count, or SF_SWIFT_ERROR after pushing an error message. */
typedef int (*sf_body_fn)(lua_State *L, void *ctx);
/* Runs `body` inside lua_pcall (the pmain pattern of lua.c), with the `nargs` values on top
 * of the stack as its arguments: whatever raises there is caught. Returns the status; on
 * an error the message (with traceback) is on top. */
int sf_protected(lua_State *L, int nargs, int nresults, sf_body_fn body, void *ctx);

/* An observer or policy call, whole in one protected call: the function at registry ref
 * `function`, its one argument built by `build` (Swift; returns 1, or 0 after pushing an
 * error message), then, for a policy, the verdict read raw. */
typedef struct sf_hook_call {
    int function;
    int (*build)(lua_State *L, void *ctx);
    void *ctx;
    int policy;
    sf_limits *limits;  /* set by sf_call_hook */
} sf_hook_call;
/* Under the state's CPU budget. Returns the status; for a policy on LUA_OK, leaves
 * allow (boolean) and reason (string, or nil when allowed); on an error, the message. They
 * are left above the message handler, at the old top + 1: the caller resets the top. */
int sf_call_hook(lua_State *L, sf_limits *limits, sf_hook_call *call);

/* `next` for a table with a hidden key (the light userdata at upvalue 1), which it steps over. */
int sf_next_skipping(lua_State *L);

/* sf.allow() (one sentinel per state) and sf.deny(reason) (a table only the host makes):
 * a policy allows only by returning nothing, true or sf.allow(). */
int sf_verdict_allow(lua_State *L);
int sf_verdict_deny(lua_State *L);
/* Pushes the `file:line: ` of the last sf.deny/sf.approve verdict read (or nil after a denial
 * made otherwise); never raises (a raw read). */
int sf_push_verdict_location(lua_State *L);
/* The engine's clock for os.time()/os.date() (EngineClock): microseconds since 1970, or
 * LLONG_MIN for the system's clock. */
void sf_clock_set(long long microseconds);
/* The sandbox's load keeping its chunk name ("@path"): for the sandbox prelude's require alone,
 * which loads the plugin's own files (a plugin's load shows its names as "(load) NAME"). */
int sf_sandbox_load_module(lua_State *L);
int sf_verdict_approve(lua_State *L);

/*
 * Limits. One sf_limits per lua_State, passed as the allocator's ud.
 * Memory: an accounting allocator refuses growth past `limit` bytes, but only while Lua
 * code runs (host_depth == 0); while Swift holds the state (host_depth > 0: outside any
 * call, inside a trampoline or a protected body), a refusal would longjmp through Swift,
 * so the growth is charged when control returns to Lua.
 * CPU: a watchdog calls sf_limits_expire when a call passes its deadline; that arms a hook
 * that raises the budget's error at every instruction until the call returns.
 */
#define SF_MAX_THREADS 256

struct sf_limits {
    size_t used;
    size_t limit;          /* 0 = no limit; counts used + host_bytes */
    size_t host_bytes;     /* what host objects the state keeps alive cost (sf_charge_object) */
    size_t peak;
    int host_depth;
    /* Shared with the watchdog thread and the SIGINT handler: C reads and writes them
     * atomically (SF_GET, SF_SET), Swift through sf_budget_running and sf_budget_interrupted. */
    int expired;           /* set by the watchdog */
    int interrupted;       /* set by Ctrl-C */
    long long deadline_ns; /* CLOCK_MONOTONIC; 0 = no call under a budget */
    long long budget_ns;   /* a guarded call's CPU budget; 0 = none */
    long long saved_outer_deadline; /* the thread's outer deadline when this call began */
    lua_State *main;
    /* Coroutines running now (innermost last), so the hook reaches them too. */
    lua_State *threads[SF_MAX_THREADS];
    int nthreads;
    /* Calls into this state under way (sf_pcall), so a state is never closed under them. */
    int busy;
    /* The owner asked to close the state while busy: it closes when the last call returns. */
    int close_when_idle;
    /* coroutine.close calls under way, one inside another's __close handler (Lua 5.4.4 runs a
     * closed coroutine's handlers with that coroutine's own C-call count, so Lua's C-stack
     * limit does not see this nesting: sf_track_coroutines caps it). */
    int closing;
    /* Outermost calls into the state so far (sf_pcall, sf_call_hook): per-call allowances
     * such as the log's (limits.logKiB) start again when it moves. */
    unsigned long long calls;
    /* Set by the host when a call's log passed limits.logKiB: the call's end reports it (a
     * flag here, so the event path reads one int rather than the host object). */
    int log_dropped;
    char reason[128];
    /* The slots of the state's userdata and what freed ones put aside (held.c; NULL until
     * the first), the size of a slot's block (0 until then), whether anything waits to be
     * released, and the last userdata block the allocator made (a slot's is found from it). */
    void *held;
    size_t held_block_size;
    int held_pending;
    void *last_userdata;
    size_t last_userdata_size;
};

lua_State *sf_newstate(sf_limits *limits);
void *sf_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
/* Arms the hook that ends the running call with `reason`; safe from another
 * thread or a signal handler (lua_sethook is). */
void sf_limits_expire(sf_limits *limits, int interrupted);

/* For Swift: whether a budgeted call is under way (its deadline is set), and whether the
 * spent budget was an interrupt (Ctrl-C). Atomic reads: the watchdog thread writes these. */
int sf_budget_running(sf_limits *limits);
int sf_budget_interrupted(sf_limits *limits);
/* Disarms the hook; call when a guarded call returns. */
void sf_limits_reset(sf_limits *limits);

/* lua_close under a deadline: finalizers run with no hook, so a Lua __gc that loops cannot be
 * stopped; past 2 s the process reports it on standard error and exits (status 70). */
void sf_close(lua_State *L);

/* CPU budgets: a guarded call sets a deadline; one watchdog thread for the process
 * expires the calls that pass theirs. Register returns 0 when no watchdog can run. */
long long sf_now_ns(void);
int sf_watchdog_register(sf_limits *limits);
void sf_watchdog_unregister(sf_limits *limits);
/* The message a spent budget raises; set once, not per call. */
void sf_set_budget_reason(sf_limits *limits, const char *reason);
void sf_begin_budget(sf_limits *limits);
/* Whether the running call's budget is spent (or it was interrupted); marks it spent when its
 * deadline has passed. For long work in Swift functions called from Lua, which no hook reaches. */
int sf_budget_spent(sf_limits *limits);
/* sf_pcall under the state's CPU budget (unless a call already runs under it): the whole
   guarded call in one C function, so the event path makes no extra Swift calls. */
int sf_guarded_pcall(lua_State *L, sf_limits *limits, int nargs, int nresults);
void sf_end_budget(sf_limits *limits);

/* Ctrl-C: while a target is set, SIGINT ends the running Lua code with "interrupted";
 * with no Lua code running, it only sets a flag the console reads. */
void sf_set_interrupt_target(sf_limits *limits);
void sf_install_sigint(void);
int sf_take_sigint(void);

/* Line coverage (`shareflow test --coverage`, coverage.c). Started once, before the states to
 * cover are made: from then on every state sf_newstate makes records the lines it runs of
 * chunks loaded from files (source "@path"). Never started, no state has a line hook. */
void sf_coverage_start(void);
int sf_coverage_is_on(void);
/* While paused (1), nothing is recorded: for Lua the host runs that is no test's. */
void sf_coverage_pause(int paused);
/* The files recorded so far, by their chunk names ("@path"), and whether a line of one ran. */
int sf_coverage_file_count(void);
const char *sf_coverage_source(int file);
int sf_coverage_hit(int file, int line);
/* The lines of the Lua file at `path` that hold code (every function's, called or not, less
 * each function's closing implicit return), sorted, each once: a malloc'd array of `*count`
 * ints for the caller to free, or NULL with the reason in `message` (the file cannot be read or
 * compiled). Compiles the file in a state of its own, inside a protected call. */
int *sf_coverage_executable_lines(const char *path, int *count, char *message, size_t message_size);

/* Opens a sandboxed state's libraries from the allow-list (sandbox.c; SPEC §8): base, coroutine,
 * table, string, math and utf8 cut down to their listed names, os with only clock, date,
 * difftime and time, a package table of the sandbox's own (loaded, preload; no loaders), and
 * the sandbox's own load (text only, 1 MiB), collectgarbage and setmetatable (no __gc, no
 * weak-keys-only tables). io and debug are never opened. Call on a state made without
 * luaL_openlibs; returns the status. */
int sf_open_sandbox(lua_State *L);

/* The system Lua's known bugs kept out of a plugin's reach (luabugs.c; docs/reference/lua-bugs.md). */
/* Whether the function on top may run in a sandboxed state (no function of it too long for
 * 5.4.4's error messages, 7923dbbf): 1, or 0 with a message pushed. Inside a protected call. */
int sf_check_loaded_function(lua_State *L);
/* The same check of the function on top, in its own protected call: LUA_OK, or a status with
 * the message on top. */
int sf_check_chunk(lua_State *L);
/* The linked library's release (lua_ident: 50404 for 5.4.4), 0 when it cannot be read. */
int sf_lua_release(void);
/* Whether plugin states may run on `release` (every listed bug of it kept out of reach). */
int sf_lua_release_checked(int release);

/* Replaces os.exit in a state opened with luaL_openlibs by one that, asked to close the state
 * first, closes it as sf_close does (its finalizers' objects released, their time bounded). */
void sf_replace_os_exit(lua_State *L);

/* Replaces coroutine.resume and coroutine.close in the state's coroutine table so a spent
 * budget reaches the coroutines that run. */
void sf_track_coroutines(lua_State *L);

/* Replaces string.find/match/gmatch/gsub and table.sort/insert/remove/move in the state's
 * global string and table tables with versions that call sf_budget_checkpoint as they run
 * (Lua's own never return to the VM, so the budget hook cannot stop them). Same results and
 * errors as Lua 5.4's. Call after luaL_openlibs. (bounded.c) */
void sf_open_bounded_libs(lua_State *L);

/*
 * Plugin data folders (datafolder.c). Paths are relative to an open folder fd and walked one
 * component at a time with openat(O_NOFOLLOW), so no symlink, planted or raced in, can lead
 * outside. Results: 0, a positive errno, or one of these.
 */
#define SF_DF_OUTSIDE  (-1)  /* absolute, or a '..' component: would leave the folder */
#define SF_DF_BAD_NAME (-2)  /* empty path, empty or '.' component, or a NUL byte */
#define SF_DF_SYMLINK  (-3)  /* a component is a symbolic link; not followed */
#define SF_DF_NOT_FILE (-4)  /* the last component exists and is not a regular file */
#define SF_DF_NOT_DIR  (-5)  /* a folder component exists and is not a folder */
#define SF_DF_TOO_DEEP (-6)  /* more than SF_DF_MAX_COMPONENTS components, or a tree deeper
                                than SF_DF_MAX_WALK_DEPTH (each level holds a descriptor) */
/* What a file or folder costs against the quota besides its bytes (a disk block). */
#define SF_DF_ENTRY_COST 4096
#define SF_DF_MAX_COMPONENTS 32
#define SF_DF_MAX_WALK_DEPTH 128

/* Appends `len` bytes, exactly as given, to `path` (path_len bytes, not NUL-terminated)
 * below dirfd, creating missing folders (0700) and the file (0600). Writes everything or
 * reports why not; *written gets the bytes written even on failure (for quota accounting),
 * *failed_len the length of the path prefix through the component at fault (0 if none).
 * Either pointer may be NULL. */
int sf_datafolder_append(int dirfd, const char *path, size_t path_len,
                         const void *bytes, size_t len,
                         size_t *written, size_t *failed_len);
/* The checks sf_datafolder_append makes on `path` before touching the disk (0 or an SF_DF_*
 * code or ENAMETOOLONG), so a caller refusing a write for its own reasons (a quota) can
 * still name the worse mistake first. */
int sf_datafolder_check_path(const char *path, size_t path_len, size_t *failed_len);
/* The bytes in regular files below dirfd, recursively, not following symlinks: the quota
 * starts from what earlier runs left. */
int sf_datafolder_usage(int dirfd, uint64_t *bytes);
/* Removes `name` (one component) below dirfd and, for a folder, all it holds; symlinks are
 * removed, never followed. A missing `name` is success. */
int sf_datafolder_remove(int dirfd, const char *name);

#endif
