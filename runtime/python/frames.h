/* The calling thread's Python stack, read straight from CPython's frame structures (3.11 to
 * 3.13) without the GIL, an allocation, a lock or a call into Python code: for a sampler that
 * runs inside malloc on the allocating thread. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_FRAMES_H
#define ROUNDTRIM_RUNTIME_PYTHON_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/skip_reason.h"
#include "runtime/python/api.h"

struct roundtrim_py_frame {
    const void *code; /* the frame's code object (alive while the frame runs) */
    int line;         /* the line executing now; < 0 when the instruction has none */
    /* From the addresses of the code object's names: tells apart code objects that held the
     * same address in turn (one freed, another created there), whose names differ. */
    uint32_t names_key;
};

/* Picks the frame layout of the interpreter that `api` was resolved from (its version, its
 * build). Reads only static data, so it may run before the interpreter is initialized; called
 * whenever the Python API is found. */
void roundtrim_python_frames_init(const struct roundtrim_py_api *api);

/* RT_SKIP_NONE when stacks can be read in this process, else why not: no_python (no
 * interpreter found), python_version (a version whose layout is not known), free_threaded (a
 * build without the GIL), python_layout (the interpreter's objects are not laid out as its
 * version's are: a debug build with traced references, a changed patch release), python_api. */
enum roundtrim_skip roundtrim_python_frames_unavailable(void);

/* Fills `out` with the calling thread's Python frames, innermost first, and returns how many (at
 * most `max`): 0 when the calling thread has no thread state or runs no Python code. The thread
 * need not hold the GIL: one that released it inside C code called from Python (PyTorch's and
 * NumPy's operators, a ctypes call) still owns its frame chain, which stays put until it takes
 * the GIL back; only once the interpreter finalizes (when it frees other threads' states) does
 * such a thread read nothing. Frames still being set up and the interpreter's entry frames are
 * left out. Only reads memory (the thread's own state through pthread_getspecific): safe inside
 * malloc and in a signal handler. */
int roundtrim_python_stack(struct roundtrim_py_frame *out, int max);

/* The frames a sampled site keeps, innermost first, at most `max`: the innermost frame, then
 * the frames of the program's own code (runtime/python/code_origin.h), library frames between
 * them left out and a recursion's frames counted once, so that a site reaches the program's line
 * through any depth of library calls (copy.deepcopy's recursion, a framework's layers). Where no
 * frame is the program's, the innermost frames, as roundtrim_python_stack reads them. The same
 * conditions as roundtrim_python_stack. */
int roundtrim_python_stack_kept(struct roundtrim_py_frame *out, int max);

/* Copies the code object's file name (co_filename) and qualified name (co_qualname) as UTF-8,
 * NUL-terminated, truncated at a character boundary to fit. Valid while the code object is on
 * the calling thread's stack (right after roundtrim_python_stack, GIL held or not: the thread's
 * frames hold the code object, and the code object its names, which never change). Only reads
 * memory. False when `code` is not a code object or a name is not a readable string. */
bool roundtrim_python_code_names(const void *code, char *file, size_t file_len, char *func,
                                 size_t func_len);

#endif
