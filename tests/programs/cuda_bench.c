/* Cost of one cuMemAlloc_v2 + cuMemFree_v2 pair against the stand-in driver, through the entry
 * points libcudart would use (dlopen + cuGetProcAddress_v2). Run it with and without roundtrim
 * preloaded; the difference is the interposition overhead per device allocation.
 *   cuda_bench [pairs] [live]   (defaults 1000000 pairs, 1000 blocks kept live meanwhile) */
#include "cuda_common.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 1000000;
    long live = argc > 2 ? atol(argv[2]) : 1000;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        fprintf(stderr, "no driver\n");
        return 2;
    }
    struct cu cu;
#define X(field, exported, base) gpa(base, (void **)&cu.field, 12080, 0, NULL);
    CU_FIELDS(X)
#undef X
    cu_start(&cu);
    CUdeviceptr *keep = calloc((size_t)live + 1, sizeof *keep);
    for (long i = 0; i < live; i++)
        check("alloc", cu.MemAlloc(&keep[i], 1 << 20));
    for (long i = 0; i < 10000; i++) { /* warm up */
        CUdeviceptr d;
        check("alloc", cu.MemAlloc(&d, 4096));
        check("free", cu.MemFree(d));
    }
    double t0 = now_ns();
    for (long i = 0; i < pairs; i++) {
        CUdeviceptr d;
        cu.MemAlloc(&d, 4096 + (size_t)(i & 7) * 512);
        cu.MemFree(d);
    }
    double t1 = now_ns();
    for (long i = 0; i < live; i++)
        cu.MemFree(keep[i]);
    free(keep);
    printf("cuda_bench pairs=%ld live=%ld ns_per_pair=%.1f preloaded=%d\n", pairs, live,
           (t1 - t0) / (double)pairs, dlsym(RTLD_DEFAULT, "roundtrim_round_end") != NULL);
    return 0;
}
