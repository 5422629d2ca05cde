#include "runtime/python/api.h"

#include <stddef.h>
#include <stdlib.h>

#include "policy/parse.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/python/arenas.h"
#include "runtime/python/frames.h"

struct roundtrim_py_api roundtrim_py __attribute__((visibility("hidden")));

/* The name is held in the row, not pointed at: a table of pointers costs every process's start
 * a relocation per row, Python or not. */
struct sym {
    char name[40];
    size_t offset; /* of the pointer in struct roundtrim_py_api */
};

#define SYM(field, name)                                                                           \
    {                                                                                              \
        name, offsetof(struct roundtrim_py_api, field)                                             \
    }

/* What gc and the torch cache release need. */
static const struct sym gc_syms[] = {
    SYM(IsInitialized, "Py_IsInitialized"),
    SYM(GetVersion, "Py_GetVersion"),
    SYM(GILState_Ensure, "PyGILState_Ensure"),
    SYM(GILState_Release, "PyGILState_Release"),
    SYM(GILState_GetThisThreadState, "PyGILState_GetThisThreadState"),
    SYM(GC_Collect, "PyGC_Collect"),
    SYM(Eval_SaveThread, "PyEval_SaveThread"),
    SYM(Eval_RestoreThread, "PyEval_RestoreThread"),
    SYM(Object_CallFunctionObjArgs, "PyObject_CallFunctionObjArgs"),
    SYM(Sys_GetObject, "PySys_GetObject"),
    SYM(DecRef, "Py_DecRef"),
    SYM(IncRef, "Py_IncRef"),
    SYM(Dict_GetItemString, "PyDict_GetItemString"),
    SYM(Object_GetAttrString, "PyObject_GetAttrString"),
    SYM(Object_CallObject, "PyObject_CallObject"),
    SYM(Object_IsTrue, "PyObject_IsTrue"),
    SYM(Err_Clear, "PyErr_Clear"),
    SYM(Err_Occurred, "PyErr_Occurred"),
};

/* What the round hooks need on top (all present since 3.8). */
static const struct sym hook_syms[] = {
    SYM(Sys_AddAuditHook, "PySys_AddAuditHook"),
    SYM(InterpreterState_Main, "PyInterpreterState_Main"),
    SYM(AddPendingCall, "Py_AddPendingCall"),
    SYM(Mapping_GetItemString, "PyMapping_GetItemString"),
    SYM(Dict_GetItem, "PyDict_GetItem"),
    SYM(Module_GetDict, "PyModule_GetDict"),
    SYM(Object_SetAttrString, "PyObject_SetAttrString"),
    SYM(Object_GetAttr, "PyObject_GetAttr"),
    SYM(Object_SetAttr, "PyObject_SetAttr"),
    SYM(Object_GenericGetAttr, "PyObject_GenericGetAttr"),
    SYM(Object_Call, "PyObject_Call"),
    SYM(Object_IsInstance, "PyObject_IsInstance"),
    SYM(Object_RichCompareBool, "PyObject_RichCompareBool"),
    SYM(Object_RichCompare, "PyObject_RichCompare"),
    SYM(Object_Repr, "PyObject_Repr"),
    SYM(Object_Hash, "PyObject_Hash"),
    SYM(Callable_Check, "PyCallable_Check"),
    SYM(Tuple_GetItem, "PyTuple_GetItem"),
    SYM(Tuple_Size, "PyTuple_Size"),
    SYM(Unicode_CompareWithASCIIString, "PyUnicode_CompareWithASCIIString"),
    SYM(Long_FromLong, "PyLong_FromLong"),
    SYM(Long_AsLong, "PyLong_AsLong"),
    SYM(CFunction_NewEx, "PyCFunction_NewEx"),
    SYM(Weakref_NewRef, "PyWeakref_NewRef"),
    SYM(Method_New, "PyMethod_New"),
    SYM(StaticMethod_New, "PyStaticMethod_New"),
    SYM(ClassMethod_New, "PyClassMethod_New"),
    SYM(Type_FromSpec, "PyType_FromSpec"),
    SYM(Type_GetSlot, "PyType_GetSlot"),
    SYM(Type_GenericAlloc, "PyType_GenericAlloc"),
    SYM(Err_Fetch, "PyErr_Fetch"),
    SYM(Err_Restore, "PyErr_Restore"),
    SYM(Err_SetString, "PyErr_SetString"),
    SYM(Unicode_FromString, "PyUnicode_FromString"),
    SYM(None, "_Py_NoneStruct"),
    SYM(NotImplemented, "_Py_NotImplementedStruct"),
    SYM(Exc_TypeError, "PyExc_TypeError"),
    SYM(Function_Type, "PyFunction_Type"),
    SYM(Code_Type, "PyCode_Type"),
    SYM(Module_Type, "PyModule_Type"),
    SYM(Type_Type, "PyType_Type"),
    SYM(StaticMethod_Type, "PyStaticMethod_Type"),
    SYM(ClassMethod_Type, "PyClassMethod_Type"),
    SYM(BaseObject_Type, "PyBaseObject_Type"),
};

static bool resolve_all(const struct sym *syms, size_t n)
{
    bool all = true;
    for (size_t i = 0; i < n; i++) {
        void *p = roundtrim_default_symbol(syms[i].name);
        *(void **)((char *)&roundtrim_py + syms[i].offset) = p;
        if (!p)
            all = false;
    }
    return all;
}

static void *optional(const char *a, const char *b)
{
    void *p = roundtrim_default_symbol(a);
    return p || !b ? p : roundtrim_default_symbol(b);
}

static void parse_version(const char *v, int *major, int *minor)
{
    long ma, mi;
    roundtrim_parse_version(v, &ma, &mi);
    *major = (int)ma;
    *minor = (int)mi;
}

py_object *roundtrim_py_sys_module(const char *name)
{
    py_object *modules = roundtrim_py.Sys_GetObject("modules");
    return modules ? roundtrim_py.Dict_GetItemString(modules, name) : NULL;
}

py_object *roundtrim_py_call_method(py_object *o, const char *name)
{
    py_object *fn = roundtrim_py.Object_GetAttrString(o, name);
    py_object *r = fn ? roundtrim_py.Object_CallObject(fn, NULL) : NULL;
    if (fn)
        roundtrim_py.DecRef(fn);
    return r;
}

bool roundtrim_py_call_bytes(py_object *o, const char *name, uint64_t *bytes)
{
    py_object *r = roundtrim_py_call_method(o, name);
    long long v = r && roundtrim_py.Long_AsLong ? (long long)roundtrim_py.Long_AsLong(r) : -1;
    if (r)
        roundtrim_py.DecRef(r);
    if (v < 0 || roundtrim_py.Err_Occurred()) {
        roundtrim_py.Err_Clear();
        return false;
    }
    *bytes = (uint64_t)v;
    return true;
}

bool roundtrim_py_resolve(void)
{
    if (roundtrim_py.found)
        return true;
    /* A process without Python answers the first probe, and only that one is made each time:
     * a failed dlsym allocates (the loader's tables answer it without dlsym where they can). */
    if (!roundtrim_default_symbol("Py_IsInitialized"))
        return false;
    if (!resolve_all(gc_syms, sizeof gc_syms / sizeof gc_syms[0]))
        return false;
    parse_version(roundtrim_py.GetVersion(), &roundtrim_py.major, &roundtrim_py.minor);
    if (roundtrim_py.major != 3)
        return false;
    *(void **)&roundtrim_py.IsFinalizing = optional("Py_IsFinalizing", "_Py_IsFinalizing");
    *(void **)&roundtrim_py.ThreadState_Unchecked =
        optional("PyThreadState_GetUnchecked", "_PyThreadState_UncheckedGet");
    *(void **)&roundtrim_py.GC_IsEnabled = optional("PyGC_IsEnabled", NULL);
    *(void **)&roundtrim_py.Eval_GetFrame = optional("PyEval_GetFrame", NULL);
    *(void **)&roundtrim_py.Import_ImportModule = optional("PyImport_ImportModule", NULL);
    *(void **)&roundtrim_py.Dict_DelItemString = optional("PyDict_DelItemString", NULL);
    *(void **)&roundtrim_py.GC_Enable = optional("PyGC_Enable", NULL);
    *(void **)&roundtrim_py.GC_Disable = optional("PyGC_Disable", NULL);
    *(void **)&roundtrim_py.GetAllocatedBlocks =
        optional("_Py_GetAllocatedBlocks", "_Py_GetGlobalAllocatedBlocks");
    *(void **)&roundtrim_py.InterpreterState_Get =
        optional("PyInterpreterState_Get", "_PyInterpreterState_Get");
    *(void **)&roundtrim_py.Unicode_AsUTF8 = optional("PyUnicode_AsUTF8", NULL);
    *(void **)&roundtrim_py.Sequence_GetItem = optional("PySequence_GetItem", NULL);
    *(void **)&roundtrim_py.Object_GenericGetDict = optional("PyObject_GenericGetDict", NULL);
    *(void **)&roundtrim_py.Mem_GetAllocator = optional("PyMem_GetAllocator", NULL);
    *(void **)&roundtrim_py.Mem_SetAllocator = optional("PyMem_SetAllocator", NULL);
    *(void **)&roundtrim_py.Mem_GetCurrentAllocatorName =
        optional("_PyMem_GetCurrentAllocatorName", NULL);
    roundtrim_py.Unicode_Type = optional("PyUnicode_Type", NULL);
    if (!roundtrim_py.GC_IsEnabled || !roundtrim_py.GC_Enable || !roundtrim_py.GC_Disable)
        roundtrim_py.GC_IsEnabled = NULL;
    roundtrim_py.hooks = roundtrim_py.minor >= 8 && roundtrim_py.InterpreterState_Get &&
                         resolve_all(hook_syms, sizeof hook_syms / sizeof hook_syms[0]);
    roundtrim_python_frames_init(&roundtrim_py);
    roundtrim_python_arenas_init(&roundtrim_py);
    __atomic_store_n(&roundtrim_py.found, true, __ATOMIC_RELEASE);
    return true;
}

bool roundtrim_py_running(void)
{
    if (!roundtrim_py.found || !roundtrim_py.IsInitialized())
        return false;
    return !(roundtrim_py.IsFinalizing && roundtrim_py.IsFinalizing());
}

bool roundtrim_py_finalizing(void)
{
    return roundtrim_py.found && roundtrim_py.IsFinalizing && roundtrim_py.IsFinalizing();
}

/* PyGILState_Check() cannot tell: it answers 1 for everyone once a sub-interpreter exists. The
 * thread's own state being the attached one can (before 3.12 the attached state is global). */
bool roundtrim_py_caller_holds_gil(void)
{
    if (!roundtrim_py.ThreadState_Unchecked)
        return false;
    void *mine = roundtrim_py.GILState_GetThisThreadState();
    return mine && mine == roundtrim_py.ThreadState_Unchecked();
}

bool roundtrim_py_in_main_interpreter(void)
{
    return roundtrim_py.InterpreterState_Get() == roundtrim_py.InterpreterState_Main();
}
