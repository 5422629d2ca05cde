/* malloc_trim as the program calls it: counted, then forwarded, so that a cleanup round can see
 * that the program already gave its free heap back (NVFlare 2.7/2.8 trims by itself, through
 * ctypes.CDLL("libc.so.6").malloc_trim; so do hand-written loops). The count is kept in
 * runtime/alloc/allocator_ops.c. */
#ifndef ROUNDTRIM_SHIM_TRIM_HOOK_H
#define ROUNDTRIM_SHIM_TRIM_HOOK_H

/* For dlsym(handle, "malloc_trim") with a real handle: the counting malloc_trim when the lookup
 * lands on the next library's malloc_trim (glibc's), else NULL (forwarded untouched). */
void *roundtrim_trim_dlsym_substitute(void *handle);

#endif
