/* Devices, streams and VMM mappings, through entry points fetched with cuGetProcAddress_v2 as
 * libcudart does; run with FAKECUDA_DEVICES=2.
 *
 *   cuda_devices device1   the program uses device 1 only (its primary context, a stream of it,
 *                          linear, stream-ordered and VMM memory): nothing of roundtrim's may
 *                          touch device 0 or create a context
 *   cuda_devices cross     device 0's context is current while stream-ordered memory comes from
 *                          a stream of device 1: counted on device 1, whose pool is trimmed
 *   cuda_devices vmm       handles released while still mapped: freed at their last unmap
 *
 * Prints the shared "expect", "meminfo" and "reserved" lines (tests/programs/cuda_common.h). */
#include "cuda_common.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static gpa_fn gpa;

static struct {
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
} more;

static void *fetch(const char *name)
{
    void *fn = NULL;
    if (gpa(name, &fn, 12080, 0, NULL) != CUDA_SUCCESS || !fn) {
        fprintf(stderr, "cuGetProcAddress %s failed\n", name);
        exit(2);
    }
    return fn;
}

static CUcontext primary(const struct cu *cu, int ordinal)
{
    CUdevice dev;
    CUcontext ctx;
    check("cuDeviceGet", cu->DeviceGet(&dev, ordinal));
    check("cuDevicePrimaryCtxRetain", cu->DevicePrimaryCtxRetain(&ctx, dev));
    return ctx;
}

/* The reserve of device ordinal's default pool, plus that of pool extra when there is one. */
static void print_reserved(const struct cu *cu, int ordinal, CUmemoryPool extra)
{
    CUmemoryPool pool;
    check("cuDeviceGetDefaultMemPool", cu->DeviceGetDefaultMemPool(&pool, ordinal));
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)(reserved(cu, pool) + (extra ? reserved(cu, extra) : 0)));
}

static CUmemGenericAllocationHandle vmm_create(const struct cu *cu, int ordinal, uint64_t size)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = 1; /* CU_MEM_ALLOCATION_TYPE_PINNED */
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    check("cuMemCreate", cu->MemCreate(&h, size, &prop, 0));
    return h;
}

/* Everything on device 1; device 0 is never made current by the program. */
static void device1_scenario(const struct cu *cu)
{
    struct expect e = {0};
    CUstream s;
    CUdeviceptr a, x, y, va;
    CUmemoryPool pool;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = 1;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    check("cuCtxSetCurrent", cu->CtxSetCurrent(primary(cu, 1)));
    check("cuStreamCreate", more.StreamCreate(&s, 0));
    check("cuMemPoolCreate", cu->MemPoolCreate(&pool, &props));
    check("cuMemAllocFromPoolAsync", cu->MemAllocFromPoolAsync(&y, 1 * MiB, pool, s));
    expect_alloc(&e, 1 * MiB);
    check("cuMemFreeAsync y", cu->MemFreeAsync(y, s));
    expect_free(&e, 1 * MiB);
    check("cuMemAlloc", cu->MemAlloc(&a, 2 * MiB));
    expect_alloc(&e, 2 * MiB);
    check("cuMemAllocAsync", cu->MemAllocAsync(&x, 3 * MiB, s));
    expect_alloc(&e, 3 * MiB);
    check("cuMemFreeAsync", cu->MemFreeAsync(x, s));
    expect_free(&e, 3 * MiB);
    CUmemGenericAllocationHandle h = vmm_create(cu, 1, 4 * MiB);
    expect_alloc(&e, 4 * MiB);
    check("cuMemAddressReserve", more.MemAddressReserve(&va, 4 * MiB, 0, 0, 0));
    check("cuMemMap", more.MemMap(va, 4 * MiB, 0, h, 0));
    expect_print(&e);
    meminfo_print(cu);
    print_reserved(cu, 1, pool);
    round_end();
    check("cuMemUnmap", more.MemUnmap(va, 4 * MiB));
    check("cuMemRelease", cu->MemRelease(h));
    expect_free(&e, 4 * MiB);
    check("cuMemFree", cu->MemFree(a));
    expect_free(&e, 2 * MiB);
    expect_print(&e);
    print_reserved(cu, 1, pool);
    round_end();
}

/* Device 0's context is current; the stream belongs to device 1. */
static void cross_scenario(const struct cu *cu)
{
    struct expect e = {0};
    CUstream s1;
    CUcontext ctx0 = primary(cu, 0), ctx1 = primary(cu, 1), popped;
    CUdeviceptr a, x;
    check("cuCtxSetCurrent", cu->CtxSetCurrent(ctx0));
    check("cuCtxPushCurrent", more.CtxPushCurrent(ctx1));
    check("cuStreamCreate", more.StreamCreate(&s1, 0));
    check("cuCtxPopCurrent", more.CtxPopCurrent(&popped));
    check("cuMemAlloc", cu->MemAlloc(&a, 1 * MiB)); /* device 0: linear memory only */
    expect_alloc(&e, 1 * MiB);
    check("cuMemAllocAsync", cu->MemAllocAsync(&x, 3 * MiB, s1));
    expect_alloc(&e, 3 * MiB);
    check("cuMemFreeAsync", cu->MemFreeAsync(x, s1));
    expect_free(&e, 3 * MiB);
    expect_print(&e);
    print_reserved(cu, 1, NULL);
    round_end();
    CUmemoryPool p0, p1;
    check("pool0", cu->DeviceGetDefaultMemPool(&p0, 0));
    check("pool1", cu->DeviceGetDefaultMemPool(&p1, 1));
    /* What the cleanup of round 1 left in each default pool. */
    printf("left dev0=%llu dev1=%llu\n", (unsigned long long)reserved(cu, p0),
           (unsigned long long)reserved(cu, p1));
    check("cuMemFree", cu->MemFree(a));
    expect_free(&e, 1 * MiB);
    expect_print(&e);
    round_end();
}

/* Released while mapped: the memory lives (and is counted) until its last mapping goes. */
static void vmm_scenario(const struct cu *cu)
{
    struct expect e = {0};
    CUdeviceptr va1, va2, va3;
    check("cuCtxSetCurrent", cu->CtxSetCurrent(primary(cu, 0)));
    CUmemGenericAllocationHandle a = vmm_create(cu, 0, 4 * MiB);
    CUmemGenericAllocationHandle b = vmm_create(cu, 0, 2 * MiB);
    CUmemGenericAllocationHandle c = vmm_create(cu, 0, 2 * MiB);
    CUmemGenericAllocationHandle d = vmm_create(cu, 0, 2 * MiB);
    expect_alloc(&e, 4 * MiB);
    expect_alloc(&e, 2 * MiB);
    expect_alloc(&e, 2 * MiB);
    expect_alloc(&e, 2 * MiB);
    check("reserve 1", more.MemAddressReserve(&va1, 4 * MiB, 0, 0, 0));
    check("reserve 2", more.MemAddressReserve(&va2, 4 * MiB, 0, 0, 0));
    check("reserve 3", more.MemAddressReserve(&va3, 2 * MiB, 0, 0, 0));
    check("map a", more.MemMap(va1, 4 * MiB, 0, a, 0));
    check("map b", more.MemMap(va2, 2 * MiB, 0, b, 0));
    check("map c", more.MemMap(va2 + 2 * MiB, 2 * MiB, 0, c, 0));
    check("map d", more.MemMap(va3, 2 * MiB, 0, d, 0));
    check("release a", cu->MemRelease(a)); /* still mapped: nothing freed yet */
    check("release b", cu->MemRelease(b));
    check("release c", cu->MemRelease(c));
    check("unmap d", more.MemUnmap(va3, 2 * MiB)); /* unmapped first, as PyTorch does */
    check("release d", cu->MemRelease(d));
    expect_free(&e, 2 * MiB);
    expect_print(&e);
    meminfo_print(cu);
    round_end();
    check("unmap a", more.MemUnmap(va1, 4 * MiB));
    expect_free(&e, 4 * MiB);
    check("unmap b+c", more.MemUnmap(va2, 4 * MiB)); /* one call over two mappings */
    expect_free(&e, 2 * MiB);
    expect_free(&e, 2 * MiB);
    expect_print(&e);
    meminfo_print(cu);
    round_end();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa || argc < 2) {
        fprintf(stderr, "usage: cuda_devices device1|cross|vmm (with the driver loadable)\n");
        return 2;
    }
    struct cu cu;
#define X(field, exported, base) cu.field = (__typeof__(cu.field))fetch(base);
    CU_FIELDS(X)
#undef X
    more.StreamCreate = (__typeof__(more.StreamCreate))fetch("cuStreamCreate");
    more.CtxPushCurrent = (__typeof__(more.CtxPushCurrent))fetch("cuCtxPushCurrent");
    more.CtxPopCurrent = (__typeof__(more.CtxPopCurrent))fetch("cuCtxPopCurrent");
    more.MemAddressReserve = (__typeof__(more.MemAddressReserve))fetch("cuMemAddressReserve");
    more.MemMap = (__typeof__(more.MemMap))fetch("cuMemMap");
    more.MemUnmap = (__typeof__(more.MemUnmap))fetch("cuMemUnmap");
    check("cuInit", cu.Init(0));
    if (strcmp(argv[1], "device1") == 0)
        device1_scenario(&cu);
    else if (strcmp(argv[1], "cross") == 0)
        cross_scenario(&cu);
    else if (strcmp(argv[1], "vmm") == 0)
        vmm_scenario(&cu);
    else
        return 2;
    return 0;
}
