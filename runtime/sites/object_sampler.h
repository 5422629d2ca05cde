/* Allocation sites of small Python objects: objects of 512 bytes or less come from pymalloc's
 * arenas, not from malloc, so the malloc sampler never sees them. With sites on, the object
 * allocator (PyMem_SetAllocator's object domain) is wrapped once the interpreter runs: every
 * call is forwarded to the allocator that was in place, what it hands out is counted on a
 * countdown of its own, and the objects that cross it are sampled with their Python line. */
#ifndef ROUNDTRIM_RUNTIME_SITES_OBJECT_SAMPLER_H
#define ROUNDTRIM_RUNTIME_SITES_OBJECT_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

/* Worker, after a round's sites record: wraps the object allocator when that is still to do
 * and can be done (with a short wait for the GIL; tried again after the next round if the GIL
 * was not had); once wrapped, checks that the allocator's calls still reach the wrapper (a tool
 * may have put its own allocator in place, calling the one it saved before ours) and wraps
 * again on top when they do not. Never on the process's way out. */
void roundtrim_python_objects_attach(void);

/* Whether a sample taken by wrapper number `wrapper` (0: malloc's) counts: only the newest
 * wrapper's, while objects are counted at all. */
bool roundtrim_python_object_sample_counts(uint32_t wrapper);

/* The round from which small objects are counted (the newest wrapper's first), 0 while they are
 * not. */
uint64_t roundtrim_python_objects_since(void);

/* RT_SKIP_NONE once the object allocator is wrapped, else why not: not_yet (no round ended
 * with the interpreter running yet), no_python, the reason Python frames are not read,
 * python_api (the allocator functions are missing), malloc (objects come from malloc, whose
 * sampler sees them: PYTHONMALLOC=malloc), allocator_custom (another tool's allocator is in
 * place, tracemalloc's for one: wrapping it would be undone by its removal), allocator_replaced
 * (tools put allocators of their own past ours, calling the ones they saved before it, more
 * times than there are wrappers). */
enum roundtrim_skip roundtrim_python_objects_skipped(void);

#endif
