/* Device memory that grows round after round, for the diagnosis (the stand-in driver):
 *
 *   cuda_diag cache|steady|live [ROUNDS]
 *
 *   cache  allocates 16 MiB more each round from the default pool (stream-ordered) and frees
 *          it all: the pool keeps the memory reserved (cached), nothing stays in use
 *   steady allocates and frees the same 64 MiB each round from the default pool
 *   live   allocates 16 MiB with cuMemAlloc each round and keeps it (device memory in use)
 *
 * The driver is found with dlopen("libcuda.so.1") (LD_LIBRARY_PATH names the stand-in). Rounds
 * end with roundtrim_round_end() when roundtrim is preloaded. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/cuda/types.h"

#define MiB (1024ull * 1024ull)

void roundtrim_round_end(void) __attribute__((weak));

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "cuda_diag: no %s\n", name);
        exit(3);
    }
    return p;
}

static void check(const char *what, CUresult rc)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "cuda_diag: %s failed: %d\n", what, rc);
        exit(3);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "cache") != 0 && strcmp(argv[1], "steady") != 0 &&
                     strcmp(argv[1], "live") != 0)) {
        fprintf(stderr, "usage: cuda_diag cache|steady|live [ROUNDS]\n");
        return 2;
    }
    bool steady = strcmp(argv[1], "steady") == 0;
    bool cache = steady || strcmp(argv[1], "cache") == 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 12;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "cuda_diag: %s\n", dlerror());
        return 3;
    }
    CUresult (*init)(unsigned) = sym(h, "cuInit");
    CUresult (*device_get)(CUdevice *, int) = sym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = sym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*set_current)(CUcontext) = sym(h, "cuCtxSetCurrent");
    CUresult (*mem_alloc)(CUdeviceptr *, size_t) = sym(h, "cuMemAlloc_v2");
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream) = sym(h, "cuMemAllocAsync");
    CUresult (*free_async)(CUdeviceptr, CUstream) = sym(h, "cuMemFreeAsync");
    CUdevice dev;
    CUcontext ctx;
    check("cuInit", init(0));
    check("cuDeviceGet", device_get(&dev, 0));
    check("cuDevicePrimaryCtxRetain", retain(&ctx, dev));
    check("cuCtxSetCurrent", set_current(ctx));
    enum { MAX_PIECES = 64 };
    CUdeviceptr pieces[MAX_PIECES];
    for (int r = 1; r <= rounds; r++) {
        if (cache) {
            int n = steady ? 4 : r < MAX_PIECES ? r : MAX_PIECES;
            for (int i = 0; i < n; i++)
                check("cuMemAllocAsync", alloc_async(&pieces[i], 16 * MiB, 0));
            for (int i = 0; i < n; i++)
                check("cuMemFreeAsync", free_async(pieces[i], 0));
        } else {
            CUdeviceptr kept;
            check("cuMemAlloc", mem_alloc(&kept, 16 * MiB));
        }
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(30000);
    }
    printf("rounds=%d\n", rounds);
    return 0;
}
