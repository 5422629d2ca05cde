/* The start of the round hooks: ROUNDTRIM_PY_HOOK read (policy/hook_spec.h), the table filled
 * (runtime/python/round_hook_table.h), the audit hook added (runtime/python/round_hook_audit.h). */
#include "runtime/python/round_hook.h"

#include "policy/hook_spec.h"
#include "runtime/core/settings.h"
#include "runtime/python/api.h"
#include "runtime/python/round_hook_audit.h"
#include "runtime/python/round_hook_table.h"

#define P     roundtrim_py
#define HOOKS roundtrim_py_hook_table

static void warn_line(void *ctx, const char *line)
{
    (void)ctx;
    roundtrim_warn(line);
}

void roundtrim_py_hooks_init(const char *text)
{
    struct roundtrim_hook_spec spec;
    roundtrim_hook_spec_parse(text, &spec, warn_line, NULL);
    /* Without round hooks the audit hook is still added, for the exit barrier alone
     * (runtime/python/gil.h): no hook is armed. */
    if (spec.off || (!spec.count && !spec.with_auto)) {
        if (spec.off)
            HOOKS.mode = roundtrim_hook_spec_mode(&spec);
        if (P.hooks)
            roundtrim_py_hook_audit_start(false);
        return;
    }
    if (!P.hooks) {
        /* The framework table alone stays quiet on an old Python: nobody asked for it. */
        if (spec.count)
            roundtrim_warn("ROUNDTRIM_PY_HOOK: this Python has no audit hooks (3.8 or later "
                           "needed); hooks off");
        return;
    }
    for (size_t i = 0; i < spec.count; i++)
        roundtrim_py_hook_add(spec.names[i].module, spec.names[i].qualname, NULL);
    if (spec.with_auto)
        roundtrim_py_hook_add_framework_rows();
    if (HOOKS.count)
        HOOKS.mode = roundtrim_hook_spec_mode(&spec);
    roundtrim_py_hook_audit_start(spec.count > 0);
}
