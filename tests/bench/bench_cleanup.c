/* Cleanup-cost benchmark: builds a fragmented heap of a given size with T threads, then times one
 * cleanup while those threads keep allocating and record their longest malloc/free call.
 *
 *   bench_cleanup [--heap-mib H] [--threads T] [--keep-every K] [--mode trim|round|none]
 *                 [--quiet-ms Q]
 *
 * Each thread allocates and touches H/T MiB in blocks of 512 B-64 KiB, keeps one block in K
 * (default 4) and frees the others, so about H*(K-1)/K MiB lies free in holes between live
 * blocks. Then the threads become probes: each one, every 100 us, times one malloc and one free
 * of 2-32 KiB (sizes above glibc's tcache, so the call reaches its arena and waits for the
 * arena's lock when a trim holds it). The main thread first lets them probe a quiet window of Q
 * ms (the machine's own noise), then runs the cleanup:
 *   trim:  malloc_trim(0) on the main thread itself (what a program calling it does);
 *   round: roundtrim_round_end() and a wait until roundtrim's record of that round is in
 *          ROUNDTRIM_LOG (the cleanup runs on roundtrim's worker; needs roundtrim preloaded, a
 *          plain log path and cleanup every round); the record's trim or purge time is printed;
 *   none:  nothing (the probes' cleanup window is then empty).
 * Before the heap is built, one cleanup (trim, or a first round that starts roundtrim's worker)
 * runs on the empty heap, so that the measured one is the steady-state kind.
 *
 * Prints one JSON line; times in microseconds. stall_*_us: the longest malloc or free of any probe
 * in the window; blocked_*_us: the same less the time the probe spent runnable but waiting for a
 * CPU (from /proc/thread-self/schedstat; schedstat says whether that was available), which is
 * the time the call itself was held up. arenas and arena_free_max_bytes come from glibc's
 * malloc_info (the arenas holding free bytes, and the largest free total of one of them). */
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum phase { BUILD, QUIET, CLEANUP, DONE };

struct options {
    long heap_mib;
    int threads, keep_every, quiet_ms;
    const char *mode;
};

struct probe {
    pthread_t thread;
    int index;
    const struct options *opt;
    void **kept;
    size_t kept_count;
    uint64_t worst_ns[DONE], worst_blocked_ns[DONE], probes[DONE];
};

static int have_schedstat = 1;

static volatile int phase = BUILD;
static pthread_barrier_t built;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t rss_bytes(void)
{
    int fd = open("/proc/self/statm", O_RDONLY);
    char buf[128];
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    unsigned long size = 0, resident = 0;
    sscanf(buf, "%lu %lu", &size, &resident);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void build_heap(struct probe *p, uint64_t *seed)
{
    size_t share = (size_t)p->opt->heap_mib * 1024 * 1024 / (size_t)p->opt->threads;
    size_t cap = share / 512 + 16, count = 0, used = 0;
    void **all = malloc(cap * sizeof *all);
    p->kept = malloc((cap / (size_t)p->opt->keep_every + 16) * sizeof *p->kept);
    while (used < share && count < cap) {
        size_t size = 512 + (size_t)(xorshift(seed) % (64 * 1024 - 512));
        char *b = malloc(size);
        memset(b, 1, size);
        all[count++] = b;
        used += size;
    }
    for (size_t i = 0; i < count; i++) {
        if (i % (size_t)p->opt->keep_every == 0)
            p->kept[p->kept_count++] = all[i];
        else
            free(all[i]);
    }
    free(all);
}

/* This thread's time spent runnable but waiting for a CPU (ns), from the kernel's schedstat:
 * on a loaded machine a probe can wait for a CPU after the lock it waited for is free, and that
 * is the machine's doing, not the cleanup's. */
static uint64_t run_delay_ns(int fd)
{
    char buf[96];
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    unsigned long long cpu = 0, delay = 0;
    if (sscanf(buf, "%llu %llu", &cpu, &delay) != 2)
        return 0;
    return delay;
}

static void *probe_main(void *arg)
{
    struct probe *p = arg;
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(p->index + 1);
    build_heap(p, &seed);
    int sched = open("/proc/thread-self/schedstat", O_RDONLY);
    if (sched < 0)
        have_schedstat = 0;
    pthread_barrier_wait(&built);
    struct timespec gap = {0, 100 * 1000};
    int ph;
    while ((ph = phase) != DONE) {
        size_t size = 2048 + (size_t)(xorshift(&seed) % (30 * 1024));
        uint64_t d0 = run_delay_ns(sched);
        uint64_t t0 = now_ns();
        char *b = malloc(size);
        uint64_t t1 = now_ns();
        b[0] = 1;
        uint64_t t2 = now_ns();
        free(b);
        uint64_t t3 = now_ns();
        uint64_t waited_for_cpu = run_delay_ns(sched) - d0;
        uint64_t worst = t1 - t0 > t3 - t2 ? t1 - t0 : t3 - t2;
        uint64_t blocked = worst > waited_for_cpu ? worst - waited_for_cpu : 0;
        if (worst > p->worst_ns[ph])
            p->worst_ns[ph] = worst;
        if (blocked > p->worst_blocked_ns[ph])
            p->worst_blocked_ns[ph] = blocked;
        p->probes[ph]++;
        nanosleep(&gap, NULL);
    }
    if (sched >= 0)
        close(sched);
    for (size_t i = 0; i < p->kept_count; i++)
        free(p->kept[i]);
    free(p->kept);
    return NULL;
}

/* Number of "event":"round" lines in the log (read with plain syscalls, nothing allocated). */
static int log_rounds(const char *path)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n, len = 0;
    while (len < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
        len += n;
    close(fd);
    buf[len] = '\0';
    int count = 0;
    for (char *s = buf; (s = strstr(s, "\"event\":\"round\"")); s++)
        count++;
    return count;
}

/* The value of "key": in the last round record of the log, or -1. */
static long long last_round_value(const char *path, const char *key)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n, len = 0;
    while (len < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
        len += n;
    close(fd);
    buf[len] = '\0';
    char *last = NULL;
    for (char *s = buf; (s = strstr(s, "\"event\":\"round\"")); s++)
        last = s;
    if (!last)
        return -1;
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":", key);
    char *end = strchr(last, '\n');
    char *v = strstr(last, needle);
    if (!v || (end && v > end))
        return -1;
    return atoll(v + strlen(needle));
}

/* Ends a round through roundtrim and waits for its record (up to 60 s); 0 when it came. */
static int round_and_wait(void (*round_end)(void), const char *log)
{
    int before = log_rounds(log);
    round_end();
    struct timespec tick = {0, 200 * 1000};
    for (uint64_t deadline = now_ns() + 60000000000ull; now_ns() < deadline;) {
        if (log_rounds(log) > before)
            return 0;
        nanosleep(&tick, NULL);
    }
    return -1;
}

/* From glibc's malloc_info: arenas with free bytes, and the most free bytes in one of them. */
static void arena_free_bytes(int *arenas, unsigned long long *max_free, unsigned long long *total)
{
    char *text = NULL;
    size_t len = 0;
    *arenas = 0;
    *max_free = *total = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    malloc_info(0, f);
    fclose(f);
    /* Each <heap nr="i"> ... </heap> block lists <total type="fast" .../> and
     * <total type="rest" .../>: the free bytes in that arena's fastbins and other bins. */
    for (char *h = strstr(text, "<heap nr="); h; h = strstr(h + 1, "<heap nr=")) {
        char *next = strstr(h, "</heap>");
        unsigned long long free_bytes = 0;
        for (char *t = strstr(h, "<total type="); t && (!next || t < next);
             t = strstr(t + 1, "<total type=")) {
            char *sz = strstr(t, "size=\"");
            if (sz && (!next || sz < next))
                free_bytes += strtoull(sz + 6, NULL, 10);
        }
        if (free_bytes > 0)
            (*arenas)++;
        *total += free_bytes;
        if (free_bytes > *max_free)
            *max_free = free_bytes;
    }
    free(text);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_cleanup [--heap-mib H] [--threads T] [--keep-every K] "
                    "[--mode trim|round|none] [--quiet-ms Q]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){
        .heap_mib = 256, .threads = 2, .keep_every = 4, .quiet_ms = 300, .mode = "trim"};
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage();
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--heap-mib") == 0)
            o->heap_mib = atol(v);
        else if (strcmp(k, "--threads") == 0)
            o->threads = atoi(v);
        else if (strcmp(k, "--keep-every") == 0)
            o->keep_every = atoi(v);
        else if (strcmp(k, "--quiet-ms") == 0)
            o->quiet_ms = atoi(v);
        else if (strcmp(k, "--mode") == 0)
            o->mode = v;
        else
            usage();
    }
    if (o->heap_mib < 1 || o->threads < 1 || o->keep_every < 1 || o->quiet_ms < 0 ||
        (strcmp(o->mode, "trim") && strcmp(o->mode, "round") && strcmp(o->mode, "none")))
        usage();
}

int main(int argc, char **argv)
{
    struct options o;
    parse(argc, argv, &o);
    void (*round_end)(void) = NULL;
    const char *log = getenv("ROUNDTRIM_LOG");
    if (strcmp(o.mode, "round") == 0) {
        round_end = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
        if (!round_end || !log || strchr(log, '%') || strcmp(log, "stderr") == 0) {
            fprintf(stderr, "bench_cleanup: --mode round needs libroundtrim.so preloaded and "
                            "ROUNDTRIM_LOG set to a plain file path\n");
            return 2;
        }
        if (round_and_wait(round_end, log) != 0) {
            fprintf(stderr, "bench_cleanup: no record of the first round in %s\n", log);
            return 1;
        }
    } else if (strcmp(o.mode, "trim") == 0) {
        malloc_trim(0);
    }

    struct probe *probes = calloc((size_t)o.threads, sizeof *probes);
    pthread_barrier_init(&built, NULL, (unsigned)o.threads + 1);
    for (int t = 0; t < o.threads; t++) {
        probes[t].index = t;
        probes[t].opt = &o;
        pthread_create(&probes[t].thread, NULL, probe_main, &probes[t]);
    }
    pthread_barrier_wait(&built);
    int arenas;
    unsigned long long arena_max_free, free_total;
    arena_free_bytes(&arenas, &arena_max_free, &free_total);
    uint64_t rss_before = rss_bytes();

    phase = QUIET;
    struct timespec quiet = {o.quiet_ms / 1000, (long)(o.quiet_ms % 1000) * 1000000L};
    nanosleep(&quiet, NULL);

    phase = CLEANUP;
    uint64_t t0 = now_ns();
    long long record_us = -1;
    if (round_end) {
        if (round_and_wait(round_end, log) != 0) {
            fprintf(stderr, "bench_cleanup: no record of the measured round in %s\n", log);
            return 1;
        }
        record_us = last_round_value(log, "trim_us");
        if (record_us < 0)
            record_us = last_round_value(log, "cleanup_us");
    } else if (strcmp(o.mode, "trim") == 0) {
        malloc_trim(0);
    }
    uint64_t cleanup_ns = now_ns() - t0;
    phase = DONE;
    uint64_t rss_after = rss_bytes();

    uint64_t worst[DONE] = {0}, blocked[DONE] = {0}, count[DONE] = {0};
    for (int t = 0; t < o.threads; t++) {
        pthread_join(probes[t].thread, NULL);
        for (int ph = QUIET; ph < DONE; ph++) {
            if (probes[t].worst_ns[ph] > worst[ph])
                worst[ph] = probes[t].worst_ns[ph];
            if (probes[t].worst_blocked_ns[ph] > blocked[ph])
                blocked[ph] = probes[t].worst_blocked_ns[ph];
            count[ph] += probes[t].probes[ph];
        }
    }
    printf("{\"bench\":\"cleanup\",\"mode\":\"%s\",\"heap_mib\":%ld,\"threads\":%d,"
           "\"keep_every\":%d,\"rss_before\":%llu,\"rss_after\":%llu,\"arenas\":%d,"
           "\"arena_free_max_bytes\":%llu,\"free_bytes\":%llu,\"cleanup_us\":%.1f,"
           "\"record_us\":%lld,\"stall_quiet_us\":%.1f,\"stall_cleanup_us\":%.1f,"
           "\"blocked_quiet_us\":%.1f,\"blocked_cleanup_us\":%.1f,\"schedstat\":%s,"
           "\"probes_quiet\":%llu,\"probes_cleanup\":%llu}\n",
           o.mode, o.heap_mib, o.threads, o.keep_every, (unsigned long long)rss_before,
           (unsigned long long)rss_after, arenas, arena_max_free, free_total,
           (double)cleanup_ns / 1e3, record_us, (double)worst[QUIET] / 1e3,
           (double)worst[CLEANUP] / 1e3, (double)blocked[QUIET] / 1e3,
           (double)blocked[CLEANUP] / 1e3, have_schedstat ? "true" : "false",
           (unsigned long long)count[QUIET],
           (unsigned long long)count[CLEANUP]);
    free(probes);
    return 0;
}
