/* What the library's constructor (shim/init.c) runs, in its order. Each looks up libc's own
 * functions that a hook forwards to where a lookup could not be made later: in a signal handler,
 * a vfork child or an exec, where dlsym is unsafe. Each is idempotent. */
#ifndef ROUNDTRIM_SHIM_START_H
#define ROUNDTRIM_SHIM_START_H

/* Gives the malloc and free fast paths their entries for the modes other than plain counting. */
void roundtrim_alloc_hooks_install(void);
void roundtrim_exec_hooks_resolve(void);
void roundtrim_exit_hooks_resolve(void);
void roundtrim_namespace_hooks_resolve(void);
void roundtrim_mmap_hooks_resolve(void);

#endif
