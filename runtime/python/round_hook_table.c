#include "runtime/python/round_hook_table.h"

#include <stdio.h>
#include <string.h>

struct roundtrim_py_hook_table roundtrim_py_hook_table;

#define HOOKS roundtrim_py_hook_table

bool roundtrim_py_hook_add(const char *module, const char *qualname,
                           const struct roundtrim_fw_hook *fw)
{
    if (HOOKS.count == sizeof HOOKS.entry / sizeof HOOKS.entry[0])
        return false;
    struct roundtrim_py_hook *e = &HOOKS.entry[HOOKS.count++];
    snprintf(e->name.module, sizeof e->name.module, "%s", module);
    snprintf(e->name.qualname, sizeof e->name.qualname, "%s", qualname);
    snprintf(e->target, sizeof e->target, "%s:%s", module, qualname);
    e->fw = fw;
    e->in_main = strcmp(module, "__main__") == 0;
    e->state = RT_HOOK_PENDING;
    HOOKS.pending++;
    HOOKS.main_pending += e->in_main;
    return true;
}

void roundtrim_py_hook_add_framework_rows(void)
{
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        const struct roundtrim_fw_hook *h = &roundtrim_fw_hooks[i];
        const char *colon = strchr(h->target, ':');
        char module[ROUNDTRIM_HOOK_NAME_MAX];
        snprintf(module, sizeof module, "%.*s", (int)(colon - h->target), h->target);
        bool named = false;
        for (size_t k = 0; k < HOOKS.count && !named; k++)
            named = strcmp(HOOKS.entry[k].target, h->target) == 0;
        if (!named)
            roundtrim_py_hook_add(module, colon + 1, h);
    }
}
