/* The hooks' part of the start and exit records (runtime/python/round_hook.h), from the table alone
 * (runtime/python/round_hook_table.h): no Python state is read, so the exit record can be written
 * with the interpreter gone or the GIL held by someone else. */
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "runtime/core/settings.h"

#include "policy/json_writer.h"
#include "runtime/python/round_hook.h"
#include "runtime/python/round_hook_table.h"

#define HOOKS roundtrim_py_hook_table

const char *roundtrim_py_hook_mode(void)
{
    return HOOKS.mode;
}

/* Whether an entry belongs in the exit record: every name the user gave; a framework row when
 * the process imported that framework and the row is for its version. */
static bool reported(const struct roundtrim_py_hook *e)
{
    return !e->fw || (e->fw_seen && e->state != RT_HOOK_NOT_THIS_VERSION);
}

/* Which exit list a reported entry is in: attached; the module never imported; or imported, but
 * the name is not there (or not a function). */
static enum roundtrim_hook_list outcome_of(const struct roundtrim_py_hook *e)
{
    if (e->state == RT_HOOK_ATTACHED)
        return RT_HOOKS_ATTACHED;
    if (e->state == RT_HOOK_DROPPED || (e->state == RT_HOOK_PENDING && e->in_main))
        return RT_HOOKS_MISSING;
    return RT_HOOKS_NOT_IMPORTED;
}

bool roundtrim_py_hooks_reported(void)
{
    for (size_t i = 0; i < HOOKS.count; i++)
        if (reported(&HOOKS.entry[i]))
            return true;
    return false;
}

void roundtrim_py_hooks_list_json(struct roundtrim_json *j, const char *key,
                                  enum roundtrim_hook_list which)
{
    roundtrim_json_array_begin(j, key);
    for (size_t i = 0; i < HOOKS.count; i++) {
        const struct roundtrim_py_hook *e = &HOOKS.entry[i];
        if (which == RT_HOOKS_ARMED || (reported(e) && outcome_of(e) == which))
            roundtrim_json_array_str(j, e->target);
    }
    roundtrim_json_array_end(j);
}

/* What a name that never attached is told: a function of the main script is bound only when an
 * audited event (an import, an open) follows its definition, which a script that calls it from
 * its own body at once may never make; a module is bound when it is imported. */
static const char *unattached_advice(const struct roundtrim_py_hook *e)
{
    if (e->in_main)
        return "the main script's functions are hooked only when an audited event (an import, "
               "an open) follows their definition; move the function into a module the script "
               "imports and name that module (module:qualname), or call roundtrim_round_end() "
               "at the end of each round";
    return "the module was never imported by this process; name a module the program imports "
           "(python3 -X importtime lists them), or call roundtrim_round_end() at the end of each "
           "round";
}

void roundtrim_py_hooks_warn_unattached(void)
{
    for (size_t i = 0; i < HOOKS.count; i++) {
        const struct roundtrim_py_hook *e = &HOOKS.entry[i];
        if (e->fw || e->state != RT_HOOK_PENDING)
            continue;
        char line[800];
        snprintf(line, sizeof line,
                 "ROUNDTRIM_PY_HOOK: %s never attached in process %d, which ended no round: %s",
                 e->target, (int)getpid(), unattached_advice(e));
        roundtrim_warn(line);
    }
}

const char *roundtrim_py_hooks_framework(void)
{
    const char *attached = NULL;
    for (size_t i = 0; i < HOOKS.count; i++) {
        const struct roundtrim_py_hook *e = &HOOKS.entry[i];
        if (!e->fw || e->state != RT_HOOK_ATTACHED)
            continue;
        if (e->called)
            return e->fw->framework;
        if (!attached)
            attached = e->fw->framework;
    }
    return attached;
}
