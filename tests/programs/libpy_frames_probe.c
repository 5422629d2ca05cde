/* Test-only: the Python frame reader (runtime/python/frames.c) in a library that Python loads
 * through ctypes, to read the calling thread's stack from known places in a script. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "runtime/python/api.h"
#include "runtime/python/frames.h"

#define MAX_FRAMES 32
#define MAX_NAME   512

/* Why frames cannot be read in this process, or "" when they can. */
const char *probe_unavailable(void)
{
    roundtrim_py_resolve();
    const char *why = roundtrim_skip_name(roundtrim_python_frames_unavailable());
    return why ? why : "";
}

/* The caller's frames as lines "file\tfunction\tline\n" in `buf`, innermost first, each name cut
 * to fit `name_len` bytes (NUL included); the number of frames, or -1 when a name was unreadable
 * or `buf` too small. */
int probe_stack(char *buf, size_t len, size_t name_len)
{
    struct roundtrim_py_frame frames[MAX_FRAMES];
    char file[MAX_NAME], func[MAX_NAME];
    roundtrim_py_resolve();
    int n = roundtrim_python_stack(frames, MAX_FRAMES);
    size_t at = 0;
    if (name_len > MAX_NAME)
        name_len = MAX_NAME;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (!roundtrim_python_code_names(frames[i].code, file, name_len, func, name_len))
            return -1;
        int w = snprintf(buf + at, len - at, "%s\t%s\t%d\n", file, func, frames[i].line);
        if (w < 0 || (size_t)w >= len - at)
            return -1;
        at += (size_t)w;
    }
    return n;
}

static void *native_thread(void *result)
{
    struct roundtrim_py_frame frames[MAX_FRAMES];
    *(int *)result = roundtrim_python_stack(frames, MAX_FRAMES);
    return NULL;
}

/* How many frames a thread that Python never saw reads while the caller holds the GIL. */
int probe_native_thread(void)
{
    pthread_t t;
    int n = -1;
    roundtrim_py_resolve();
    if (pthread_create(&t, NULL, native_thread, &n) != 0)
        return -2;
    pthread_join(t, NULL);
    return n;
}

/* Has CPython cache the UTF-8 form of a str (as PyUnicode_AsUTF8 does), so that the reader
 * meets both forms of a non-ASCII name. */
int probe_cache_utf8(py_object *s)
{
    roundtrim_py_resolve();
    return roundtrim_py.Unicode_AsUTF8 && roundtrim_py.Unicode_AsUTF8(s) ? 1 : 0;
}
