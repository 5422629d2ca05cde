/* A native stand-in for a federated-learning client: each round, several threads build a
 * model's worth of medium-sized blocks, keep some of it into the next round and free the rest;
 * then the round ends and the process waits for the next one.
 *
 * Without help, glibc keeps most of the freed memory: the surviving blocks pin the pages between
 * them, and end-of-round RSS is several times the live data. Prints one JSON line per round with
 * the RSS at the end of the round.
 *
 *   fl_workload [--rounds N] [--threads T] [--model-mib M] [--keep-every K] [--pause-ms P]
 *               [--mode plain|trim|call|signal] [--probe-ms Q] [--min-bytes A --max-bytes B]
 *
 * Blocks are 4-64 KiB unless --min-bytes/--max-bytes say otherwise (small blocks leave many more
 * free chunks for a trim to walk).
 *
 * Modes: plain does nothing at the end of a round; trim calls malloc_trim(0) itself; call marks
 * the round with roundtrim_round_end() (when roundtrim is preloaded); signal sends itself the
 * round signal (SIGUSR1) like an external launcher would.
 *
 * With --probe-ms, a heartbeat thread (a client's connection to its server) allocates and frees
 * a 2-32 KiB message every Q ms for the whole run and times each call: "wait_max_us" in a round's
 * line is its longest malloc or free from the round's end (where a cleanup runs) to the line. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc_rss.h"

#include "launcher_signal.h"

struct options {
    int rounds, threads, model_mib, keep_every, pause_ms, probe_ms, min_bytes, max_bytes;
    const char *mode;
};

static uint64_t now_us(void);

static uint64_t probe_max_us; /* the longest heartbeat call since the last round's line */
static int probe_stop;

static void *heartbeat(void *arg)
{
    const struct options *o = arg;
    uint64_t seed = 0x2545f4914f6cdd1dull;
    struct timespec gap = {o->probe_ms / 1000, (long)(o->probe_ms % 1000) * 1000000L};
    while (!__atomic_load_n(&probe_stop, __ATOMIC_ACQUIRE)) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        size_t size = 2048 + (size_t)(seed % (30 * 1024));
        uint64_t t0 = now_us();
        char *p = malloc(size);
        uint64_t t1 = now_us();
        p[0] = 1;
        p[size - 1] = 1;
        free(p);
        uint64_t t2 = now_us();
        uint64_t worst = t1 - t0 > t2 - t1 ? t1 - t0 : t2 - t1;
        uint64_t seen = __atomic_load_n(&probe_max_us, __ATOMIC_RELAXED);
        while (worst > seen && !__atomic_compare_exchange_n(&probe_max_us, &seen, worst, 0,
                                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
        nanosleep(&gap, NULL);
    }
    return NULL;
}

struct worker {
    pthread_t thread;
    int index, round;
    const struct options *opt;
    void **kept; /* survivors of earlier rounds: freed two rounds later */
    size_t kept_count, kept_cap;
    void **previous;
    size_t previous_count;
};

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* One round of one thread: allocate its share of the model in blocks of min..max bytes, touch them,
 * keep one block in keep_every alive until the next round ends, free everything else. */
static void *worker_round(void *arg)
{
    struct worker *w = arg;
    const struct options *o = w->opt;
    size_t share = (size_t)o->model_mib * 1024 * 1024 / (size_t)o->threads;
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1) + (uint64_t)w->round;
    size_t cap = share / (size_t)o->min_bytes + 16, count = 0, used = 0;
    void **blocks = malloc(cap * sizeof *blocks);
    void **survivors = malloc(cap * sizeof *survivors);
    size_t survivor_count = 0;
    while (used < share && count + survivor_count < cap) {
        size_t size = (size_t)o->min_bytes +
                      (size_t)(next_random(&seed) % (uint64_t)(o->max_bytes - o->min_bytes + 1));
        char *p = malloc(size);
        memset(p, (int)(count & 0xff), size);
        used += size;
        if (next_random(&seed) % (uint64_t)o->keep_every == 0)
            survivors[survivor_count++] = p; /* lives on into the next round */
        else
            blocks[count++] = p;
    }
    for (size_t i = 0; i < count; i++)
        free(blocks[i]);
    free(blocks);
    /* The previous round's survivors go now: some data stays alive, and it moves. */
    for (size_t i = 0; i < w->previous_count; i++)
        free(w->previous[i]);
    free(w->previous);
    w->previous = survivors;
    w->previous_count = survivor_count;
    return NULL;
}

static uint64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static uint64_t thread_cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static uint64_t cleanup_cpu_us; /* the CPU time of the program's own cleanup (trim mode) */

/* Returns how long the program's own cleanup took (trim mode), in microseconds. */
static uint64_t end_round(const struct options *o)
{
    uint64_t t0 = now_us();
    if (strcmp(o->mode, "trim") == 0) {
        uint64_t cpu0 = thread_cpu_us();
        malloc_trim(0);
        cleanup_cpu_us = thread_cpu_us() - cpu0;
        return now_us() - t0;
    } else if (strcmp(o->mode, "call") == 0) {
        void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
        if (round_end)
            round_end();
    } else if (strcmp(o->mode, "signal") == 0) {
        signal_from_launcher(SIGUSR1);
    }
    return 0;
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.rounds = 10,
                          .threads = 4,
                          .model_mib = 64,
                          .keep_every = 5,
                          .pause_ms = 100,
                          .probe_ms = 0,
                          .min_bytes = 4096,
                          .max_bytes = 4096 + 60 * 1024 - 1,
                          .mode = "plain"};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--rounds") == 0)
            o->rounds = atoi(v);
        else if (strcmp(k, "--threads") == 0)
            o->threads = atoi(v);
        else if (strcmp(k, "--model-mib") == 0)
            o->model_mib = atoi(v);
        else if (strcmp(k, "--keep-every") == 0)
            o->keep_every = atoi(v);
        else if (strcmp(k, "--pause-ms") == 0)
            o->pause_ms = atoi(v);
        else if (strcmp(k, "--mode") == 0)
            o->mode = v;
        else if (strcmp(k, "--probe-ms") == 0)
            o->probe_ms = atoi(v);
        else if (strcmp(k, "--min-bytes") == 0)
            o->min_bytes = atoi(v);
        else if (strcmp(k, "--max-bytes") == 0)
            o->max_bytes = atoi(v);
        else {
            fprintf(stderr, "fl_workload: unknown option %s\n", k);
            exit(2);
        }
    }
    if (o->threads < 1 || o->rounds < 1 || o->model_mib < 1 || o->keep_every < 1 ||
        o->min_bytes < 16 || o->max_bytes < o->min_bytes) {
        fprintf(stderr, "fl_workload: counts must be positive\n");
        exit(2);
    }
}

int main(int argc, char **argv)
{
    struct options o;
    parse(argc, argv, &o);
    struct worker *w = calloc((size_t)o.threads, sizeof *w);
    for (int t = 0; t < o.threads; t++) {
        w[t].index = t;
        w[t].opt = &o;
    }
    pthread_t probe;
    if (o.probe_ms > 0)
        pthread_create(&probe, NULL, heartbeat, &o);
    for (int r = 1; r <= o.rounds; r++) {
        for (int t = 0; t < o.threads; t++) {
            w[t].round = r;
            pthread_create(&w[t].thread, NULL, worker_round, &w[t]);
        }
        for (int t = 0; t < o.threads; t++)
            pthread_join(w[t].thread, NULL);
        /* The window that counts: from the round's end, where the cleanup runs. */
        __atomic_store_n(&probe_max_us, 0, __ATOMIC_RELAXED);
        uint64_t cleanup_us = end_round(&o);
        /* The wait for the server's next model; roundtrim's worker cleans up meanwhile. */
        struct timespec pause = {o.pause_ms / 1000, (long)(o.pause_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
        printf("{\"round\":%d,\"rss\":%llu,\"cleanup_us\":%llu,\"cleanup_cpu_us\":%llu", r,
               rss_bytes(), (unsigned long long)cleanup_us, (unsigned long long)cleanup_cpu_us);
        if (o.probe_ms > 0)
            printf(",\"wait_max_us\":%llu",
                   (unsigned long long)__atomic_exchange_n(&probe_max_us, 0, __ATOMIC_RELAXED));
        printf("}\n");
        fflush(stdout);
    }
    if (o.probe_ms > 0) {
        __atomic_store_n(&probe_stop, 1, __ATOMIC_RELEASE);
        pthread_join(probe, NULL);
    }
    return 0;
}
