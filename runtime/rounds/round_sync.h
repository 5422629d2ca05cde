/* What the files of the round pipeline share: the lock that serialises rounds with the exit
 * path and the pressure cleanup, and whether the process is ending. Not for other layers. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_ROUND_SYNC_H
#define ROUNDTRIM_RUNTIME_ROUNDS_ROUND_SYNC_H

#include <stdbool.h>
#include <stdint.h>

/* round.c: the lock, and the rounds it records under it. */
void roundtrim_round_lock(void);
bool roundtrim_round_trylock(void);
void roundtrim_round_unlock(void);
/* Takes and records one queued boundary (lock held); false when none was queued. */
bool roundtrim_round_run_one_locked(void);
/* A boundary was taken from the queue and is being recorded. */
bool roundtrim_round_in_progress(void);
/* Rounds whose record the log took, merged ones included. */
uint64_t roundtrim_round_recorded(void);

/* round_exit.c: the exit path began; nothing is cleaned from then on. */
bool roundtrim_round_exiting(void);
/* The same, or this thread records rounds inside the exit, or the interpreter finalizes. */
bool roundtrim_round_process_ending(void);
/* This thread records rounds inside the exit path ... */
bool roundtrim_round_inline(void);
/* ... of _exit or exec, maybe in a signal handler: nothing that takes the loader's lock. */
bool roundtrim_round_inline_async(void);
void roundtrim_round_exit_fork_child(void);

/* round_sampling.c */
void roundtrim_round_sampling_round_done(void);
void roundtrim_round_sampling_fork_child(void);

#endif
