#include "runtime/python/hook.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy/framework_hooks.h"
#include "policy/hook_spec.h"
#include "policy/round_record.h"
#include "runtime/boundary/boundary.h"
#include "runtime/python/api.h"
#include "runtime/python/audit_entry.h"
#include "runtime/python/program_gc.h"
#include "runtime/core/settings.h"

#define P roundtrim_py

/* DROPPED: named something that is not there (or not a function); NOT_THIS_VERSION: a framework
 * row for other versions of the framework the process imported. */
enum entry_state { PENDING, ATTACHED, DROPPED, NOT_THIS_VERSION };

struct entry {
    struct roundtrim_hook_name name;
    char target[ROUNDTRIM_HOOK_TARGET_MAX]; /* "module:qualname", for records and warnings */
    const struct roundtrim_fw_hook *fw; /* the framework row, or NULL for a name the user gave */
    bool in_main; /* "__main__:...": the main program's own namespace, never "finished" */
    bool fw_seen; /* the framework's top-level package was imported */
    bool called;  /* the hooked function was called at least once (under the GIL) */
    bool marked;  /* a mark row: called, its test held, since the last round that took it */
    enum entry_state state;
    bool armed;         /* a weakref on the running module body waits for it to end */
    py_object *weakref; /* kept: dropping it from inside its own callback is not safe */
};

/* The names a user gave, then the framework table's rows. */
static struct entry entries[ROUNDTRIM_HOOK_SPEC_MAX + 32];
/* The start record's "py_hook_mode" (policy/hook_spec.h); NULL: nothing to say. */
static const char *hook_mode;
static size_t entry_count;
static unsigned pending_count;
static unsigned main_pending;
static bool hook_live;
/* Set while our hook code runs Python code, in whichever thread: any audit event, weakref
 * callback or attribute hook reached meanwhile is skipped instead of entering twice. The GIL
 * orders the check and the set. */
static bool busy;

/* Nesting of hooked calls on this thread: a hooked function called from another counts once,
 * when the outer one returns. */
static __thread unsigned hook_depth;

static void warn_runtime(const struct entry *e, const char *why)
{
    char line[400];
    roundtrim_hook_spec_warning(line, sizeof line, e->target, strlen(e->target), why);
    roundtrim_warn(line);
}

/* ---- the proxy type ---------------------------------------------------------------------- */

struct proxy_fields {
    py_object *target;
    bool binds;   /* the target is a Python function: it binds to instances as a method */
    size_t entry; /* the entry that hooked it */
};

static py_object *proxy_type;
static void *proxy_free;
static size_t header_bytes; /* size of the object header of this build (object.__basicsize__) */

static struct proxy_fields *fields(py_object *self)
{
    return (struct proxy_fields *)((char *)self + header_bytes);
}

static bool is_proxy(py_object *o)
{
    return proxy_type && P.Object_IsInstance(o, proxy_type) == 1;
}

static py_object *new_ref(py_object *o)
{
    P.IncRef(o);
    return o;
}

/* A per-message, server-setup or mark row never ends a round (nor do the hooked calls inside
 * it). A client row of a framework whose server side was set up in this process (a single-process
 * simulation) leaves the rounds to the server's aggregation. */
static bool counts_as_round(const struct entry *e)
{
    if (e->fw && (e->fw->role == RT_FW_PER_MESSAGE || e->fw->role == RT_FW_SERVER_SETUP ||
                  e->fw->role == RT_FW_MARK))
        return false;
    if (!e->fw || !e->fw->yields_to_server)
        return true;
    for (size_t i = 0; i < entry_count; i++) {
        const struct entry *o = &entries[i];
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
    for (size_t i = 0; i < entry_count; i++) {
        struct entry *o = &entries[i];
        if (o->marked && strcmp(o->fw->framework, framework) == 0) {
            o->marked = false;
            found = true;
        }
    }
    return found;
}

/* Whether the return of a hooked call ends a round (its test, if any, held before the call). */
static bool ends_round(struct entry *e)
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
    py_object *et, *ev, *etb;
    P.Err_Fetch(&et, &ev, &etb);
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
    if (obj && P.Object_IsInstance(obj, P.Unicode_Type) == 1) {
        const char *text = P.Unicode_AsUTF8(obj);
        holds = text && roundtrim_fw_word_matches(text, t->word);
    }
    if (obj)
        P.DecRef(obj);
    P.Err_Clear();
    P.Err_Restore(et, ev, etb);
    return holds;
}

static py_object *proxy_call(py_object *self, py_object *args, py_object *kwargs)
{
    py_object *target = fields(self)->target;
    if (!target) {
        P.Err_SetString(*P.Exc_TypeError, "roundtrim hook without a function");
        return NULL;
    }
    size_t i = fields(self)->entry;
    struct entry *e = i < entry_count ? &entries[i] : NULL;
    bool passes = !e || !e->fw || !e->fw->when || test_holds(e->fw->when, args, kwargs);
    /* Marked before the call: a thread that sees what the call stored sees the mark too. */
    if (passes && e && e->fw && e->fw->role == RT_FW_MARK)
        e->marked = true;
    hook_depth++;
    py_object *result = P.Object_Call(target, args, kwargs);
    hook_depth--;
    /* Plain C, no Python API: the exception of a failed call stays set and untouched. */
    if (e)
        e->called = true;
    if (hook_depth == 0 && passes && e && ends_round(e)) {
        roundtrim_boundary_labelled(ROUNDTRIM_SRC_PYTHON, e->target);
    }
    return result;
}

/* Attributes the proxy answers itself; everything else is the function's. */
static bool own_attribute(py_object *name)
{
    static const char *const own[] = {"__call__", "__get__", "__reduce__", "__reduce_ex__"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        if (P.Unicode_CompareWithASCIIString(name, own[i]) == 0)
            return true;
    }
    return false;
}

static py_object *proxy_getattro(py_object *self, py_object *name)
{
    py_object *target = fields(self)->target;
    if (!target || own_attribute(name))
        return P.Object_GenericGetAttr(self, name);
    /* __class__ too: isinstance(proxy, types.FunctionType) and inspect.isfunction hold. */
    return P.Object_GetAttr(target, name);
}

static int proxy_setattro(py_object *self, py_object *name, py_object *value)
{
    py_object *target = fields(self)->target;
    if (!target) {
        P.Err_SetString(*P.Exc_TypeError, "roundtrim hook without a function");
        return -1;
    }
    return P.Object_SetAttr(target, name, value);
}

static py_object *proxy_repr(py_object *self)
{
    py_object *target = fields(self)->target;
    return target ? P.Object_Repr(target) : P.Unicode_FromString("<roundtrim hook>");
}

static py_ssize proxy_hash(py_object *self)
{
    py_object *target = fields(self)->target;
    return target ? P.Object_Hash(target) : (py_ssize)((uintptr_t)self >> 4);
}

static py_object *proxy_richcompare(py_object *self, py_object *other, int op)
{
    py_object *a = fields(self)->target;
    py_object *b = is_proxy(other) ? fields(other)->target : other;
    if (!a || !b)
        return new_ref(P.NotImplemented);
    return P.Object_RichCompare(a, b, op);
}

static py_object *proxy_descr_get(py_object *self, py_object *obj, py_object *type)
{
    (void)type;
    if (!obj || obj == P.None || !fields(self)->binds)
        return new_ref(self);
    return P.Method_New(self, obj);
}

/* Pickled by reference, like the function it stands for: pickle finds the proxy again under
 * the function's module and qualified name. */
static py_object *proxy_reduce(py_object *self, py_object *unused)
{
    (void)unused;
    py_object *target = fields(self)->target;
    if (!target) {
        P.Err_SetString(*P.Exc_TypeError, "roundtrim hook without a function");
        return NULL;
    }
    return P.Object_GetAttrString(target, "__qualname__");
}

static void proxy_dealloc(py_object *self)
{
    py_object *target = fields(self)->target;
    fields(self)->target = NULL;
    if (target)
        P.DecRef(target);
    ((void (*)(void *))proxy_free)(self);
    P.DecRef(proxy_type); /* instances of heap types own a reference to their type */
}

static struct py_method_def proxy_methods[] = {
    {"__reduce__", (void *)proxy_reduce, PY_METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static bool make_proxy_type(void)
{
    if (proxy_type)
        return true;
    py_object *basic = P.Object_GetAttrString(P.BaseObject_Type, "__basicsize__");
    long hdr = basic ? P.Long_AsLong(basic) : -1;
    if (basic)
        P.DecRef(basic);
    if (hdr <= 0 || hdr > 256)
        return false;
    header_bytes = ((size_t)hdr + sizeof(void *) - 1) & ~(sizeof(void *) - 1);
    static struct py_type_slot slots[] = {
        {PY_SLOT_TP_CALL, (void *)proxy_call},
        {PY_SLOT_TP_DEALLOC, (void *)proxy_dealloc},
        {PY_SLOT_TP_DESCR_GET, (void *)proxy_descr_get},
        {PY_SLOT_TP_GETATTRO, (void *)proxy_getattro},
        {PY_SLOT_TP_SETATTRO, (void *)proxy_setattro},
        {PY_SLOT_TP_REPR, (void *)proxy_repr},
        {PY_SLOT_TP_HASH, (void *)proxy_hash},
        {PY_SLOT_TP_RICHCOMPARE, (void *)proxy_richcompare},
        {PY_SLOT_TP_METHODS, (void *)proxy_methods},
        {0, NULL},
    };
    static struct py_type_spec spec = {"roundtrim.hook", 0, 0, 0, slots};
    spec.basicsize = (int)(header_bytes + sizeof(struct proxy_fields));
    spec.flags = PY_TPFLAGS_DEFAULT | (P.minor >= 10 ? PY_TPFLAGS_NO_INSTANCES : 0);
    py_object *type = P.Type_FromSpec(&spec);
    if (!type)
        return false;
    proxy_free = P.Type_GetSlot(type, PY_SLOT_TP_FREE);
    if (!proxy_free) {
        P.DecRef(type);
        return false;
    }
    proxy_type = type;
    return true;
}

static py_object *new_proxy(py_object *target, bool binds, size_t entry)
{
    if (!make_proxy_type())
        return NULL;
    py_object *self = P.Type_GenericAlloc(proxy_type, 0);
    if (!self)
        return NULL;
    fields(self)->target = new_ref(target);
    fields(self)->binds = binds;
    fields(self)->entry = entry;
    return self;
}

/* ---- finding and binding the names ------------------------------------------------------- */

static bool is_instance(py_object *o, py_object *type)
{
    return P.Object_IsInstance(o, type) == 1;
}

/* The module as sys.modules holds it now (borrowed), or NULL. Reads only. */
static py_object *loaded_module(const char *name)
{
    py_object *modules = P.Sys_GetObject("modules");
    py_object *m = modules ? P.Dict_GetItemString(modules, name) : NULL;
    return m && is_instance(m, P.Module_Type) ? m : NULL;
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
        return loaded_module(name) != NULL;
    }
    py_object *m = P.Dict_GetItem(modules, key);
    return m && is_instance(m, P.Module_Type);
}

/* One event's look at the frameworks: sys.modules read once, and each framework found absent
 * is not looked up again for its other rows. */
struct fw_look {
    py_object *modules;
    const char *absent[16];
    size_t n_absent;
};

static void fw_look_begin(struct fw_look *look)
{
    look->modules = P.Sys_GetObject("modules");
    look->n_absent = 0;
}

/* Whether the entry's framework (if it has one) has been imported. */
static bool fw_present(struct fw_look *look, struct entry *e)
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
    if (is_instance(owner, P.Module_Type)) {
        py_object *v = P.Dict_GetItemString(P.Module_GetDict(owner), name);
        return v ? new_ref(v) : NULL;
    }
    if (!is_instance(owner, P.Type_Type))
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

/* Binds the proxy for entries[entry] in place of `last` in `owner`. */
static enum attach_result bind_proxy(py_object *owner, const char *last, py_object *value,
                                     size_t entry, const char **why)
{
    bool in_class = is_instance(owner, P.Type_Type);
    bool is_static = in_class && is_instance(value, P.StaticMethod_Type);
    bool is_class = in_class && is_instance(value, P.ClassMethod_Type);
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
    bool function = is_instance(func, P.Function_Type);
    if (is_proxy(func)) {
        res = DONE; /* already hooked (an alias, or the module ran again) */
    } else if (in_class && !function) {
        *why = "not a function (property, builtin or other descriptor)";
    } else if (!P.Callable_Check(func)) {
        *why = "not callable";
    } else if (!(proxy = new_proxy(func, function, entry))) {
        *why = "cannot create the hook";
    } else {
        bound = is_static  ? P.StaticMethod_New(proxy)
                : is_class ? P.ClassMethod_New(proxy)
                           : new_ref(proxy);
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
    char path[sizeof entries[0].name.qualname];
    snprintf(path, sizeof path, "%s", qualname);
    py_object *owner = new_ref(module);
    char *part = path;
    for (char *dot; (dot = strchr(part, '.')); part = dot + 1) {
        *dot = 0;
        py_object *next = plain_lookup(owner, part);
        P.DecRef(owner);
        if (!next) {
            *why = "no such class";
            return missing_is_late ? NOT_YET : FAILED;
        }
        if (!is_instance(next, P.Type_Type)) {
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

static void settle(struct entry *e, enum attach_result res, const char *why)
{
    if (res == NOT_YET || e->state != PENDING)
        return;
    e->state = res == DONE ? ATTACHED : DROPPED;
    pending_count--;
    if (res == DONE)
        roundtrim_python_gc_baseline();
    if (e->in_main)
        main_pending--;
    /* A name the user gave that is not there is said at once; a framework row that is not
     * there is reported in the exit record. */
    if (res == FAILED && !e->fw)
        warn_runtime(e, why);
}

/* The framework's version as its top-level package says (__version__), or NULL while unknown.
 * A plain read of the package's namespace. */
static const char *framework_version(const char *framework)
{
    py_object *pkg = loaded_module(framework);
    py_object *v = pkg ? P.Dict_GetItemString(P.Module_GetDict(pkg), "__version__") : NULL;
    if (!v || !P.Unicode_AsUTF8 || !P.Unicode_Type || !is_instance(v, P.Unicode_Type))
        return NULL;
    const char *text = P.Unicode_AsUTF8(v);
    if (!text)
        P.Err_Clear();
    return text;
}

/* A framework row for other versions than the one imported leaves the table quietly. */
static bool other_version(struct entry *e)
{
    if (!e->fw || roundtrim_fw_hook_applies(e->fw, framework_version(e->fw->framework)))
        return false;
    e->state = NOT_THIS_VERSION;
    pending_count--;
    return true;
}

/* body_done: the module's body is known to have finished (its code object just died). */
static void try_attach(struct fw_look *look, struct entry *e, bool body_done)
{
    /* A framework's modules exist only once its top-level package does: one lookup per import
     * for the rows of a framework the process does not use. */
    if (!fw_present(look, e))
        return;
    /* Rows for other versions leave as soon as the version is known, imported or not. */
    if (e->fw_seen && e->state == PENDING && other_version(e))
        return;
    py_object *m = loaded_module(e->name.module);
    if (!m || (!e->in_main && !body_done && initializing(m)))
        return;
    const char *why = "failed";
    /* The main program's names appear as its body runs: not there yet is not an error. */
    enum attach_result res =
        attach_in(m, e->name.qualname, e->in_main, (size_t)(e - entries), &why);
    P.Err_Clear();
    if (res == DONE && e->state == ATTACHED)
        return; /* re-bound after a reload */
    settle(e, res, why);
}

/* Runs at every import and module body of the process. */
static void attach_ready(bool mains_only)
{
    struct fw_look look;
    fw_look_begin(&look);
    for (size_t i = 0; i < entry_count; i++) {
        struct entry *e = &entries[i];
        if (e->state == PENDING && (!mains_only || e->in_main))
            try_attach(&look, e, false);
    }
}

/* ---- when: the end of a module body ------------------------------------------------------ */

/* Called when the code object of a hooked module's body dies: exec_module has returned, the
 * import has not yet returned to the importer. */
static py_object *body_ended(py_object *index, py_object *weakref)
{
    (void)weakref;
    long i = P.Long_AsLong(index);
    if (i >= 0 && (size_t)i < entry_count) {
        struct entry *e = &entries[i];
        e->armed = false;
        if (!busy && (e->state == PENDING || e->state == ATTACHED)) {
            busy = true;
            py_object *t, *v, *tb;
            P.Err_Fetch(&t, &v, &tb);
            struct fw_look look;
            fw_look_begin(&look);
            try_attach(&look, e, true);
            P.Err_Clear();
            P.Err_Restore(t, v, tb);
            busy = false;
        }
    }
    P.Err_Clear();
    return new_ref(P.None);
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
    if (!code || !is_instance(code, P.Code_Type))
        return;
    py_object *filename = NULL;
    struct fw_look look;
    fw_look_begin(&look);
    for (size_t i = 0; i < entry_count; i++) {
        struct entry *e = &entries[i];
        if (e->in_main || e->state == DROPPED || e->state == NOT_THIS_VERSION || e->armed)
            continue;
        /* A framework's module can be running only once its top-level package exists. */
        if (!fw_present(&look, e))
            continue;
        py_object *m = loaded_module(e->name.module);
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
    /* Any event may follow the def of a function of the main program; other events matter only
     * to modules being imported. */
    if (kind == EV_OTHER && !main_pending)
        return 0;
    if (kind != EV_EXEC && !pending_count)
        return 0;
    if (busy || !roundtrim_py_in_main_interpreter())
        return 0;
    busy = true;
    py_object *t, *v, *tb;
    P.Err_Fetch(&t, &v, &tb);
    if (kind == EV_EXEC)
        watch_body(args);
    P.Err_Clear();
    if (pending_count)
        attach_ready(kind == EV_OTHER);
    P.Err_Clear();
    P.Err_Restore(t, v, tb);
    busy = false;
    return 0;
}

/* The library was loaded into a running interpreter (dlopen): hook from the main thread. */
static int late_start(void *unused)
{
    (void)unused;
    if (busy)
        return 0;
    busy = true;
    py_object *t, *v, *tb;
    P.Err_Fetch(&t, &v, &tb);
    if (P.Sys_AddAuditHook(audit_hook, NULL) == 0)
        __atomic_store_n(&hook_live, true, __ATOMIC_RELAXED);
    attach_ready(false);
    P.Err_Clear();
    P.Err_Restore(t, v, tb);
    busy = false;
    return 0;
}

static void warn_line(void *ctx, const char *line)
{
    (void)ctx;
    roundtrim_warn(line);
}

/* Adds an entry; false when the table is full. */
static bool add_entry(const char *module, const char *qualname, const struct roundtrim_fw_hook *fw)
{
    if (entry_count == sizeof entries / sizeof entries[0])
        return false;
    struct entry *e = &entries[entry_count++];
    snprintf(e->name.module, sizeof e->name.module, "%s", module);
    snprintf(e->name.qualname, sizeof e->name.qualname, "%s", qualname);
    snprintf(e->target, sizeof e->target, "%s:%s", module, qualname);
    e->fw = fw;
    e->in_main = strcmp(module, "__main__") == 0;
    e->state = PENDING;
    main_pending += e->in_main;
    return true;
}

/* The rows of the framework table not already named by the user. */
static void add_framework_rows(void)
{
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        const struct roundtrim_fw_hook *h = &roundtrim_fw_hooks[i];
        const char *colon = strchr(h->target, ':');
        char module[sizeof entries[0].name.module];
        snprintf(module, sizeof module, "%.*s", (int)(colon - h->target), h->target);
        bool named = false;
        for (size_t k = 0; k < entry_count && !named; k++)
            named = strcmp(entries[k].target, h->target) == 0;
        if (!named)
            add_entry(module, colon + 1, h);
    }
}

void roundtrim_py_hooks_init(const char *text)
{
    struct roundtrim_hook_spec spec;
    roundtrim_hook_spec_parse(text, &spec, warn_line, NULL);
    if (spec.off) {
        hook_mode = roundtrim_hook_spec_mode(&spec);
        return;
    }
    if (!spec.count && !spec.with_auto)
        return;
    if (!P.hooks) {
        /* The framework table alone stays quiet on an old Python: nobody asked for it. */
        if (spec.count)
            roundtrim_warn("ROUNDTRIM_PY_HOOK: this Python has no audit hooks (3.8 or later "
                           "needed); hooks off");
        return;
    }
    for (size_t i = 0; i < spec.count; i++)
        add_entry(spec.names[i].module, spec.names[i].qualname, NULL);
    if (spec.with_auto)
        add_framework_rows();
    if (entry_count)
        hook_mode = roundtrim_hook_spec_mode(&spec);
    pending_count = (unsigned)entry_count;
    if (P.IsInitialized()) {
        if (P.AddPendingCall(late_start, NULL) != 0)
            roundtrim_warn("ROUNDTRIM_PY_HOOK: cannot reach the running interpreter; hooks off");
        return;
    }
    /* Allowed before Py_Initialize: the hook is kept in the runtime and sees the whole start. */
    if (roundtrim_py_audit_add_early(P.Sys_AddAuditHook, audit_hook) != 0) {
        if (spec.count)
            roundtrim_warn("ROUNDTRIM_PY_HOOK: the interpreter refused an audit hook; hooks off");
        return;
    }
    hook_live = true;
}

/* ---- what the records say ---------------------------------------------------------------- */

void roundtrim_py_hooks_start_json(struct roundtrim_json *j)
{
    if (!hook_mode)
        return;
    roundtrim_json_str(j, "py_hook_mode", hook_mode);
    roundtrim_json_array_begin(j, "py_hooks");
    for (size_t i = 0; i < entry_count; i++)
        roundtrim_json_array_str(j, entries[i].target);
    roundtrim_json_array_end(j);
}

/* Whether an entry belongs in the exit record: every name the user gave; a framework row when
 * the process imported that framework and the row is for its version. */
static bool reported(const struct entry *e)
{
    return !e->fw || (e->fw_seen && e->state != NOT_THIS_VERSION);
}

static void exit_list(struct roundtrim_json *j, const char *key, int which)
{
    roundtrim_json_array_begin(j, key);
    for (size_t i = 0; i < entry_count; i++) {
        const struct entry *e = &entries[i];
        if (!reported(e))
            continue;
        /* 0 attached; 1 module never imported; 2 imported, but the name is not there (or not a
         * function). A name of the main program that never appeared is of the last kind. */
        int kind = e->state == ATTACHED                                         ? 0
                   : e->state == DROPPED || (e->state == PENDING && e->in_main) ? 2
                                                                                : 1;
        if (kind == which)
            roundtrim_json_array_str(j, e->target);
    }
    roundtrim_json_array_end(j);
}

void roundtrim_py_hooks_exit_json(struct roundtrim_json *j)
{
    bool any = false;
    for (size_t i = 0; i < entry_count && !any; i++)
        any = reported(&entries[i]);
    if (!any)
        return;
    exit_list(j, "hooks_attached", 0);
    exit_list(j, "hooks_not_imported", 1);
    exit_list(j, "hooks_missing", 2);
}
