/* truth: none
 * expect: finding=idle_cache
 * env: LD_LIBRARY_PATH=@FAKECUDA@
 * The same 96 MiB allocated and freed from the default pool each round: the pool keeps it
 * reserved, flat (a large idle cache, not growth). */
#include <unistd.h>

#include "cuda_driver.h"

void roundtrim_round_end(void) __attribute__((weak));

int main(void)
{
    void *h = driver_open();
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream) = driver_sym(h, "cuMemAllocAsync");
    CUresult (*free_async)(CUdeviceptr, CUstream) = driver_sym(h, "cuMemFreeAsync");
    CUdeviceptr pieces[12];
    for (int r = 0; r < 24; r++) {
        for (int i = 0; i < 12; i++)
            driver_ok("cuMemAllocAsync", alloc_async(&pieces[i], 8 << 20, 0));
        for (int i = 0; i < 12; i++)
            driver_ok("cuMemFreeAsync", free_async(pieces[i], 0));
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
