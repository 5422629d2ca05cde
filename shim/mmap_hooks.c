/* mmap and munmap: forwarded as they are; the interpreter's own anonymous mappings (pymalloc's
 * arenas) are counted on the way (runtime/python/arenas.h). Until the constructor found libc's
 * functions, and wherever they are missing, the system calls are made directly: mmap may be
 * called by another library's constructor, a signal handler or a vfork child. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/core/export.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/python/arenas.h"
#include "shim/start.h"

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);

static mmap_fn real_mmap, real_mmap64;
static munmap_fn real_munmap;

void roundtrim_mmap_hooks_resolve(void)
{
    __atomic_store_n(&real_mmap, (mmap_fn)roundtrim_next_symbol("mmap"), __ATOMIC_RELEASE);
    __atomic_store_n(&real_mmap64, (mmap_fn)roundtrim_next_symbol("mmap64"), __ATOMIC_RELEASE);
    __atomic_store_n(&real_munmap, (munmap_fn)roundtrim_next_symbol("munmap"), __ATOMIC_RELEASE);
}

static inline bool anonymous_private(int flags)
{
    return (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE;
}

static inline void *mapped(mmap_fn fn, void *addr, size_t len, int prot, int flags, int fd,
                           off_t off, const void *caller)
{
    void *p = fn ? fn(addr, len, prot, flags, fd, off)
                 : (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && anonymous_private(flags))
        roundtrim_python_arena_note(caller, len, true);
    return p;
}

ROUNDTRIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mapped(__atomic_load_n(&real_mmap, __ATOMIC_ACQUIRE), addr, len, prot, flags, fd, off,
                  __builtin_return_address(0));
}

/* The same function on 64-bit systems; programs built with 64-bit file offsets call it by this
 * name (CPython does). */
ROUNDTRIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mapped(__atomic_load_n(&real_mmap64, __ATOMIC_ACQUIRE), addr, len, prot, flags, fd, off,
                  __builtin_return_address(0));
}

ROUNDTRIM_EXPORT int munmap(void *addr, size_t len)
{
    munmap_fn fn = __atomic_load_n(&real_munmap, __ATOMIC_ACQUIRE);
    int rc = fn ? fn(addr, len) : (int)syscall(SYS_munmap, addr, len);
    if (rc == 0)
        roundtrim_python_arena_note(__builtin_return_address(0), len, false);
    return rc;
}
