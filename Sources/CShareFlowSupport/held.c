/* The Swift references one state's userdata hold (a host object's, a Swift function's box),
 * counted by object: a host object pushed again after its userdata was collected holds another.
 *
 * Lua gives a reference back only if it calls the userdata's __gc, and sometimes it does not:
 *   - a finalizer is called in a frame Lua allocates, and at the memory cap (or with the budget
 *     spent) the allocator refuses it: Lua warns "error in __gc (not enough memory)" and never
 *     tries that userdata again. A plugin filling its memory and dropping host objects made
 *     the host leak one Swift object per refused finalizer, for good (PluginTests,
 *     testAHostFunctionAtTheMemoryCapReturnsItsOwnResults, under LeakSanitizer);
 *   - once lua_close starts, Lua marks no new userdata for finalization (GCSTPCLS), so what a
 *     finalizer pushes then is freed without its __gc.
 * So the state keeps the count itself, and sf_close gives back, after lua_close, whatever Lua
 * did not: a refused finalizer keeps its object until the state closes, never longer. While
 * the state closes, a __gc keeps its reference here too, so every object stays until
 * lua_close is over (it finalizes newest first: a class's functions, made when the type was
 * first pushed, went before an older user's __gc that still called them).
 *
 * Memory from malloc, not the state's allocator: it is the host's, outside the cap, and
 * bounded by the state's userdata (each costs Lua more than its entry here). */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>

#define SF_HELD_TOMB ((void *)1)

typedef struct sf_held {
    void **objects; /* open addressing: NULL empty, SF_HELD_TOMB removed */
    unsigned *counts;
    size_t capacity; /* a power of two, or 0 */
    size_t filled;   /* live entries and tombs: what the probe sequences cross */
    int closing;
} sf_held;

static size_t slot_of(const void *object, size_t capacity) {
    uintptr_t h = (uintptr_t)object >> 4;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (capacity - 1);
}

static int held_grow(sf_held *held) {
    size_t capacity = held->capacity ? held->capacity * 2 : 64;
    void **objects = (void **)calloc(capacity, sizeof(void *));
    unsigned *counts = (unsigned *)calloc(capacity, sizeof(unsigned));
    if (objects == NULL || counts == NULL) {
        free(objects);
        free(counts);
        return 0;
    }
    size_t filled = 0;
    for (size_t i = 0; i < held->capacity; i++) {
        void *o = held->objects[i];
        if (o == NULL || o == SF_HELD_TOMB) continue;
        size_t j = slot_of(o, capacity);
        while (objects[j] != NULL) j = (j + 1) & (capacity - 1);
        objects[j] = o;
        counts[j] = held->counts[i];
        filled++;
    }
    free(held->objects);
    free(held->counts);
    held->objects = objects;
    held->counts = counts;
    held->capacity = capacity;
    held->filled = filled;
    return 1;
}

static sf_held *held_made(sf_limits *lim) {
    if (lim->held == NULL) lim->held = calloc(1, sizeof(sf_held));
    return (sf_held *)lim->held;
}

int sf_held_add(sf_limits *lim, void *object) {
    sf_held *held = held_made(lim);
    if (held == NULL) return 0;
    /* At most 3/4 filled, tombs included, so a probe always meets an empty entry. */
    if ((held->filled + 1) * 4 > held->capacity * 3 && !held_grow(held)) return 0;
    size_t mask = held->capacity - 1, i = slot_of(object, held->capacity);
    size_t tomb = SIZE_MAX;
    for (;; i = (i + 1) & mask) {
        void *o = held->objects[i];
        if (o == object) {
            if (held->counts[i] == UINT32_MAX) return 0;
            held->counts[i]++;
            return 1;
        }
        if (o == SF_HELD_TOMB && tomb == SIZE_MAX) tomb = i;
        if (o == NULL) break;
    }
    if (tomb != SIZE_MAX) {
        i = tomb;
    } else {
        held->filled++;
    }
    held->objects[i] = object;
    held->counts[i] = 1;
    return 1;
}

int sf_held_closing(sf_limits *lim) {
    sf_held *held = (sf_held *)lim->held;
    return held != NULL && held->closing;
}

void sf_held_remove(sf_limits *lim, void *object) {
    sf_held *held = (sf_held *)lim->held;
    if (held == NULL || held->capacity == 0) return;
    size_t mask = held->capacity - 1;
    for (size_t i = slot_of(object, held->capacity);; i = (i + 1) & mask) {
        void *o = held->objects[i];
        if (o == NULL) return;
        if (o == object) {
            if (--held->counts[i] == 0) held->objects[i] = SF_HELD_TOMB;
            return;
        }
    }
}

void sf_held_begin_close(sf_limits *lim) {
    sf_held *held = held_made(lim);
    if (held) held->closing = 1;
}

void sf_held_release_all(sf_limits *lim, void (*release)(void *)) {
    sf_held *held = (sf_held *)lim->held;
    if (held == NULL) return;
    /* Detached first: a release may run a Swift deinit that closes another state (its own set). */
    lim->held = NULL;
    for (size_t i = 0; i < held->capacity; i++) {
        void *o = held->objects[i];
        if (o == NULL || o == SF_HELD_TOMB) continue;
        for (unsigned n = held->counts[i]; n > 0; n--) release(o);
    }
    free(held->objects);
    free(held->counts);
    free(held);
}
