#include "runtime/output/no_rounds.h"

#include "runtime/boundary/boundary.h"
#include "runtime/core/clock.h"
#include "runtime/core/settings.h"
#include "runtime/output/log_writer.h"

#define TEXT_OF(x) #x
#define TEXT(x)    TEXT_OF(x)
#define NOTE_FIRST "no round ended in this process's first " TEXT(ROUNDTRIM_NO_ROUNDS_AFTER_S) " s"

static const char note[] =
    NOTE_FIRST ", so nothing is measured or cleaned: mark its rounds with the round signal "
               "(roundtrim round PID), a call of roundtrim_round_end(), a Python hook "
               "(ROUNDTRIM_PY_HOOK=module:qualname, of a module the program imports) or a timer "
               "(ROUNDTRIM_INTERVAL_S)";

/* Seconds left before the note is due; zero or less once it is. */
static double seconds_left(void)
{
    return roundtrim_start_time() + ROUNDTRIM_NO_ROUNDS_AFTER_S - roundtrim_wall_seconds();
}

static bool note_may_come(void)
{
    return roundtrim_config()->log_path && roundtrim_boundaries_seen() == 0;
}

const char *roundtrim_no_rounds_note(void)
{
    return note_may_come() && seconds_left() <= 0 ? note : NULL;
}

uint64_t roundtrim_no_rounds_wait_ms(void)
{
    if (!note_may_come() || roundtrim_log_started())
        return 0;
    double left = seconds_left();
    return left <= 0.001 ? 1 : (uint64_t)(left * 1000.0) + 1;
}

void roundtrim_no_rounds_write_when_due(void)
{
    if (!roundtrim_log_started() && roundtrim_no_rounds_note())
        roundtrim_log_open();
}
