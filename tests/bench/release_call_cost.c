/* What one page-release system call costs on this host: the unit a trim pays per free chunk.
 *
 * 4,096 separate one-page ranges (a touched page, then an untouched one) are given back one
 * madvise(MADV_DONTNEED) each, then touched again and given back by process_madvise on the process
 * itself, 1,024 ranges a call (Linux 6.13 and later; "batched": null where the kernel refuses).
 * Prints one JSON line: microseconds per madvise call, per process_madvise call and per range in
 * it. Preloaded with build/tests/libslow_release.so it measures the emulated dear host.
 *
 *   release_call_cost [--ranges N] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#define BATCH 1024

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void touch(char *m, size_t n, size_t page)
{
    for (size_t i = 0; i < n; i++)
        m[i * 2 * page] = 1;
}

int main(int argc, char **argv)
{
    size_t n = 4096, page = (size_t)sysconf(_SC_PAGESIZE);
    if (argc == 3 && strcmp(argv[1], "--ranges") == 0)
        n = (size_t)atol(argv[2]);
    n = (n + BATCH - 1) / BATCH * BATCH;
    char *m = mmap(NULL, n * 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    touch(m, n, page);
    double t0 = now_us();
    for (size_t i = 0; i < n; i++)
        madvise(m + i * 2 * page, page, MADV_DONTNEED);
    double one = (now_us() - t0) / (double)n;

    touch(m, n, page);
    int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0u);
    static struct iovec iov[BATCH];
    double batch_call = -1;
    t0 = now_us();
    for (size_t i = 0; pidfd >= 0 && i < n; i += BATCH) {
        for (size_t j = 0; j < BATCH; j++) {
            iov[j].iov_base = m + (i + j) * 2 * page;
            iov[j].iov_len = page;
        }
        if (syscall(SYS_process_madvise, pidfd, iov, (unsigned long)BATCH, MADV_DONTNEED, 0u) < 0)
            break;
        if (i + BATCH >= n)
            batch_call = (now_us() - t0) / (double)(n / BATCH);
    }
    if (batch_call < 0)
        printf("{\"madvise_call_us\":%.2f,\"batch_call_us\":null,\"batch_range_us\":null,"
               "\"ranges\":%zu}\n",
               one, n);
    else
        printf("{\"madvise_call_us\":%.2f,\"batch_call_us\":%.1f,\"batch_range_us\":%.3f,"
               "\"ranges\":%zu}\n",
               one, batch_call, batch_call / BATCH, n);
    return 0;
}
