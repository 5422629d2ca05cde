/* Where the C++ runtime's own operator new and delete are, however and whenever it was loaded.
 *
 * A C++ library that a program opens with dlopen (every C++ extension a Python program imports)
 * brings libstdc++ with it, and unless it was opened with RTLD_GLOBAL, libstdc++ then sits in
 * that library's own scope: dlsym(RTLD_NEXT) does not reach it, yet the library's calls to
 * operator new reach roundtrim's (the preloaded definition comes first in the global scope).
 * So the search goes on past the global scope, to the C++ runtime wherever it is loaded (read
 * from its own symbol table: no allocation that would count as the program's), and a
 * search that found nothing is tried again once the loader has loaded more objects. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_CXX_RUNTIME_H
#define ROUNDTRIM_RUNTIME_ALLOC_CXX_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

/* Fills out[i] with the definition of names[i] (NULL where the runtime found lacks one) and
 * returns true when names[0] was found: first after roundtrim in the global scope (a preloaded
 * allocator's, or libstdc++ loaded with the program), else in a loaded libstdc++ or libc++. */
bool roundtrim_cxx_runtime_find(const char *const names[], void *out[], int count);

/* How many objects the loader has loaded so far (dl_iterate_phdr's count of additions): a
 * search that failed is worth repeating only once it grew. */
uint64_t roundtrim_loaded_objects_added(void);

#endif
