#include "runtime/python/audit_entry.h"
#include "runtime/core/loader_tables.h"
#include "runtime/core/pages.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

/* CPython's list node for a C audit hook (Include/internal/pycore_runtime.h, 3.8 to 3.13). */
struct audit_entry {
    struct audit_entry *next;
    py_audit_hook hook;
    void *user;
};

static struct audit_entry **head_slot; /* where the runtime keeps the list's head */
/* The entry, kept reachable: once unlinked nobody else knows it. */
static struct audit_entry *own_entry;
static char own_marker; /* the hook's user data: tells roundtrim's entry from any other */

/* The word of the runtime that went from NULL to roundtrim's entry during the add: the list's
 * head. Only that word is followed (it was written by the add, with memory the add allocated),
 * and only when it is the one such word. */
static void find_head(uintptr_t *now, const uintptr_t *before, size_t words, py_audit_hook hook)
{
    uintptr_t *found = NULL;
    for (size_t i = 0; i < words; i++) {
        if (before[i] != 0 || now[i] == 0)
            continue;
        if (found)
            return; /* two candidates: not sure which, leave the list alone */
        found = &now[i];
    }
    if (!found)
        return;
    struct audit_entry *e = (struct audit_entry *)*found;
    if (e->hook == hook && e->user == &own_marker && e->next == NULL) {
        head_slot = (struct audit_entry **)found;
        own_entry = e;
    }
}

/* The runtime's address and size: from the loader's tables (no dladdr, which searches the whole
 * symbol table for the nearest symbol: some 60,000 instructions at every interpreter's start),
 * else from dlsym and dladdr1. */
static void *find_runtime(size_t *size)
{
    struct roundtrim_symbol s;
    void *runtime;
    if (roundtrim_symbol_settled(roundtrim_tables_default("_PyRuntime", &s), &s, &runtime)) {
        *size = runtime ? (size_t)s.sym->st_size : 0;
        return runtime;
    }
    runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (runtime && dladdr1(runtime, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
        info.dli_saddr == runtime)
        *size = (size_t)sym->st_size;
    return runtime;
}

int roundtrim_py_audit_add_early(int (*add)(py_audit_hook, void *), py_audit_hook hook)
{
    size_t size = 0;
    void *runtime = find_runtime(&size);
    if (!runtime || ((uintptr_t)runtime % sizeof(uintptr_t)) != 0)
        size = 0;
    void *before = NULL;
    if (size >= sizeof(uintptr_t) && size <= (64u << 20)) {
        before = roundtrim_pages_map(size);
        if (before)
            memcpy(before, runtime, size);
    }
    int rc = add(hook, &own_marker);
    if (before) {
        if (rc == 0)
            find_head(runtime, before, size / sizeof(uintptr_t), hook);
        roundtrim_pages_unmap(before, size);
    }
    return rc;
}

void roundtrim_py_audit_unlink_early(void)
{
    if (head_slot && *head_slot == own_entry) {
        *head_slot = own_entry->next;
        head_slot = NULL;
    }
}

bool roundtrim_py_audit_early_known(void)
{
    return head_slot != NULL;
}
