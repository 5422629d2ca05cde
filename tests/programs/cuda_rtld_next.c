/* A program that interposes a driver entry point itself and finds the next definition with
 * dlsym(RTLD_NEXT, ...): glibc resolves RTLD_NEXT from the caller, so the answer must be the
 * definition after this program (roundtrim's wrapper when preloaded, else the driver), never one
 * chosen relative to libroundtrim.so. Also checks RTLD_NEXT for an ordinary libc function. */
#include "cuda_common.h"

#include <sys/syscall.h>
#include <unistd.h>

static CUresult (*next_alloc)(CUdeviceptr *, size_t);
static int own_calls;

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    own_calls++;
    return next_alloc(dptr, bytesize);
}

/* Our own getpid, forwarding to libc's through RTLD_NEXT. */
pid_t getpid(void)
{
    static pid_t (*next)(void);
    if (!next)
        next = (pid_t(*)(void))dlsym(RTLD_NEXT, "getpid");
    return next ? next() : -1;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    next_alloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    printf("next_lib=%s\n", lib_of((void *)next_alloc));
    void *libc_getpid = dlsym(RTLD_NEXT, "getpid");
    printf("getpid_lib=%s getpid_ok=%d\n", lib_of(libc_getpid),
           getpid() == (pid_t)syscall(SYS_getpid));
    if (!next_alloc)
        return 2;

    struct cu cu;
    memset(&cu, 0, sizeof cu);
#define X(field, exported, base) cu.field = (__typeof__(cu.field))dlsym(h, exported);
    CU_FIELDS(X)
#undef X
    cu_start(&cu);
    struct expect e = {0};
    CUdeviceptr d[4];
    for (int i = 0; i < 4; i++) {
        check("cuMemAlloc_v2", cuMemAlloc_v2(&d[i], (size_t)(i + 1) * MiB));
        expect_alloc(&e, (uint64_t)(i + 1) * MiB);
    }
    check("cuMemFree_v2", cu.MemFree(d[0]));
    expect_free(&e, 1 * MiB);
    printf("own_calls=%d\n", own_calls);
    expect_print(&e);
    round_end();
    return 0;
}
