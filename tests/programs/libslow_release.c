/* Emulates a host whose page-release system calls are dear (page tables virtualized in
 * software: 60-100 us a madvise call), for the tests and the benchmark: preloaded beside
 * roundtrim, it makes each madvise() and each process_madvise() (through syscall()) spin on the
 * CPU before it goes to the kernel.
 *
 *   SLOW_RELEASE_CALL_US   the cost of one call (default 80)
 *   SLOW_RELEASE_RANGE_US  and of each range a process_madvise carries (default 3)
 *   SLOW_RELEASE_NO_BATCH  1: process_madvise answers EINVAL, as kernels before 6.13 do for
 *                          MADV_DONTNEED on oneself
 *
 * glibc's own malloc_trim calls madvise inside libc, where no preload reaches: a program's hand
 * trim is not slowed (compare on a real dear host for that). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

static long call_us = 80, range_us = 3;
static int no_batch;

/* The kernel called directly: this library may be called before any constructor ran (an
 * allocator preloaded after it initialises itself early), when no symbol can be looked up yet. */
static long raw_syscall(long n, long a, long b, long c, long d, long e, long f)
{
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
                     x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e,
                     x5 __asm__("x5") = f;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    ret = x0;
#else
#error "libslow_release: x86_64 and aarch64 only"
#endif
    if (ret < 0 && ret > -4096) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

__attribute__((constructor)) static void slow_release_init(void)
{
    const char *v;
    if ((v = getenv("SLOW_RELEASE_CALL_US")))
        call_us = atol(v);
    if ((v = getenv("SLOW_RELEASE_RANGE_US")))
        range_us = atol(v);
    no_batch = (v = getenv("SLOW_RELEASE_NO_BATCH")) && v[0] == '1';
}

static void spin_us(long us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

int madvise(void *addr, size_t len, int advice)
{
    spin_us(call_us);
    return (int)raw_syscall(SYS_madvise, (long)addr, (long)len, advice, 0, 0, 0);
}

long syscall(long n, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, n);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (n == SYS_process_madvise) {
        spin_us(call_us + range_us * a[2]);
        if (no_batch) {
            errno = EINVAL;
            return -1;
        }
    }
    return raw_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
