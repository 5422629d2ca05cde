/* What the dlsym hook asks the CUDA driver hooks. */
#ifndef ROUNDTRIM_SHIM_CUDA_HOOKS_H
#define ROUNDTRIM_SHIM_CUDA_HOOKS_H

/* For dlsym(handle, name) with a real handle and a name that starts with "cu" and an upper-case
 * letter, called from code at address caller: our wrapper when name is an entry point we wrap,
 * handle is the driver object this process loaded and the caller is not that driver itself, else
 * NULL (the caller then forwards the lookup untouched). */
void *roundtrim_cuda_dlsym_substitute(void *handle, const char *name, const void *caller);

#endif
