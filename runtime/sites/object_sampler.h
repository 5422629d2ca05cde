/* Allocation sites of small Python objects: objects of 512 bytes or less come from pymalloc's
 * arenas, not from malloc, so the malloc sampler never sees them. With sites on, the object
 * allocator (PyMem_SetAllocator's object domain) is wrapped once the interpreter runs: every
 * call is forwarded to the allocator that was in place, what it hands out is counted on a
 * countdown of its own, and the objects that cross it are sampled with their Python line. */
#ifndef ROUNDTRIM_RUNTIME_SITES_OBJECT_SAMPLER_H
#define ROUNDTRIM_RUNTIME_SITES_OBJECT_SAMPLER_H

/* Worker, after a round's sites record: wraps the object allocator when that is still to do
 * and can be done (with a short wait for the GIL; tried again after the next round if the GIL
 * was not had). Never on the process's way out. */
void roundtrim_python_objects_attach(void);

/* NULL once the object allocator is wrapped, else why not: "not_yet" (no round ended with the
 * interpreter running yet), "not_python", the reason Python frames are not read, "python_api"
 * (the allocator functions are missing), "malloc" (objects come from malloc, whose sampler
 * sees them: PYTHONMALLOC=malloc), "allocator_custom" (another tool's allocator is in place,
 * tracemalloc's for one: wrapping it would be undone by its removal). */
const char *roundtrim_python_objects_skipped(void);

#endif
