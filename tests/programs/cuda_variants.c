/* Which variant each cuGetProcAddress form hands out, and whether calls through it are counted:
 * run it with and without FAKECUDA_PROC_INTERNAL=1 (the driver's lookups then answer with
 * internal addresses, not its exports).
 *
 * For cuMemAllocAsync + cuMemFreeAsync fetched through cuGetProcAddress_v2, _v2_ptsz and the
 * 4-argument cuGetProcAddress, with the legacy-stream, per-thread or no flag, it prints
 *   variant form=F flags=G lib=L ptsz=N legacy=M
 * (the library the pointer lies in, and how many calls the stand-in driver saw on its
 * per-thread-stream and legacy variants), then the lookups at a version newer than any toolkit:
 *   future_lib=L future_rc=R    cuMemAlloc at 13050: a new ABI the stand-in has (never a wrapper)
 *   free_future_lib=L           cuMemFree at 13050: the same ABI as at 13000
 * and one "expect" line for the round's device memory (tests/programs/cuda_common.h). */
#include "cuda_common.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);

static gpa_fn gpa, gpa_ptsz;
static gpa1_fn gpa1;
static unsigned long (*fake_stat)(const char *);

static void *fetch_with(const char *form, const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUresult rc = strcmp(form, "v1") == 0        ? gpa1(name, &fn, version, flags)
                  : strcmp(form, "v2_ptsz") == 0 ? gpa_ptsz(name, &fn, version, flags, NULL)
                                                 : gpa(name, &fn, version, flags, NULL);
    if (rc != CUDA_SUCCESS || !fn) {
        fprintf(stderr, "%s %s: %d\n", form, name, rc);
        exit(2);
    }
    return fn;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    gpa_ptsz = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2_ptsz") : NULL;
    gpa1 = h ? (gpa1_fn)dlsym(h, "cuGetProcAddress") : NULL;
    fake_stat = h ? (unsigned long (*)(const char *))dlsym(h, "fakecudaTestStat") : NULL;
    if (!gpa || !gpa_ptsz || !gpa1 || !fake_stat) {
        fprintf(stderr, "not the stand-in driver\n");
        return 2;
    }
    struct cu cu;
#define X(field, exported, base) cu.field = (__typeof__(cu.field))fetch_with("v2", base, 12080, 0);
    CU_FIELDS(X)
#undef X
    cu_start(&cu);

    static const struct {
        const char *form, *flags_name;
        cuuint64_t flags;
    } ways[] = {{"v2", "legacy", CU_GET_PROC_ADDRESS_LEGACY_STREAM},
                {"v2", "ptds", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM},
                {"v2", "none", 0},
                {"v2_ptsz", "none", 0},
                {"v2_ptsz", "legacy", CU_GET_PROC_ADDRESS_LEGACY_STREAM},
                {"v1", "ptds", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM},
                {"v1", "none", 0}};
    struct expect e = {0};
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        __typeof__(cu.MemAllocAsync) alloc =
            (__typeof__(alloc))fetch_with(ways[i].form, "cuMemAllocAsync", 12080, ways[i].flags);
        __typeof__(cu.MemFreeAsync) free_async = (__typeof__(free_async))fetch_with(
            ways[i].form, "cuMemFreeAsync", 12080, ways[i].flags);
        unsigned long p0 = fake_stat("ptsz_calls"), l0 = fake_stat("legacy_calls");
        CUdeviceptr d;
        check("alloc", alloc(&d, (i + 1) * MiB, NULL));
        expect_alloc(&e, (i + 1) * MiB);
        check("free", free_async(d, NULL));
        expect_free(&e, (i + 1) * MiB);
        printf("variant form=%s flags=%s lib=%s ptsz=%lu legacy=%lu\n", ways[i].form,
               ways[i].flags_name, lib_of((void *)alloc), fake_stat("ptsz_calls") - p0,
               fake_stat("legacy_calls") - l0);
    }

    /* A name without a per-thread variant, through the per-thread lookup: the plain one. */
    __typeof__(cu.MemAlloc) alloc =
        (__typeof__(alloc))fetch_with("v2_ptsz", "cuMemAlloc", 12080, 0);
    __typeof__(cu.MemFree) mfree = (__typeof__(mfree))fetch_with("v2_ptsz", "cuMemFree", 12080, 0);
    CUdeviceptr d;
    check("cuMemAlloc", alloc(&d, 2 * MiB));
    expect_alloc(&e, 2 * MiB);
    check("cuMemFree", mfree(d));
    expect_free(&e, 2 * MiB);
    printf("plain_lib=%s\n", lib_of((void *)alloc));

    void *future = fetch_with("v2", "cuMemAlloc", 13050, 0);
    CUresult (*v3)(CUdeviceptr *, size_t, unsigned long long) =
        (CUresult(*)(CUdeviceptr *, size_t, unsigned long long))future;
    printf("future_lib=%s future_rc=%d\n", lib_of(future), v3(&d, MiB, 0));
    printf("free_future_lib=%s\n", lib_of(fetch_with("v2", "cuMemFree", 13050, 0)));
    expect_print(&e);
    round_end();
    return 0;
}
