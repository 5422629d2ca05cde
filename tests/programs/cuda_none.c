/* A process that never loads the driver: its rounds must carry no cuda_* keys. A driver entry
 * point found by dlsym(RTLD_DEFAULT) (roundtrim's export when preloaded) must fail cleanly. */
#include "cuda_common.h"

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *blocks[64];
    for (int i = 0; i < 64; i++)
        blocks[i] = malloc(1000 + (size_t)i);
    for (int i = 0; i < 64; i++)
        free(blocks[i]);
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    if (alloc) {
        CUdeviceptr d = 0;
        printf("nodriver_rc=%d\n", alloc(&d, 4096));
    } else {
        printf("nodriver_rc=none\n");
    }
    round_end();
    round_end();
    return 0;
}
