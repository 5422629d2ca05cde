/* What keeps a growing Python process's memory: the holder search (runtime/python/
 * holder_search.py, run inside the interpreter) walks the program's objects from roots a person
 * knows, a bounded number of objects per round with the GIL held, and names the containers
 * whose contents grew in each of its last walks (runtime/output/holders_record.c writes them
 * when a walk ends). */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_HOLDERS_H
#define ROUNDTRIM_RUNTIME_PYTHON_HOLDERS_H

#include <stdbool.h>
#include <stdint.h>

#define ROUNDTRIM_HOLDERS_MAX 5
/* The most GIL the search holds over the process's life: 10 s, 5,000 rounds at its most a
 * round (2 ms). */
#define ROUNDTRIM_HOLDERS_GIL_TOTAL_US (10u * 1000u * 1000u)

struct roundtrim_holder {
    char path[256], type[32];
    uint64_t length, milli_items_per_round, bytes_per_round;
};

/* A walk that ended: what it looked at, what it cost, what it found (largest first). */
struct roundtrim_holders_walk {
    uint64_t from_round, objects, gil_us, steps;
    int count;
    struct roundtrim_holder holder[ROUNDTRIM_HOLDERS_MAX];
};

/* Worker, once a round while the search is due (the caller's verdict: a leak): walks on
 * for the round's share of GIL time, until the search has held the GIL for
 * ROUNDTRIM_HOLDERS_GIL_TOTAL_US in all (then no more steps: its last holders stand). True when
 * a walk ended, *out then filled. */
bool roundtrim_python_holders_step(uint64_t round, struct roundtrim_holders_walk *out);

/* Worker, in the program's first rounds: makes the search's function in the interpreter, so
 * that what it keeps (its code, some 100-200 KiB of the interpreter's small objects) is part of
 * the program's start, not a step in the rounds a diagnosis compares. True once done (or
 * failed for good); false while no interpreter runs yet. */
bool roundtrim_python_holders_prepare(void);

/* The GIL the search's steps held, and how many steps ran, since the previous call (worker,
 * once per round record: a round's step runs after its record, and is in the next one). */
void roundtrim_python_holders_cost_take(uint64_t *gil_us, uint64_t *steps);

/* In a fork child: the parent's walk is not the child's. */
void roundtrim_python_holders_fork_child(void);

#endif
