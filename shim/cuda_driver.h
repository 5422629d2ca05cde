/* The bridge from roundtrim to the real CUDA driver, and what the dlsym hook asks the CUDA hooks.
 */
#ifndef ROUNDTRIM_SHIM_CUDA_DRIVER_H
#define ROUNDTRIM_SHIM_CUDA_DRIVER_H

/* A driver entry point by its exported name ("cuMemPoolTrimTo"), looked up in the driver library
 * the process itself loaded; NULL when libcuda.so.1 is not loaded. Never loads or initialises the
 * driver. */
void *roundtrim_cuda_driver_sym(const char *name);

/* For dlsym(handle, name) with a real handle and a name that starts with "cu" and an upper-case
 * letter, called from code at address caller: our wrapper when name is an entry point we wrap,
 * handle is the driver object this process loaded and the caller is not that driver itself, else
 * NULL (the caller then forwards the lookup untouched). */
void *roundtrim_cuda_dlsym_substitute(void *handle, const char *name, const void *caller);

/* The real dlsym (resolved lazily with dlvsym); NULL while it cannot be resolved. */
void *(*roundtrim_real_dlsym(void))(void *, const char *);

#endif
