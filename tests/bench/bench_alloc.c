/* Hot-path benchmark: an allocation-heavy loop that frees and replaces blocks in a window of
 * live blocks, as fast as it can, on 1 or more threads. Run it bare and under roundtrim (and
 * with jemalloc preloaded): the difference is what the shim costs per malloc/free pair.
 *
 *   bench_alloc [--pairs N] [--threads T] [--mix small|medium|mixed] [--window W]
 *               [--warmup N] [--seed S]
 *
 * Mixes: small is 16-512 B; medium is 1-64 KiB; mixed is 90% small, 9.8% medium and 0.2%
 * large blocks of 256 KiB-1 MiB. Sizes and window slots come from tables computed before the
 * timed loop, so the loop itself is a load, a free, a malloc, a store and a branch. Every thread
 * runs the same fixed number of pairs (after a fixed warm-up); the instruction count of a run is
 * therefore a fixed start-up cost plus N times the cost of one pair, which the driver recovers
 * by running two values of N under callgrind.
 *
 * Prints one JSON line: {"bench":"alloc", ..., "ns_per_pair": wall time of the timed loop divided
 * by the pairs of one thread (the threads run at the same time, one per core), averaged over the
 * threads; "ns_per_pair_slowest": the same for the slowest thread; "cpu_ns_per_pair": the
 * threads' own CPU time instead of wall time (time spent descheduled on a shared machine does
 * not count)}. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TABLE 4096 /* power of two: the pattern repeats every TABLE pairs */

struct options {
    long pairs, warmup;
    int threads, window;
    const char *mix;
    uint64_t seed;
};

struct thread_ctx {
    pthread_t thread;
    int index;
    const struct options *opt;
    size_t sizes[TABLE];
    unsigned slots[TABLE];
    double ns, cpu_ns;
};

static pthread_barrier_t start_line;

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t uniform(uint64_t *s, size_t lo, size_t hi)
{
    return lo + (size_t)(xorshift(s) % (uint64_t)(hi - lo + 1));
}

static size_t pick_size(const char *mix, uint64_t *s)
{
    if (strcmp(mix, "small") == 0)
        return uniform(s, 16, 512);
    if (strcmp(mix, "medium") == 0)
        return uniform(s, 1024, 64 * 1024);
    unsigned roll = (unsigned)(xorshift(s) % 1000);
    if (roll < 2)
        return uniform(s, 256 * 1024, 1024 * 1024);
    if (roll < 100)
        return uniform(s, 1024, 64 * 1024);
    return uniform(s, 16, 512);
}

static double clock_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The measured loop: replace one block of the window per pair. */
static void churn(struct thread_ctx *c, char **window, long pairs)
{
    for (long i = 0; i < pairs; i++) {
        unsigned j = (unsigned)i & (TABLE - 1);
        unsigned slot = c->slots[j];
        free(window[slot]);
        char *p = malloc(c->sizes[j]);
        p[0] = (char)i;
        window[slot] = p;
    }
}

static void *run_thread(void *arg)
{
    struct thread_ctx *c = arg;
    const struct options *o = c->opt;
    uint64_t seed = o->seed * 0x9e3779b97f4a7c15ull + (uint64_t)c->index + 1;
    for (int j = 0; j < TABLE; j++) {
        c->sizes[j] = pick_size(o->mix, &seed);
        c->slots[j] = (unsigned)(xorshift(&seed) % (uint64_t)o->window);
    }
    char **window = malloc((size_t)o->window * sizeof *window);
    for (int k = 0; k < o->window; k++) {
        window[k] = malloc(c->sizes[k & (TABLE - 1)]);
        window[k][0] = 1;
    }
    churn(c, window, o->warmup);
    pthread_barrier_wait(&start_line);
    double t0 = clock_ns(CLOCK_MONOTONIC), cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    churn(c, window, o->pairs);
    c->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    c->ns = clock_ns(CLOCK_MONOTONIC) - t0;
    for (int k = 0; k < o->window; k++)
        free(window[k]);
    free(window);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_alloc [--pairs N] [--threads T] [--mix small|medium|mixed] "
                    "[--window W] [--warmup N] [--seed S]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){
        .pairs = 10000000, .warmup = 100000, .threads = 1, .window = 1024, .mix = "small"};
    o->seed = 1;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage();
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--pairs") == 0)
            o->pairs = atol(v);
        else if (strcmp(k, "--warmup") == 0)
            o->warmup = atol(v);
        else if (strcmp(k, "--threads") == 0)
            o->threads = atoi(v);
        else if (strcmp(k, "--window") == 0)
            o->window = atoi(v);
        else if (strcmp(k, "--seed") == 0)
            o->seed = strtoull(v, NULL, 10);
        else if (strcmp(k, "--mix") == 0)
            o->mix = v;
        else
            usage();
    }
    if (o->pairs < 1 || o->warmup < 0 || o->threads < 1 || o->window < 1 ||
        (strcmp(o->mix, "small") && strcmp(o->mix, "medium") && strcmp(o->mix, "mixed")))
        usage();
}

int main(int argc, char **argv)
{
    struct options o;
    parse(argc, argv, &o);
    struct thread_ctx *ctx = calloc((size_t)o.threads, sizeof *ctx);
    pthread_barrier_init(&start_line, NULL, (unsigned)o.threads);
    for (int t = 0; t < o.threads; t++) {
        ctx[t].index = t;
        ctx[t].opt = &o;
        pthread_create(&ctx[t].thread, NULL, run_thread, &ctx[t]);
    }
    double worst = 0, sum = 0, cpu = 0;
    for (int t = 0; t < o.threads; t++) {
        pthread_join(ctx[t].thread, NULL);
        sum += ctx[t].ns;
        cpu += ctx[t].cpu_ns;
        if (ctx[t].ns > worst)
            worst = ctx[t].ns;
    }
    printf("{\"bench\":\"alloc\",\"mix\":\"%s\",\"threads\":%d,\"pairs\":%ld,\"window\":%d,"
           "\"ns_per_pair\":%.3f,\"ns_per_pair_slowest\":%.3f,\"cpu_ns_per_pair\":%.3f}\n",
           o.mix, o.threads, o.pairs, o.window, sum / o.threads / (double)o.pairs,
           worst / (double)o.pairs, cpu / o.threads / (double)o.pairs);
    free(ctx);
    return 0;
}
