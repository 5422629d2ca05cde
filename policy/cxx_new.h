/* What C++'s operator new asks of the malloc family where no C++ runtime serves it
 * (shim/cxx_hooks.c): the standard's rules, apart from the hooks so that they can be tested. */
#ifndef ROUNDTRIM_POLICY_CXX_NEW_H
#define ROUNDTRIM_POLICY_CXX_NEW_H

#include <stddef.h>

/* The alignment to ask posix_memalign for when aligned new asks for `requested`: C++ allows any
 * power of two (LLVM asks for 1, 2 and 4), posix_memalign only power-of-two multiples of
 * sizeof(void *), and a larger power of two meets a smaller one. 0 for an alignment that is not a
 * power of two (the request fails). */
size_t roundtrim_cxx_memalign_alignment(size_t requested);

/* The bytes to ask for: operator new(0) must still return a distinct block. */
static inline size_t roundtrim_cxx_request_bytes(size_t n)
{
    return n ? n : 1;
}

#endif
