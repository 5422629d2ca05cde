/* truth: cuda_cache
 * env: LD_LIBRARY_PATH=@FAKECUDA@
 * Each round allocates one 8 MiB piece more than the round before from the driver's default
 * pool and frees them all: the pool keeps what it reserved (PyTorch's cache does the same with
 * growing batches), nothing stays in use. The CUDA release is off (the default). */
#include <string.h>
#include <unistd.h>

#include "cuda_driver.h"

void roundtrim_round_end(void) __attribute__((weak));

int main(void)
{
    void *h = driver_open();
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream) = driver_sym(h, "cuMemAllocAsync");
    CUresult (*free_async)(CUdeviceptr, CUstream) = driver_sym(h, "cuMemFreeAsync");
    CUdeviceptr pieces[32];
    for (int r = 1; r <= 24; r++) {
        for (int i = 0; i < r; i++)
            driver_ok("cuMemAllocAsync", alloc_async(&pieces[i], 8 << 20, 0));
        for (int i = 0; i < r; i++)
            driver_ok("cuMemFreeAsync", free_async(pieces[i], 0));
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
