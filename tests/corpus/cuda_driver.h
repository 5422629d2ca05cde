/* The corpus's device programs: the driver (the stand-in, named by LD_LIBRARY_PATH) found with
 * dlopen, as PyTorch finds it, and a primary context made current. */
#ifndef ROUNDTRIM_CORPUS_CUDA_DRIVER_H
#define ROUNDTRIM_CORPUS_CUDA_DRIVER_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/cuda/types.h"

static void *driver_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "no %s\n", name);
        exit(3);
    }
    return p;
}

static void driver_ok(const char *what, CUresult rc)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, rc);
        exit(3);
    }
}

static void *driver_open(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        exit(3);
    }
    CUresult (*init)(unsigned) = driver_sym(h, "cuInit");
    CUresult (*device_get)(CUdevice *, int) = driver_sym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = driver_sym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*set_current)(CUcontext) = driver_sym(h, "cuCtxSetCurrent");
    CUdevice dev;
    CUcontext ctx;
    driver_ok("cuInit", init(0));
    driver_ok("cuDeviceGet", device_get(&dev, 0));
    driver_ok("cuDevicePrimaryCtxRetain", retain(&ctx, dev));
    driver_ok("cuCtxSetCurrent", set_current(ctx));
    return h;
}

#endif
