/* How many dlclose calls have ended, and whether one is under way: what roundtrim remembers
 * about a loaded object by its address (which operator new a library's calls go to) holds only
 * while no object was unloaded since, because another one may then be mapped at the same place.
 * Reading the loader's own count (dl_iterate_phdr's dlpi_subs) takes its lock, too dear for every
 * operator new; the exported dlclose (shim/dlclose_hook.c) keeps this instead. Objects the C
 * library unloads by itself (NSS and iconv modules) are C code that never calls operator new. */
#ifndef ROUNDTRIM_RUNTIME_CORE_UNLOADS_H
#define ROUNDTRIM_RUNTIME_CORE_UNLOADS_H

#include <stdbool.h>
#include <stdint.h>

/* One word, so that a reader needs one load: the ended unloads times ROUNDTRIM_UNLOAD_ENDED, plus
 * how many are under way. */
#define ROUNDTRIM_UNLOAD_ENDED ((uint64_t)1 << 20)
extern uint64_t roundtrim_unloads __attribute__((visibility("hidden")));

/* Around each dlclose. */
void roundtrim_unload_begin(void);
void roundtrim_unload_end(void);

/* The word, when no unload is under way (false while one is). */
static inline bool roundtrim_unloads_settled(uint64_t *word)
{
    *word = __atomic_load_n(&roundtrim_unloads, __ATOMIC_ACQUIRE);
    return (*word & (ROUNDTRIM_UNLOAD_ENDED - 1)) == 0;
}

#endif
