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

/* All collections (every generation) and the objects they found: at the last mark (ours
 * excluded) and at the latest reading. */
static long all_seen, found_seen, all_latest = -1, found_latest;

/* One generation's entry of gc.get_stats(); -1 when it cannot be read. */
static long stat_of(py_object *stats, int generation, const char *key)
{
    py_object *gen = P.Sequence_GetItem(stats, generation);
    py_object *n = gen ? P.Dict_GetItemString(gen, key) : NULL; /* borrowed */
    long v = n ? P.Long_AsLong(n) : -1;
    if (gen)
        P.DecRef(gen);
    return v;
}

/* gc.get_stats()[2]["collections"], when the program imported gc; -1 otherwise. With all and
 * found: the collections of every generation, and the objects they collected. */
static long full_collections_all(long *all, long *found)
{
    py_object *gc = roundtrim_py_sys_module("gc");
    if (!gc || !P.Sequence_GetItem)
        return -1;
    py_object *fn = P.Object_GetAttrString(gc, "get_stats");
    py_object *stats = fn ? P.Object_CallObject(fn, NULL) : NULL;
    long count = stats ? stat_of(stats, 2, "collections") : -1;
    long a = 0, f = 0;
    for (int g = 0; stats && g < 3 && a >= 0 && f >= 0; g++) {
        long c = stat_of(stats, g, "collections"), o = stat_of(stats, g, "collected");
        a = c < 0 ? -1 : a + c;
        f = o < 0 ? -1 : f + o;
    }
    if (all && found) {
        *all = a;
        *found = f;
    }
    if (stats)
        P.DecRef(stats);
    if (fn)
        P.DecRef(fn);
    if (P.Err_Occurred())
        P.Err_Clear();
    return count;
}

static enum roundtrim_skip read_job(struct roundtrim_py_result *out)
{
    long all = -1, found = 0;
    long n = full_collections_all(&all, &found);
    if (n < 0)
        return RT_SKIP_no_gc_module;
    out->count = (uint64_t)n;
    out->us = all < 0 ? UINT64_MAX : (uint64_t)all;
    out->bytes = found < 0 ? 0 : (uint64_t)found;
    /* The first reading with no hook attached before it is the starting point: the collections
     * of startup and imports are not the program's cleanup of round 1. */
    if (!baseline_taken) {
        baseline_taken = true;
        if (n > seen)
            seen = n;
        if (all >= 0) {
            all_seen = all;
            found_seen = found;
        }
    }
    return RT_SKIP_NONE;
}

/* The interpreter whose statistics seen and the others hold (roundtrim_py_gil_generation). */
static unsigned seen_generation;

/* An embedder ended the interpreter and started another: its counts start again from nothing,
 * and its startup's collections are not news either. */
static void forget_older_interpreter(void)
{
    unsigned gen = roundtrim_py_gil_generation();
    if (gen == seen_generation)
        return;
    seen_generation = gen;
    seen = all_seen = found_seen = 0;
    latest = all_latest = -1;
    baseline_taken = false;
}

bool roundtrim_python_program_collected(enum roundtrim_skip *unreachable)
{
    struct roundtrim_py_result res;
    *unreachable = RT_SKIP_NONE;
    forget_older_interpreter();
    enum roundtrim_skip why =
        roundtrim_py_with_gil(read_job, &res, ROUNDTRIM_PY_GIL_WAIT_MS, ROUNDTRIM_PY_GIL_WAIT_MS);
    if (!why) {
        latest = (long)res.count;
        all_latest = res.us == UINT64_MAX ? -1 : (long)res.us;
        found_latest = (long)res.bytes;
        return latest > seen;
    }
    latest = all_latest = -1;
    if (why != RT_SKIP_no_gc_module)
        *unreachable = why;
    return false;
}

bool roundtrim_python_gc_evidence(uint64_t *collected)
{
    if (all_latest < 0 || all_latest <= all_seen)
        return false;
    *collected = found_latest > found_seen ? (uint64_t)(found_latest - found_seen) : 0;
    return true;
}

void roundtrim_python_gc_baseline(void)
{
    if (baseline_taken)
        return;
    baseline_taken = true;
    long all = -1, found = 0;
    long n = full_collections_all(&all, &found);
    if (n > seen)
        seen = n;
    if (all >= 0) {
        all_seen = all;
        found_seen = found;
    }
}

void roundtrim_python_gc_mark(bool ran, enum roundtrim_skip skipped, uint64_t collected)
{
    bool ours = ran || skipped == RT_SKIP_job_timeout;
    /* Our own collection is no evidence of the program's garbage: it is counted into the
     * starting point (one a job still running adds is seen as the program's once). Without a
     * fresh reading (a pressure cleanup reads none), ours is added to the last one. */
    if (latest >= 0)
        seen = latest + (ours ? 1 : 0);
    else if (ours)
        seen++;
    if (all_latest >= 0) {
        all_seen = all_latest + (ours ? 1 : 0);
        found_seen = found_latest + (ran ? (long)collected : 0);
    } else if (ours) {
        all_seen++;
        found_seen += ran ? (long)collected : 0;
    }
    latest = all_latest = -1; /* a reading serves one cleanup */
}
