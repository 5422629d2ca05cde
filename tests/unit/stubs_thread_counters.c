/* What runtime/alloc/thread_counters.c uses from the rest of the runtime, stood in for its tests:
 * the flag that marks allocations of the next allocator's own (next_alloc.c). */
#include "runtime/alloc/next_alloc.h"

__thread bool roundtrim_in_next_alloc __attribute__((tls_model("initial-exec")));
