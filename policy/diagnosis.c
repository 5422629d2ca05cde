#include "policy/diagnosis.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Growth below this per round is noise for any process (allocator caches, page-size steps). */
#define MIN_SLOPE ((double)(256 << 10))
/* A part grows when it rises by at least this over the window, as a share of RSS, */
#define MIN_WINDOW_SHARE 0.01
/* or rises in this share of the steps (a slow, steady leak in a large process). */
#define MIN_RISING 0.7
/* What cleanup recovers is worth naming from this much per round; */
#define MIN_RECOVERED ((double)(1 << 20))
/* a trim, from this much and this share of RSS (a program's own churn leaves a few MiB of
 * freed heap at the top at every round's end: that is no fragmentation); */
#define TRIM_MIN   ((double)(4 << 20))
#define TRIM_SHARE 0.1
/* a gc, from this many objects per round. */
#define GC_OBJECTS_MIN 1000.0
/* A rise over the window counts when it is this many residual standard deviations. */
#define NOISE_SIGMAS 3.0
/* A cause has most of it when its share reaches this; below, the diagnosis says "mixed". */
#define DOMINANT 0.6
/* In a mixed case, a leak with at least this fraction of the leading cause's growth leads. */
#define LEAK_FIRST 0.8
/* Freed heap kept resident is the problem when it is this share of RSS, at least FREE_MIN. */
#define FREE_SHARE  0.5
#define FREE_MIN    ((double)(8 << 20))
#define CACHE_SHARE 0.5
#define CACHE_MIN   ((double)(64 << 20))

static const char *const cause_names[RT_CAUSE_COUNT] = {"none",    "leak",       "fragmentation",
                                                        "garbage", "cuda_cache", "outside_heap"};

const char *roundtrim_cause_name(enum roundtrim_cause c)
{
    return (unsigned)c < RT_CAUSE_COUNT ? cause_names[c] : "unknown";
}

/* A series over the window: y[i] at round x[i]. */
struct series {
    double x[64], y[64];
    size_t n;
    bool known;
};

static void means(const struct series *s, double *mx, double *my)
{
    *mx = *my = 0;
    for (size_t i = 0; i < s->n; i++) {
        *mx += s->x[i];
        *my += s->y[i];
    }
    *mx /= (double)s->n;
    *my /= (double)s->n;
}

static double slope_of(const struct series *s)
{
    if (s->n < 2)
        return 0;
    double mx, my;
    means(s, &mx, &my);
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < s->n; i++) {
        sxx += (s->x[i] - mx) * (s->x[i] - mx);
        sxy += (s->x[i] - mx) * (s->y[i] - my);
    }
    return sxx > 0 ? sxy / sxx : 0;
}

static double mean_of(const struct series *s)
{
    double m = 0;
    for (size_t i = 0; i < s->n; i++)
        m += s->y[i];
    return s->n ? m / (double)s->n : 0;
}

/* The median of v[0..n) (n <= 64), v left as it is. */
static double median_of(const double *v, size_t n)
{
    double sorted[64];
    if (n == 0 || n > 64)
        return 0;
    memcpy(sorted, v, n * sizeof *v);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            double t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static double rising_share(const struct series *s)
{
    size_t up = 0;
    for (size_t i = 1; i < s->n; i++)
        if (s->y[i] > s->y[i - 1] + 4096)
            up++;
    return s->n > 1 ? (double)up / (double)(s->n - 1) : 0;
}

/* The sum of the given parts, known only when every one of them is (a missing part must not
 * read as a flat one). */
static void sum_series(const struct roundtrim_diag_sample *smp, size_t n,
                       const enum roundtrim_mem_part *parts, size_t np, bool need_all,
                       struct series *out)
{
    memset(out, 0, sizeof *out);
    out->known = true;
    for (size_t i = 0; i < n; i++) {
        double v = 0;
        bool any = false;
        for (size_t k = 0; k < np; k++) {
            if (smp[i].known[parts[k]]) {
                v += (double)smp[i].part[parts[k]];
                any = true;
            } else if (need_all) {
                out->known = false;
            }
        }
        if (!any)
            out->known = false;
        out->x[out->n] = (double)smp[i].round;
        out->y[out->n++] = v;
    }
}

/* Whether the rise the fit gives over the window stands out of the scatter around the fit:
 * at least NOISE_SIGMAS residual standard deviations (squares compared: no square root). A
 * freed heap measured before cleanup swings by megabytes from round to round; a leak does not. */
static bool above_noise(const struct series *s, double g)
{
    if (s->n < 3)
        return true;
    double mx, my;
    means(s, &mx, &my);
    double ss = 0;
    for (size_t i = 0; i < s->n; i++) {
        double r = s->y[i] - (my + g * (s->x[i] - mx));
        ss += r * r;
    }
    double variance = ss / (double)(s->n - 2);
    double rise = g * (s->x[s->n - 1] - s->x[0]);
    return rise * rise >= NOISE_SIGMAS * NOISE_SIGMAS * variance;
}

/* The growth of a series that counts: steady or large enough against RSS, and out of its own
 * noise. */
static double growth(const struct series *s, double rss_mean)
{
    if (!s->known)
        return 0;
    double g = slope_of(s);
    if (g < MIN_SLOPE || !above_noise(s, g))
        return 0;
    bool large = g * (double)(s->n - 1) >= MIN_WINDOW_SHARE * rss_mean;
    return large || rising_share(s) >= MIN_RISING ? g : 0;
}

static int64_t nearest(double v)
{
    return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

static void fmt_bytes(char *out, size_t cap, double b)
{
    double a = b < 0 ? -b : b;
    if (a >= (double)(1ull << 30))
        snprintf(out, cap, "%.2f GiB", b / (double)(1ull << 30));
    else if (a >= (double)(1 << 20))
        snprintf(out, cap, "%.1f MiB", b / (double)(1 << 20));
    else
        snprintf(out, cap, "%.0f KiB", b / 1024.0);
}

/* Appends to the advice, never past its end. */
static void say(struct roundtrim_diagnosis *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(struct roundtrim_diagnosis *d, const char *fmt, ...)
{
    size_t len = strlen(d->advice);
    if (len + 1 >= sizeof d->advice)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->advice + len, sizeof d->advice - len, fmt, ap);
    va_end(ap);
}

static void advise_leak(struct roundtrim_diagnosis *d, const struct roundtrim_diag_context *ctx,
                        double g)
{
    char b[32];
    fmt_bytes(b, sizeof b, g);
    if (ctx->python && !d->collected) {
        /* Cyclic garbage also grows live memory until a full collection frees it. */
        say(d,
            "Live memory grows %s per round, and no full gc ran in these rounds (automatic gc "
            "off or rare, roundtrim's cleanup off): references kept from round to round, or "
            "cyclic garbage not collected yet. Set ROUNDTRIM_GC_ROUNDS=1 to tell them apart: "
            "what gc frees is garbage, what stays is kept by the code.",
            b);
    } else {
        say(d,
            "Live memory grows %s per round: the program keeps references from one round into "
            "the next (a list of updates, a copy of the model, a history). No cleanup can free "
            "it; the fix is in the code that keeps them.",
            b);
    }
    double device = d->slope[RT_PART_DEVICE_LIVE];
    if (device >= 0.5 * g) {
        /* The allocation sites are the heap's: device memory is named by PyTorch's own. */
        fmt_bytes(b, sizeof b, device);
        say(d,
            " Of it, %s per round is device memory held by live tensors: PyTorch's memory "
            "snapshot names the code that allocates them "
            "(torch.cuda.memory._record_memory_history(), then _dump_snapshot()).",
            b);
    } else if (!ctx->sites) {
        say(d, " Set ROUNDTRIM_SITES=true to name the code that allocates it.");
    } else {
        say(d, " The sites records name the code that allocates it: roundtrim report LOG shows "
               "the sites that grow.");
    }
}

/* What keeps less freed heap resident, for the allocator in use. */
static void advise_allocator(struct roundtrim_diagnosis *d,
                             const struct roundtrim_diag_context *ctx)
{
    if (ctx->allocator && strcmp(ctx->allocator, "jemalloc") == 0)
        say(d, " jemalloc returns freed pages once its decay time passes: a shorter one "
               "(MALLOC_CONF=dirty_decay_ms:1000,muzzy_decay_ms:0) keeps less of it.");
    /* Not fewer arenas: measured, a cap at or below the allocating threads ended rounds higher
     * with cleanup off, and made each trim hold longer (BENCHMARKS.md, the defaults). */
    else if (ctx->allocator && strcmp(ctx->allocator, "glibc") == 0)
        say(d, " jemalloc preloaded after roundtrim keeps less of it.");
}

static void advise_fragmentation(struct roundtrim_diagnosis *d,
                                 const struct roundtrim_diag_context *ctx)
{
    char b[32];
    if (d->trim_released_per_round > 0) {
        fmt_bytes(b, sizeof b, d->trim_released_per_round);
        say(d, "Freed heap stays resident; roundtrim's trim gives back %s per round.", b);
        /* Measured before the cleanup: what the trim left of it is pinned between live
         * blocks (a trim returns whole free pages only). */
        if (d->heap_free_median >= FREE_MIN &&
            d->trim_released_per_round < 0.5 * d->heap_free_median) {
            char f[32];
            fmt_bytes(f, sizeof f, d->heap_free_median);
            say(d,
                " Of the %s of freed heap at a round's end, a trim returns less than half: the "
                "rest lies in pages that live blocks pin.",
                f);
        }
        if (ctx->cleanup_every > 1)
            say(d,
                " Cleaning every %llu rounds lets it build up in between: set "
                "NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 (or ROUNDTRIM_GC_ROUNDS=1).",
                (unsigned long long)ctx->cleanup_every);
        else
            advise_allocator(d, ctx);
        return;
    }
    fmt_bytes(b, sizeof b, d->slope[RT_PART_HEAP_FREE]);
    say(d, "Freed heap kept resident is %.0f%% of RSS", 100 * d->heap_free_share);
    if (d->slope[RT_PART_HEAP_FREE] >= MIN_SLOPE)
        say(d, " and grows %s per round", b);
    if (ctx->cleanup_every == 0)
        say(d, ": cleanup is off. Set NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 (or "
               "ROUNDTRIM_GC_ROUNDS=1) and roundtrim gives it back every round.");
    else if (ctx->cleanup_every > 1)
        say(d, ". Cleanup runs every %llu rounds: set ROUNDTRIM_GC_ROUNDS=1.",
            (unsigned long long)ctx->cleanup_every);
    else
        say(d, ".");
    advise_allocator(d, ctx);
}

static void advise(struct roundtrim_diagnosis *d, const struct roundtrim_diag_context *ctx,
                   const double *g)
{
    char b[32], c[32];
    switch (d->cause) {
    case RT_CAUSE_LEAK:
        advise_leak(d, ctx, g[RT_CAUSE_LEAK]);
        break;
    case RT_CAUSE_FRAGMENTATION:
        advise_fragmentation(d, ctx);
        break;
    case RT_CAUSE_GARBAGE:
        fmt_bytes(b, sizeof b, d->gc_freed_per_round);
        say(d,
            "gc frees %.0f objects (%s) per round: reference cycles the program makes each "
            "round. roundtrim's gc frees them; breaking the cycles (weak references, del of "
            "what refers back) spares the collection.",
            d->gc_collected_per_round, b);
        break;
    case RT_CAUSE_CUDA_CACHE:
        if (d->device_released_per_round > 0) {
            fmt_bytes(b, sizeof b, d->device_released_per_round);
            say(d,
                "Device memory cached by PyTorch or the driver's pools; roundtrim's release "
                "gives back %s per round.",
                b);
        } else if (!ctx->cuda_empty_cache) {
            say(d, "Device memory cached by PyTorch or the driver's pools grows: set "
                   "NVFLARE_CUDA_EMPTY_CACHE=true (or ROUNDTRIM_CUDA_EMPTY_CACHE=true) and "
                   "roundtrim releases it at each cleanup.");
        } else if (ctx->cleanup_every == 0) {
            say(d, "Device memory cached by PyTorch or the driver's pools grows, and cleanup is "
                   "off: set NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 (or ROUNDTRIM_GC_ROUNDS=1) and "
                   "roundtrim releases it at each cleanup.");
        } else {
            say(d,
                "Device memory cached by PyTorch or the driver's pools grows although it is "
                "released at cleanup: cleanup every %llu rounds may be too rare "
                "(ROUNDTRIM_GC_ROUNDS).",
                (unsigned long long)ctx->cleanup_every);
        }
        break;
    case RT_CAUSE_OUTSIDE_HEAP:
        fmt_bytes(b, sizeof b, g[RT_CAUSE_OUTSIDE_HEAP]);
        say(d,
            "Memory outside the allocators grows %s per round (anonymous mappings of the "
            "program or a library, thread stacks, mapped files, shared memory). No allocator "
            "setting or cleanup frees it: look for mmap calls, shared memory and threads that "
            "are never joined.",
            b);
        break;
    case RT_CAUSE_NONE:
    case RT_CAUSE_COUNT:
        say(d, "Memory is flat over rounds %llu-%llu.", (unsigned long long)d->first_round,
            (unsigned long long)d->last_round);
        break;
    }
    /* Never one confident word for a mixed case: every cause with a fair share is named. */
    bool others = false;
    for (int k = 1; k < RT_CAUSE_COUNT; k++)
        others |= k != (int)d->cause && d->share[k] >= (d->mixed ? 0.05 : 0.2);
    if (others) {
        say(d, d->mixed ? " Mixed causes:" : " Also:");
        for (int k = 1; k < RT_CAUSE_COUNT; k++)
            if (d->share[k] >= (d->mixed ? 0.05 : 0.2) && (d->mixed || k != (int)d->cause))
                say(d, " %s %.0f%%", cause_names[k], 100 * d->share[k]);
        say(d, ".");
    }
    /* What cleanup recovers beyond what the advice already counted for the cause. */
    double besides = d->recovered_per_round;
    if (d->cause == RT_CAUSE_GARBAGE)
        besides -= d->gc_freed_per_round;
    else if (d->cause == RT_CAUSE_FRAGMENTATION)
        besides -= d->trim_released_per_round;
    else if (d->cause == RT_CAUSE_CUDA_CACHE)
        besides -= d->device_released_per_round;
    if (besides >= MIN_RECOVERED) {
        fmt_bytes(c, sizeof c, besides);
        say(d, " roundtrim's cleanup recovers %s per round besides.", c);
    }
}

/* The cause with the largest score, its shares, and whether it dominates. */
static bool weigh(struct roundtrim_diagnosis *d, const double *score)
{
    double total = 0;
    for (int k = 1; k < RT_CAUSE_COUNT; k++)
        total += score[k];
    if (total <= 0)
        return false;
    int best = 0;
    for (int k = 1; k < RT_CAUSE_COUNT; k++) {
        d->share[k] = score[k] / total;
        if (!best || score[k] > score[best])
            best = k;
    }
    d->mixed = d->share[best] < DOMINANT;
    /* A leak close behind another cause is named first: no cleanup fixes it, and the blocks it
     * keeps pin the pages around them, so a free heap growing beside it is often its doing. */
    if (d->mixed && best != RT_CAUSE_LEAK && score[RT_CAUSE_LEAK] >= LEAK_FIRST * score[best])
        best = RT_CAUSE_LEAK;
    d->cause = (enum roundtrim_cause)best;
    return true;
}

void roundtrim_diagnose(const struct roundtrim_diag_sample *smp, size_t n,
                        const struct roundtrim_diag_context *ctx, struct roundtrim_diagnosis *d)
{
    memset(d, 0, sizeof *d);
    if (n > 64) { /* the window: the latest rounds */
        smp += n - 64;
        n = 64;
    }
    d->rounds = (int)n;
    if (n < ROUNDTRIM_DIAG_MIN_ROUNDS) {
        d->skipped = "too_few_rounds";
        return;
    }
    d->first_round = smp[0].round;
    d->last_round = smp[n - 1].round;
    struct series s;
    for (int p = 0; p < RT_PART_COUNT; p++) {
        enum roundtrim_mem_part part = (enum roundtrim_mem_part)p;
        sum_series(smp, n, &part, 1, true, &s);
        d->slope_known[p] = s.known;
        d->slope[p] = s.known ? slope_of(&s) : 0;
    }
    struct series rss = {.known = true};
    double trims[64], shares[64];
    size_t trimmed = 0;
    for (size_t i = 0; i < n; i++) {
        /* What a trim returns when it runs: rounds the policy left it out of say nothing. */
        if (smp[i].trim_ran)
            trims[trimmed++] = (double)smp[i].trim_released;
        shares[i] = smp[i].rss ? (double)smp[i].part[RT_PART_HEAP_FREE] / (double)smp[i].rss : 0;
        d->collected |= smp[i].gc_ran || smp[i].program_gc;
        rss.x[rss.n] = (double)smp[i].round;
        rss.y[rss.n++] = (double)smp[i].rss;
        d->gc_freed_per_round += (double)smp[i].gc_freed;
        d->gc_collected_per_round += (double)smp[i].gc_collected;
        d->trim_released_per_round += (double)smp[i].trim_released;
        d->device_released_per_round += (double)smp[i].device_released;
    }
    d->gc_freed_per_round /= (double)n;
    d->gc_collected_per_round /= (double)n;
    d->trim_released_per_round /= (double)n;
    d->device_released_per_round /= (double)n;
    d->recovered_per_round =
        d->gc_freed_per_round + d->trim_released_per_round + d->device_released_per_round;
    d->rss_mean = mean_of(&rss);
    d->growth_per_round =
        slope_of(&rss) + d->slope[RT_PART_DEVICE_LIVE] + d->slope[RT_PART_DEVICE_CACHED];
    struct series free_heap;
    enum roundtrim_mem_part fp = RT_PART_HEAP_FREE;
    sum_series(smp, n, &fp, 1, true, &free_heap);
    /* Levels and yields by their medians: one spike round (glibc's heap briefly 25 times its
     * usual size) must not make a flat process look fragmented. */
    double free_median = free_heap.known ? median_of(free_heap.y, n) : 0;
    d->heap_free_median = free_median;
    d->heap_free_share = free_heap.known ? median_of(shares, n) : 0;
    double trim_median = trimmed ? median_of(trims, trimmed) : 0;

    /* 1. What grows. */
    static const enum roundtrim_mem_part live[] = {RT_PART_HEAP_LIVE, RT_PART_PYTHON,
                                                   RT_PART_DEVICE_LIVE};
    static const enum roundtrim_mem_part outside[] = {RT_PART_OTHER_ANON, RT_PART_FILE,
                                                      RT_PART_SHMEM};
    static const enum roundtrim_mem_part cached[] = {RT_PART_DEVICE_CACHED};
    double g[RT_CAUSE_COUNT] = {0};
    sum_series(smp, n, live, 3, false, &s);
    s.known = s.known && smp[0].known[RT_PART_HEAP_LIVE];
    g[RT_CAUSE_LEAK] = growth(&s, d->rss_mean);
    g[RT_CAUSE_FRAGMENTATION] = growth(&free_heap, d->rss_mean);
    sum_series(smp, n, cached, 1, true, &s);
    g[RT_CAUSE_CUDA_CACHE] = growth(&s, d->rss_mean);
    sum_series(smp, n, outside, 3, true, &s);
    g[RT_CAUSE_OUTSIDE_HEAP] = growth(&s, d->rss_mean);
    if (weigh(d, g)) {
        d->decided_by = "growth";
        advise(d, ctx, g);
        return;
    }
    /* 2. Flat, but because cleanup takes something back every time: what is worth naming. */
    double r[RT_CAUSE_COUNT] = {0};
    if (d->gc_collected_per_round >= GC_OBJECTS_MIN && d->gc_freed_per_round >= MIN_SLOPE)
        r[RT_CAUSE_GARBAGE] = d->gc_freed_per_round;
    if (trim_median >= TRIM_MIN && trim_median >= TRIM_SHARE * d->rss_mean)
        r[RT_CAUSE_FRAGMENTATION] = d->trim_released_per_round;
    if (d->device_released_per_round >= MIN_RECOVERED)
        r[RT_CAUSE_CUDA_CACHE] = d->device_released_per_round;
    if (weigh(d, r)) {
        d->decided_by = "cleanup_yield";
        advise(d, ctx, g);
        return;
    }
    memset(d->share, 0, sizeof d->share);
    /* 3. Flat, but most of it is freed memory kept. */
    sum_series(smp, n, cached, 1, true, &s);
    double cached_mean = s.known ? mean_of(&s) : 0;
    sum_series(smp, n, live + 2, 1, true, &s);
    double device_live_mean = s.known ? mean_of(&s) : 0;
    if (free_heap.known && d->heap_free_share >= FREE_SHARE && free_median >= FREE_MIN) {
        d->cause = RT_CAUSE_FRAGMENTATION;
    } else if (cached_mean >= CACHE_MIN &&
               cached_mean >= CACHE_SHARE * (cached_mean + device_live_mean)) {
        d->cause = RT_CAUSE_CUDA_CACHE;
    } else {
        d->cause = RT_CAUSE_NONE;
    }
    d->share[d->cause] = d->cause == RT_CAUSE_NONE ? 0 : 1;
    d->decided_by = d->cause == RT_CAUSE_NONE ? "flat" : "level";
    advise(d, ctx, g);
}

void roundtrim_diagnosis_json(struct roundtrim_json *j, const struct roundtrim_diagnosis *d)
{
    if (d->skipped) {
        roundtrim_json_str(j, "cause", NULL);
        roundtrim_json_str(j, "cause_skipped", d->skipped);
        roundtrim_json_u64(j, "rounds", (uint64_t)d->rounds);
        return;
    }
    roundtrim_json_str(j, "cause", cause_names[d->cause]);
    roundtrim_json_bool(j, "mixed", d->mixed);
    roundtrim_json_str(j, "decided_by", d->decided_by);
    roundtrim_json_u64(j, "rounds", (uint64_t)d->rounds);
    roundtrim_json_u64(j, "first_round", d->first_round);
    roundtrim_json_u64(j, "last_round", d->last_round);
    roundtrim_json_i64(j, "growth_bytes_per_round", (int64_t)nearest(d->growth_per_round));
    roundtrim_json_object_begin(j, "slopes");
    for (int p = 0; p < RT_PART_COUNT; p++) {
        const char *name = roundtrim_mem_part_name((enum roundtrim_mem_part)p);
        if (d->slope_known[p])
            roundtrim_json_i64(j, name, (int64_t)nearest(d->slope[p]));
        else
            roundtrim_json_str(j, name, NULL);
    }
    roundtrim_json_object_end(j);
    roundtrim_json_object_begin(j, "shares");
    for (int k = 1; k < RT_CAUSE_COUNT; k++)
        if (d->share[k] > 0)
            roundtrim_json_u64(j, cause_names[k], (uint64_t)nearest(100 * d->share[k]));
    roundtrim_json_object_end(j);
    roundtrim_json_u64(j, "recovered_bytes_per_round", (uint64_t)nearest(d->recovered_per_round));
    roundtrim_json_object_begin(j, "recovered");
    roundtrim_json_u64(j, "gc", (uint64_t)nearest(d->gc_freed_per_round));
    roundtrim_json_u64(j, "trim", (uint64_t)nearest(d->trim_released_per_round));
    roundtrim_json_u64(j, "device", (uint64_t)nearest(d->device_released_per_round));
    roundtrim_json_object_end(j);
    roundtrim_json_u64(j, "gc_collected_per_round", (uint64_t)nearest(d->gc_collected_per_round));
    roundtrim_json_u64(j, "heap_free_percent", (uint64_t)nearest(100 * d->heap_free_share));
    roundtrim_json_bool(j, "collected", d->collected);
    roundtrim_json_str(j, "advice", d->advice);
}
