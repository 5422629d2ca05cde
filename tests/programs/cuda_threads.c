/* Eight threads allocate and free device memory at once through entry points fetched with
 * cuGetProcAddress_v2 (as libcudart does); the per-round totals must come out exact.
 * Round 1: every thread allocates ITER blocks and frees all but every tenth.
 * Round 2: the kept blocks are freed. */
#include "cuda_common.h"

#include <pthread.h>

#define THREADS 8
#define ITER    2000

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static struct cu cu;
static CUcontext ctx;
static CUdeviceptr kept[THREADS][ITER / 10 + 1];
static uint64_t kept_bytes[THREADS][ITER / 10 + 1];
static int kept_count[THREADS];
static uint64_t thread_alloc_bytes[THREADS], thread_free_bytes[THREADS];

static uint64_t block_size(int t, int i)
{
    return 4096 + (uint64_t)t * 512 + (uint64_t)(i % 13) * 256;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    check("cuCtxSetCurrent", cu.CtxSetCurrent(ctx)); /* the context is current per thread */
    for (int i = 0; i < ITER; i++) {
        CUdeviceptr d;
        uint64_t size = block_size(t, i);
        bool async = i % 3 == 0;
        check("alloc", async ? cu.MemAllocAsync(&d, size, NULL) : cu.MemAlloc(&d, size));
        thread_alloc_bytes[t] += size;
        if (i % 10 == 0) {
            kept[t][kept_count[t]] = d;
            kept_bytes[t][kept_count[t]++] = size;
            continue;
        }
        check("free", async ? cu.MemFreeAsync(d, NULL) : cu.MemFree(d));
        thread_free_bytes[t] += size;
    }
    return NULL;
}

static void *fetch(gpa_fn gpa, const char *name)
{
    void *fn = NULL;
    CUresult rc = gpa(name, &fn, 12080, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL);
    if (rc != CUDA_SUCCESS || !fn) {
        fprintf(stderr, "cuGetProcAddress %s: %d\n", name, rc);
        exit(2);
    }
    return fn;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        fprintf(stderr, "no driver: %s\n", dlerror());
        return 2;
    }
#define X(field, exported, base) cu.field = (__typeof__(cu.field))fetch(gpa, base);
    CU_FIELDS(X)
#undef X
    CUdevice dev;
    check("cuInit", cu.Init(0));
    check("cuDeviceGet", cu.DeviceGet(&dev, 0));
    check("cuDevicePrimaryCtxRetain", cu.DevicePrimaryCtxRetain(&ctx, dev));

    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    uint64_t ab = 0, fb = 0, live = 0;
    for (int t = 0; t < THREADS; t++) {
        ab += thread_alloc_bytes[t];
        fb += thread_free_bytes[t];
    }
    live = ab - fb;
    int kept_total = 0;
    for (int t = 0; t < THREADS; t++)
        kept_total += kept_count[t];
    /* Peak is not exact across threads (it depends on the interleaving): at least the live end
     * state, at most everything allocated. */
    printf("expect round=1 alloc_calls=%d alloc_bytes=%llu free_calls=%d free_bytes=%llu live=%llu "
           "peak_min=%llu peak_max=%llu\n",
           THREADS * ITER, (unsigned long long)ab, THREADS * ITER - kept_total,
           (unsigned long long)fb, (unsigned long long)live, (unsigned long long)live,
           (unsigned long long)ab);
    round_end();

    check("cuCtxSetCurrent", cu.CtxSetCurrent(ctx));
    uint64_t kb = 0;
    for (int t = 0; t < THREADS; t++)
        for (int k = 0; k < kept_count[t]; k++) {
            /* every third block (i % 3 == 0) came from the pool; i = 10k, so k % 3 == 0 */
            CUresult rc = k % 3 == 0 ? cu.MemFreeAsync(kept[t][k], NULL) : cu.MemFree(kept[t][k]);
            check("free kept", rc);
            kb += kept_bytes[t][k];
        }
    printf("expect round=2 alloc_calls=0 alloc_bytes=0 free_calls=%d free_bytes=%llu live=0 "
           "peak_min=%llu peak_max=%llu\n",
           kept_total, (unsigned long long)kb, (unsigned long long)kb, (unsigned long long)kb);
    round_end();
    return 0;
}
