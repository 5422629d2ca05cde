/* Reaches the driver with dlopen("libcuda.so.1") + dlsym of each exported name, as older
 * libraries do (the dlsym hook must hand out roundtrim's wrappers). Runs the shared scenario. */
#include "cuda_common.h"

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    struct cu cu;
#define X(field, exported, base)                                                                   \
    if (!(cu.field = (__typeof__(cu.field))dlsym(h, exported))) {                                  \
        fprintf(stderr, "dlsym %s: %s\n", exported, dlerror());                                    \
        return 2;                                                                                  \
    }
    CU_FIELDS(X)
#undef X
    /* Where the lookup of a wrapped name landed: roundtrim's wrapper when preloaded. */
    Dl_info info;
    if (dladdr((void *)cu.MemAlloc, &info) && info.dli_fname) {
        const char *base = strrchr(info.dli_fname, '/');
        printf("memalloc_lib=%s\n", base ? base + 1 : info.dli_fname);
    }
    /* Names we do not wrap come back from the driver itself. */
    void *unknown = dlsym(h, "cuFakeUnknownEntry");
    printf("unknown_rc=%d\n", unknown ? ((CUresult(*)(int))unknown)(7) : -1);
    printf("unknown_lib_is_driver=%d\n",
           unknown && dladdr(unknown, &info) && strstr(info.dli_fname, "libcuda.so") != NULL);
    /* The driver looking itself up keeps its own function (no wrapper calling back into it). */
    void *(*self_lookup)(const char *) =
        (void *(*)(const char *))dlsym(h, "fakecudaTestSelfLookup");
    void *own = self_lookup ? self_lookup("cuMemAlloc_v2") : NULL;
    printf("self_lookup_is_driver=%d\n",
           own && dladdr(own, &info) && strstr(info.dli_fname, "libcuda.so") != NULL);
    cu_start(&cu);
    scenario(&cu);
    dlclose(h);
    return 0;
}
