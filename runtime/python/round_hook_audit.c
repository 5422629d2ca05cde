#include "runtime/python/round_hook_audit.h"

#include <string.h>

#include "runtime/core/settings.h"
#include "runtime/python/api.h"
#include "runtime/python/audit_entry.h"
#include "runtime/python/gil.h"
#include "runtime/python/round_hook_bind.h"
#include "runtime/python/round_hook_table.h"

#define P     roundtrim_py
#define HOOKS roundtrim_py_hook_table

static bool hook_live;
/* Set while our hook code runs Python code, in whichever thread: any audit event, weakref
 * callback or attribute hook reached meanwhile is skipped instead of entering twice. The GIL
 * orders the check and the set. */
static bool busy;

/* Enters roundtrim's own Python work: busy set, the pending exception put aside. */
static void enter(struct roundtrim_py_err *saved)
{
    busy = true;
    roundtrim_py_err_save(saved);
}

static void leave(struct roundtrim_py_err *saved)
{
    roundtrim_py_err_restore(saved);
    busy = false;
}

/* ---- the end of a module body ------------------------------------------------------------ */

/* Called when the code object of a hooked module's body dies: exec_module has returned, the
 * import has not yet returned to the importer. */
static py_object *body_ended(py_object *index, py_object *weakref)
{
    (void)weakref;
    long i = P.Long_AsLong(index);
    if (i >= 0 && (size_t)i < HOOKS.count) {
        struct roundtrim_py_hook *e = &HOOKS.entry[i];
        e->armed = false;
        if (!busy && (e->state == RT_HOOK_PENDING || e->state == RT_HOOK_ATTACHED)) {
            struct roundtrim_py_err saved;
            enter(&saved);
            struct roundtrim_py_fw_look look;
            roundtrim_py_fw_look_begin(&look);
            roundtrim_py_hook_try_attach(&look, e, true);
            leave(&saved);
        }
    }
    P.Err_Clear();
    return roundtrim_py_new_ref(P.None);
}

static struct py_method_def body_ended_def = {"roundtrim_body_ended", (void *)body_ended, PY_METH_O,
                                              NULL};

static bool same_file(py_object *module, py_object *filename)
{
    py_object *file = P.Dict_GetItemString(P.Module_GetDict(module), "__file__");
    return file && P.Object_RichCompareBool(file, filename, PY_EQ) == 1;
}

/* An "exec" event: if the code is the body of a hooked module, watch for its end. */
static void watch_body(py_object *args)
{
    py_object *code = P.Tuple_GetItem(args, 0);
    if (!code || !roundtrim_py_is_instance(code, P.Code_Type))
        return;
    py_object *filename = NULL;
    struct roundtrim_py_fw_look look;
    roundtrim_py_fw_look_begin(&look);
    for (size_t i = 0; i < HOOKS.count; i++) {
        struct roundtrim_py_hook *e = &HOOKS.entry[i];
        if (e->in_main || e->state == RT_HOOK_DROPPED || e->state == RT_HOOK_NOT_THIS_VERSION ||
            e->armed)
            continue;
        /* A framework's module can be running only once its top-level package exists. */
        if (!roundtrim_py_fw_present(&look, e))
            continue;
        py_object *m = roundtrim_py_loaded_module(e->name.module);
        if (!m)
            continue;
        if (!filename && !(filename = P.Object_GetAttrString(code, "co_filename")))
            return;
        if (!same_file(m, filename))
            continue;
        py_object *index = P.Long_FromLong((long)i);
        py_object *cb = index ? P.CFunction_NewEx(&body_ended_def, index, NULL) : NULL;
        py_object *ref = cb ? P.Weakref_NewRef(code, cb) : NULL;
        if (ref) {
            if (e->weakref)
                P.DecRef(e->weakref); /* an old one, long dead: not inside its callback */
            e->weakref = ref;
            e->armed = true;
        }
        if (cb)
            P.DecRef(cb);
        if (index)
            P.DecRef(index);
    }
    if (filename)
        P.DecRef(filename);
}

/* ---- the audit hook ---------------------------------------------------------------------- */

/* The interpreter's exit barrier (runtime/python/gil.h), registered at the program's first run,
 * import or exec event once the interpreter is up: long before a round needs a Python job, from
 * a thread that holds the GIL anyway. Tried once per interpreter. */
static void exit_barrier_early(void)
{
    static unsigned tried; /* the generation, plus one, of the interpreter it was tried in */
    unsigned gen = roundtrim_py_gil_generation() + 1;
    if (tried == gen || !P.IsInitialized() || !roundtrim_py_in_main_interpreter())
        return;
    tried = gen;
    struct roundtrim_py_err saved;
    enter(&saved);
    roundtrim_py_exit_barrier_add();
    leave(&saved);
}

enum event_kind { EV_OTHER, EV_EXEC, EV_IMPORT, EV_RUN, EV_CLEAR };

static enum event_kind classify(const char *event)
{
    switch (event[0]) {
    case 'e':
        return strcmp(event, "exec") == 0 ? EV_EXEC : EV_OTHER;
    case 'i':
        return strcmp(event, "import") == 0 ? EV_IMPORT : EV_OTHER;
    case 'c':
        if (strncmp(event, "cpython.run_", 12) == 0)
            return EV_RUN;
        return strcmp(event, "cpython._PySys_ClearAuditHooks") == 0 ? EV_CLEAR : EV_OTHER;
    default:
        return EV_OTHER;
    }
}

static int audit_hook(const char *event, py_object *args, void *user)
{
    (void)user;
    enum event_kind kind = classify(event);
    if (kind == EV_CLEAR) {
        /* The interpreter is finalizing and drops its hooks: the entry it was given before it
         * started is not its to free. */
        __atomic_store_n(&hook_live, false, __ATOMIC_RELAXED);
        roundtrim_py_audit_unlink_early();
        return 0;
    }
    if (!__atomic_load_n(&hook_live, __ATOMIC_RELAXED))
        return 0;
    if (kind != EV_OTHER && !busy)
        exit_barrier_early();
    /* Any event may follow the def of a function of the main program; other events matter only
     * to modules being imported. */
    if (kind == EV_OTHER && !HOOKS.main_pending)
        return 0;
    if (kind != EV_EXEC && !HOOKS.pending)
        return 0;
    if (busy || !roundtrim_py_in_main_interpreter())
        return 0;
    struct roundtrim_py_err saved;
    enter(&saved);
    if (kind == EV_EXEC)
        watch_body(args);
    P.Err_Clear();
    if (HOOKS.pending)
        roundtrim_py_hook_attach_ready(kind == EV_OTHER);
    leave(&saved);
    return 0;
}

/* The library was loaded into a running interpreter (dlopen): hook from the main thread. */
static int late_start(void *unused)
{
    (void)unused;
    if (busy)
        return 0;
    struct roundtrim_py_err saved;
    enter(&saved);
    if (P.Sys_AddAuditHook(audit_hook, NULL) == 0)
        __atomic_store_n(&hook_live, true, __ATOMIC_RELAXED);
    roundtrim_py_exit_barrier_add();
    roundtrim_py_hook_attach_ready(false);
    leave(&saved);
    return 0;
}

void roundtrim_py_hook_audit_start(bool names_given)
{
    if (P.IsInitialized()) {
        if (P.AddPendingCall(late_start, NULL) != 0)
            roundtrim_warn("ROUNDTRIM_PY_HOOK: cannot reach the running interpreter; hooks off");
        return;
    }
    /* Allowed before Py_Initialize: the hook is kept in the runtime and sees the whole start. */
    if (roundtrim_py_audit_add_early(P.Sys_AddAuditHook, audit_hook) != 0) {
        if (names_given)
            roundtrim_warn("ROUNDTRIM_PY_HOOK: the interpreter refused an audit hook; hooks off");
        return;
    }
    hook_live = true;
}
