/* Ctrl-C: while a target is set, SIGINT ends the running Lua code with "interrupted" (the
 * budget's mechanism, so pcall cannot swallow it either); with no Lua code running, it only
 * sets a flag the console reads. */
#include "internal.h"

#include <signal.h>
#include <string.h>

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
