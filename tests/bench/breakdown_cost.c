/* What each source of the memory breakdown costs in a process of several GiB: a heap of GIB GiB
 * of 2 KiB blocks with every other one freed (half the heap free, in hundreds of thousands of
 * free chunks: the fragmented heap a diagnosis is for), then ROUNDS rounds. Each round, the
 * program itself times the sources roundtrim does not read (smaps_rollup, glibc's mallinfo2)
 * and the one it reads every round (/proc/self/status); roundtrim's own reading of the whole
 * breakdown is in its round records (memory.read_us).
 *
 *   breakdown_cost [--gib N] [--rounds R]
 *
 * Prints one JSON line per round: {"round", "rss", "status_us", "smaps_rollup_us",
 * "mallinfo2_us"}. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Reads a /proc file whole; returns the microseconds it took. */
static uint64_t read_us(const char *path, uint64_t *rss_kb)
{
    static char buf[1 << 16];
    uint64_t t0 = now_us();
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    uint64_t t = now_us() - t0;
    buf[n] = '\0';
    const char *rss = strstr(buf, "VmRSS:");
    if (rss && rss_kb)
        *rss_kb = strtoull(rss + 6, NULL, 10);
    return t;
}

int main(int argc, char **argv)
{
    double gib = 3;
    int rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--gib") == 0)
            gib = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
    }
    size_t block = 2048, count = (size_t)(gib * (1 << 30)) / block;
    char **blocks = malloc(count * sizeof *blocks);
    if (!blocks)
        return 3;
    for (size_t i = 0; i < count; i++) {
        blocks[i] = malloc(block);
        if (!blocks[i])
            return 3;
        memset(blocks[i], 1, block);
    }
    for (size_t i = 0; i < count; i += 2)
        free(blocks[i]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int r = 1; r <= rounds; r++) {
        uint64_t rss_kb = 0;
        uint64_t status = read_us("/proc/self/status", &rss_kb);
        uint64_t smaps = read_us("/proc/self/smaps_rollup", NULL);
        uint64_t t0 = now_us();
        struct mallinfo2 mi = mallinfo2();
        uint64_t mallinfo = now_us() - t0;
        if (roundtrim_round_end)
            roundtrim_round_end();
        printf("{\"round\":%d,\"rss\":%llu,\"status_us\":%llu,\"smaps_rollup_us\":%llu,"
               "\"mallinfo2_us\":%llu,\"mallinfo2_free\":%zu}\n",
               r, (unsigned long long)rss_kb * 1024, (unsigned long long)status,
               (unsigned long long)smaps, (unsigned long long)mallinfo, mi.fordblks);
        usleep(300000); /* the worker records the round meanwhile */
    }
    return 0;
}
