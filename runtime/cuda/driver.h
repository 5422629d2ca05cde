/* The real CUDA driver as roundtrim's own code reaches it: the library object the process loaded
 * and its entry points by exported name. Below both the driver hooks (shim/) and the device-memory
 * tracking (runtime/); never loads or initialises the driver. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_DRIVER_H
#define ROUNDTRIM_RUNTIME_CUDA_DRIVER_H

/* The driver library the process loaded (libcuda.so.1, or the object an entry point the hooks
 * resolved lives in); NULL while none is loaded. */
void *roundtrim_cuda_driver_handle(void);

/* Tells where one driver entry point lives, for a process that loaded the driver under another
 * name (the hooks call it with each real function they resolve). */
void roundtrim_cuda_driver_hint(void *entry);

/* A driver entry point by its exported name ("cuMemPoolTrimTo"); NULL when the driver is not
 * loaded. */
void *roundtrim_cuda_driver_sym(const char *name);

#endif
