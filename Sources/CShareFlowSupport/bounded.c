/*
 * Budgeted replacements for string.find, string.match, string.gmatch, string.gsub,
 * table.sort, table.insert, table.remove and table.move (SPEC §8).
 *
 * Lua's own versions of these run in C, where the CPU-budget hook cannot reach them: a
 * backtracking pattern, a long plain find, a table.move over 2^53 indices or a sort of
 * millions of elements would run on, past any budget. These versions are the same
 * algorithms with a step counter: every loop whose length depends on the input calls
 * sf_budget_checkpoint every SF_STEPS_PER_CHECK steps or so, and the checkpoint raises the
 * budget error (a longjmp) once the call's budget is spent. Nothing here holds memory
 * outside Lua's allocator or a lock, so it is safe to leave at any checkpoint.
 *
 * Derived from lstrlib.c and ltablib.c of Lua 5.4.4, whose licence follows:
 *
 * Copyright (C) 1994-2022 Lua.org, PUC-Rio.
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy of this
 * software and associated documentation files (the "Software"), to deal in the Software
 * without restriction, including without limitation the rights to use, copy, modify, merge,
 * publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons
 * to whom the Software is furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all copies or
 * substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
 * INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR
 * PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE
 * FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
 * OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
 * DEALINGS IN THE SOFTWARE.
 *
 * What was changed from Lua 5.4.4:
 * - Step counting. A countdown (MatchState.left for the matcher, a local elsewhere) calls
 *   sf_budget_checkpoint each time SF_STEPS_PER_CHECK steps are used up. match() takes a
 *   step per call and per pattern item it goes through (its `goto init` loop). Scans inside
 *   one matcher step (classend and matchbracketclass over a [set], %b's balance scan,
 *   max_expand's repetition count) are free for their first SF_SCAN_WINDOW (64) chars and
 *   take SF_SCAN_WINDOW steps per window after that, so short scans cost nothing and long
 *   ones are still checked. %1-%9 back-references compare in chunks, a step per byte.
 *   gsub copies the replacement, the matched text and the rest of the subject into its
 *   buffer in chunks of at most SF_STEPS_PER_CHECK bytes, a step per byte.
 *   sort takes one step per comparison; insert, remove and move one per element moved.
 * - Plain find (lmemfind): memchr over chunks of at most SF_STEPS_PER_CHECK bytes, a step
 *   per byte of subject gone past, then the first 32 bytes of the needle compared at once
 *   and the rest in chunks, a step per byte. Still the same simple O(n*m) search, same
 *   results. The "no special characters" test is a byte loop instead of strpbrk, charged
 *   per window like the matcher's scans.
 * - gmatch's iterator resets its recursion-depth counter at each call, so an iterator
 *   called again after it raised an error does not inherit a depth left over from the
 *   failed call (Lua's own would; only observable after an error).
 * - Only the public C API is used (no lprefix.h, no lua_assert, no l_unlikely); the
 *   functions are static and installed over the stock ones by sf_open_bounded_libs.
 * Results, error messages and metamethod behaviour are otherwise Lua 5.4.4's.
 */

#include <stdatomic.h>
#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <lua.h>
#include <lauxlib.h>

#include "budget.h"
#include "CShareFlowSupport.h"

#define uchar(c) ((unsigned char)(c))

#define SF_UNLIKELY(x) (__builtin_expect(((x) != 0), 0))

/* Takes n steps off the countdown `left` (an int lvalue) and checks the budget when it runs
 * out. Callers charge at most about SF_STEPS_PER_CHECK steps at once, so a check comes at
 * least every SF_STEPS_PER_CHECK single steps, or every 2 * SF_STEPS_PER_CHECK when the
 * work is charged in bulk after it is done. */
#define SF_CHARGE(L, left, n)                         \
    do {                                              \
        if (SF_UNLIKELY(((left) -= (int)(n)) <= 0)) { \
            (left) = SF_STEPS_PER_CHECK;              \
            sf_budget_checkpoint(L);                  \
        }                                             \
    } while (0)

#define SF_CHUNK(l) ((l) < (size_t)SF_STEPS_PER_CHECK ? (l) : (size_t)SF_STEPS_PER_CHECK)

/* memcmp(a, b, l) == 0, in chunks, charging the bytes compared. A mismatch is usually
 * early, so the first chunk is small (it is charged whole). */
static int bounded_memeq(lua_State *L, int *left, const char *a, const char *b, size_t l) {
    size_t n = l < 32 ? l : 32;
    while (l > 0) {
        SF_CHARGE(L, *left, n);
        if (memcmp(a, b, n) != 0) return 0;
        a += n; b += n; l -= n;
        n = SF_CHUNK(l);
    }
    return 1;
}

/* luaL_addlstring in chunks, charging the bytes copied. */
static void bounded_addlstring(lua_State *L, int *left, luaL_Buffer *b, const char *s, size_t l) {
    while (l > 0) {
        size_t n = SF_CHUNK(l);
        luaL_addlstring(b, s, n);
        SF_CHARGE(L, *left, n);
        s += n; l -= n;
    }
}


/*
** {======================================================
** PATTERN MATCHING (lstrlib.c)
** =======================================================
*/

#if !defined(LUA_MAXCAPTURES)
#define LUA_MAXCAPTURES 32
#endif

#define CAP_UNFINISHED (-1)
#define CAP_POSITION   (-2)

typedef struct MatchState {
    const char *src_init;  /* init of source string */
    const char *src_end;   /* end ('\0') of source string */
    const char *p_end;     /* end ('\0') of pattern */
    lua_State *L;
    int matchdepth;        /* control for recursive depth (to avoid C stack overflow) */
    int left;              /* steps left before the next budget check */
    unsigned char level;   /* total number of captures (finished or unfinished) */
    struct {
        const char *init;
        ptrdiff_t len;
    } capture[LUA_MAXCAPTURES];
} MatchState;

#define MS_CHARGE(ms, n) SF_CHARGE((ms)->L, (ms)->left, (n))

/* recursive function */
static const char *match(MatchState *ms, const char *s, const char *p);

/* maximum recursion depth for 'match' */
#if !defined(MAXCCALLS)
#define MAXCCALLS 200
#endif

#define L_ESC    '%'

static int check_capture(MatchState *ms, int l) {
    l -= '1';
    if (SF_UNLIKELY(l < 0 || l >= ms->level || ms->capture[l].len == CAP_UNFINISHED))
        return luaL_error(ms->L, "invalid capture index %%%d", l + 1);
    return l;
}

static int capture_to_close(MatchState *ms) {
    int level = ms->level;
    for (level--; level >= 0; level--)
        if (ms->capture[level].len == CAP_UNFINISHED) return level;
    return luaL_error(ms->L, "invalid pattern capture");
}

/* Where a scan that starts at p and may go to end gets charged next: scans inside one
 * matcher step (a [set], %b, a repetition) are free for their first SF_SCAN_WINDOW chars
 * (the step's own charge covers them) and then charged SF_SCAN_WINDOW steps per window, so a
 * long set or subject never runs long between checks. The window's bound replaces the
 * scan's end test, so short scans cost nothing extra. */
#define SF_SCAN_WINDOW 64
#define WINDOW_END(p, end) ((end) - (p) > SF_SCAN_WINDOW ? (p) + SF_SCAN_WINDOW : (end))

static const char *classend(MatchState *ms, const char *p) {
    switch (*p++) {
        case L_ESC: {
            if (SF_UNLIKELY(p == ms->p_end))
                luaL_error(ms->L, "malformed pattern (ends with '%%')");
            return p + 1;
        }
        case '[': {
            const char *limit = WINDOW_END(p, ms->p_end);
            if (*p == '^') p++;
            do {  /* look for a ']' */
                if (SF_UNLIKELY(p >= limit)) {  /* end of the pattern, or of a window */
                    if (SF_UNLIKELY(p == ms->p_end))
                        luaL_error(ms->L, "malformed pattern (missing ']')");
                    MS_CHARGE(ms, SF_SCAN_WINDOW);
                    limit = WINDOW_END(p, ms->p_end);
                }
                if (*(p++) == L_ESC && p < ms->p_end)
                    p++;  /* skip escapes (e.g. '%]') */
            } while (*p != ']');
            return p + 1;
        }
        default: {
            return p;
        }
    }
}

static int match_class(int c, int cl) {
    int res;
    switch (tolower(cl)) {
        case 'a': res = isalpha(c); break;
        case 'c': res = iscntrl(c); break;
        case 'd': res = isdigit(c); break;
        case 'g': res = isgraph(c); break;
        case 'l': res = islower(c); break;
        case 'p': res = ispunct(c); break;
        case 's': res = isspace(c); break;
        case 'u': res = isupper(c); break;
        case 'w': res = isalnum(c); break;
        case 'x': res = isxdigit(c); break;
        case 'z': res = (c == 0); break;  /* deprecated option */
        default: return (cl == c);
    }
    return (islower(cl) ? res : !res);
}

static int matchbracketclass(MatchState *ms, int c, const char *p, const char *ec) {
    int sig = 1;
    const char *limit;
    if (*(p + 1) == '^') {
        sig = 0;
        p++;  /* skip the '^' */
    }
    limit = WINDOW_END(p, ec);
    for (;;) {
        if (SF_UNLIKELY(++p >= limit)) {  /* end of the set, or of a window */
            if (p >= ec) break;
            MS_CHARGE(ms, SF_SCAN_WINDOW);
            limit = WINDOW_END(p, ec);
        }
        if (*p == L_ESC) {
            p++;
            if (match_class(c, uchar(*p)))
                return sig;
        }
        else if ((*(p + 1) == '-') && (p + 2 < ec)) {
            p += 2;
            if (uchar(*(p - 2)) <= c && c <= uchar(*p))
                return sig;
        }
        else if (uchar(*p) == c) return sig;
    }
    return !sig;
}

static int singlematch(MatchState *ms, const char *s, const char *p, const char *ep) {
    if (s >= ms->src_end)
        return 0;
    else {
        int c = uchar(*s);
        switch (*p) {
            case '.': return 1;  /* matches any char */
            case L_ESC: return match_class(c, uchar(*(p + 1)));
            case '[': return matchbracketclass(ms, c, p, ep - 1);
            default: return (uchar(*p) == c);
        }
    }
}

static const char *matchbalance(MatchState *ms, const char *s, const char *p) {
    if (SF_UNLIKELY(p >= ms->p_end - 1))
        luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    if (*s != *p) return NULL;
    else {
        int b = *p;
        int e = *(p + 1);
        int cont = 1;
        const char *limit = WINDOW_END(s, ms->src_end);
        for (;;) {
            if (SF_UNLIKELY(++s >= limit)) {  /* end of the subject, or of a window */
                if (s >= ms->src_end) break;
                MS_CHARGE(ms, SF_SCAN_WINDOW);
                limit = WINDOW_END(s, ms->src_end);
            }
            if (*s == e) {
                if (--cont == 0) return s + 1;
            }
            else if (*s == b) cont++;
        }
    }
    return NULL;  /* string ends out of balance */
}

static const char *max_expand(MatchState *ms, const char *s, const char *p, const char *ep) {
    ptrdiff_t i = 0;  /* counts maximum expand for item */
    ptrdiff_t next = SF_SCAN_WINDOW;  /* where the count is charged next */
    while (singlematch(ms, s + i, p, ep)) {
        if (SF_UNLIKELY(++i >= next)) {
            MS_CHARGE(ms, SF_SCAN_WINDOW);
            next += SF_SCAN_WINDOW;
        }
    }
    /* keeps trying to match with the maximum repetitions */
    while (i >= 0) {
        const char *res = match(ms, (s + i), ep + 1);
        if (res) return res;
        i--;  /* else didn't match; reduce 1 repetition to try again */
    }
    return NULL;
}

static const char *min_expand(MatchState *ms, const char *s, const char *p, const char *ep) {
    for (;;) {
        const char *res = match(ms, s, ep + 1);
        if (res != NULL)
            return res;
        else if (singlematch(ms, s, p, ep))
            s++;  /* try with one more repetition */
        else return NULL;
    }
}

static const char *start_capture(MatchState *ms, const char *s, const char *p, int what) {
    const char *res;
    int level = ms->level;
    if (level >= LUA_MAXCAPTURES) luaL_error(ms->L, "too many captures");
    ms->capture[level].init = s;
    ms->capture[level].len = what;
    ms->level = level + 1;
    if ((res = match(ms, s, p)) == NULL)  /* match failed? */
        ms->level--;  /* undo capture */
    return res;
}

static const char *end_capture(MatchState *ms, const char *s, const char *p) {
    int l = capture_to_close(ms);
    const char *res;
    ms->capture[l].len = s - ms->capture[l].init;  /* close capture */
    if ((res = match(ms, s, p)) == NULL)  /* match failed? */
        ms->capture[l].len = CAP_UNFINISHED;  /* undo capture */
    return res;
}

static const char *match_capture(MatchState *ms, const char *s, int l) {
    size_t len;
    l = check_capture(ms, l);
    len = ms->capture[l].len;
    if ((size_t)(ms->src_end - s) >= len &&
        bounded_memeq(ms->L, &ms->left, ms->capture[l].init, s, len))
        return s + len;
    else return NULL;
}

static const char *match(MatchState *ms, const char *s, const char *p) {
    if (SF_UNLIKELY(ms->matchdepth-- == 0))
        luaL_error(ms->L, "pattern too complex");
init: /* using goto's to optimize tail recursion */
    MS_CHARGE(ms, 1);
    if (p != ms->p_end) {  /* end of pattern? */
        switch (*p) {
            case '(': {  /* start capture */
                if (*(p + 1) == ')')  /* position capture? */
                    s = start_capture(ms, s, p + 2, CAP_POSITION);
                else
                    s = start_capture(ms, s, p + 1, CAP_UNFINISHED);
                break;
            }
            case ')': {  /* end capture */
                s = end_capture(ms, s, p + 1);
                break;
            }
            case '$': {
                if ((p + 1) != ms->p_end)  /* is the '$' the last char in pattern? */
                    goto dflt;  /* no; go to default */
                s = (s == ms->src_end) ? s : NULL;  /* check end of string */
                break;
            }
            case L_ESC: {  /* escaped sequences not in the format class[*+?-]? */
                switch (*(p + 1)) {
                    case 'b': {  /* balanced string? */
                        s = matchbalance(ms, s, p + 2);
                        if (s != NULL) {
                            p += 4; goto init;  /* return match(ms, s, p + 4); */
                        }  /* else fail (s == NULL) */
                        break;
                    }
                    case 'f': {  /* frontier? */
                        const char *ep; char previous;
                        p += 2;
                        if (SF_UNLIKELY(*p != '['))
                            luaL_error(ms->L, "missing '[' after '%%f' in pattern");
                        ep = classend(ms, p);  /* points to what is next */
                        previous = (s == ms->src_init) ? '\0' : *(s - 1);
                        if (!matchbracketclass(ms, uchar(previous), p, ep - 1) &&
                            matchbracketclass(ms, uchar(*s), p, ep - 1)) {
                            p = ep; goto init;  /* return match(ms, s, ep); */
                        }
                        s = NULL;  /* match failed */
                        break;
                    }
                    case '0': case '1': case '2': case '3':
                    case '4': case '5': case '6': case '7':
                    case '8': case '9': {  /* capture results (%0-%9)? */
                        s = match_capture(ms, s, uchar(*(p + 1)));
                        if (s != NULL) {
                            p += 2; goto init;  /* return match(ms, s, p + 2) */
                        }
                        break;
                    }
                    default: goto dflt;
                }
                break;
            }
            default: dflt: {  /* pattern class plus optional suffix */
                const char *ep = classend(ms, p);  /* points to optional suffix */
                /* does not match at least once? */
                if (!singlematch(ms, s, p, ep)) {
                    if (*ep == '*' || *ep == '?' || *ep == '-') {  /* accept empty? */
                        p = ep + 1; goto init;  /* return match(ms, s, ep + 1); */
                    }
                    else  /* '+' or no suffix */
                        s = NULL;  /* fail */
                }
                else {  /* matched once */
                    switch (*ep) {  /* handle optional suffix */
                        case '?': {  /* optional */
                            const char *res;
                            if ((res = match(ms, s + 1, ep + 1)) != NULL)
                                s = res;
                            else {
                                p = ep + 1; goto init;  /* else return match(ms, s, ep + 1); */
                            }
                            break;
                        }
                        case '+':  /* 1 or more repetitions */
                            s++;  /* 1 match already done */
                            /* FALLTHROUGH */
                        case '*':  /* 0 or more repetitions */
                            s = max_expand(ms, s, p, ep);
                            break;
                        case '-':  /* 0 or more repetitions (minimum) */
                            s = min_expand(ms, s, p, ep);
                            break;
                        default:  /* no suffix */
                            s++; p = ep; goto init;  /* return match(ms, s + 1, ep); */
                    }
                }
                break;
            }
        }
    }
    ms->matchdepth++;
    return s;
}

/* Lua's lmemfind, scanning in chunks. A step is a byte of the subject gone past (each
 * candidate compares up to FIND_HEAD bytes at once, so a step is at most that many
 * compares) plus a byte compared past the first FIND_HEAD of the needle. */
#define FIND_HEAD 32

static const char *lmemfind(lua_State *L, int *left, const char *s1, size_t l1,
                            const char *s2, size_t l2) {
    if (l2 == 0) return s1;  /* empty strings are everywhere */
    else if (l2 > l1) return NULL;  /* avoids a negative 'l1' */
    else {
        const char *init;  /* to search for a '*s2' inside 's1' */
        const char *mark = s1;  /* subject charged up to here */
        size_t head;
        l2--;  /* 1st char will be checked by 'memchr' */
        l1 = l1 - l2;  /* 's2' cannot be found after that */
        head = l2 < FIND_HEAD ? l2 : FIND_HEAD;  /* compared at once with each candidate */
        while (l1 > 0) {
            size_t chunk = SF_CHUNK(l1);
            init = (const char *)memchr(s1, *s2, chunk);
            if (init == NULL) {  /* not in this chunk */
                s1 += chunk; l1 -= chunk;
                SF_CHARGE(L, *left, s1 - mark);
                mark = s1;
                continue;
            }
            init++;  /* 1st char is already checked */
            if (SF_UNLIKELY(init - mark >= SF_STEPS_PER_CHECK)) {
                SF_CHARGE(L, *left, init - mark);
                mark = init;
            }
            if (memcmp(init, s2 + 1, head) == 0 &&
                (head == l2 || bounded_memeq(L, left, init + head, s2 + 1 + head, l2 - head)))
                return init - 1;
            else {  /* correct 'l1' and 's1' to try again */
                l1 -= init - s1;
                s1 = init;
            }
        }
        return NULL;  /* not found */
    }
}

/*
** get information about the i-th capture. If there are no captures
** and 'i==0', return information about the whole match, which
** is the range 's'..'e'. If the capture is a string, return
** its length and put its address in '*cap'. If it is an integer
** (a position), push it on the stack and return CAP_POSITION.
*/
static size_t get_onecapture(MatchState *ms, int i, const char *s, const char *e,
                             const char **cap) {
    if (i >= ms->level) {
        if (SF_UNLIKELY(i != 0))
            luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        *cap = s;
        return e - s;
    }
    else {
        ptrdiff_t capl = ms->capture[i].len;
        *cap = ms->capture[i].init;
        if (SF_UNLIKELY(capl == CAP_UNFINISHED))
            luaL_error(ms->L, "unfinished capture");
        else if (capl == CAP_POSITION)
            lua_pushinteger(ms->L, (ms->capture[i].init - ms->src_init) + 1);
        return capl;
    }
}

/* Push the i-th capture on the stack. */
static void push_onecapture(MatchState *ms, int i, const char *s, const char *e) {
    const char *cap;
    ptrdiff_t l = get_onecapture(ms, i, s, e, &cap);
    if (l != CAP_POSITION)
        lua_pushlstring(ms->L, cap, l);
    /* else position was already pushed */
}

static int push_captures(MatchState *ms, const char *s, const char *e) {
    int i;
    int nlevels = (ms->level == 0 && s) ? 1 : ms->level;
    luaL_checkstack(ms->L, nlevels, "too many captures");
    for (i = 0; i < nlevels; i++)
        push_onecapture(ms, i, s, e);
    return nlevels;  /* number of strings pushed */
}

/* check whether pattern has no special characters (a byte-by-byte version of Lua's
 * strpbrk loop, so it can charge its steps) */
static int nospecials(lua_State *L, int *left, const char *p, size_t l) {
    size_t i, next = SF_SCAN_WINDOW;  /* where the scan is charged next */
    for (i = 0; i < l; i++) {
        if (SF_UNLIKELY(i >= next)) {
            SF_CHARGE(L, *left, SF_SCAN_WINDOW);
            next += SF_SCAN_WINDOW;
        }
        switch (p[i]) {
            case '^': case '$': case '*': case '+': case '?':
            case '.': case '(': case '[': case '%': case '-':
                return 0;  /* pattern has a special character */
            default:
                break;
        }
    }
    return 1;  /* no special chars found */
}

static void prepstate(MatchState *ms, lua_State *L, const char *s, size_t ls,
                      const char *p, size_t lp) {
    ms->L = L;
    ms->matchdepth = MAXCCALLS;
    ms->left = SF_STEPS_PER_CHECK;
    ms->src_init = s;
    ms->src_end = s + ls;
    ms->p_end = p + lp;
}

static void reprepstate(MatchState *ms) {
    ms->level = 0;
}

/* translate a relative initial string position (negative means back from end): clip
 * result to [1, inf). */
static size_t posrelatI(lua_Integer pos, size_t len) {
    if (pos > 0)
        return (size_t)pos;
    else if (pos == 0)
        return 1;
    else if (pos < -(lua_Integer)len)  /* inverted comparison */
        return 1;  /* clip to 1 */
    else return len + (size_t)pos + 1;
}

static int str_find_aux(lua_State *L, int find) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = posrelatI(luaL_optinteger(L, 3, 1), ls) - 1;
    int left = SF_STEPS_PER_CHECK;
    if (init > ls) {  /* start after string's end? */
        luaL_pushfail(L);  /* cannot find anything */
        return 1;
    }
    /* explicit request or no special characters? */
    if (find && (lua_toboolean(L, 4) || nospecials(L, &left, p, lp))) {
        /* do a plain search */
        const char *s2 = lmemfind(L, &left, s + init, ls - init, p, lp);
        if (s2) {
            lua_pushinteger(L, (s2 - s) + 1);
            lua_pushinteger(L, (s2 - s) + lp);
            return 2;
        }
    }
    else {
        MatchState ms;
        const char *s1 = s + init;
        int anchor = (*p == '^');
        if (anchor) {
            p++; lp--;  /* skip anchor character */
        }
        prepstate(&ms, L, s, ls, p, lp);
        ms.left = left;
        do {
            const char *res;
            reprepstate(&ms);
            if ((res = match(&ms, s1, p)) != NULL) {
                if (find) {
                    lua_pushinteger(L, (s1 - s) + 1);  /* start */
                    lua_pushinteger(L, res - s);  /* end */
                    return push_captures(&ms, NULL, 0) + 2;
                }
                else
                    return push_captures(&ms, s1, res);
            }
        } while (s1++ < ms.src_end && !anchor);
    }
    luaL_pushfail(L);  /* not found */
    return 1;
}

static int str_find(lua_State *L) {
    return str_find_aux(L, 1);
}

static int str_match(lua_State *L) {
    return str_find_aux(L, 0);
}

/* state for 'gmatch' */
typedef struct GMatchState {
    const char *src;        /* current position */
    const char *p;          /* pattern */
    const char *lastmatch;  /* end of last match */
    MatchState ms;          /* match state */
} GMatchState;

static int gmatch_aux(lua_State *L) {
    GMatchState *gm = (GMatchState *)lua_touserdata(L, lua_upvalueindex(3));
    const char *src;
    gm->ms.L = L;
    gm->ms.matchdepth = MAXCCALLS;  /* not left over from a call that raised */
    for (src = gm->src; src <= gm->ms.src_end; src++) {
        const char *e;
        reprepstate(&gm->ms);
        if ((e = match(&gm->ms, src, gm->p)) != NULL && e != gm->lastmatch) {
            gm->src = gm->lastmatch = e;
            return push_captures(&gm->ms, src, e);
        }
    }
    return 0;  /* not found */
}

static int gmatch(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = posrelatI(luaL_optinteger(L, 3, 1), ls) - 1;
    GMatchState *gm;
    lua_settop(L, 2);  /* keep strings on closure to avoid being collected */
    gm = (GMatchState *)lua_newuserdatauv(L, sizeof(GMatchState), 0);
    if (init > ls)  /* start after string's end? */
        init = ls + 1;  /* avoid overflows in 's + init' */
    prepstate(&gm->ms, L, s, ls, p, lp);
    gm->src = s + init; gm->p = p; gm->lastmatch = NULL;
    lua_pushcclosure(L, gmatch_aux, 3);
    return 1;
}

static void add_s(MatchState *ms, luaL_Buffer *b, const char *s, const char *e) {
    size_t l;
    lua_State *L = ms->L;
    const char *news = lua_tolstring(L, 3, &l);
    while (l > 0) {
        size_t chunk = SF_CHUNK(l);
        const char *p = (const char *)memchr(news, L_ESC, chunk);
        if (p == NULL) {  /* no escape in this chunk: copy it */
            luaL_addlstring(b, news, chunk);
            MS_CHARGE(ms, chunk);
            news += chunk; l -= chunk;
            continue;
        }
        luaL_addlstring(b, news, p - news);
        MS_CHARGE(ms, p - news + 1);
        p++;  /* skip ESC */
        if (*p == L_ESC)  /* '%%' */
            luaL_addchar(b, *p);
        else if (*p == '0')  /* '%0' */
            bounded_addlstring(L, &ms->left, b, s, e - s);
        else if (isdigit(uchar(*p))) {  /* '%n' */
            const char *cap;
            ptrdiff_t resl = get_onecapture(ms, *p - '1', s, e, &cap);
            if (resl == CAP_POSITION)
                luaL_addvalue(b);  /* add position to accumulated result */
            else
                bounded_addlstring(L, &ms->left, b, cap, resl);
        }
        else
            luaL_error(L, "invalid use of '%c' in replacement string", L_ESC);
        l -= p + 1 - news;
        news = p + 1;
    }
}

/*
** Add the replacement value to the string buffer 'b'.
** Return true if the original string was changed. (Function calls and
** table indexing resulting in nil or false do not change the subject.)
*/
static int add_value(MatchState *ms, luaL_Buffer *b, const char *s, const char *e, int tr) {
    lua_State *L = ms->L;
    switch (tr) {
        case LUA_TFUNCTION: {  /* call the function */
            int n;
            lua_pushvalue(L, 3);  /* push the function */
            n = push_captures(ms, s, e);  /* all captures as arguments */
            lua_call(L, n, 1);  /* call it */
            break;
        }
        case LUA_TTABLE: {  /* index the table */
            push_onecapture(ms, 0, s, e);  /* first capture is the index */
            lua_gettable(L, 3);
            break;
        }
        default: {  /* LUA_TNUMBER or LUA_TSTRING */
            add_s(ms, b, s, e);  /* add value to the buffer */
            return 1;  /* something changed */
        }
    }
    if (!lua_toboolean(L, -1)) {  /* nil or false? */
        lua_pop(L, 1);  /* remove value */
        bounded_addlstring(L, &ms->left, b, s, e - s);  /* keep original text */
        return 0;  /* no changes */
    }
    else if (SF_UNLIKELY(!lua_isstring(L, -1)))
        return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    else {
        luaL_addvalue(b);  /* add result to accumulator */
        return 1;  /* something changed */
    }
}

static int str_gsub(lua_State *L) {
    size_t srcl, lp;
    const char *src = luaL_checklstring(L, 1, &srcl);  /* subject */
    const char *p = luaL_checklstring(L, 2, &lp);  /* pattern */
    const char *lastmatch = NULL;  /* end of last match */
    int tr = lua_type(L, 3);  /* replacement type */
    lua_Integer max_s = luaL_optinteger(L, 4, srcl + 1);  /* max replacements */
    int anchor = (*p == '^');
    lua_Integer n = 0;  /* replacement count */
    int changed = 0;  /* change flag */
    MatchState ms;
    luaL_Buffer b;
    luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING ||
                     tr == LUA_TFUNCTION || tr == LUA_TTABLE, 3,
                     "string/function/table");
    luaL_buffinit(L, &b);
    if (anchor) {
        p++; lp--;  /* skip anchor character */
    }
    prepstate(&ms, L, src, srcl, p, lp);
    while (n < max_s) {
        const char *e;
        reprepstate(&ms);  /* (re)prepare state for new match */
        if ((e = match(&ms, src, p)) != NULL && e != lastmatch) {  /* match? */
            n++;
            changed = add_value(&ms, &b, src, e, tr) | changed;
            src = lastmatch = e;
        }
        else if (src < ms.src_end)  /* otherwise, skip one character */
            luaL_addchar(&b, *src++);
        else break;  /* end of subject */
        if (anchor) break;
    }
    if (!changed)  /* no changes? */
        lua_pushvalue(L, 1);  /* return original string */
    else {  /* something changed */
        bounded_addlstring(L, &ms.left, &b, src, ms.src_end - src);
        luaL_pushresult(&b);  /* create and return new string */
    }
    lua_pushinteger(L, n);  /* number of substitutions */
    return 2;
}

/* }====================================================== */


/*
** {======================================================
** TABLE FUNCTIONS (ltablib.c)
** =======================================================
*/

/*
** Operations that an object must define to mimic a table
** (some functions only need some of them)
*/
#define TAB_R  1               /* read */
#define TAB_W  2               /* write */
#define TAB_L  4               /* length */
#define TAB_RW (TAB_R | TAB_W) /* read/write */

#define aux_getn(L, n, w) (checktab(L, n, (w) | TAB_L), luaL_len(L, n))

static int checkfield(lua_State *L, const char *key, int n) {
    lua_pushstring(L, key);
    return (lua_rawget(L, -n) != LUA_TNIL);
}

/*
** Check that 'arg' either is a table or can behave like one (that is,
** has a metatable with the required metamethods)
*/
static void checktab(lua_State *L, int arg, int what) {
    if (lua_type(L, arg) != LUA_TTABLE) {  /* is it not a table? */
        int n = 1;  /* number of elements to pop */
        if (lua_getmetatable(L, arg) &&  /* must have metatable */
            (!(what & TAB_R) || checkfield(L, "__index", ++n)) &&
            (!(what & TAB_W) || checkfield(L, "__newindex", ++n)) &&
            (!(what & TAB_L) || checkfield(L, "__len", ++n))) {
            lua_pop(L, n);  /* pop metatable and tested metamethods */
        }
        else
            luaL_checktype(L, arg, LUA_TTABLE);  /* force an error */
    }
}

static int tinsert(lua_State *L) {
    lua_Integer pos;  /* where to insert new element */
    lua_Integer e = aux_getn(L, 1, TAB_RW);
    e = luaL_intop(+, e, 1);  /* first empty element */
    switch (lua_gettop(L)) {
        case 2: {  /* called with only 2 arguments */
            pos = e;  /* insert new element at the end */
            break;
        }
        case 3: {
            lua_Integer i;
            int left = SF_STEPS_PER_CHECK;
            pos = luaL_checkinteger(L, 2);  /* 2nd argument is the position */
            /* check whether 'pos' is in [1, e] */
            luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)e, 2,
                          "position out of bounds");
            for (i = e; i > pos; i--) {  /* move up elements */
                SF_CHARGE(L, left, 1);
                lua_geti(L, 1, i - 1);
                lua_seti(L, 1, i);  /* t[i] = t[i - 1] */
            }
            break;
        }
        default: {
            return luaL_error(L, "wrong number of arguments to 'insert'");
        }
    }
    lua_seti(L, 1, pos);  /* t[pos] = v */
    return 0;
}

static int tremove(lua_State *L) {
    lua_Integer size = aux_getn(L, 1, TAB_RW);
    lua_Integer pos = luaL_optinteger(L, 2, size);
    int left = SF_STEPS_PER_CHECK;
    if (pos != size)  /* validate 'pos' if given */
        /* check whether 'pos' is in [1, size + 1] */
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 1,
                      "position out of bounds");
    lua_geti(L, 1, pos);  /* result = t[pos] */
    for (; pos < size; pos++) {
        SF_CHARGE(L, left, 1);
        lua_geti(L, 1, pos + 1);
        lua_seti(L, 1, pos);  /* t[pos] = t[pos + 1] */
    }
    lua_pushnil(L);
    lua_seti(L, 1, pos);  /* remove entry t[pos] */
    return 1;
}

/*
** Copy elements (1[f], ..., 1[e]) into (tt[t], tt[t+1], ...). Whenever
** possible, copy in increasing order, which is better for rehashing.
** "possible" means destination after original range, or smaller
** than origin, or copying to another table.
*/
static int tmove(lua_State *L) {
    lua_Integer f = luaL_checkinteger(L, 2);
    lua_Integer e = luaL_checkinteger(L, 3);
    lua_Integer t = luaL_checkinteger(L, 4);
    int tt = !lua_isnoneornil(L, 5) ? 5 : 1;  /* destination table */
    checktab(L, 1, TAB_R);
    checktab(L, tt, TAB_W);
    if (e >= f) {  /* otherwise, nothing to move */
        lua_Integer n, i;
        int left = SF_STEPS_PER_CHECK;
        luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3,
                      "too many elements to move");
        n = e - f + 1;  /* number of elements to move */
        luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4,
                      "destination wrap around");
        if (t > e || t <= f || (tt != 1 && !lua_compare(L, 1, tt, LUA_OPEQ))) {
            for (i = 0; i < n; i++) {
                SF_CHARGE(L, left, 1);
                lua_geti(L, 1, f + i);
                lua_seti(L, tt, t + i);
            }
        }
        else {
            for (i = n - 1; i >= 0; i--) {
                SF_CHARGE(L, left, 1);
                lua_geti(L, 1, f + i);
                lua_seti(L, tt, t + i);
            }
        }
    }
    lua_pushvalue(L, tt);  /* return destination table */
    return 1;
}


/*
** {======================================================
** Quicksort
** (based on 'Algorithms in MODULA-3', Robert Sedgewick;
**  Addison-Wesley, 1993.)
** =======================================================
*/

/* type for array indices */
typedef unsigned int IdxT;

/* size of 'e' measured in number of 'unsigned int's */
#define sof(e) (sizeof(e) / sizeof(unsigned int))

/*
** Produce a "random" 'unsigned int' to randomize pivot choice, from 'time' and 'clock'
** (used only when 'sort' detects a big imbalance in the result of a partition).
*/
static unsigned int l_randomizePivot(void) {
    clock_t c = clock();
    time_t t = time(NULL);
    unsigned int buff[sof(c) + sof(t)];
    unsigned int i, rnd = 0;
    memcpy(buff, &c, sof(c) * sizeof(unsigned int));
    memcpy(buff + sof(c), &t, sof(t) * sizeof(unsigned int));
    for (i = 0; i < sof(buff); i++)
        rnd += buff[i];
    return rnd;
}

/* arrays larger than 'RANLIMIT' may use randomized pivots */
#define RANLIMIT 100u

static void set2(lua_State *L, IdxT i, IdxT j) {
    lua_seti(L, 1, i);
    lua_seti(L, 1, j);
}

/*
** Return true iff value at stack index 'a' is less than the value at
** index 'b' (according to the order of the sort). One budget step.
*/
static int sort_comp(lua_State *L, int *left, int a, int b) {
    SF_CHARGE(L, *left, 1);
    if (lua_isnil(L, 2))  /* no function? */
        return lua_compare(L, a, b, LUA_OPLT);  /* a < b */
    else {  /* function */
        int res;
        lua_pushvalue(L, 2);    /* push function */
        lua_pushvalue(L, a - 1);  /* -1 to compensate function */
        lua_pushvalue(L, b - 2);  /* -2 to compensate function and 'a' */
        lua_call(L, 2, 1);      /* call function */
        res = lua_toboolean(L, -1);  /* get result */
        lua_pop(L, 1);          /* pop result */
        return res;
    }
}

/*
** Does the partition: Pivot P is at the top of the stack.
** precondition: a[lo] <= P == a[up-1] <= a[up],
** so it only needs to do the partition from lo + 1 to up - 2.
** Pos-condition: a[lo .. i - 1] <= a[i] == P <= a[i + 1 .. up]
** returns 'i'.
*/
static IdxT partition(lua_State *L, int *left, IdxT lo, IdxT up) {
    IdxT i = lo;  /* will be incremented before first use */
    IdxT j = up - 1;  /* will be decremented before first use */
    /* loop invariant: a[lo .. i] <= P <= a[j .. up] */
    for (;;) {
        /* next loop: repeat ++i while a[i] < P */
        while ((void)lua_geti(L, 1, ++i), sort_comp(L, left, -1, -2)) {
            if (SF_UNLIKELY(i == up - 1))  /* a[i] < P  but a[up - 1] == P  ?? */
                luaL_error(L, "invalid order function for sorting");
            lua_pop(L, 1);  /* remove a[i] */
        }
        /* after the loop, a[i] >= P and a[lo .. i - 1] < P */
        /* next loop: repeat --j while P < a[j] */
        while ((void)lua_geti(L, 1, --j), sort_comp(L, left, -3, -1)) {
            if (SF_UNLIKELY(j < i))  /* j < i  but  a[j] > P ?? */
                luaL_error(L, "invalid order function for sorting");
            lua_pop(L, 1);  /* remove a[j] */
        }
        /* after the loop, a[j] <= P and a[j + 1 .. up] >= P */
        if (j < i) {  /* no elements out of place? */
            /* a[lo .. i - 1] <= P <= a[j + 1 .. i .. up] */
            lua_pop(L, 1);  /* pop a[j] */
            /* swap pivot (a[up - 1]) with a[i] to satisfy pos-condition */
            set2(L, up - 1, i);
            return i;
        }
        /* otherwise, swap a[i] - a[j] to restore invariant and repeat */
        set2(L, i, j);
    }
}

/*
** Choose an element in the middle (2nd-3th quarters) of [lo,up]
** "randomized" by 'rnd'
*/
static IdxT choosePivot(IdxT lo, IdxT up, unsigned int rnd) {
    IdxT r4 = (up - lo) / 4;  /* range/4 */
    IdxT p = rnd % (r4 * 2) + (lo + r4);
    return p;
}

/*
** Quicksort algorithm (recursive function)
*/
static void auxsort(lua_State *L, int *left, IdxT lo, IdxT up, unsigned int rnd) {
    while (lo < up) {  /* loop for tail recursion */
        IdxT p;  /* Pivot index */
        IdxT n;  /* to be used later */
        /* sort elements 'lo', 'p', and 'up' */
        lua_geti(L, 1, lo);
        lua_geti(L, 1, up);
        if (sort_comp(L, left, -1, -2))  /* a[up] < a[lo]? */
            set2(L, lo, up);  /* swap a[lo] - a[up] */
        else
            lua_pop(L, 2);  /* remove both values */
        if (up - lo == 1)  /* only 2 elements? */
            return;  /* already sorted */
        if (up - lo < RANLIMIT || rnd == 0)  /* small interval or no randomize? */
            p = (lo + up) / 2;  /* middle element is a good pivot */
        else  /* for larger intervals, it is worth a random pivot */
            p = choosePivot(lo, up, rnd);
        lua_geti(L, 1, p);
        lua_geti(L, 1, lo);
        if (sort_comp(L, left, -2, -1))  /* a[p] < a[lo]? */
            set2(L, p, lo);  /* swap a[p] - a[lo] */
        else {
            lua_pop(L, 1);  /* remove a[lo] */
            lua_geti(L, 1, up);
            if (sort_comp(L, left, -1, -2))  /* a[up] < a[p]? */
                set2(L, p, up);  /* swap a[up] - a[p] */
            else
                lua_pop(L, 2);
        }
        if (up - lo == 2)  /* only 3 elements? */
            return;  /* already sorted */
        lua_geti(L, 1, p);  /* get middle element (Pivot) */
        lua_pushvalue(L, -1);  /* push Pivot */
        lua_geti(L, 1, up - 1);  /* push a[up - 1] */
        set2(L, p, up - 1);  /* swap Pivot (a[p]) with a[up - 1] */
        p = partition(L, left, lo, up);
        /* a[lo .. p - 1] <= a[p] == P <= a[p + 1 .. up] */
        if (p - lo < up - p) {  /* lower interval is smaller? */
            auxsort(L, left, lo, p - 1, rnd);  /* call recursively for lower interval */
            n = p - lo;  /* size of smaller interval */
            lo = p + 1;  /* tail call for [p + 1 .. up] (upper interval) */
        }
        else {
            auxsort(L, left, p + 1, up, rnd);  /* call recursively for upper interval */
            n = up - p;  /* size of smaller interval */
            up = p - 1;  /* tail call for [lo .. p - 1]  (lower interval) */
        }
        if ((up - lo) / 128 > n)  /* partition too imbalanced? */
            rnd = l_randomizePivot();  /* try a new randomization */
    }  /* tail call auxsort(L, lo, up, rnd) */
}

static int sort(lua_State *L) {
    lua_Integer n = aux_getn(L, 1, TAB_RW);
    if (n > 1) {  /* non-trivial interval? */
        int left = SF_STEPS_PER_CHECK;
        luaL_argcheck(L, n < INT_MAX, 1, "array too big");
        if (!lua_isnoneornil(L, 2))  /* is there a 2nd argument? */
            luaL_checktype(L, 2, LUA_TFUNCTION);  /* must be a function */
        lua_settop(L, 2);  /* make sure there are two arguments */
        auxsort(L, &left, 1, (IdxT)n, 0);
    }
    return 0;
}

/* }====================================================== */


/* string.rep: Lua's own loops once per copy, in C, even when the copies are empty
 * (string.rep("", 1e10) never allocates, so nothing stops it). This one fills the result by
 * doubling copies of its start (a few memcpy calls) and checks the budget between them. */
static int str_rep(lua_State *L) {
    size_t l, lsep;
    const char *s = luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *sep = luaL_optlstring(L, 3, "", &lsep);
    size_t maxsize = sizeof(size_t) < sizeof(int) ? (size_t)~(size_t)0 : (size_t)INT_MAX;  /* lstrlib's MAXSIZE */
    if (n <= 0 || l + lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    if (l + lsep < l || l + lsep > maxsize / (size_t)n)
        return luaL_error(L, "resulting string too large");
    size_t unit = l + lsep;
    size_t total = (size_t)n * l + (size_t)(n - 1) * lsep;
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, total);
    /* total >= unit whenever n > 1; with n == 1 the result is s alone. */
    memcpy(p, s, l);
    if (n > 1) {
        memcpy(p + l, sep, lsep);
        size_t filled = unit;
        while (filled < total) {
            sf_budget_checkpoint(L);
            size_t chunk = filled < total - filled ? filled : total - filled;
            memcpy(p + filled, p, chunk);  /* filled is a whole number of units: the pattern holds */
            filled += chunk;
        }
    }
    luaL_pushresultsize(&b, total);
    return 1;
}

/* lutf8lib's u_posrelat. */
static lua_Integer u_posrelat(lua_Integer pos, size_t len) {
    if (pos >= 0) return pos;
    else if (0u - (size_t)pos > len) return 0;
    else return (lua_Integer)len + pos + 1;
}

/* utf8.len, with the budget checked every SF_STEPS_PER_CHECK characters: a long string is
 * walked in C. Same results and errors as Lua 5.4's. */
static int utf8_len(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_Integer posi = u_posrelat(luaL_optinteger(L, 2, 1), len);
    lua_Integer posj = u_posrelat(luaL_optinteger(L, 3, -1), len);
    int lax = lua_toboolean(L, 4);
    luaL_argcheck(L, 1 <= posi && --posi <= (lua_Integer)len, 2, "initial position out of bounds");
    luaL_argcheck(L, --posj < (lua_Integer)len, 3, "final position out of bounds");
    lua_Integer n = 0;
    int left = SF_STEPS_PER_CHECK;
    while (posi <= posj) {
        if (--left == 0) { sf_budget_checkpoint(L); left = SF_STEPS_PER_CHECK; }
        /* decode one sequence (as lutf8lib's utf8_decode) */
        const unsigned char *c = (const unsigned char *)s + posi;
        unsigned int res = c[0];
        unsigned long limits[] = {~0ul, 0x80, 0x800, 0x10000u, 0x200000u, 0x4000000u};
        int count = 0;
        const unsigned char *next = NULL;
        if (res < 0x80) next = c + 1;
        else {
            unsigned long r = 0;
            for (; res & 0x40; res <<= 1) {
                unsigned int cc = c[++count];
                if ((cc & 0xC0) != 0x80) { next = NULL; goto decoded; }
                r = (r << 6) | (cc & 0x3F);
            }
            r |= ((unsigned long)(res & 0x7F) << (count * 5));
            if (count > 5 || r > 0x7FFFFFFFu || r < limits[count]) { next = NULL; goto decoded; }
            if (!lax && (r > 0x10FFFFu || (0xD800u <= r && r <= 0xDFFFu))) { next = NULL; goto decoded; }
            next = c + count + 1;
        }
    decoded:
        if (next == NULL) {
            luaL_pushfail(L);
            lua_pushinteger(L, posi + 1);
            return 2;
        }
        posi = (lua_Integer)((const char *)next - s);
        n++;
    }
    lua_pushinteger(L, n);
    return 1;
}

/* table.unpack and table.concat read each element with lua_geti, which follows an __index
 * chain of tables in C (up to 2000 hops per element, no hook between them): a long list over
 * a long chain ran for seconds inside one call. Same results and errors as ltablib.c's; the
 * budget is checked as elements are read (every element when the table has a metatable). */
static int element_cost(lua_State *L, int arg) {
    if (lua_getmetatable(L, arg)) {
        lua_pop(L, 1);
        return SF_STEPS_PER_CHECK;
    }
    return 1;
}

static int tunpack(lua_State *L) {
    lua_Unsigned n;
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer e = luaL_opt(L, luaL_checkinteger, 3, luaL_len(L, 1));
    if (i > e) return 0;  /* empty range */
    n = (lua_Unsigned)e - i;  /* number of elements minus 1 (avoid overflows) */
    if (SF_UNLIKELY(n >= (unsigned int)INT_MAX || !lua_checkstack(L, (int)(++n))))
        return luaL_error(L, "too many results to unpack");
    int cost = element_cost(L, 1), left = SF_STEPS_PER_CHECK;
    for (; i < e; i++) {  /* push arg[i..e - 1] (to avoid overflows) */
        SF_CHARGE(L, left, cost);
        lua_geti(L, 1, i);
    }
    SF_CHARGE(L, left, cost);
    lua_geti(L, 1, e);  /* push last element */
    return (int)n;
}

static void addfield(lua_State *L, luaL_Buffer *b, lua_Integer i, int *left, int cost) {
    SF_CHARGE(L, *left, cost);
    lua_geti(L, 1, i);
    if (SF_UNLIKELY(!lua_isstring(L, -1)))
        luaL_error(L, "invalid value (at index %I) in table for 'concat'", (LUAI_UACINT)i);
    size_t l;
    lua_tolstring(L, -1, &l);
    SF_CHARGE(L, *left, l / 256);  /* the copy */
    luaL_addvalue(b);
}

static int tconcat(lua_State *L) {
    luaL_Buffer b;
    lua_Integer last = aux_getn(L, 1, TAB_R);
    size_t lsep;
    const char *sep = luaL_optlstring(L, 2, "", &lsep);
    lua_Integer i = luaL_optinteger(L, 3, 1);
    last = luaL_optinteger(L, 4, last);
    int cost = element_cost(L, 1), left = SF_STEPS_PER_CHECK;
    luaL_buffinit(L, &b);
    for (; i < last; i++) {
        addfield(L, &b, i, &left, cost);
        luaL_addlstring(&b, sep, lsep);
        SF_CHARGE(L, left, lsep / 256);
    }
    if (i == last)  /* add last value (if interval was not empty) */
        addfield(L, &b, i, &left, cost);
    luaL_pushresult(&b);
    return 1;
}

static const luaL_Reg bounded_string_funcs[] = {
    {"rep", str_rep},
    {"find", str_find},
    {"match", str_match},
    {"gmatch", gmatch},
    {"gsub", str_gsub},
    {NULL, NULL}
};

static const luaL_Reg bounded_table_funcs[] = {
    {"sort", sort},
    {"insert", tinsert},
    {"remove", tremove},
    {"move", tmove},
    {"unpack", tunpack},
    {"concat", tconcat},
    {NULL, NULL}
};

/* Sets the functions into the table on top of the stack, raw (no __newindex). */
static void set_raw(lua_State *L, const luaL_Reg *l) {
    for (; l->name != NULL; l++) {
        lua_pushstring(L, l->name);
        lua_pushcfunction(L, l->func);
        lua_rawset(L, -3);
    }
}

/* The engine's clock (SPEC §18 P5, EngineClock): microseconds since 1970 of a time a test set,
 * or LLONG_MIN for the system's. os.time() and os.date(fmt) read it; given a time, they are
 * Lua's own (their first upvalue). */
static _Atomic long long clock_set_us = LLONG_MIN;

void sf_clock_set(long long microseconds) { atomic_store_explicit(&clock_set_us, microseconds, memory_order_relaxed); }

static lua_Integer clock_seconds(long long us) {
    long long s = us / 1000000;
    return (lua_Integer)(us % 1000000 < 0 ? s - 1 : s);
}

static int clock_time(lua_State *L) {
    long long set = atomic_load_explicit(&clock_set_us, memory_order_relaxed);
    if (set != LLONG_MIN && lua_isnoneornil(L, 1)) {
        lua_pushinteger(L, clock_seconds(set));
        return 1;
    }
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

static int clock_date(lua_State *L) {
    long long set = atomic_load_explicit(&clock_set_us, memory_order_relaxed);
    lua_settop(L, 2);
    if (set != LLONG_MIN && lua_isnil(L, 2)) {
        lua_pushinteger(L, clock_seconds(set));
        lua_replace(L, 2);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    /* os.date(nil) is "%c", as Lua's own reads a missing format. */
    if (lua_isnil(L, 2) && lua_isnil(L, 3)) lua_settop(L, 1);
    else if (lua_isnil(L, 3)) lua_settop(L, 2);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* Puts `wrapper`, closing over the os table's `name`, in its place. */
static void wrap_os(lua_State *L, const char *name, lua_CFunction wrapper) {
    lua_pushstring(L, name);
    if (lua_rawget(L, -2) == LUA_TFUNCTION) {
        lua_pushcclosure(L, wrapper, 1);
        lua_pushstring(L, name);
        lua_insert(L, -2);
        lua_rawset(L, -3);
    } else {
        lua_pop(L, 1);
    }
}

static int open_bounded(lua_State *L) {
    if (lua_getglobal(L, "os") == LUA_TTABLE) {
        wrap_os(L, "time", clock_time);
        wrap_os(L, "date", clock_date);
    }
    lua_pop(L, 1);
    if (lua_getglobal(L, "string") == LUA_TTABLE) set_raw(L, bounded_string_funcs);
    /* Method calls (s:find) go through the string metatable's __index, which is the string
     * table itself after luaL_openlibs; cover it too should it be another table. */
    lua_pushliteral(L, "");
    if (lua_getmetatable(L, -1)) {
        lua_pushliteral(L, "__index");
        if (lua_rawget(L, -2) == LUA_TTABLE && !lua_rawequal(L, -1, -4))
            set_raw(L, bounded_string_funcs);
        lua_pop(L, 2);  /* __index, metatable */
    }
    lua_pop(L, 2);  /* "", string */
    if (lua_getglobal(L, "table") == LUA_TTABLE) set_raw(L, bounded_table_funcs);
    lua_pop(L, 1);
    if (lua_getglobal(L, "utf8") == LUA_TTABLE) {
        lua_pushliteral(L, "len");
        lua_pushcfunction(L, utf8_len);
        lua_rawset(L, -3);
    }
    lua_pop(L, 1);
    return 0;
}

void sf_open_bounded_libs(lua_State *L) {
    lua_pushcfunction(L, open_bounded);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) lua_pop(L, 1);
}
