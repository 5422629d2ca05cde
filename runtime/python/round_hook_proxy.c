#include "runtime/python/round_hook_proxy.h"

#include <stdint.h>

#include "runtime/python/round_hook_call.h"

#define P roundtrim_py

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

bool roundtrim_py_hook_is_proxy(py_object *o)
{
    return proxy_type && roundtrim_py_is_instance(o, proxy_type);
}

static py_object *proxy_call(py_object *self, py_object *args, py_object *kwargs)
{
    py_object *target = fields(self)->target;
    if (!target) {
        P.Err_SetString(*P.Exc_TypeError, "roundtrim hook without a function");
        return NULL;
    }
    struct roundtrim_py_hook_call call;
    roundtrim_py_hook_call_begin(&call, fields(self)->entry, args, kwargs);
    py_object *result = P.Object_Call(target, args, kwargs);
    roundtrim_py_hook_call_end(&call);
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
    py_object *b = roundtrim_py_hook_is_proxy(other) ? fields(other)->target : other;
    if (!a || !b)
        return roundtrim_py_new_ref(P.NotImplemented);
    return P.Object_RichCompare(a, b, op);
}

static py_object *proxy_descr_get(py_object *self, py_object *obj, py_object *type)
{
    (void)type;
    if (!obj || obj == P.None || !fields(self)->binds)
        return roundtrim_py_new_ref(self);
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

py_object *roundtrim_py_hook_proxy_new(py_object *target, bool binds, size_t entry)
{
    if (!make_proxy_type())
        return NULL;
    py_object *self = P.Type_GenericAlloc(proxy_type, 0);
    if (!self)
        return NULL;
    fields(self)->target = roundtrim_py_new_ref(target);
    fields(self)->binds = binds;
    fields(self)->entry = entry;
    return self;
}
