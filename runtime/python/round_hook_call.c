#include "runtime/python/round_hook_call.h"

#include <stdio.h>
#include <string.h>

#include "runtime/boundary/boundary.h"

#define P     roundtrim_py
#define HOOKS roundtrim_py_hook_table

/* Nesting of hooked calls on this thread: a hooked function called from another counts once,
 * when the outer one returns. */
static __thread unsigned hook_depth;

/* A per-message, server-setup or mark row never ends a round (nor do the hooked calls inside
 * it). A client row of a framework whose server side was set up in this process (a single-process
 * simulation) leaves the rounds to the server's aggregation. */
static bool counts_as_round(const struct roundtrim_py_hook *e)
{
    if (e->fw && (e->fw->role == RT_FW_PER_MESSAGE || e->fw->role == RT_FW_SERVER_SETUP ||
                  e->fw->role == RT_FW_MARK))
        return false;
    if (!e->fw || !e->fw->yields_to_server)
        return true;
    for (size_t i = 0; i < HOOKS.count; i++) {
        const struct roundtrim_py_hook *o = &HOOKS.entry[i];
        if (o->fw && o->called && o->fw->role == RT_FW_SERVER_SETUP &&
            strcmp(o->fw->framework, e->fw->framework) == 0)
            return false;
    }
    return true;
}

/* A mark of the same framework since the last round that took one: taken now. Under the GIL. */
static bool take_mark(const char *framework)
{
    bool found = false;
    for (size_t i = 0; i < HOOKS.count; i++) {
        struct roundtrim_py_hook *o = &HOOKS.entry[i];
        if (o->marked && strcmp(o->fw->framework, framework) == 0) {
            o->marked = false;
            found = true;
        }
    }
    return found;
}

/* Whether the return of a hooked call ends a round (its test, if any, held before the call). */
static bool ends_round(struct roundtrim_py_hook *e)
{
    if (!counts_as_round(e))
        return false;
    return !e->fw || !e->fw->after_mark || take_mark(e->fw->framework);
}

/* obj.__dict__[name] as a new reference, or NULL; a plain read, no code of the program runs. */
static py_object *own_dict_item(py_object *obj, const char *name)
{
    py_object *dict = P.Object_GenericGetDict(obj, NULL);
    if (!dict)
        return NULL;
    py_object *item = P.Dict_GetItemString(dict, name);
    if (item)
        P.IncRef(item);
    P.DecRef(dict);
    return item;
}

/* The argument a test reads (borrowed), by position or by keyword, or NULL. */
static py_object *test_argument(const struct roundtrim_fw_test *t, py_object *args,
                                py_object *kwargs)
{
    if (args && (py_ssize)t->arg < P.Tuple_Size(args))
        return P.Tuple_GetItem(args, (py_ssize)t->arg);
    return kwargs && t->keyword ? P.Dict_GetItemString(kwargs, t->keyword) : NULL;
}

/* Whether a row's test holds for this call. Never raises: whatever failed reads as false. */
static bool test_holds(const struct roundtrim_fw_test *t, py_object *args, py_object *kwargs)
{
    if (!P.Object_GenericGetDict || !P.Unicode_AsUTF8 || !P.Unicode_Type)
        return false;
    struct roundtrim_py_err saved;
    roundtrim_py_err_save(&saved);
    py_object *obj = test_argument(t, args, kwargs);
    if (obj)
        P.IncRef(obj);
    char path[128];
    snprintf(path, sizeof path, "%s", t->path);
    for (char *name = path, *dot; obj && name; name = dot ? dot + 1 : NULL) {
        if ((dot = strchr(name, '.')))
            *dot = 0;
        py_object *next = own_dict_item(obj, name);
        P.DecRef(obj);
        obj = next;
    }
    bool holds = false;
    if (obj && roundtrim_py_is_instance(obj, P.Unicode_Type)) {
        const char *text = P.Unicode_AsUTF8(obj);
        holds = text && roundtrim_fw_word_matches(text, t->word);
    }
    if (obj)
        P.DecRef(obj);
    roundtrim_py_err_restore(&saved);
    return holds;
}

void roundtrim_py_hook_call_begin(struct roundtrim_py_hook_call *call, size_t entry,
                                  py_object *args, py_object *kwargs)
{
    struct roundtrim_py_hook *e = entry < HOOKS.count ? &HOOKS.entry[entry] : NULL;
    call->hook = e;
    call->passes = !e || !e->fw || !e->fw->when || test_holds(e->fw->when, args, kwargs);
    /* Marked before the call: a thread that sees what the call stored sees the mark too. */
    if (call->passes && e && e->fw && e->fw->role == RT_FW_MARK)
        e->marked = true;
    hook_depth++;
}

void roundtrim_py_hook_call_end(const struct roundtrim_py_hook_call *call)
{
    hook_depth--;
    struct roundtrim_py_hook *e = call->hook;
    if (e)
        e->called = true;
    if (hook_depth == 0 && call->passes && e && ends_round(e))
        roundtrim_boundary_labelled(ROUNDTRIM_SRC_PYTHON, e->target);
}
