/* Test-only, preloaded into Python: every malloc reads the thread's Python
 * frames and names them, inside malloc, as an allocation sampler does (frames being set up,
 * threads starting and ending, the interpreter starting and finalizing). It counts what it read;
 * frames_malloc_stats() gives the counts to the program. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "runtime/python/api.h"
#include "runtime/python/frames.h"

extern void *__libc_malloc(size_t size);

#define EVERY      1
#define MAX_FRAMES 16

struct frames_malloc_stats {
    unsigned long samples;     /* mallocs that read the stack */
    unsigned long with_frames; /* ... and found Python frames */
    unsigned long frames;
    unsigned long unnamed; /* frames whose names could not be read */
    unsigned long bad_line;
    unsigned long marked; /* samples whose stack holds a function named `marker` */
};

static _Atomic unsigned long samples, with_frames, frames_read, unnamed, bad_line, marked;
static _Atomic int resolved; /* 0 not tried, 1 trying, 2 done */
static char marker[64];
static __thread unsigned countdown;
static __thread bool inside;

static void read_stack(void)
{
    struct roundtrim_py_frame frames[MAX_FRAMES];
    char file[256], func[128];
    int n = roundtrim_python_stack(frames, MAX_FRAMES);
    bool has_marker = false;
    samples++;
    if (n > 0)
        with_frames++;
    for (int i = 0; i < n; i++) {
        frames_read++;
        if (!roundtrim_python_code_names(frames[i].code, file, sizeof file, func, sizeof func))
            unnamed++;
        else if (marker[0] && strcmp(func, marker) == 0)
            has_marker = true;
        if (frames[i].line <= 0)
            bad_line++;
    }
    if (has_marker)
        marked++;
}

void *malloc(size_t size)
{
    if (!inside && ++countdown % EVERY == 0 && atomic_load(&resolved) == 2) {
        inside = true;
        read_stack();
        inside = false;
    }
    return __libc_malloc(size);
}

/* Finds the interpreter (from Python, once it runs: dlsym allocates) and names the function
 * whose samples are counted apart. */
void frames_malloc_start(const char *function)
{
    int idle = 0;
    strncpy(marker, function, sizeof marker - 1);
    if (atomic_compare_exchange_strong(&resolved, &idle, 1)) {
        roundtrim_py_resolve();
        atomic_store(&resolved, 2);
    }
}

const char *frames_malloc_unavailable(void)
{
    const char *why = roundtrim_skip_name(roundtrim_python_frames_unavailable());
    return why ? why : "";
}

void frames_malloc_stats(struct frames_malloc_stats *out)
{
    out->samples = samples;
    out->with_frames = with_frames;
    out->frames = frames_read;
    out->unnamed = unnamed;
    out->bad_line = bad_line;
    out->marked = marked;
}
