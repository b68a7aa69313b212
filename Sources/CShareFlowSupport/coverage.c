/* Line coverage for `shareflow test --coverage`.
 *
 * Recording: once sf_coverage_start has run, every state sf_newstate makes (the tests' own,
 * and every plugin's sandboxed state) gets a line hook. Lua keeps one hook per state, and the
 * CPU budget (budget.c) arms its own on the same states, so both are one C function, sf_hook:
 * it records the line (sf_coverage_record) and does the budget's work. Off, no state gets a
 * hook at all: coverage costs nothing then. The hook never raises and never allocates in Lua:
 * it reads the running function's source through lua_getinfo("S") and sets a bit in C memory.
 * Only chunks loaded from files count (a source starting with '@'): the host's own chunks
 * ("=[test harness]", "=[sandbox]", ...) are not files.
 *
 * Which lines can run: what Lua itself says, through the compiled code. lua_getinfo's "L"
 * (activelines) covers one function only, and the C API does not reach the functions nested in
 * a chunk, so the file is compiled again and dumped (lua_dump, debug information kept), and
 * the dump's line information is read for every function in it (ldump.c's format, as
 * luabugs.c reads it for sizes). A function never called still has its lines there: they show
 * as not run. One instruction is left out of each function: the `return` the compiler adds at
 * its end (on the line of its `end`), which a function that returns on every path never
 * reaches; a line with any other instruction still counts. */
#include "internal.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Recording ---- */

static int coverage_on = 0; /* atomic: read by sf_newstate and the budget's hook */

typedef struct covered_file {
    char *source;          /* the chunk name, '@' and all */
    unsigned char *hits;   /* hits[line] != 0: the line ran */
    int size;              /* entries in hits */
} covered_file;

/* Plugin states may run on the engine's threads: the table is shared, so it is locked. */
static pthread_mutex_t coverage_lock = PTHREAD_MUTEX_INITIALIZER;
static covered_file *files = NULL;
static int nfiles = 0, files_capacity = 0;
/* The last file hit: a hook runs on every line, almost always in the file of the line before. */
static int last_file = -1;

/* Set while the host runs Lua that is not the tests' (the pass that only lists a file's tests). */
static int coverage_paused = 0;

void sf_coverage_start(void) { SF_SET(coverage_on, 1); }

void sf_coverage_pause(int paused) { SF_SET(coverage_paused, paused); }

int sf_coverage_is_on(void) { return SF_GET(coverage_on); }

void sf_coverage_standby(lua_State *L) {
    if (SF_GET(coverage_on))
        lua_sethook(L, sf_hook, LUA_MASKLINE, 0);
    else
        lua_sethook(L, NULL, 0, 0);
}

/* With coverage_lock held. The index of `source`'s entry, made if new; -1 when out of memory. */
static int file_index(const char *source) {
    if (last_file >= 0 && strcmp(files[last_file].source, source) == 0) return last_file;
    for (int i = 0; i < nfiles; i++) {
        if (strcmp(files[i].source, source) == 0) return last_file = i;
    }
    if (nfiles == files_capacity) {
        int capacity = files_capacity ? files_capacity * 2 : 16;
        covered_file *grown = realloc(files, (size_t)capacity * sizeof *files);
        if (grown == NULL) return -1;
        files = grown;
        files_capacity = capacity;
    }
    char *copy = strdup(source);
    if (copy == NULL) return -1;
    files[nfiles] = (covered_file){copy, NULL, 0};
    return last_file = nfiles++;
}

void sf_coverage_record(lua_State *L, lua_Debug *ar) {
    int line = ar->currentline;
    if (SF_GET(coverage_paused) || line <= 0 || !lua_getinfo(L, "S", ar) || ar->source == NULL || ar->source[0] != '@') return;
    pthread_mutex_lock(&coverage_lock);
    int i = file_index(ar->source);
    if (i >= 0) {
        covered_file *f = &files[i];
        if (line >= f->size) {
            int size = f->size ? f->size : 64;
            while (size <= line) size *= 2;
            unsigned char *grown = realloc(f->hits, (size_t)size);
            if (grown != NULL) {
                memset(grown + f->size, 0, (size_t)(size - f->size));
                f->hits = grown;
                f->size = size;
            }
        }
        if (line < f->size) f->hits[line] = 1;
    }
    pthread_mutex_unlock(&coverage_lock);
}

int sf_coverage_file_count(void) {
    pthread_mutex_lock(&coverage_lock);
    int n = nfiles;
    pthread_mutex_unlock(&coverage_lock);
    return n;
}

const char *sf_coverage_source(int file) {
    pthread_mutex_lock(&coverage_lock);
    const char *source = file >= 0 && file < nfiles ? files[file].source : NULL;
    pthread_mutex_unlock(&coverage_lock);
    return source;
}

int sf_coverage_hit(int file, int line) {
    pthread_mutex_lock(&coverage_lock);
    int hit = file >= 0 && file < nfiles && line >= 0 && line < files[file].size && files[file].hits[line];
    pthread_mutex_unlock(&coverage_lock);
    return hit;
}

/* ---- Which lines can run ---- */

typedef struct byte_buffer {
    unsigned char *bytes;
    size_t size, capacity;
    int failed;
} byte_buffer;

static int buffer_writer(lua_State *L, const void *p, size_t sz, void *ud) {
    (void)L;
    byte_buffer *b = (byte_buffer *)ud;
    if (b->failed) return 1;
    if (b->size + sz > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 4096;
        while (capacity < b->size + sz) capacity *= 2;
        unsigned char *grown = realloc(b->bytes, capacity);
        if (grown == NULL) {
            b->failed = 1;
            return 1;
        }
        b->bytes = grown;
        b->capacity = capacity;
    }
    memcpy(b->bytes + b->size, p, sz);
    b->size += sz;
    return 0;
}

/* A reader of an unstripped binary chunk (ldump.c's format in Lua 5.4). */
typedef struct dump_reader {
    const unsigned char *p, *end;
    int bad;
    byte_buffer *lines; /* ints: the executable lines found so far, repeats and all */
} dump_reader;

static int skip(dump_reader *r, size_t n) {
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return 0;
    }
    r->p += n;
    return 1;
}

static int read_byte(dump_reader *r) {
    if (r->bad || r->p >= r->end) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}

/* dumpSize: 7 bits a byte, most significant first, the last byte's high bit set. */
static size_t read_size(dump_reader *r) {
    size_t x = 0;
    for (int i = 0; i < 10; i++) {
        int b = read_byte(r);
        if (r->bad) return 0;
        x = (x << 7) | (size_t)(b & 0x7f);
        if (b & 0x80) return x;
    }
    r->bad = 1;
    return 0;
}

static void skip_string(dump_reader *r) {
    size_t n = read_size(r);
    if (n > 0) skip(r, n - 1);
}

static void add_line(dump_reader *r, int line) {
    if (buffer_writer(NULL, &line, sizeof line, r->lines) != 0) r->bad = 1;
}

/* ldebug.c's ABSLINEINFO: this instruction's line is in the absolute list. */
#define SF_ABSLINEINFO (-0x80)

static void read_function(dump_reader *r, int depth) {
    if (depth > 1000) {
        r->bad = 1;
        return;
    }
    skip_string(r); /* source */
    int linedefined = (int)read_size(r);
    read_size(r); /* lastlinedefined */
    read_byte(r); /* numparams */
    int vararg = read_byte(r);
    read_byte(r); /* maxstacksize */
    size_t code = read_size(r);
    if (code > (size_t)(r->end - r->p) / 4) {
        r->bad = 1;
        return;
    }
    skip(r, code * 4);
    size_t constants = read_size(r);
    for (size_t i = 0; i < constants && !r->bad; i++) {
        switch (read_byte(r)) {
        case 3: case 19: skip(r, 8); break;     /* integer, float */
        case 4: case 20: skip_string(r); break; /* short, long string */
        default: break;                         /* nil, false, true */
        }
    }
    size_t upvalues = read_size(r);
    if (upvalues > (size_t)(r->end - r->p) / 3) {
        r->bad = 1;
        return;
    }
    skip(r, upvalues * 3);
    size_t protos = read_size(r);
    for (size_t i = 0; i < protos && !r->bad; i++) read_function(r, depth + 1);
    /* Debug information: a signed line delta per instruction, and the absolute lines (pc, line)
     * of the instructions whose delta reads SF_ABSLINEINFO, in order of pc. */
    size_t ninfo = read_size(r);
    const unsigned char *info = r->p;
    if (!skip(r, ninfo)) return;
    size_t nabs = read_size(r);
    const unsigned char *abs_start = r->p;
    for (size_t i = 0; i < nabs && !r->bad; i++) {
        read_size(r);
        read_size(r);
    }
    if (r->bad) return;
    /* ldebug.c's collectvalidlines, less the final return (the last instruction). A vararg
     * function's first instruction (VARARGPREP) is left out there too: hooks start after it. */
    dump_reader absolute = {abs_start, r->p, 0, NULL};
    int line = linedefined;
    for (size_t pc = 0; pc < ninfo && !r->bad; pc++) {
        signed char delta = (signed char)info[pc];
        if (delta == SF_ABSLINEINFO) {
            size_t at = read_size(&absolute);
            int abs_line = (int)read_size(&absolute);
            if (absolute.bad || at != pc) {
                r->bad = 1;
                return;
            }
            line = abs_line;
        } else {
            line += delta;
        }
        if ((vararg && pc == 0) || pc + 1 == ninfo) continue;
        add_line(r, line);
    }
    size_t locvars = read_size(r);
    for (size_t i = 0; i < locvars && !r->bad; i++) {
        skip_string(r);
        read_size(r);
        read_size(r);
    }
    size_t names = read_size(r);
    for (size_t i = 0; i < names && !r->bad; i++) skip_string(r);
}

typedef struct lines_job {
    const char *path;
    byte_buffer lines;
    int unreadable; /* the dump did not read as Lua 5.4's format */
} lines_job;

/* In a protected call, on a state of its own: compiles the file and reads its dump. */
static int collect_lines(lua_State *L) {
    lines_job *job = (lines_job *)lua_touserdata(L, 1);
    if (luaL_loadfilex(L, job->path, "t") != LUA_OK) return lua_error(L);
    byte_buffer dump = {0};
    int status = lua_dump(L, buffer_writer, &dump, 0);
    /* Header: signature 4, version 1, format 1, data 6, three sizes, an integer and a number
     * (8 each), then the main function's upvalue count. */
    const size_t header = 4 + 1 + 1 + 6 + 3 + 8 + 8 + 1;
    if (status == 0 && !dump.failed && dump.size > header) {
        dump_reader r = {dump.bytes + header, dump.bytes + dump.size, 0, &job->lines};
        read_function(&r, 0);
        job->unreadable = r.bad || r.p != r.end;
    } else {
        job->unreadable = 1;
    }
    free(dump.bytes);
    return 0;
}

static int compare_ints(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int *sf_coverage_executable_lines(const char *path, int *count, char *message, size_t message_size) {
    *count = 0;
    if (message_size > 0) message[0] = '\0';
    lua_State *L = luaL_newstate();
    if (L == NULL) {
        snprintf(message, message_size, "not enough memory");
        return NULL;
    }
    lines_job job = {path, {0}, 0};
    lua_pushcfunction(L, collect_lines);
    lua_pushlightuserdata(L, &job);
    int status = lua_pcall(L, 1, 0, 0);
    if (status != LUA_OK) {
        const char *why = lua_tostring(L, -1);
        snprintf(message, message_size, "%s", why ? why : "cannot be compiled");
    } else if (job.unreadable || job.lines.failed) {
        snprintf(message, message_size, "its compiled code cannot be read (not Lua 5.4's format?)");
        status = LUA_ERRERR;
    }
    lua_close(L);
    if (status != LUA_OK) {
        free(job.lines.bytes);
        return NULL;
    }
    /* Sorted, each line once; never empty, so the caller tells NULL (failure) apart. */
    int n = (int)(job.lines.size / sizeof(int));
    int *lines = malloc((size_t)(n + 1) * sizeof(int));
    if (lines == NULL) {
        free(job.lines.bytes);
        snprintf(message, message_size, "not enough memory");
        return NULL;
    }
    if (n > 0) memcpy(lines, job.lines.bytes, (size_t)n * sizeof(int));
    free(job.lines.bytes);
    qsort(lines, (size_t)n, sizeof(int), compare_ints);
    int unique = 0;
    for (int i = 0; i < n; i++) {
        if (unique == 0 || lines[unique - 1] != lines[i]) lines[unique++] = lines[i];
    }
    *count = unique;
    return lines;
}
