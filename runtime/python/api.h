/* The part of CPython's C API that roundtrim uses, found at run time with dlsym(RTLD_DEFAULT):
 * the library never links libpython and builds without Python.h. Only the stable layouts of
 * PyMethodDef, PyType_Slot and PyType_Spec are declared here; objects stay opaque. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_API_H
#define ROUNDTRIM_RUNTIME_PYTHON_API_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct roundtrim_py_object py_object;
typedef ssize_t py_ssize;

typedef py_object *(*py_cfunction)(py_object *self, py_object *arg);
typedef int (*py_audit_hook)(const char *event, py_object *args, void *user);

/* Layouts fixed by the limited API (unchanged since 3.2). */
struct py_method_def {
    const char *name;
    void *meth;
    int flags;
    const char *doc;
};
struct py_type_slot {
    int slot;
    void *pfunc;
};
struct py_type_spec {
    const char *name;
    int basicsize;
    int itemsize;
    unsigned int flags;
    struct py_type_slot *slots;
};

/* Constants of the limited API (typeslots.h, methodobject.h, object.h). */
#define PY_METH_NOARGS          0x0004
#define PY_METH_O               0x0008
#define PY_TPFLAGS_DEFAULT      (1UL << 18)
#define PY_TPFLAGS_NO_INSTANCES (1UL << 7) /* 3.10+; a bit left unused before */
#define PY_SLOT_TP_CALL         50
#define PY_SLOT_TP_DEALLOC      52
#define PY_SLOT_TP_DESCR_GET    54
#define PY_SLOT_TP_GETATTRO     58
#define PY_SLOT_TP_HASH         59
#define PY_SLOT_TP_METHODS      64
#define PY_SLOT_TP_REPR         66
#define PY_SLOT_TP_RICHCOMPARE  67
#define PY_SLOT_TP_SETATTRO     69
#define PY_SLOT_TP_FREE         74
#define PY_EQ                   2

struct roundtrim_py_api {
    bool found;       /* the symbols gc needs are all there and the version is 3.x */
    bool hooks;       /* audit hooks and everything the round hooks need (3.8 and later) */
    int major, minor; /* from Py_GetVersion() */

    int (*IsInitialized)(void);
    int (*IsFinalizing)(void); /* _Py_IsFinalizing before 3.13, Py_IsFinalizing after */
    const char *(*GetVersion)(void);
    int (*GILState_Ensure)(void);
    void (*GILState_Release)(int);
    void *(*GILState_GetThisThreadState)(void);
    void *(*ThreadState_Unchecked)(void); /* the attached thread state, or NULL; no checks */
    void *(*Eval_SaveThread)(void);
    void (*Eval_RestoreThread)(void *tstate);
    void *(*Eval_GetFrame)(void); /* the running Python frame of this thread, or NULL */
    py_object *(*Object_CallFunctionObjArgs)(py_object *callable, ...);
    py_ssize (*GC_Collect)(void);
    int (*GC_IsEnabled)(void); /* 3.10+ */
    int (*GC_Enable)(void);
    int (*GC_Disable)(void);
    py_ssize (*GetAllocatedBlocks)(void); /* pymalloc's allocated blocks, or NULL */
    int (*AddPendingCall)(int (*fn)(void *), void *arg);
    py_object *(*Import_ImportModule)(const char *name);
    void *(*InterpreterState_Main)(void);
    void *(*InterpreterState_Get)(void);
    int (*Sys_AddAuditHook)(py_audit_hook hook, void *user);
    py_object *(*Sys_GetObject)(const char *name);

    void (*IncRef)(py_object *);
    void (*DecRef)(py_object *);
    py_object *(*Dict_GetItemString)(py_object *dict, const char *key);
    int (*Dict_DelItemString)(py_object *dict, const char *key);
    py_object *(*Dict_GetItem)(py_object *dict, py_object *key);
    py_object *(*Mapping_GetItemString)(py_object *map, const char *key);
    py_object *(*Module_GetDict)(py_object *module);
    py_object *(*Object_GetAttrString)(py_object *o, const char *name);
    int (*Object_SetAttrString)(py_object *o, const char *name, py_object *v);
    py_object *(*Object_GetAttr)(py_object *o, py_object *name);
    int (*Object_SetAttr)(py_object *o, py_object *name, py_object *v);
    py_object *(*Object_GenericGetAttr)(py_object *o, py_object *name);
    py_object *(*Object_Call)(py_object *callable, py_object *args, py_object *kwargs);
    py_object *(*Object_CallObject)(py_object *callable, py_object *args);
    int (*Object_IsTrue)(py_object *o);
    int (*Object_IsInstance)(py_object *o, py_object *cls);
    int (*Object_RichCompareBool)(py_object *a, py_object *b, int op);
    py_object *(*Object_RichCompare)(py_object *a, py_object *b, int op);
    py_object *(*Object_Repr)(py_object *o);
    py_ssize (*Object_Hash)(py_object *o);
    int (*Callable_Check)(py_object *o);
    py_object *(*Tuple_GetItem)(py_object *t, py_ssize i);
    py_ssize (*Tuple_Size)(py_object *t);
    int (*Unicode_CompareWithASCIIString)(py_object *s, const char *ascii);
    py_object *(*Long_FromLong)(long v);
    long (*Long_AsLong)(py_object *o);
    py_object *(*CFunction_NewEx)(struct py_method_def *def, py_object *self, py_object *module);
    py_object *(*Weakref_NewRef)(py_object *o, py_object *callback);
    py_object *(*Method_New)(py_object *func, py_object *self);
    py_object *(*StaticMethod_New)(py_object *func);
    py_object *(*ClassMethod_New)(py_object *func);
    py_object *(*Type_FromSpec)(struct py_type_spec *spec);
    void *(*Type_GetSlot)(py_object *type, int slot);
    py_object *(*Type_GenericAlloc)(py_object *type, py_ssize nitems);
    void (*Err_Fetch)(py_object **type, py_object **value, py_object **tb);
    void (*Err_Restore)(py_object *type, py_object *value, py_object *tb);
    void (*Err_Clear)(void);
    py_object *(*Err_Occurred)(void);
    void (*Err_SetString)(py_object *type, const char *msg);
    py_object *(*Unicode_FromString)(const char *s);
    /* Optional (NULL when missing): framework versions and gc statistics. */
    const char *(*Unicode_AsUTF8)(py_object *s);
    py_object *(*Sequence_GetItem)(py_object *o, py_ssize i);
    py_object *(*Object_GenericGetDict)(py_object *o, void *context); /* the instance __dict__ */
    /* Optional: the object allocator, wrapped to sample small objects (object_sampler.c). */
    void (*Mem_GetAllocator)(int domain, void *allocator);
    void (*Mem_SetAllocator)(int domain, void *allocator);
    const char *(*Mem_GetCurrentAllocatorName)(void);

    /* Data symbols (addresses of static type objects and singletons). */
    py_object *None;
    py_object *NotImplemented;
    py_object **Exc_TypeError;
    py_object *Function_Type;
    py_object *Code_Type;
    py_object *Module_Type;
    py_object *Type_Type;
    py_object *StaticMethod_Type;
    py_object *ClassMethod_Type;
    py_object *BaseObject_Type;
    py_object *Unicode_Type; /* optional */
};

extern struct roundtrim_py_api roundtrim_py;

/* o with one reference more: a borrowed object handed out as a new reference. */
static inline py_object *roundtrim_py_new_ref(py_object *o)
{
    roundtrim_py.IncRef(o);
    return o;
}

/* isinstance(o, type); an error (left set) reads as false. */
static inline bool roundtrim_py_is_instance(py_object *o, py_object *type)
{
    return roundtrim_py.Object_IsInstance(o, type) == 1;
}

/* The exception being raised, put aside while roundtrim runs Python code of its own (GIL held). */
struct roundtrim_py_err {
    py_object *type, *value, *tb;
};

static inline void roundtrim_py_err_save(struct roundtrim_py_err *e)
{
    roundtrim_py.Err_Fetch(&e->type, &e->value, &e->tb);
}

/* Drops whatever roundtrim's own code raised and puts the saved exception back. */
static inline void roundtrim_py_err_restore(struct roundtrim_py_err *e)
{
    roundtrim_py.Err_Clear();
    roundtrim_py.Err_Restore(e->type, e->value, e->tb);
}

/* What sys.modules holds under name (borrowed), or NULL: the program's own modules, read only,
 * never an import. Call with the GIL held. */
py_object *roundtrim_py_sys_module(const char *name);

/* o.<name>() (new reference), or NULL with the error left set. Call with the GIL held. */
py_object *roundtrim_py_call_method(py_object *o, const char *name);

/* o.<name>() as a whole number of bytes; false on any error (cleared). GIL held. */
bool roundtrim_py_call_bytes(py_object *o, const char *name, uint64_t *bytes);

/* Looks the API up (again, when it was not found before: an embedder may load libpython late).
 * Returns roundtrim_py.found. Cheap once found. */
bool roundtrim_py_resolve(void);

/* Whether the interpreter can run Python code now: initialized and not finalizing. */
bool roundtrim_py_running(void);

/* The interpreter has begun to finalize (Py_IsFinalizing); false when there is none. Safe
 * without the GIL. */
bool roundtrim_py_finalizing(void);

/* Whether the calling thread holds the GIL now (false when unknown). */
bool roundtrim_py_caller_holds_gil(void);

/* Whether the calling thread runs in the main interpreter (call with the GIL held). */
bool roundtrim_py_in_main_interpreter(void);

#endif
