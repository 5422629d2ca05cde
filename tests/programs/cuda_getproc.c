/* Reaches the driver the way libcudart and PyTorch do: dlopen("libcuda.so.1"), dlsym only
 * "cuGetProcAddress_v2", and fetch every other entry point through it with a CUDA version and
 * flags (per-thread-default-stream variants for the stream-ordered calls).
 *
 *   cuda_getproc            the shared scenario, plus ABI and pass-through checks
 *   cuda_getproc capture    a cleanup round during an active stream capture must not trim
 *   cuda_getproc lookup     only the lookups (no cuInit, no memory call), then two rounds */
#include "cuda_common.h"

#define VERSION 12080

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static gpa_fn gpa;

static void *fetch(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status = -1;
    CUresult rc = gpa(name, &fn, version, flags, &status);
    if (rc != CUDA_SUCCESS || !fn || status != CU_GET_PROC_ADDRESS_SUCCESS) {
        fprintf(stderr, "cuGetProcAddress %s: rc=%d status=%d\n", name, rc, status);
        exit(2);
    }
    return fn;
}

static const char *where(void *fn, const char **lib)
{
    Dl_info info;
    *lib = "?";
    if (!dladdr(fn, &info) || !info.dli_fname)
        return "?";
    const char *base = strrchr(info.dli_fname, '/');
    *lib = base ? base + 1 : info.dli_fname;
    return info.dli_sname && info.dli_saddr == fn ? info.dli_sname : "?";
}

/* Facts about what cuGetProcAddress hands out, printed for the test to compare. */
static void abi_checks(void *h)
{
    const char *lib;
    const char *name;
    void *fn;

    fn = fetch("cuMemAlloc", VERSION, 0);
    name = where(fn, &lib);
    printf("memalloc_name=%s memalloc_lib=%s\n", name, lib);

    fn = fetch("cuMemAllocAsync", VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    name = where(fn, &lib);
    printf("async_ptds_name=%s async_ptds_lib=%s\n", name, lib);

    fn = fetch("cuMemAllocAsync", VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    name = where(fn, &lib);
    printf("async_legacy_name=%s async_legacy_lib=%s\n", name, lib);

    /* The 32-bit ABI variant stays the driver's own. */
    fn = fetch("cuMemAlloc", 3000, 0);
    printf("legacy_same_as_dlsym=%d\n", fn == dlsym(h, "cuMemAlloc"));
    unsigned int p32 = 0;
    printf("legacy_rc=%d\n", ((CUresult(*)(unsigned int *, unsigned int))fn)(&p32, 4096));

    /* An entry point roundtrim does not know passes through with its own result. */
    fn = fetch("cuFakeUnknownEntry", VERSION, 0);
    printf("unknown_same_as_dlsym=%d\n", fn == dlsym(h, "cuFakeUnknownEntry"));
    printf("unknown_rc=%d\n", ((CUresult(*)(int))fn)(7));

    /* A failed lookup keeps the driver's code, status and NULL. */
    void *none = (void *)1;
    CUdriverProcAddressQueryResult status = -1;
    CUresult rc = gpa("cuNoSuchEntryPoint", &none, VERSION, 0, &status);
    printf("missing_rc=%d missing_status=%d missing_null=%d\n", rc, status, none == NULL);
    none = (void *)1;
    rc = gpa("cuMemAllocAsync", &none, 11000, 0, &status);
    printf("oldver_rc=%d oldver_status=%d oldver_null=%d\n", rc, status, none == NULL);

    /* Looking up cuGetProcAddress itself gives a lookup that still substitutes. */
    fn = fetch("cuGetProcAddress", VERSION, 0);
    name = where(fn, &lib);
    printf("gpa_name=%s gpa_lib=%s\n", name, lib);
    gpa = (gpa_fn)fn;
}

static void load(struct cu *cu)
{
#define X(field, exported, base)                                                                   \
    cu->field = (__typeof__(cu->field))fetch(                                                      \
        base, VERSION, strstr(base, "Async") ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0);
    CU_FIELDS(X)
#undef X
}

/* Round 1 ends while a capture is active: no trim. Round 2 ends after it: the trim happens. */
static void capture_scenario(const struct cu *cu)
{
    CUmemoryPool dflt;
    CUdeviceptr x;
    check("cuDeviceGetDefaultMemPool", cu->DeviceGetDefaultMemPool(&dflt, 0));
    check("cuMemAllocAsync", cu->MemAllocAsync(&x, 5 * MiB, NULL));
    check("cuMemFreeAsync", cu->MemFreeAsync(x, NULL));
    check("cuStreamBeginCapture", cu->StreamBeginCapture((CUstream)0x10, 0));
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)reserved(cu, dflt));
    round_end();
    CUgraph g;
    check("cuStreamEndCapture", cu->StreamEndCapture((CUstream)0x10, &g));
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)reserved(cu, dflt));
    round_end();
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)reserved(cu, dflt));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) {
        fprintf(stderr, "dlsym cuGetProcAddress_v2: %s\n", dlerror());
        return 2;
    }
    abi_checks(h);
    struct cu cu;
    load(&cu);
    if (argc > 1 && strcmp(argv[1], "lookup") == 0) {
        round_end();
        round_end();
        return 0;
    }
    cu_start(&cu);
    if (argc > 1 && strcmp(argv[1], "capture") == 0)
        capture_scenario(&cu);
    else
        scenario(&cu);
    return 0;
}
