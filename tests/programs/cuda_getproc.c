/* Reaches the driver the way libcudart and PyTorch do: dlopen("libcuda.so.1"), dlsym only
 * "cuGetProcAddress_v2", and fetch every other entry point through it with a CUDA version and
 * flags (per-thread-default-stream variants for the stream-ordered calls).
 *
 *   cuda_getproc            the shared scenario, plus ABI and pass-through checks
 *   cuda_getproc capture    a cleanup round during an active stream capture must not trim
 *   cuda_getproc race ENTRY SKIP
 *                           another thread begins a capture while roundtrim's worker is between
 *                           two driver calls of a round (the stand-in stops it before the
 *                           SKIP+1-th call of ENTRY, "retain" or "sync"); prints the driver's
 *                           synchronize and trim counts after each round
 *   cuda_getproc released   the program gives up its primary context before a round end
 *   cuda_getproc lookup     only the lookups (no cuInit, no memory call), then two rounds */
#include "cuda_common.h"

#include <pthread.h>

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

/* The stand-in's test-only entry points (tests/cuda/fake_libcuda.c). */
static unsigned long (*fake_stat)(const char *);
static void (*fake_on_call)(const char *, unsigned, void (*)(void));

static void fake_test_api(void *h)
{
    fake_stat = (unsigned long (*)(const char *))dlsym(h, "fakecudaTestStat");
    fake_on_call = (void (*)(const char *, unsigned, void (*)(void)))dlsym(h, "fakecudaTestOnCall");
    if (!fake_stat || !fake_on_call) {
        fprintf(stderr, "not the stand-in driver\n");
        exit(2);
    }
}

/* A thread of the program that begins a capture when asked, as a training loop capturing a graph
 * would, at whatever moment roundtrim's worker happens to be at. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state; /* 0: waiting, 1: asked, 2: capture begun */
    const struct cu *cu;
    CUcontext ctx;
} race = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, NULL};

static void *capturer(void *unused)
{
    (void)unused;
    check("cuCtxSetCurrent", race.cu->CtxSetCurrent(race.ctx));
    pthread_mutex_lock(&race.lock);
    while (race.state != 1)
        pthread_cond_wait(&race.cond, &race.lock);
    pthread_mutex_unlock(&race.lock);
    check("cuStreamBeginCapture", race.cu->StreamBeginCapture((CUstream)0x20, 0));
    pthread_mutex_lock(&race.lock);
    race.state = 2;
    pthread_cond_broadcast(&race.cond);
    pthread_mutex_unlock(&race.lock);
    return NULL;
}

/* Runs on roundtrim's worker, inside the stand-in driver: returns once the capture has begun. */
static void begin_capture_elsewhere(void)
{
    pthread_mutex_lock(&race.lock);
    race.state = 1;
    pthread_cond_broadcast(&race.cond);
    while (race.state != 2)
        pthread_cond_wait(&race.cond, &race.lock);
    pthread_mutex_unlock(&race.lock);
}

static void print_counts(int round)
{
    printf("after round=%d sync=%lu trim=%lu\n", round, fake_stat("sync"), fake_stat("trim"));
}

/* Round 1: a capture begins on another thread while the worker records the round. Round 2 ends
 * after the capture: the trim happens. */
static void race_scenario(const struct cu *cu, const char *entry, unsigned skip)
{
    CUmemoryPool dflt;
    CUdeviceptr x;
    pthread_t t;
    race.cu = cu;
    check("cuDevicePrimaryCtxRetain", cu->DevicePrimaryCtxRetain(&race.ctx, 0));
    check("cuDeviceGetDefaultMemPool", cu->DeviceGetDefaultMemPool(&dflt, 0));
    check("cuMemAllocAsync", cu->MemAllocAsync(&x, 5 * MiB, NULL));
    check("cuMemFreeAsync", cu->MemFreeAsync(x, NULL));
    if (pthread_create(&t, NULL, capturer, NULL) != 0)
        exit(3);
    fake_on_call(entry, skip, begin_capture_elsewhere);
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)reserved(cu, dflt));
    round_end();
    pthread_join(t, NULL);
    printf("captured_in_round=%d\n", race.state == 2);
    print_counts(1);
    CUgraph g;
    check("cuStreamEndCapture", cu->StreamEndCapture((CUstream)0x20, &g));
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)reserved(cu, dflt));
    round_end();
    print_counts(2);
    printf("reserved round=%d bytes=%llu\n", rounds_done + 1,
           (unsigned long long)reserved(cu, dflt));
}

/* The program uses device memory, then drops its primary context (as cudaDeviceReset does): the
 * next rounds must not retain it again, which would re-create it. */
static void released_scenario(const struct cu *cu)
{
    CUdeviceptr x;
    CUresult (*release)(CUdevice) =
        (CUresult(*)(CUdevice))fetch("cuDevicePrimaryCtxRelease", VERSION, 0);
    check("cuMemAlloc", cu->MemAlloc(&x, 1 * MiB));
    check("cuMemFree", cu->MemFree(x));
    round_end();
    unsigned long retains = fake_stat("primary_retain");
    check("cuCtxSetCurrent", cu->CtxSetCurrent(NULL));
    check("cuDevicePrimaryCtxRelease", release(0));
    round_end();
    round_end();
    printf("retains_while_released=%lu activations=%lu\n", fake_stat("primary_retain") - retains,
           fake_stat("primary_activate"));
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
    if (argc > 1 && strcmp(argv[1], "capture") == 0) {
        capture_scenario(&cu);
    } else if (argc > 3 && strcmp(argv[1], "race") == 0) {
        fake_test_api(h);
        race_scenario(&cu, argv[2], (unsigned)atoi(argv[3]));
    } else if (argc > 1 && strcmp(argv[1], "released") == 0) {
        fake_test_api(h);
        released_scenario(&cu);
    } else {
        scenario(&cu);
    }
    return 0;
}
