#include "runtime/python/program_gc.h"

#include <stddef.h>
#include <string.h>

#include "runtime/python/api.h"
#include "runtime/python/gil.h"

#define P roundtrim_py

/* Full collections counted by the interpreter: at the last mark, and at the latest reading. */
static long seen;
static long latest = -1;
static bool baseline_taken; /* read and written with the GIL held */

/* gc.get_stats()[2]["collections"], when the program imported gc; -1 otherwise. */
static long full_collections(void)
{
    py_object *gc = roundtrim_py_sys_module("gc");
    if (!gc || !P.Sequence_GetItem)
        return -1;
    py_object *fn = P.Object_GetAttrString(gc, "get_stats");
    py_object *stats = fn ? P.Object_CallObject(fn, NULL) : NULL;
    py_object *oldest = stats ? P.Sequence_GetItem(stats, 2) : NULL;
    py_object *n = oldest ? P.Dict_GetItemString(oldest, "collections") : NULL; /* borrowed */
    long count = n ? P.Long_AsLong(n) : -1;
    if (oldest)
        P.DecRef(oldest);
    if (stats)
        P.DecRef(stats);
    if (fn)
        P.DecRef(fn);
    if (P.Err_Occurred())
        P.Err_Clear();
    return count;
}

static const char *read_job(struct roundtrim_py_result *out)
{
    long n = full_collections();
    if (n < 0)
        return "no_gc_module";
    out->count = (uint64_t)n;
    /* The first reading with no hook attached before it is the starting point: the collections
     * of startup and imports are not the program's cleanup of round 1. */
    if (!baseline_taken) {
        baseline_taken = true;
        if (n > seen)
            seen = n;
    }
    return NULL;
}

bool roundtrim_python_program_collected(const char **unreachable)
{
    struct roundtrim_py_result res;
    *unreachable = NULL;
    const char *why =
        roundtrim_py_with_gil(read_job, &res, ROUNDTRIM_PY_GIL_WAIT_MS, ROUNDTRIM_PY_GIL_WAIT_MS);
    if (!why) {
        latest = (long)res.count;
        return latest > seen;
    }
    latest = -1;
    if (strcmp(why, "no_gc_module") != 0)
        *unreachable = why;
    return false;
}

void roundtrim_python_gc_baseline(void)
{
    if (baseline_taken)
        return;
    baseline_taken = true;
    long n = full_collections();
    if (n > seen)
        seen = n;
}

void roundtrim_python_gc_mark(bool ran, const char *skipped)
{
    bool ours = ran || (skipped && strcmp(skipped, "job_timeout") == 0);
    if (latest >= 0)
        seen = latest + (ours ? 1 : 0);
}
