#include "runtime/boundary/signal_rounds.h"

#include <stdio.h>
#include <string.h>

#include "runtime/core/libc_later.h"
#include "runtime/core/settings.h"

static const char *off_note;

void roundtrim_signal_rounds_off_note(const char *why)
{
    __atomic_store_n(&off_note, why, __ATOMIC_RELEASE);
}

const char *roundtrim_signal_rounds_off_take(void)
{
    return __atomic_exchange_n(&off_note, NULL, __ATOMIC_ACQ_REL);
}

void roundtrim_signal_rounds_off_warn(const char *why)
{
    const char *name = roundtrim_signal_abbrev(roundtrim_config()->round_signal);
    char line[200];
    snprintf(
        line, sizeof line,
        strcmp(why, "program_set_ignore") == 0
            ? "the program set SIG%s to be ignored: rounds by that signal are off while it stays so"
            : "the program set SIG%s to its default action: rounds by that signal are off "
              "until it installs a handler",
        name ? name : "?");
    roundtrim_warn(line);
}
