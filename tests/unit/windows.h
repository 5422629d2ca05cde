/* Interleavings played on one thread. A structure built with its test windows (a WINDOW(where)
 * in its source) calls a function of the test's at each; the test defines that function as a call
 * to window_pass, and has one thing happen at one window, once: what a signal handler or another
 * thread would do at that instant. */
#ifndef ROUNDTRIM_TEST_WINDOWS_H
#define ROUNDTRIM_TEST_WINDOWS_H

#include <check.h>
#include <string.h>

static const char *window_at;
static void (*window_do)(void);

static inline void window_pass(const char *where)
{
    if (window_do && strcmp(where, window_at) == 0) {
        void (*act)(void) = window_do;
        window_do = NULL; /* once, and not from inside itself */
        act();
    }
}

static inline void at_window(const char *where, void (*act)(void))
{
    window_at = where;
    window_do = act;
}

/* Fails the test if the structure never passed the window it was given. */
static inline void window_passed(void)
{
    ck_assert_msg(window_do == NULL, "window %s never passed", window_at);
}

#endif
