/* truth: leak
 * env: LD_LIBRARY_PATH=@FAKECUDA@
 * Keeps 8 MiB of device memory (cuMemAlloc) per round, as a program that keeps a tensor on the
 * GPU every round does. */
#include <unistd.h>

#include "cuda_driver.h"

void roundtrim_round_end(void) __attribute__((weak));

int main(void)
{
    void *h = driver_open();
    CUresult (*mem_alloc)(CUdeviceptr *, size_t) = driver_sym(h, "cuMemAlloc_v2");
    for (int r = 0; r < 24; r++) {
        CUdeviceptr kept;
        driver_ok("cuMemAlloc", mem_alloc(&kept, 8 << 20));
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
