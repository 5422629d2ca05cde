#include "runtime/python/round_hook_bind.h"

#include <stdio.h>
#include <string.h>

#include "runtime/core/settings.h"
#include "runtime/python/round_hook_proxy.h"
#include "runtime/python/program_gc.h"

#define P     roundtrim_py
#define HOOKS roundtrim_py_hook_table

py_object *roundtrim_py_loaded_module(const char *name)
{
    py_object *m = roundtrim_py_sys_module(name);
    return m && roundtrim_py_is_instance(m, P.Module_Type) ? m : NULL;
}

/* Whether the framework's top-level package is in sys.modules (`modules`, may be NULL). Asked
 * at every import of the process until it is: the name's str object is made once and kept
 * (PyDict_GetItemString would make one per call). */
static bool framework_loaded(py_object *modules, const char *name)
{
    static struct {
        const char *name;
        py_object *key;
    } keys[32];
    static size_t n_keys;
    if (!modules)
        return false;
    py_object *key = NULL;
    for (size_t i = 0; i < n_keys && !key; i++)
        if (keys[i].name == name)
            key = keys[i].key;
    if (!key && n_keys < sizeof keys / sizeof keys[0] && (key = P.Unicode_FromString(name))) {
        keys[n_keys].name = name;
        keys[n_keys++].key = key;
    }
    if (!key) {
        P.Err_Clear();
        return roundtrim_py_loaded_module(name) != NULL;
    }
    py_object *m = P.Dict_GetItem(modules, key);
    return m && roundtrim_py_is_instance(m, P.Module_Type);
}

void roundtrim_py_fw_look_begin(struct roundtrim_py_fw_look *look)
{
    look->modules = P.Sys_GetObject("modules");
    look->n_absent = 0;
}

bool roundtrim_py_fw_present(struct roundtrim_py_fw_look *look, struct roundtrim_py_hook *e)
{
    if (!e->fw || e->fw_seen)
        return true;
    for (size_t k = 0; k < look->n_absent; k++)
        if (strcmp(look->absent[k], e->fw->framework) == 0)
            return false;
    e->fw_seen = framework_loaded(look->modules, e->fw->framework);
    if (!e->fw_seen && look->n_absent < sizeof look->absent / sizeof look->absent[0])
        look->absent[look->n_absent++] = e->fw->framework;
    return e->fw_seen;
}

/* True while importlib still runs the module's body (its spec says so). */
static bool initializing(py_object *module)
{
    py_object *spec = P.Dict_GetItemString(P.Module_GetDict(module), "__spec__");
    if (!spec || spec == P.None)
        return false;
    py_object *flag = P.Object_GetAttrString(spec, "_initializing");
    if (!flag) {
        P.Err_Clear();
        return false;
    }
    bool on = P.Object_IsTrue(flag) == 1;
    P.DecRef(flag);
    return on;
}

/* A name in a module's or class's own namespace (a class: along its MRO), without running
 * descriptors or module __getattr__ (which may import). New reference or NULL. */
static py_object *plain_lookup(py_object *owner, const char *name)
{
    if (roundtrim_py_is_instance(owner, P.Module_Type)) {
        py_object *v = P.Dict_GetItemString(P.Module_GetDict(owner), name);
        return v ? roundtrim_py_new_ref(v) : NULL;
    }
    if (!roundtrim_py_is_instance(owner, P.Type_Type))
        return NULL;
    py_object *mro = P.Object_GetAttrString(owner, "__mro__");
    if (!mro)
        return NULL;
    py_object *found = NULL;
    py_ssize n = P.Tuple_Size(mro);
    for (py_ssize i = 0; i < n && !found; i++) {
        py_object *ns = P.Object_GetAttrString(P.Tuple_GetItem(mro, i), "__dict__");
        if (!ns)
            break;
        found = P.Mapping_GetItemString(ns, name);
        P.DecRef(ns);
        if (!found)
            P.Err_Clear();
    }
    P.DecRef(mro);
    return found;
}

enum attach_result { NOT_YET, DONE, FAILED };

/* Binds the proxy for the table's entry `entry` in place of `last` in `owner`. */
static enum attach_result bind_proxy(py_object *owner, const char *last, py_object *value,
                                     size_t entry, const char **why)
{
    bool in_class = roundtrim_py_is_instance(owner, P.Type_Type);
    bool is_static = in_class && roundtrim_py_is_instance(value, P.StaticMethod_Type);
    bool is_class = in_class && roundtrim_py_is_instance(value, P.ClassMethod_Type);
    py_object *func = value;
    if (is_static || is_class) {
        func = P.Object_GetAttrString(value, "__func__");
        if (!func) {
            *why = "no __func__";
            return FAILED;
        }
    } else {
        P.IncRef(func);
    }
    enum attach_result res = FAILED;
    py_object *proxy = NULL, *bound = NULL;
    bool function = roundtrim_py_is_instance(func, P.Function_Type);
    if (roundtrim_py_hook_is_proxy(func)) {
        res = DONE; /* already hooked (an alias, or the module ran again) */
    } else if (in_class && !function) {
        *why = "not a function (property, builtin or other descriptor)";
    } else if (!P.Callable_Check(func)) {
        *why = "not callable";
    } else if (!(proxy = roundtrim_py_hook_proxy_new(func, function, entry))) {
        *why = "cannot create the hook";
    } else {
        bound = is_static  ? P.StaticMethod_New(proxy)
                : is_class ? P.ClassMethod_New(proxy)
                           : roundtrim_py_new_ref(proxy);
        if (bound && P.Object_SetAttrString(owner, last, bound) == 0)
            res = DONE;
        else
            *why = "cannot set the attribute";
    }
    if (bound)
        P.DecRef(bound);
    if (proxy)
        P.DecRef(proxy);
    P.DecRef(func);
    return res;
}

/* Resolves "A.B.name" from the module and binds the proxy. */
static enum attach_result attach_in(py_object *module, const char *qualname, bool missing_is_late,
                                    size_t entry, const char **why)
{
    char path[ROUNDTRIM_HOOK_NAME_MAX];
    snprintf(path, sizeof path, "%s", qualname);
    py_object *owner = roundtrim_py_new_ref(module);
    char *part = path;
    for (char *dot; (dot = strchr(part, '.')); part = dot + 1) {
        *dot = 0;
        py_object *next = plain_lookup(owner, part);
        P.DecRef(owner);
        if (!next) {
            *why = "no such class";
            return missing_is_late ? NOT_YET : FAILED;
        }
        if (!roundtrim_py_is_instance(next, P.Type_Type)) {
            P.DecRef(next);
            *why = "not a class";
            return FAILED;
        }
        owner = next;
    }
    py_object *value = plain_lookup(owner, part);
    enum attach_result res;
    if (!value) {
        *why = "no such attribute";
        res = missing_is_late ? NOT_YET : FAILED;
    } else {
        res = bind_proxy(owner, part, value, entry, why);
        P.DecRef(value);
    }
    P.DecRef(owner);
    return res;
}

static void settle(struct roundtrim_py_hook *e, enum attach_result res, const char *why)
{
    if (res == NOT_YET || e->state != RT_HOOK_PENDING)
        return;
    e->state = res == DONE ? RT_HOOK_ATTACHED : RT_HOOK_DROPPED;
    HOOKS.pending--;
    if (res == DONE)
        roundtrim_python_gc_baseline();
    if (e->in_main)
        HOOKS.main_pending--;
    /* A name the user gave that is not there is said at once; a framework row that is not
     * there is reported in the exit record. */
    if (res == FAILED && !e->fw) {
        char line[400];
        roundtrim_hook_spec_warning(line, sizeof line, e->target, strlen(e->target), why);
        roundtrim_warn(line);
    }
}

/* The framework's version as its top-level package says (__version__), or NULL while unknown.
 * A plain read of the package's namespace. */
static const char *framework_version(const char *framework)
{
    py_object *pkg = roundtrim_py_loaded_module(framework);
    py_object *v = pkg ? P.Dict_GetItemString(P.Module_GetDict(pkg), "__version__") : NULL;
    if (!v || !P.Unicode_AsUTF8 || !P.Unicode_Type || !roundtrim_py_is_instance(v, P.Unicode_Type))
        return NULL;
    const char *text = P.Unicode_AsUTF8(v);
    if (!text)
        P.Err_Clear();
    return text;
}

/* A framework row for other versions than the one imported leaves the table quietly. */
static bool other_version(struct roundtrim_py_hook *e)
{
    if (!e->fw || roundtrim_fw_hook_applies(e->fw, framework_version(e->fw->framework)))
        return false;
    e->state = RT_HOOK_NOT_THIS_VERSION;
    HOOKS.pending--;
    return true;
}

void roundtrim_py_hook_try_attach(struct roundtrim_py_fw_look *look, struct roundtrim_py_hook *e,
                                  bool body_done)
{
    /* A framework's modules exist only once its top-level package does: one lookup per import
     * for the rows of a framework the process does not use. */
    if (!roundtrim_py_fw_present(look, e))
        return;
    /* Rows for other versions leave as soon as the version is known, imported or not. */
    if (e->fw_seen && e->state == RT_HOOK_PENDING && other_version(e))
        return;
    py_object *m = roundtrim_py_loaded_module(e->name.module);
    if (!m || (!e->in_main && !body_done && initializing(m)))
        return;
    const char *why = "failed";
    /* The main program's names appear as its body runs: not there yet is not an error. */
    enum attach_result res =
        attach_in(m, e->name.qualname, e->in_main, (size_t)(e - HOOKS.entry), &why);
    P.Err_Clear();
    if (res == DONE && e->state == RT_HOOK_ATTACHED)
        return; /* re-bound after a reload */
    settle(e, res, why);
}

void roundtrim_py_hook_attach_ready(bool mains_only)
{
    struct roundtrim_py_fw_look look;
    roundtrim_py_fw_look_begin(&look);
    for (size_t i = 0; i < HOOKS.count; i++) {
        struct roundtrim_py_hook *e = &HOOKS.entry[i];
        if (e->state == RT_HOOK_PENDING && (!mains_only || e->in_main))
            roundtrim_py_hook_try_attach(&look, e, false);
    }
}
