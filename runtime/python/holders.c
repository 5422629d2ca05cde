#include "runtime/python/holders.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "holder_search_py.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/core/clock.h"
#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/python/gil.h"

#define P roundtrim_py

/* The GIL a round's step may hold: no more than a twentieth of the last round, and no longer
 * than 2 ms, under the interpreter's own 5 ms switch interval: the program's threads wait for
 * it no longer than they wait for each other, and the rounds' counts stay where they fell. */
#define STEP_GIL_US_MAX 2000
#define STEP_GIL_US_MIN 500
#define OBJECTS_FIRST   2000
#define OBJECTS_MIN     200
#define OBJECTS_MAX     200000
#define GIL_WAIT_MS     100
#define RUN_WAIT_MS     1000

/* The search's function in the interpreter (a new reference, kept for the process's life), or
 * NULL before it was made; made_failed: it could not be made, and is not tried again. */
static py_object *step_fn;
static bool made_failed;
/* The interpreter step_fn belongs to (roundtrim_py_gil_generation): an embedder that ended it
 * and started another leaves it an object of a heap that is gone, never to be called or
 * released; the next interpreter gets a function of its own. */
static unsigned step_generation;

/* Under the GIL: forgets a function of an interpreter that ended. */
static void forget_old_interpreter(void)
{
    unsigned gen = roundtrim_py_gil_generation();
    if (gen != step_generation) {
        step_fn = NULL; /* not released: its interpreter is gone */
        made_failed = false;
        step_generation = gen;
    }
}

/* The job's input and output: written by the worker before a call and by the job, read by the
 * worker only after a call that returned in time (a job that outlives its wait refuses the next
 * calls until it has ended). */
static uint64_t job_round, job_objects;
static bool walk_ended;
static struct roundtrim_holders_walk result;

/* The worker's own. */
static uint64_t objects_per_step = OBJECTS_FIRST;
static uint64_t walk_gil_us, walk_steps, walk_first_round;
static uint64_t total_gil_us;            /* over the process's life (a fork child's own) */
static uint64_t cost_gil_us, cost_steps; /* since the last roundtrim_python_holders_cost_take */
static uint64_t last_round_end_us;

/* builtins.exec(compile(source), namespace), then the factory called: the step function.
 * Compiled first: exec of a source string runs it as a program's own code is run, which clears
 * the interpreter's note of an unhandled KeyboardInterrupt, and a main script that ended by one
 * would then exit with 1 instead of dying by SIGINT. */
static py_object *make_step(void)
{
    py_object *builtins = roundtrim_py_sys_module("builtins");
    if (!builtins)
        return NULL;
    py_object *exec = P.Object_GetAttrString(builtins, "exec");
    py_object *compile = P.Object_GetAttrString(builtins, "compile");
    py_object *dict_type = P.Object_GetAttrString(builtins, "dict");
    py_object *ns = dict_type ? P.Object_CallObject(dict_type, NULL) : NULL;
    py_object *source = P.Unicode_FromString(roundtrim_holder_search_source);
    py_object *name = P.Unicode_FromString("<roundtrim holder search>");
    py_object *mode = P.Unicode_FromString("exec");
    py_object *code = compile && source && name && mode
                          ? P.Object_CallFunctionObjArgs(compile, source, name, mode, NULL)
                          : NULL;
    py_object *step = NULL;
    if (exec && ns && code) {
        py_object *done = P.Object_CallFunctionObjArgs(exec, code, ns, NULL);
        py_object *factory = done ? P.Dict_GetItemString(ns, "roundtrim_holder_search") : NULL;
        step = factory ? P.Object_CallObject(factory, NULL) : NULL;
        if (done)
            P.DecRef(done);
    }
    py_object *held[] = {code, mode, name, source, ns, dict_type, compile, exec};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        if (held[i])
            P.DecRef(held[i]); /* the step function's closure keeps what it needs */
    return step;
}

static void copy_text(char *out, size_t cap, py_object *s)
{
    const char *t = s && P.Unicode_AsUTF8 ? P.Unicode_AsUTF8(s) : NULL;
    snprintf(out, cap, "%s", t ? t : "?");
}

static uint64_t as_u64(py_object *o)
{
    long v = o ? P.Long_AsLong(o) : -1;
    return v > 0 ? (uint64_t)v : 0;
}

/* (walked, ((path, type, length, milli items a round, bytes a round), ...)) */
static void read_result(py_object *r)
{
    result.objects = as_u64(P.Tuple_GetItem(r, 0));
    py_object *list = P.Tuple_GetItem(r, 1);
    py_ssize n = list ? P.Tuple_Size(list) : 0;
    result.count = 0;
    for (py_ssize i = 0; i < n && result.count < ROUNDTRIM_HOLDERS_MAX; i++) {
        py_object *h = P.Tuple_GetItem(list, i);
        if (!h || P.Tuple_Size(h) != 5)
            continue;
        struct roundtrim_holder *f = &result.holder[result.count++];
        copy_text(f->path, sizeof f->path, P.Tuple_GetItem(h, 0));
        copy_text(f->type, sizeof f->type, P.Tuple_GetItem(h, 1));
        f->length = as_u64(P.Tuple_GetItem(h, 2));
        f->milli_items_per_round = as_u64(P.Tuple_GetItem(h, 3));
        f->bytes_per_round = as_u64(P.Tuple_GetItem(h, 4));
    }
}

/* What a job of the search does around its Python: its allocations and frees are roundtrim's,
 * not the program's (counted, they would read as the growth it looks for; it frees nothing of
 * the program's: it only reads, the GIL held, and drops its own references to objects the
 * program still holds); the objects it makes must not set off the interpreter's automatic
 * collection, which would free the program's garbage here, uncounted, in the middle of a round
 * (no other thread runs meanwhile, so the program never sees gc off); and an exception being
 * raised is put aside. */
struct own_work {
    struct roundtrim_thread_counters *counting;
    bool gc_was_on;
    struct roundtrim_py_err saved;
    uint64_t t0;
};

static void own_begin(struct own_work *w)
{
    w->counting = roundtrim_counting_pause();
    w->gc_was_on = P.GC_IsEnabled && P.GC_IsEnabled();
    if (w->gc_was_on)
        P.GC_Disable();
    roundtrim_py_err_save(&w->saved);
    w->t0 = roundtrim_now_us();
    forget_old_interpreter();
    if (!step_fn && !made_failed) {
        step_fn = make_step();
        made_failed = step_fn == NULL;
    }
}

static void own_end(struct own_work *w, struct roundtrim_py_result *out)
{
    out->us = roundtrim_now_us() - w->t0;
    roundtrim_py_err_restore(&w->saved);
    if (w->gc_was_on)
        P.GC_Enable();
    roundtrim_counting_resume(w->counting);
}

static enum roundtrim_skip prepare_job(struct roundtrim_py_result *out)
{
    struct own_work w;
    own_begin(&w);
    own_end(&w, out);
    return made_failed ? RT_SKIP_failed : RT_SKIP_NONE;
}

bool roundtrim_python_holders_prepare(void)
{
    if (step_fn || made_failed)
        return true;
    if (!roundtrim_python_present())
        return false;
    if (!P.hooks) { /* the search's API, 3.8 on (the round hooks' too): no search */
        made_failed = true;
        return true;
    }
    struct roundtrim_py_result res;
    roundtrim_py_with_gil(prepare_job, &res, GIL_WAIT_MS, RUN_WAIT_MS);
    return step_fn || made_failed;
}

static enum roundtrim_skip step_job(struct roundtrim_py_result *out)
{
    struct own_work w;
    own_begin(&w);
    enum roundtrim_skip why = RT_SKIP_NONE;
    walk_ended = false;
    if (!step_fn) {
        why = RT_SKIP_failed;
    } else {
        py_object *rnd = P.Long_FromLong((long)job_round);
        py_object *max = P.Long_FromLong((long)job_objects);
        py_object *r = rnd && max ? P.Object_CallFunctionObjArgs(step_fn, rnd, max, NULL) : NULL;
        if (!r)
            why = RT_SKIP_failed;
        else if (r != P.None) {
            walk_ended = true;
            read_result(r);
        }
        if (r)
            P.DecRef(r);
        if (max)
            P.DecRef(max);
        if (rnd)
            P.DecRef(rnd);
    }
    own_end(&w, out);
    return why;
}

/* The GIL a step may hold: the round's share, within its bounds. */
static uint64_t step_gil_us(void)
{
    uint64_t now = roundtrim_now_us();
    uint64_t round_us = last_round_end_us ? now - last_round_end_us : 0;
    last_round_end_us = now;
    uint64_t share = round_us / 20;
    return share < STEP_GIL_US_MIN   ? STEP_GIL_US_MIN
           : share > STEP_GIL_US_MAX ? STEP_GIL_US_MAX
                                     : share;
}

bool roundtrim_python_holders_step(uint64_t round, struct roundtrim_holders_walk *out)
{
    uint64_t budget_us = step_gil_us();
    if (made_failed || total_gil_us >= ROUNDTRIM_HOLDERS_GIL_TOTAL_US || !P.hooks ||
        !roundtrim_python_present())
        return false;
    job_round = round;
    job_objects = objects_per_step;
    struct roundtrim_py_result res;
    if (roundtrim_py_with_gil(step_job, &res, GIL_WAIT_MS, RUN_WAIT_MS))
        return false;
    if (walk_steps++ == 0)
        walk_first_round = round;
    walk_gil_us += res.us;
    total_gil_us += res.us;
    cost_gil_us += res.us;
    cost_steps++;
    /* The next step sized to what this one took: objects cost what the program's are. */
    uint64_t next = res.us ? objects_per_step * budget_us / res.us : objects_per_step * 2;
    next = next > objects_per_step * 2 ? objects_per_step * 2 : next;
    objects_per_step = next < OBJECTS_MIN ? OBJECTS_MIN : next > OBJECTS_MAX ? OBJECTS_MAX : next;
    if (!walk_ended)
        return false;
    *out = result;
    out->from_round = walk_first_round;
    out->gil_us = walk_gil_us;
    out->steps = walk_steps;
    walk_gil_us = walk_steps = 0;
    return true;
}

void roundtrim_python_holders_cost_take(uint64_t *gil_us, uint64_t *steps)
{
    *gil_us = cost_gil_us;
    *steps = cost_steps;
    cost_gil_us = cost_steps = 0;
}

void roundtrim_python_holders_fork_child(void)
{
    walk_gil_us = walk_steps = 0;
    total_gil_us = cost_gil_us = cost_steps = 0;
    last_round_end_us = 0;
}
