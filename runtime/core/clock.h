/* Clocks for durations (monotonic) and for record timestamps (wall). */
#ifndef ROUNDTRIM_RUNTIME_CLOCK_H
#define ROUNDTRIM_RUNTIME_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t roundtrim_now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static inline double roundtrim_wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time the calling thread has used, microseconds. */
static inline uint64_t roundtrim_thread_cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* The CLOCK_MONOTONIC time ms milliseconds from now: a deadline for timed waits. */
static inline struct timespec roundtrim_deadline_ms(uint64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)(ms / 1000);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Sleeps for us microseconds (less when a signal interrupts it): for bounded waits that poll. */
static inline void roundtrim_sleep_us(uint64_t us)
{
    struct timespec t = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    nanosleep(&t, NULL);
}

#endif
