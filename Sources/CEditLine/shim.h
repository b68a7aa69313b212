/* libedit (Debian: libedit-dev): the line editor of `shareflow repl`. Its set-up calls are
 * variadic, which Swift cannot call: these wrappers give each use a fixed signature. */
#include <histedit.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

/* UTF-8 editing needs a UTF-8 locale for the character type: the environment's, else C.UTF-8. */
static inline void sf_el_utf8_locale(void) {
    setlocale(LC_CTYPE, "");
    if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0) setlocale(LC_CTYPE, "C.UTF-8");
}

static inline EditLine *sf_el_init(void) { return el_init("shareflow", stdin, stdout, stderr); }

static inline History *sf_history_init(int size) {
    History *h = history_init();
    HistEvent ev;
    if (h) history(h, &ev, H_SETSIZE, size);
    return h;
}

static inline void sf_history_enter(History *h, const char *line) {
    HistEvent ev;
    history(h, &ev, H_ENTER, line);
}

/* Emacs bindings as a terminal user expects them, Ctrl-R searching history backwards, Tab
 * and Ctrl-C bound to the console's functions, and Ctrl-C reaching us as a key, not a signal
 * (so it clears the line being typed). */
static inline void sf_el_setup(EditLine *el, History *h, char *(*prompt)(EditLine *),
                               unsigned char (*complete)(EditLine *, int),
                               unsigned char (*interrupt)(EditLine *, int), void *client) {
    el_set(el, EL_CLIENTDATA, client);
    el_set(el, EL_EDITOR, "emacs");
    el_set(el, EL_SIGNAL, 1);
    el_set(el, EL_SETTY, "-d", "-isig", NULL);
    el_set(el, EL_PROMPT, prompt);
    el_set(el, EL_HIST, history, h);
    el_set(el, EL_ADDFN, "sf-complete", "complete a name", complete);
    el_set(el, EL_ADDFN, "sf-interrupt", "clear the line", interrupt);
    el_set(el, EL_BIND, "^I", "sf-complete", NULL);
    el_set(el, EL_BIND, "^C", "sf-interrupt", NULL);
    el_set(el, EL_BIND, "^R", "em-inc-search-prev", NULL);
    el_set(el, EL_BIND, "^W", "ed-delete-prev-word", NULL);
    el_set(el, EL_BIND, "^U", "em-kill-line", NULL);
    el_set(el, EL_BIND, "\033[H", "ed-move-to-beg", NULL);
    el_set(el, EL_BIND, "\033[F", "ed-move-to-end", NULL);
    el_set(el, EL_BIND, "\033OH", "ed-move-to-beg", NULL);
    el_set(el, EL_BIND, "\033OF", "ed-move-to-end", NULL);
    el_set(el, EL_BIND, "\033[1~", "ed-move-to-beg", NULL);
    el_set(el, EL_BIND, "\033[4~", "ed-move-to-end", NULL);
    el_set(el, EL_BIND, "\033[3~", "ed-delete-next-char", NULL);
    el_source(el, NULL); /* the user's ~/.editrc, as every libedit program reads */
}

static inline void *sf_el_client(EditLine *el) {
    void *client = NULL;
    el_get(el, EL_CLIENTDATA, &client);
    return client;
}
