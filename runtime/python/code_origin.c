#include "runtime/python/code_origin.h"

#include "policy/code_origin.h"
#include "runtime/core/hash.h"
#include "runtime/python/frames.h"

/* A direct-mapped table of one word a code object: its address (a multiple of 8 below 2^47)
 * above bit 20, 18 bits of its names_key (a code object created later at the address of a
 * freed one has other names), whether it is library code (bit 1) and whether the slot is
 * filled (bit 0). One word: threads read and fill slots without a lock, and a slot read while
 * another thread fills it is either the old word or the new one. A collision costs one more
 * look at the file name. */
#define ORIGIN_SLOTS   1024u
#define ORIGIN_LIBRARY 2u
static uint64_t origin[ORIGIN_SLOTS];

bool roundtrim_python_code_is_program(const void *code, uint32_t names_key)
{
    uint64_t tag =
        ((uint64_t)(uintptr_t)code >> 3) << 20 | (uint64_t)(names_key & 0x3ffff) << 2 | 1;
    size_t slot = (size_t)roundtrim_hash_mix(ROUNDTRIM_HASH_START, (uintptr_t)code) % ORIGIN_SLOTS;
    uint64_t word = __atomic_load_n(&origin[slot], __ATOMIC_RELAXED);
    if ((word & ~(uint64_t)ORIGIN_LIBRARY) == tag)
        return !(word & ORIGIN_LIBRARY);
    /* The file name is all the rule reads (a long one is cut, past the folders it looks at). */
    char file[512], function[8];
    bool library =
        !roundtrim_python_code_names(code, file, sizeof file, function, sizeof function) ||
        roundtrim_python_file_is_library(file);
    __atomic_store_n(&origin[slot], tag | (library ? ORIGIN_LIBRARY : 0), __ATOMIC_RELAXED);
    return !library;
}
