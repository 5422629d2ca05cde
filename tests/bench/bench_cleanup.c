/* Cleanup-cost benchmark: builds a fragmented heap of a given size with T threads, then times one
 * cleanup while those threads keep allocating and record their longest malloc/free call.
 *
 *   bench_cleanup [--heap-mib H] [--threads T] [--keep-every K] [--mode trim|round|none|churn]
 *                 [--quiet-ms Q] [--slices S] [--trim-pad-mib P] [--release-pages N]
 *                 [--block-max-kib B] [--churn-ops C] [--churn-max-kib M]
 *
 * Each thread allocates and touches H/T MiB in blocks of 512 B-B KiB (B = 64 by default), keeps
 * one block in K (default 4) and frees the others, so about H*(K-1)/K MiB lies free in holes
 * between live blocks. Then the threads become probes: each one, every 100 us, times one malloc
 * and one free of 2-32 KiB (sizes above glibc's tcache, so the call reaches its arena and waits
 * for the arena's lock when a trim holds it). The main thread first lets them probe a quiet
 * window of Q ms (the machine's own noise), then runs the cleanup:
 *   trim:  malloc_trim(P MiB) (P = 0 by default) on the main thread itself (what a program
 *          calling it does); glibc's pad only limits how much of the main arena's top goes back
 *          through sbrk, the walk over every arena's free chunks is the same;
 *   round: roundtrim_round_end() and a wait until roundtrim's record of that round is in
 *          ROUNDTRIM_LOG (the cleanup runs on roundtrim's worker; needs roundtrim preloaded, a
 *          plain log path and cleanup every round); the record's trim or purge time is printed;
 *   none:  nothing (the probes' cleanup window is then empty).
 * Before the heap is built, the main thread mallocs and frees one block of B KiB, as a process
 * past its first round has (over 128 KiB, glibc's dynamic mmap threshold then rises to B KiB, so
 * the heap's large blocks come from the arenas unless MALLOC_MMAP_THRESHOLD_ pins it), and one
 * cleanup (trim, or a first round that starts roundtrim's worker) runs on the empty heap, so that
 * the measured one is the steady-state kind.
 *
 * --slices S: the threads free their blocks in S slices (consecutive stretches of their
 * allocation order) and a cleanup, with its own quiet window, follows each slice: the heap is
 * given back in S steps. The stall figures are the worst of all steps, cleanup_us their sum,
 * cleanup_max_us the longest; slice_* list each step.
 *
 * --release-pages N: every free of the heap's blocks and of the probes goes through
 * release_free(), what an interposed free() could do: a heap block (not mmapped) whose
 * page-aligned interior spans N pages or more gets that interior madvise(MADV_DONTNEED)ed before
 * the real free. The block is still the program's then, so no allocator lock is held; its first
 * 64 and last 16 bytes are left alone (glibc writes a free chunk's list links at its start and the
 * next chunk's prev_size at its end). release_* say how often and what it cost.
 *
 * churn: no heap and no cleanup: each thread replaces, C times (200000 by default, after C/10
 * untimed), the block in one of 64 slots picked at random with a fresh block of 16 KiB-M KiB
 * (M = 256 by default) that it writes whole: the cost side of --release-pages and of a pinned mmap
 * threshold (memory given back is faulted in again when it is reused). Prints ns and CPU ns per op
 * and minor faults.
 *
 * Prints one JSON line; times in microseconds. stall_*_us: the longest malloc or free of any probe
 * in the window; blocked_*_us: the same less the time the probe spent runnable but waiting for a
 * CPU (from /proc/thread-self/schedstat; schedstat says whether that was available), which is
 * the time the call itself was held up. arenas and arena_free_max_bytes come from glibc's
 * malloc_info (the arenas holding free bytes, and the largest free total of one of them), read
 * before the (last) cleanup; live_bytes is the usable size of the blocks kept. */
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_SLICES  64
#define CHURN_SLOTS 64
#define CHURN_MIN   (16 * 1024)

/* Windows of one slice's step: the threads free the slice, the quiet window, the cleanup. The
 * shared stage is 3 * slice + window; 3 * slices is the end. */
enum window { FREEING, QUIET, CLEANUP, WINDOWS };

struct options {
    long heap_mib, trim_pad_mib, release_pages, block_max_kib, churn_ops, churn_max_kib;
    int threads, keep_every, quiet_ms, slices;
    const char *mode;
};

struct probe {
    pthread_t thread;
    int index;
    const struct options *opt;
    void **blocks; /* every block of its heap share in allocation order; kept or not yet freed */
    size_t count;
    uint64_t live_bytes;
    uint64_t worst_ns[MAX_SLICES][WINDOWS], worst_blocked_ns[MAX_SLICES][WINDOWS];
    uint64_t probes[MAX_SLICES][WINDOWS];
    uint64_t churn_ns;
};

struct release_stats {
    uint64_t frees, released, bytes, ns;
};

static int have_schedstat = 1;
static size_t page_size;
static long release_min_pages;
static __thread struct release_stats release_mine;
static struct release_stats release_all;

static volatile int stage;
static pthread_barrier_t step;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
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

/* free(), first giving a large heap block's whole interior pages back (--release-pages). glibc's
 * chunk header, the size_t before the block, has IS_MMAPPED (0x2) set for a block of its own
 * mapping: that one goes back with munmap anyway. */
static void release_free(void *p)
{
    if (p && release_min_pages > 0 && !(((size_t *)p)[-1] & 0x2)) {
        uintptr_t lo = ((uintptr_t)p + 64 + page_size - 1) & ~(uintptr_t)(page_size - 1);
        uintptr_t hi = ((uintptr_t)p + malloc_usable_size(p) - 16) & ~(uintptr_t)(page_size - 1);
        if (hi > lo && (hi - lo) / page_size >= (size_t)release_min_pages) {
            uint64_t t0 = now_ns();
            madvise((void *)lo, hi - lo, MADV_DONTNEED);
            release_mine.ns += now_ns() - t0;
            release_mine.released++;
            release_mine.bytes += hi - lo;
        }
    }
    release_mine.frees++;
    free(p);
}

/* Adds this thread's release counts to the process's. */
static void release_fold(void)
{
    __atomic_fetch_add(&release_all.frees, release_mine.frees, __ATOMIC_RELAXED);
    __atomic_fetch_add(&release_all.released, release_mine.released, __ATOMIC_RELAXED);
    __atomic_fetch_add(&release_all.bytes, release_mine.bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&release_all.ns, release_mine.ns, __ATOMIC_RELAXED);
    memset(&release_mine, 0, sizeof release_mine);
}

static void build_heap(struct probe *p, uint64_t *seed)
{
    size_t share = (size_t)p->opt->heap_mib * 1024 * 1024 / (size_t)p->opt->threads;
    size_t cap = share / 512 + 16, used = 0, span = (size_t)p->opt->block_max_kib * 1024 - 512;
    p->blocks = malloc(cap * sizeof *p->blocks);
    while (used < share && p->count < cap) {
        size_t size = 512 + (size_t)(xorshift(seed) % span);
        char *b = malloc(size);
        memset(b, 1, size);
        if (p->count % (size_t)p->opt->keep_every == 0)
            p->live_bytes += malloc_usable_size(b);
        p->blocks[p->count++] = b;
        used += size;
    }
}

/* Frees the blocks of slice s that are not kept. */
static void free_slice(struct probe *p, int s)
{
    size_t slices = (size_t)p->opt->slices;
    size_t from = p->count * (size_t)s / slices, to = p->count * ((size_t)s + 1) / slices;
    for (size_t i = from; i < to; i++) {
        if (i % (size_t)p->opt->keep_every != 0) {
            release_free(p->blocks[i]);
            p->blocks[i] = NULL;
        }
    }
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

/* Probes until the shared stage reaches end, recording into the window of the stage. */
static void probe_until(struct probe *p, int sched, uint64_t *seed, int end)
{
    struct timespec gap = {0, 100 * 1000};
    int st;
    while ((st = stage) < end) {
        size_t size = 2048 + (size_t)(xorshift(seed) % (30 * 1024));
        uint64_t d0 = run_delay_ns(sched);
        uint64_t t0 = now_ns();
        char *b = malloc(size);
        uint64_t t1 = now_ns();
        b[0] = 1;
        uint64_t t2 = now_ns();
        release_free(b);
        uint64_t t3 = now_ns();
        uint64_t waited_for_cpu = run_delay_ns(sched) - d0;
        uint64_t worst = t1 - t0 > t3 - t2 ? t1 - t0 : t3 - t2;
        uint64_t blocked = worst > waited_for_cpu ? worst - waited_for_cpu : 0;
        int s = st / WINDOWS, w = st % WINDOWS;
        if (worst > p->worst_ns[s][w])
            p->worst_ns[s][w] = worst;
        if (blocked > p->worst_blocked_ns[s][w])
            p->worst_blocked_ns[s][w] = blocked;
        p->probes[s][w]++;
        nanosleep(&gap, NULL);
    }
}

static void *probe_main(void *arg)
{
    struct probe *p = arg;
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(p->index + 1);
    build_heap(p, &seed);
    int sched = open("/proc/thread-self/schedstat", O_RDONLY);
    if (sched < 0)
        have_schedstat = 0;
    for (int s = 0; s < p->opt->slices; s++) {
        free_slice(p, s);
        pthread_barrier_wait(&step);
        probe_until(p, sched, &seed, WINDOWS * (s + 1));
    }
    if (sched >= 0)
        close(sched);
    release_fold();
    for (size_t i = 0; i < p->count; i++)
        free(p->blocks[i]);
    free(p->blocks);
    return NULL;
}

/* The churn loop of one thread: warm-up, then the timed ops between two barriers. */
static void *churn_main(void *arg)
{
    struct probe *p = arg;
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(p->index + 1);
    void *slot[CHURN_SLOTS] = {0};
    long ops = p->opt->churn_ops, warm = ops / 10;
    size_t span = (size_t)p->opt->churn_max_kib * 1024 - CHURN_MIN + 1;
    uint64_t t0 = 0;
    for (long i = -warm; i < ops; i++) {
        if (i == 0) {
            release_mine = (struct release_stats){0};
            pthread_barrier_wait(&step);
            t0 = now_ns();
        }
        size_t k = (size_t)(xorshift(&seed) % CHURN_SLOTS);
        size_t size = CHURN_MIN + (size_t)(xorshift(&seed) % span);
        release_free(slot[k]);
        slot[k] = malloc(size);
        memset(slot[k], (int)i, size);
    }
    p->churn_ns = now_ns() - t0;
    release_fold();
    for (size_t k = 0; k < CHURN_SLOTS; k++)
        free(slot[k]);
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
    while (len < (ssize_t)sizeof buf - 1 &&
           (n = read(fd, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
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
    while (len < (ssize_t)sizeof buf - 1 &&
           (n = read(fd, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
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
                    "[--mode trim|round|none|churn] [--quiet-ms Q] [--slices S] "
                    "[--trim-pad-mib P] [--release-pages N] [--block-max-kib B] "
                    "[--churn-ops C] [--churn-max-kib M]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.heap_mib = 256,
                          .threads = 2,
                          .keep_every = 4,
                          .quiet_ms = 300,
                          .mode = "trim",
                          .slices = 1,
                          .block_max_kib = 64,
                          .churn_ops = 200000,
                          .churn_max_kib = 256};
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
        else if (strcmp(k, "--slices") == 0)
            o->slices = atoi(v);
        else if (strcmp(k, "--trim-pad-mib") == 0)
            o->trim_pad_mib = atol(v);
        else if (strcmp(k, "--release-pages") == 0)
            o->release_pages = atol(v);
        else if (strcmp(k, "--block-max-kib") == 0)
            o->block_max_kib = atol(v);
        else if (strcmp(k, "--churn-ops") == 0)
            o->churn_ops = atol(v);
        else if (strcmp(k, "--churn-max-kib") == 0)
            o->churn_max_kib = atol(v);
        else
            usage();
    }
    if (o->heap_mib < 1 || o->threads < 1 || o->keep_every < 1 || o->quiet_ms < 0 ||
        o->slices < 1 || o->slices > MAX_SLICES || o->trim_pad_mib < 0 || o->release_pages < 0 ||
        o->block_max_kib < 1 || o->churn_ops < 1 || o->churn_max_kib * 1024 < CHURN_MIN ||
        (strcmp(o->mode, "trim") && strcmp(o->mode, "round") && strcmp(o->mode, "none") &&
         strcmp(o->mode, "churn")))
        usage();
}

static int churn(const struct options *o)
{
    struct probe *threads = calloc((size_t)o->threads, sizeof *threads);
    pthread_barrier_init(&step, NULL, (unsigned)o->threads + 1);
    for (int t = 0; t < o->threads; t++) {
        threads[t].index = t;
        threads[t].opt = o;
        pthread_create(&threads[t].thread, NULL, churn_main, &threads[t]);
    }
    struct rusage r0, r1;
    pthread_barrier_wait(&step);
    uint64_t t0 = now_ns();
    getrusage(RUSAGE_SELF, &r0);
    uint64_t thread_ns = 0;
    for (int t = 0; t < o->threads; t++) {
        pthread_join(threads[t].thread, NULL);
        thread_ns += threads[t].churn_ns;
    }
    getrusage(RUSAGE_SELF, &r1);
    uint64_t wall_ns = now_ns() - t0;
    double ops = (double)o->churn_ops * o->threads;
    double cpu_ns = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec -
                             r0.ru_stime.tv_sec) *
                        1e9 +
                    (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec -
                             r0.ru_stime.tv_usec) *
                        1e3;
    double sys_ns = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e9 +
                    (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e3;
    printf("{\"bench\":\"cleanup\",\"mode\":\"churn\",\"threads\":%d,\"churn_ops\":%ld,"
           "\"block_min\":%d,\"block_max\":%ld,\"release_pages\":%ld,\"ns_per_op\":%.1f,"
           "\"wall_ms\":%.1f,\"cpu_ns_per_op\":%.1f,\"sys_ns_per_op\":%.1f,"
           "\"minflt_per_op\":%.2f,\"released_frees\":%llu,\"released_bytes\":%llu,"
           "\"release_ns\":%llu,\"rss_end\":%llu}\n",
           o->threads, o->churn_ops, CHURN_MIN, o->churn_max_kib * 1024, o->release_pages,
           (double)thread_ns / ops, (double)wall_ns / 1e6, cpu_ns / ops, sys_ns / ops,
           (double)(r1.ru_minflt - r0.ru_minflt) / ops, (unsigned long long)release_all.released,
           (unsigned long long)release_all.bytes, (unsigned long long)release_all.ns,
           (unsigned long long)rss_bytes());
    free(threads);
    return 0;
}

/* Prints a JSON array of n numbers (microseconds from nanoseconds when scale is 1e3). */
static void print_list(const char *key, const uint64_t *v, int n, double scale)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        printf(i ? ",%.1f" : "%.1f", (double)v[i] / scale);
    printf("]");
}

int main(int argc, char **argv)
{
    struct options o;
    parse(argc, argv, &o);
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    release_min_pages = o.release_pages;
    if (strcmp(o.mode, "churn") == 0)
        return churn(&o);

    void (*round_end)(void) = NULL;
    const char *log = getenv("ROUNDTRIM_LOG");
    /* As a process past its first round: the largest block size has been freed once. */
    free(malloc((size_t)o.block_max_kib * 1024));
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
        malloc_trim((size_t)o.trim_pad_mib << 20);
    }

    struct probe *probes = calloc((size_t)o.threads, sizeof *probes);
    pthread_barrier_init(&step, NULL, (unsigned)o.threads + 1);
    for (int t = 0; t < o.threads; t++) {
        probes[t].index = t;
        probes[t].opt = &o;
        pthread_create(&probes[t].thread, NULL, probe_main, &probes[t]);
    }

    int arenas = 0;
    unsigned long long arena_max_free = 0, free_total = 0;
    uint64_t rss_before = 0, cleanup_ns = 0, cleanup_max_ns = 0, cpu_ns = 0;
    uint64_t slice_ns[MAX_SLICES], slice_arena_free[MAX_SLICES];
    long long record_us = -1;
    for (int s = 0; s < o.slices; s++) {
        pthread_barrier_wait(&step); /* the threads freed slice s */
        arena_free_bytes(&arenas, &arena_max_free, &free_total);
        slice_arena_free[s] = arena_max_free;
        if (s == 0)
            rss_before = rss_bytes();

        stage = WINDOWS * s + QUIET;
        struct timespec quiet = {o.quiet_ms / 1000, (long)(o.quiet_ms % 1000) * 1000000L};
        nanosleep(&quiet, NULL);

        stage = WINDOWS * s + CLEANUP;
        uint64_t c0 = thread_cpu_ns(), t0 = now_ns();
        if (round_end) {
            if (round_and_wait(round_end, log) != 0) {
                fprintf(stderr, "bench_cleanup: no record of the measured round in %s\n", log);
                return 1;
            }
            long long us = last_round_value(log, "trim_us");
            if (us < 0)
                us = last_round_value(log, "cleanup_us");
            if (us >= 0)
                record_us = (record_us < 0 ? 0 : record_us) + us;
        } else if (strcmp(o.mode, "trim") == 0) {
            malloc_trim((size_t)o.trim_pad_mib << 20);
        }
        slice_ns[s] = now_ns() - t0;
        cpu_ns += thread_cpu_ns() - c0;
        cleanup_ns += slice_ns[s];
        if (slice_ns[s] > cleanup_max_ns)
            cleanup_max_ns = slice_ns[s];
        stage = WINDOWS * (s + 1); /* the next slice, or the end */
    }
    uint64_t rss_after = rss_bytes();

    uint64_t worst[WINDOWS] = {0}, blocked[WINDOWS] = {0}, count[WINDOWS] = {0}, live = 0;
    uint64_t slice_blocked[MAX_SLICES] = {0};
    for (int t = 0; t < o.threads; t++) {
        pthread_join(probes[t].thread, NULL);
        live += probes[t].live_bytes;
        for (int s = 0; s < o.slices; s++) {
            for (int w = QUIET; w < WINDOWS; w++) {
                if (probes[t].worst_ns[s][w] > worst[w])
                    worst[w] = probes[t].worst_ns[s][w];
                if (probes[t].worst_blocked_ns[s][w] > blocked[w])
                    blocked[w] = probes[t].worst_blocked_ns[s][w];
                count[w] += probes[t].probes[s][w];
            }
            if (probes[t].worst_blocked_ns[s][CLEANUP] > slice_blocked[s])
                slice_blocked[s] = probes[t].worst_blocked_ns[s][CLEANUP];
        }
    }
    printf("{\"bench\":\"cleanup\",\"mode\":\"%s\",\"heap_mib\":%ld,\"threads\":%d,"
           "\"keep_every\":%d,\"slices\":%d,\"trim_pad_mib\":%ld,\"release_pages\":%ld,"
           "\"block_max_kib\":%ld,\"rss_before\":%llu,\"rss_after\":%llu,\"live_bytes\":%llu,"
           "\"arenas\":%d,\"arena_free_max_bytes\":%llu,\"free_bytes\":%llu,\"cleanup_us\":%.1f,"
           "\"cleanup_max_us\":%.1f,\"cleanup_cpu_us\":%.1f,"
           "\"record_us\":%lld,\"stall_quiet_us\":%.1f,\"stall_cleanup_us\":%.1f,"
           "\"blocked_quiet_us\":%.1f,\"blocked_cleanup_us\":%.1f,\"schedstat\":%s,"
           "\"probes_quiet\":%llu,\"probes_cleanup\":%llu,\"frees\":%llu,"
           "\"released_frees\":%llu,\"released_bytes\":%llu,\"release_ns\":%llu",
           o.mode, o.heap_mib, o.threads, o.keep_every, o.slices, o.trim_pad_mib, o.release_pages,
           o.block_max_kib, (unsigned long long)rss_before, (unsigned long long)rss_after,
           (unsigned long long)live, arenas, arena_max_free, free_total, (double)cleanup_ns / 1e3,
           (double)cleanup_max_ns / 1e3, (double)cpu_ns / 1e3, record_us,
           (double)worst[QUIET] / 1e3, (double)worst[CLEANUP] / 1e3, (double)blocked[QUIET] / 1e3,
           (double)blocked[CLEANUP] / 1e3, have_schedstat ? "true" : "false",
           (unsigned long long)count[QUIET], (unsigned long long)count[CLEANUP],
           (unsigned long long)release_all.frees, (unsigned long long)release_all.released,
           (unsigned long long)release_all.bytes, (unsigned long long)release_all.ns);
    print_list("slice_cleanup_us", slice_ns, o.slices, 1e3);
    print_list("slice_blocked_us", slice_blocked, o.slices, 1e3);
    print_list("slice_arena_free_max_bytes", slice_arena_free, o.slices, 1);
    printf("}\n");
    free(probes);
    return 0;
}
