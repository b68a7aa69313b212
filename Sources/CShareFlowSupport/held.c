/* The Swift references one state's userdata hold (a host object's, a Swift function's box),
 * given back when Lua frees the userdata, not only when it calls the userdata's __gc.
 *
 * Lua gives a reference back only if it calls the __gc, and a plugin can make it not:
 *   - a finalizer is called in a frame Lua allocates: at the memory cap (or with the budget
 *     spent) the allocator refused it, Lua warned "error in __gc (not enough memory)" and never
 *     tried that userdata again. A plugin filling its memory and dropping host objects leaked
 *     one Swift object per refused finalizer, for good (PluginTests,
 *     testAHostFunctionAtTheMemoryCapReturnsItsOwnResults, under LeakSanitizer, every run);
 *   - a finalizer is one more C call: a plugin nested in pcall to just below Lua's C-call limit
 *     that makes the collector run gets "error in __gc (C stack overflow)" for every pending one;
 *   - once lua_close starts, Lua marks no new userdata for finalization (GCSTPCLS).
 * Each time the userdata is freed later, silently. So the state keeps the address of every
 * slot it made (a set, below), and the allocator (sf_alloc) tells it when a block of a slot's
 * size is freed: a slot of ours whose object is still there (its __gc never ran, or ran while
 * the state closed) has its object put aside, with its charge against the cap given back, and
 * released at the next safe point (sf_held_settle: the end of the outermost call into the
 * state, and sf_close) — never inside the allocator, where Lua is in the middle of a sweep and
 * a Swift deinit may call Lua.
 *
 * While the state closes, a __gc keeps its reference (sf_held_closing) and lua_close's frees put
 * it aside: every object stays until lua_close is over, which finalizes newest first (a
 * class's functions, made when the type was first pushed, went before an older user's __gc
 * that still called them).
 *
 * The set holds slot addresses only, so a block of the same size that is not a slot (a string)
 * is never mistaken for one: its address is in the set only while a slot lives there. Memory
 * from malloc, outside the cap, bounded by the state's live userdata (entries leave as blocks
 * are freed; a table mostly of removed entries is rebuilt at its size, not doubled). */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>

#define SF_HELD_TOMB ((void *)1)

typedef struct sf_held {
    void **slots;    /* open addressing: NULL empty, SF_HELD_TOMB removed */
    size_t capacity; /* a power of two, or 0 */
    size_t filled;   /* live entries and tombs: what the probe sequences cross */
    size_t live;
    size_t offset;   /* where a slot is in its userdata's block (block_size is in sf_limits) */
    void **pending;  /* objects of freed slots, released at the next safe point */
    size_t npending, pending_capacity;
    int closing;
} sf_held;

static size_t place_of(const void *slot, size_t capacity) {
    uint64_t h = (uint64_t)(uintptr_t)slot * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (capacity - 1);
}

/* Rebuilt at `capacity`: tombs dropped. */
static int rebuild(sf_held *held, size_t capacity) {
    void **slots = (void **)calloc(capacity, sizeof(void *));
    if (slots == NULL) return 0;
    for (size_t i = 0; i < held->capacity; i++) {
        void *s = held->slots[i];
        if (s == NULL || s == SF_HELD_TOMB) continue;
        size_t j = place_of(s, capacity);
        while (slots[j] != NULL) j = (j + 1) & (capacity - 1);
        slots[j] = s;
    }
    free(held->slots);
    held->slots = slots;
    held->capacity = capacity;
    held->filled = held->live;
    return 1;
}

static sf_held *held_made(sf_limits *lim) {
    if (lim->held == NULL) lim->held = calloc(1, sizeof(sf_held));
    return (sf_held *)lim->held;
}

int sf_held_add(sf_limits *lim, void *slot, size_t slot_size) {
    sf_held *held = held_made(lim);
    if (held == NULL) return 0;
    /* The slot's block: the userdata sf_alloc saw made last (nothing is allocated between
     * lua_newuserdatauv and here). Its size and the slot's place in it are the same for every
     * slot; a block that does not agree is not counted (its __gc alone releases it). */
    char *block = (char *)lim->last_userdata;
    if (block == NULL || (char *)slot < block || (char *)slot + slot_size > block + lim->last_userdata_size) return 0;
    size_t offset = (size_t)((char *)slot - block);
    if (lim->held_block_size == 0) {
        lim->held_block_size = lim->last_userdata_size;
        held->offset = offset;
    } else if (lim->held_block_size != lim->last_userdata_size || held->offset != offset) {
        return 0;
    }
    /* At most 3/4 filled, tombs included, so a probe always meets an empty entry: rebuilt
     * twice as large when live entries fill half, else at its size (tombs dropped). */
    if ((held->filled + 1) * 4 > held->capacity * 3) {
        size_t capacity = held->capacity ? held->capacity : 64;
        while ((held->live + 1) * 2 > capacity) capacity *= 2;
        if (!rebuild(held, capacity)) return 0;
    }
    size_t mask = held->capacity - 1, i = place_of(slot, held->capacity);
    while (held->slots[i] != NULL && held->slots[i] != SF_HELD_TOMB) i = (i + 1) & mask;
    if (held->slots[i] == NULL) held->filled++;
    held->slots[i] = slot;
    held->live++;
    return 1;
}

int sf_held_closing(sf_limits *lim) {
    sf_held *held = (sf_held *)lim->held;
    return held != NULL && held->closing;
}

void sf_held_freed(sf_limits *lim, void *block) {
    sf_held *held = (sf_held *)lim->held;
    if (held == NULL || held->live == 0) return;
    void *slot = (char *)block + held->offset;
    size_t mask = held->capacity - 1;
    for (size_t i = place_of(slot, held->capacity);; i = (i + 1) & mask) {
        void *s = held->slots[i];
        if (s == NULL) return; /* a block of a slot's size that is not a slot */
        if (s != slot) continue;
        held->slots[i] = SF_HELD_TOMB;
        held->live--;
        break;
    }
    sf_object_slot *freed = (sf_object_slot *)slot;
    if (freed->object == NULL) return; /* its __gc gave it back */
    if (freed->charge != 0) lim->host_bytes -= freed->charge;
    if (held->npending == held->pending_capacity) {
        size_t capacity = held->pending_capacity ? held->pending_capacity * 2 : 16;
        void **pending = (void **)realloc(held->pending, capacity * sizeof(void *));
        if (pending == NULL) return; /* out of memory: this one stays unreleased */
        held->pending = pending;
        held->pending_capacity = capacity;
    }
    held->pending[held->npending++] = freed->object;
    lim->held_pending = 1;
}

void sf_held_settle(sf_limits *lim, void (*release)(void *)) {
    sf_held *held = (sf_held *)lim->held;
    lim->held_pending = 0;
    if (held == NULL) return;
    /* Taken first: a release may run a Swift deinit that calls into the state and so frees
     * more slots, which go to a new list. */
    while (held->npending != 0) {
        void **pending = held->pending;
        size_t n = held->npending;
        held->pending = NULL;
        held->npending = 0;
        held->pending_capacity = 0;
        for (size_t i = 0; i < n; i++) release(pending[i]);
        free(pending);
    }
}

void sf_held_begin_close(sf_limits *lim) {
    sf_held *held = (sf_held *)lim->held;
    if (held) held->closing = 1;
}

void sf_held_end_close(sf_limits *lim, void (*release)(void *)) {
    sf_held *held = (sf_held *)lim->held;
    if (held == NULL) return;
    /* lua_close freed every block: what they held is pending. Detached first: a release may run
     * a Swift deinit that closes another state (its own set). */
    lim->held = NULL;
    lim->held_block_size = 0;
    lim->held_pending = 0;
    if (release != NULL)
        for (size_t i = 0; i < held->npending; i++) release(held->pending[i]);
    free(held->pending);
    free(held->slots);
    free(held);
}
