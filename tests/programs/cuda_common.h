/* Shared by the cuda_* test programs: the driver entry points they use (filled by each program the
 * way it reaches the driver), the round marker, and the scenario whose figures the tests check.
 *
 * Output lines (parsed by tests/integration/test_cuda.py):
 *   expect round=N alloc_calls=.. alloc_bytes=.. free_calls=.. free_bytes=.. live=.. peak=..
 *   meminfo round=N free=.. total=..          (the driver's view, taken just before the round end)
 *   reserved round=N bytes=..                 (default + created pool reserve before the round end)
 *   <name>=<value>                            (single facts: result codes, pointer checks) */
#ifndef ROUNDTRIM_TESTS_CUDA_COMMON_H
#define ROUNDTRIM_TESTS_CUDA_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/cuda/types.h"
#include "launcher_signal.h"

#define MiB (1024ull * 1024ull)

struct cu {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
    CUresult (*MemAllocManaged)(CUdeviceptr *, size_t, unsigned);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemAllocHost)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult (*MemPoolDestroy)(CUmemoryPool);
    CUresult (*MemPoolGetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
    CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
};

/* Lookup names of the fields, in order, for the dlsym and cuGetProcAddress programs. */
#define CU_FIELDS(X)                                                                               \
    X(Init, "cuInit", "cuInit")                                                                    \
    X(DeviceGet, "cuDeviceGet", "cuDeviceGet")                                                     \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain")              \
    X(CtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent")                                         \
    X(MemGetInfo, "cuMemGetInfo_v2", "cuMemGetInfo")                                               \
    X(MemAlloc, "cuMemAlloc_v2", "cuMemAlloc")                                                     \
    X(MemAllocPitch, "cuMemAllocPitch_v2", "cuMemAllocPitch")                                      \
    X(MemAllocManaged, "cuMemAllocManaged", "cuMemAllocManaged")                                   \
    X(MemFree, "cuMemFree_v2", "cuMemFree")                                                        \
    X(MemAllocAsync, "cuMemAllocAsync", "cuMemAllocAsync")                                         \
    X(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync")                 \
    X(MemFreeAsync, "cuMemFreeAsync", "cuMemFreeAsync")                                            \
    X(MemCreate, "cuMemCreate", "cuMemCreate")                                                     \
    X(MemRelease, "cuMemRelease", "cuMemRelease")                                                  \
    X(MemHostAlloc, "cuMemHostAlloc", "cuMemHostAlloc")                                            \
    X(MemAllocHost, "cuMemAllocHost_v2", "cuMemAllocHost")                                         \
    X(MemFreeHost, "cuMemFreeHost", "cuMemFreeHost")                                               \
    X(MemPoolCreate, "cuMemPoolCreate", "cuMemPoolCreate")                                         \
    X(MemPoolDestroy, "cuMemPoolDestroy", "cuMemPoolDestroy")                                      \
    X(MemPoolGetAttribute, "cuMemPoolGetAttribute", "cuMemPoolGetAttribute")                       \
    X(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool")           \
    X(StreamBeginCapture, "cuStreamBeginCapture_v2", "cuStreamBeginCapture")                       \
    X(StreamEndCapture, "cuStreamEndCapture", "cuStreamEndCapture")

__attribute__((unused)) static void check(const char *what, CUresult rc)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, rc);
        exit(3);
    }
}

/* The file name of the library p lies in ("none" when it is in none). */
__attribute__((unused)) static const char *lib_of(const void *p)
{
    Dl_info info;
    if (!p || !dladdr(p, &info) || !info.dli_fname)
        return "none";
    const char *base = strrchr(info.dli_fname, '/');
    return base ? base + 1 : info.dli_fname;
}

/* ---- rounds ---- */

static int rounds_done;

__attribute__((unused)) static long count_round_records(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long n = 0;
    char line[16384];
    while (fgets(line, sizeof line, f))
        if (strstr(line, "\"event\":\"round\"") || strstr(line, "\"event\": \"round\""))
            n++;
    fclose(f);
    return n;
}

__attribute__((unused)) static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Marks a round end through roundtrim when it is preloaded, and waits until its record is in the
 * log, so that the next round's traffic cannot leak into this one. Without roundtrim: no-op. */
__attribute__((unused)) static void round_end(void)
{
    void (*mark)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    rounds_done++;
    if (!mark)
        return;
    /* CUDA_ROUND_BY_SIGNAL: end the round with the round signal, as a launcher would, and go on
     * after 100 ms of idling, without waiting for the record. */
    if (getenv("CUDA_ROUND_BY_SIGNAL")) {
        signal_from_launcher(SIGUSR1);
        sleep_ms(100);
        return;
    }
    mark();
    const char *log = getenv("ROUNDTRIM_LOG");
    if (!log || !*log || strcmp(log, "stderr") == 0) {
        sleep_ms(300);
        return;
    }
    for (int i = 0; i < 2000 && count_round_records(log) < rounds_done; i++)
        sleep_ms(5);
}

/* ---- the scenario ---- */

struct expect {
    uint64_t alloc_calls, alloc_bytes, free_calls, free_bytes, live, peak;
};

__attribute__((unused)) static void expect_alloc(struct expect *e, uint64_t bytes)
{
    e->alloc_calls++;
    e->alloc_bytes += bytes;
    e->live += bytes;
    if (e->live > e->peak)
        e->peak = e->live;
}

__attribute__((unused)) static void expect_free(struct expect *e, uint64_t bytes)
{
    e->free_calls++;
    e->free_bytes += bytes;
    e->live -= bytes;
}

__attribute__((unused)) static void expect_print(struct expect *e)
{
    printf("expect round=%d alloc_calls=%llu alloc_bytes=%llu free_calls=%llu free_bytes=%llu "
           "live=%llu peak=%llu\n",
           rounds_done + 1, (unsigned long long)e->alloc_calls, (unsigned long long)e->alloc_bytes,
           (unsigned long long)e->free_calls, (unsigned long long)e->free_bytes,
           (unsigned long long)e->live, (unsigned long long)e->peak);
    e->alloc_calls = e->alloc_bytes = e->free_calls = e->free_bytes = 0;
    e->peak = e->live;
}

__attribute__((unused)) static void meminfo_print(const struct cu *cu)
{
    size_t f = 0, t = 0;
    check("cuMemGetInfo", cu->MemGetInfo(&f, &t));
    printf("meminfo round=%d free=%zu total=%zu\n", rounds_done + 1, f, t);
}

__attribute__((unused)) static uint64_t reserved(const struct cu *cu, CUmemoryPool pool)
{
    cuuint64_t v = 0;
    check("cuMemPoolGetAttribute",
          cu->MemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    return v;
}

/* Like libcudart: initialise, make device 0's primary context current. */
__attribute__((unused)) static void cu_start(const struct cu *cu)
{
    CUdevice dev;
    CUcontext ctx;
    check("cuInit", cu->Init(0));
    check("cuDeviceGet", cu->DeviceGet(&dev, 0));
    check("cuDevicePrimaryCtxRetain", cu->DevicePrimaryCtxRetain(&ctx, dev));
    check("cuCtxSetCurrent", cu->CtxSetCurrent(ctx));
}

/* Four rounds; the failing allocation needs FAKECUDA_FAIL_ALLOC_OVER below 128 MiB. */
__attribute__((unused)) static void scenario(const struct cu *cu)
{
    struct expect e = {0};
    CUdeviceptr a, b, p, m, x, y;
    size_t pitch = 0;
    void *h1, *h2;
    CUmemGenericAllocationHandle vmm;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = 1; /* CU_MEM_ALLOCATION_TYPE_PINNED */
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;

    /* Round 1: linear, pitched, managed and VMM device memory; pinned host memory (not counted). */
    check("cuMemAlloc a", cu->MemAlloc(&a, 1 * MiB));
    expect_alloc(&e, 1 * MiB);
    check("cuMemAlloc b", cu->MemAlloc(&b, 3 * MiB));
    expect_alloc(&e, 3 * MiB);
    check("cuMemAllocPitch", cu->MemAllocPitch(&p, &pitch, 1000, 64, 4));
    expect_alloc(&e, pitch * 64);
    check("cuMemAllocManaged", cu->MemAllocManaged(&m, 256 * 1024, 1));
    expect_alloc(&e, 256 * 1024);
    check("cuMemCreate", cu->MemCreate(&vmm, 4 * MiB, &prop, 0));
    expect_alloc(&e, 4 * MiB);
    check("cuMemHostAlloc", cu->MemHostAlloc(&h1, 1 * MiB, 0));
    check("cuMemAllocHost", cu->MemAllocHost(&h2, 64 * 1024));
    check("cuMemFreeHost", cu->MemFreeHost(h1));
    check("cuMemFree a", cu->MemFree(a));
    expect_free(&e, 1 * MiB);
    printf("pitch=%zu\n", pitch);
    expect_print(&e);
    meminfo_print(cu);
    round_end();

    /* Round 2: a failing allocation and a free of an unknown pointer pass through; frees. */
    CUdeviceptr big = 0x5e5e5e5eull;
    CUresult rc = cu->MemAlloc(&big, 128 * MiB);
    printf("fail_rc=%d fail_ptr_untouched=%d\n", rc, big == 0x5e5e5e5eull);
    rc = cu->MemFree((CUdeviceptr)0xdead0000ull);
    printf("unknown_free_rc=%d\n", rc);
    check("cuMemRelease", cu->MemRelease(vmm));
    expect_free(&e, 4 * MiB);
    check("cuMemFree b", cu->MemFree(b));
    expect_free(&e, 3 * MiB);
    check("cuMemFree p", cu->MemFree(p));
    expect_free(&e, pitch * 64);
    check("cuMemFreeHost h2", cu->MemFreeHost(h2));
    expect_print(&e);
    meminfo_print(cu);
    round_end();

    /* Round 3: stream-ordered memory from the default pool and from a created pool. */
    CUmemoryPool dflt, pool;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = 1;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    check("cuDeviceGetDefaultMemPool", cu->DeviceGetDefaultMemPool(&dflt, 0));
    check("cuMemPoolCreate", cu->MemPoolCreate(&pool, &props));
    check("cuMemAllocAsync", cu->MemAllocAsync(&x, 5 * MiB, NULL));
    expect_alloc(&e, 5 * MiB);
    check("cuMemAllocFromPoolAsync", cu->MemAllocFromPoolAsync(&y, 3 * MiB, pool, NULL));
    expect_alloc(&e, 3 * MiB);
    check("cuMemFreeAsync x", cu->MemFreeAsync(x, NULL));
    expect_free(&e, 5 * MiB);
    check("cuMemFreeAsync y", cu->MemFreeAsync(y, NULL));
    expect_free(&e, 3 * MiB);
    check("cuMemFree m", cu->MemFree(m));
    expect_free(&e, 256 * 1024);
    expect_print(&e);
    meminfo_print(cu);
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)(reserved(cu, dflt) + reserved(cu, pool)));
    round_end();

    /* Round 4: nothing allocated; what the pools still hold after round 3's cleanup (if any). */
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)(reserved(cu, dflt) + reserved(cu, pool)));
    check("cuMemPoolDestroy", cu->MemPoolDestroy(pool));
    expect_print(&e);
    round_end();
}

#endif
