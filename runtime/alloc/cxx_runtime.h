/* Where the operator new and delete a library's own calls would reach bare are, however and
 * whenever they were loaded.
 *
 * Bare, a library's reference to operator new binds to the first definition in the global scope
 * (the program, what was loaded with it, then what was opened RTLD_GLOBAL since), else in the
 * library's own scope (itself, then its DT_NEEDED dependencies breadth first). Preloaded,
 * roundtrim's definition comes first in the global scope, so every call arrives here and must go
 * on to what that library would have used:
 * - the first definition after roundtrim in the global scope (a preloaded allocator's, libstdc++
 *   linked with the program, an allocator's override object opened RTLD_GLOBAL later);
 * - else the one in the caller's own scope: a C++ extension opened RTLD_LOCAL (every one a Python
 *   program imports) brings libstdc++, or libc++ whose operator new, new handler and exception
 *   support live in libc++abi.so.1. Each library thus keeps its own runtime's semantics: a
 *   libc++ library's failed new throws libc++abi's std::bad_alloc even where a libstdc++ one is
 *   loaded too;
 * - else (a C program calling the symbols it looked up) the first libstdc++ or libc++abi loaded.
 * Symbols are read from the objects' own tables: no allocation that would count as the
 * program's, no message for dlerror.
 *
 * Lifetime: a library bound bare to a definition in another object outside its dependencies
 * makes the loader keep that object while the library is loaded. Nothing records that for a call
 * that went through roundtrim, so where the definition lies in an object loaded after the start
 * and reached through the global scope, roundtrim takes a loader reference on it (dlopen
 * RTLD_NOLOAD) for the calling library, released once that library is unloaded
 * (runtime/alloc/cxx_callers.h): the host's dlclose of such an allocator then leaves it mapped
 * while a library bound to it is loaded, as bare, rather than turning the next operator new into
 * a jump into nothing. Where a C++ runtime in the library's scope was loaded after that object,
 * the runtime's own references bound to it at load, and bare it stays as long as the runtime
 * (libstdc++: for good); so does the reference then. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_CXX_RUNTIME_H
#define ROUNDTRIM_RUNTIME_ALLOC_CXX_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

/* The most names a binding holds (the forms of new and delete and the runtime parts that the
 * fallbacks use). */
#define ROUNDTRIM_CXX_NAMES_MAX 24

/* Where one caller's calls go: op[i] for names[i] (NULL where the runtime lacks that one);
 * op[0] is operator new itself. */
struct roundtrim_cxx_binding {
    void *op[ROUNDTRIM_CXX_NAMES_MAX];
    bool counts_here; /* operator new is the next malloc's library's own: count its blocks */
};

/* Fills out with the definitions for calls from the object that maps caller and returns true
 * when names[0] was found (as above). *held: the loader reference taken for that library (NULL:
 * none needed), for the caller to dlclose once the library is gone. */
bool roundtrim_cxx_runtime_for_caller(const void *caller, const char *const names[], int count,
                                      struct roundtrim_cxx_binding *out, void **held);

/* Whether names[0] is defined after roundtrim in the global scope as loaded at the start: then
 * every caller binds to that definition, whatever is loaded later, and out is filled with it. */
bool roundtrim_cxx_runtime_for_everyone(const char *const names[], int count,
                                        struct roundtrim_cxx_binding *out);

/* Fills out with the first definitions found (the global scope after roundtrim, else the first
 * loaded libstdc++ or libc++abi) and returns true when names[0] was: what serves a caller that
 * roundtrim cannot place, whose object it holds loaded for good. */
bool roundtrim_cxx_runtime_find(const char *const names[], int count,
                                struct roundtrim_cxx_binding *out);

/* How many objects the loader has loaded so far (dl_iterate_phdr's count of additions): a
 * search that failed is worth repeating only once it grew. */
uint64_t roundtrim_loaded_objects_added(void);

#endif
