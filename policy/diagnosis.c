#include "policy/diagnosis.h"

#include "policy/diag_reason.h"
#include "policy/json_writer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Growth of the parts that are not exact counters (the freed heap, RssAnon's rest, device
 * caches) below this per round is noise for any process (allocator caches, page-size steps). */
#define MIN_SLOPE ((double)(256 << 10))
/* What cleanup gives back is worth naming from this much per round. */
#define MIN_RECOVERED ((double)(1 << 20))
/* A rise over a window counts when it is this many residual standard deviations. */
#define NOISE_SIGMAS 3.0
/* A cause has most of it when its share reaches this; below, the diagnosis says "mixed". */
#define DOMINANT 0.6
/* In a mixed case, a leak with at least this fraction of the leading cause's growth leads. */
#define LEAK_FIRST 0.8
/* Freed heap kept resident wastes memory when it is this share of RSS, at least FREE_MIN, and
 * the cleanup does not give most of it back. */
#define FREE_SHARE  0.5
#define FREE_MIN    ((double)(8 << 20))
#define CACHE_SHARE 0.5
#define CACHE_MIN   ((double)(64 << 20))
/* Live memory that rose and stopped, or swings, is worth a word from this much. */
#define PATTERN_MIN ((double)(1 << 20))
#define HISTORY     ROUNDTRIM_DIAG_HISTORY
/* Growth that persists rises through its window: no single round's step carries more than this
 * share of the fitted rise. One step (a buffer grown once, the allocator's top chunk moving up
 * once, a cache filled in one round) fits a rise across every window that holds it, and is a
 * new level, not growth: a single step gives at least two thirds, two equal steps a third. */
#define STEP_SHARE 0.5

static const char *const cause_names[RT_CAUSE_COUNT] = {
#define RT_CAUSE(id, name, verdict, grows, words) [RT_CAUSE_##id] = #name,
#include "policy/diag_causes.def"
};

/* What grows, for each cause: how the advice's sentence about it begins. */
static const char *const cause_grows[RT_CAUSE_COUNT] = {
#define RT_CAUSE(id, name, verdict, grows, words) [RT_CAUSE_##id] = grows,
#include "policy/diag_causes.def"
};

static const char *const finding_names[RT_FIND_COUNT_BITS] = {
#define RT_FINDING(id, name, meaning) [RT_FIND_BIT_##id] = #name,
#include "policy/diag_causes.def"
};

const char *roundtrim_cause_name(enum roundtrim_cause c)
{
    return (unsigned)c < RT_CAUSE_COUNT ? cause_names[c] : "unknown";
}

const char *roundtrim_finding_name(unsigned bit_index)
{
    return bit_index < RT_FIND_COUNT_BITS ? finding_names[bit_index] : "unknown";
}

static const char *const action_names[RT_DIAG_ACTION_COUNT] = {
#define RT_DIAG_ACTION(id, name, given) [RT_DIAG_ACTION_##id] = #name,
#include "policy/diag_input.def"
};

const char *roundtrim_diag_action_name(enum roundtrim_diag_action a)
{
    return (unsigned)a < RT_DIAG_ACTION_COUNT ? action_names[a] : "unknown";
}

/* A part (or a sum of parts) over the rounds: y[i] at round x[i]. */
struct series {
    double x[HISTORY], y[HISTORY];
    size_t n;
    bool known;
};

/* Least squares over points [a, b) of s: the slope, and whether the rise it gives over them
 * stands out of the scatter around the fit (NOISE_SIGMAS residual deviations; squares compared).
 * A freed heap measured before cleanup swings by megabytes from round to round; a leak does
 * not. */
static double fit_spread(const struct series *s, size_t a, size_t b, double *variance)
{
    size_t n = b - a;
    double mx = 0, my = 0;
    for (size_t i = a; i < b; i++) {
        mx += s->x[i];
        my += s->y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0;
    for (size_t i = a; i < b; i++) {
        sxx += (s->x[i] - mx) * (s->x[i] - mx);
        sxy += (s->x[i] - mx) * (s->y[i] - my);
    }
    double g = sxx > 0 ? sxy / sxx : 0;
    double ss = 0;
    for (size_t i = a; i < b; i++) {
        double r = s->y[i] - (my + g * (s->x[i] - mx));
        ss += r * r;
    }
    *variance = n > 2 ? ss / (double)(n - 2) : 0;
    return g;
}

static double fit(const struct series *s, size_t a, size_t b, bool *clear)
{
    double variance;
    double g = fit_spread(s, a, b, &variance);
    double rise = g * (s->x[b - 1] - s->x[a]);
    if (clear)
        *clear = rise > 0 && rise * rise >= NOISE_SIGMAS * NOISE_SIGMAS * variance;
    return g;
}

/* The square root by Newton's steps (the library links no libm); v >= 0. */
static double root_of(double v)
{
    if (!(v > 0))
        return 0;
    double r = v > 1 ? v : 1;
    for (int i = 0; i < 128; i++) {
        double next = 0.5 * (r + v / r);
        if (next >= r)
            break;
        r = next;
    }
    return r;
}

/* The slope a fit over [a, b) must pass to stand out of its scatter, as fit() judges it: a
 * figure within it says nothing of growth either way. */
static double noise_band(const struct series *s, size_t a, size_t b, double variance)
{
    double span = s->x[b - 1] - s->x[a];
    return span > 0 ? NOISE_SIGMAS * root_of(variance) / span : 0;
}

static double mean_of(const struct series *s, size_t a, size_t b)
{
    double m = 0;
    for (size_t i = a; i < b; i++)
        m += s->y[i];
    return b > a ? m / (double)(b - a) : 0;
}

/* The median of v[0..n) (n <= HISTORY), v left as it is. */
static double median_of(const double *v, size_t n)
{
    double sorted[HISTORY];
    if (n == 0 || n > HISTORY)
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

static double max_of(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static double min_of(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

/* A third's low and high: its extremes when it has one or two points, its median beyond (one
 * noisy round must not decide). */
static double low_of(const double *v, size_t k)
{
    return k <= 2 ? min_of(v, k) : median_of(v, k);
}

static double high_of(const double *v, size_t k)
{
    return k <= 2 ? max_of(v, k) : median_of(v, k);
}

/* The sum of the given parts, known only when every one of them is (a missing part must not
 * read as a flat one). */
static void sum_series(const struct roundtrim_diag_sample *smp, size_t n,
                       const enum roundtrim_mem_part *parts, size_t np, struct series *out)
{
    memset(out, 0, sizeof *out);
    out->known = n > 0;
    for (size_t i = 0; i < n; i++) {
        double v = 0;
        for (size_t k = 0; k < np; k++) {
            if (smp[i].known[parts[k]])
                v += (double)smp[i].part[parts[k]];
            else
                out->known = false;
        }
        out->x[out->n] = (double)smp[i].round;
        out->y[out->n++] = v;
    }
}

/* The largest rise from one round to the next over points [a, b]. */
static double largest_step(const struct series *s, size_t a, size_t b)
{
    double m = 0;
    for (size_t i = a + 1; i <= b; i++)
        m = s->y[i] - s->y[i - 1] > m ? s->y[i] - s->y[i - 1] : m;
    return m;
}

/* Whether the m rounds ending at e (inclusive) show growth that is kept and goes on: the fit
 * rises clearly and at least min_slope a round, not by one step, the last third stays above the
 * first third and above the window before (a sawtooth or a periodic load falls back: it does
 * not), and the second half reaches higher than the first (a warm-up that stopped does not). */
static bool growing_at(const struct series *s, size_t e, size_t m, double min_slope)
{
    size_t a = e + 1 - m, k = m / 3;
    bool clear;
    double g = fit(s, a, e + 1, &clear);
    if (!clear || g < min_slope)
        return false;
    if (largest_step(s, a, e) > STEP_SHARE * g * (s->x[e] - s->x[a]))
        return false;
    const double *first = s->y + a, *last = s->y + e + 1 - k;
    double last_low = low_of(last, k);
    if (!(last_low > high_of(first, k)))
        return false;
    if (a >= m && !(last_low > (k <= 2 ? max_of(s->y + a - m, m) : median_of(s->y + a - m, m))))
        return false;
    size_t h = m / 2;
    return max_of(s->y + e + 1 - h, h) > max_of(s->y + a, m - h);
}

/* How a part moves over the rounds: whether it grows now and for how many windows in a row
 * (windows of 6, 12 and 24 rounds: a slow leak in noise shows in the longer ones), whether it
 * grew before and stopped. */
struct trend {
    bool known;
    int persisted;        /* windows in a row, ending at the latest, that grew */
    size_t since;         /* index of the first round of the first of them */
    bool now;             /* the latest window grows */
    bool ever;            /* some window of 6 grew */
    size_t ever_first;    /* the first round of the first window that grew */
    size_t window_rounds; /* the length of the windows persisted counts */
};

/* The series with each inner point the median of it and its neighbours: one round measured
 * wrong (a mapping of the program's read as an arena for a round) is no fall or rise, while a
 * fall that stays (a cache cleared) still is. */
static void filtered(const struct series *in, struct series *out)
{
    *out = *in;
    for (size_t i = 1; i + 1 < in->n; i++) {
        double a = in->y[i - 1], b = in->y[i], c = in->y[i + 1];
        out->y[i] = a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
    }
}

/* The squared residuals of the best fit of y = c + g * max(0, x - x[b]) over points [a, e]: flat
 * up to round b, a line from there. */
static double hinge_residuals(const struct series *s, size_t a, size_t e, size_t b)
{
    size_t n = e + 1 - a;
    double mz = 0, my = 0;
    for (size_t i = a; i <= e; i++) {
        mz += s->x[i] > s->x[b] ? s->x[i] - s->x[b] : 0;
        my += s->y[i];
    }
    mz /= (double)n;
    my /= (double)n;
    double szz = 0, szy = 0;
    for (size_t i = a; i <= e; i++) {
        double z = (s->x[i] > s->x[b] ? s->x[i] - s->x[b] : 0) - mz;
        szz += z * z;
        szy += z * (s->y[i] - my);
    }
    double g = szz > 0 ? szy / szz : 0, ss = 0;
    for (size_t i = a; i <= e; i++) {
        double z = (s->x[i] > s->x[b] ? s->x[i] - s->x[b] : 0) - mz;
        double r = s->y[i] - my - g * z;
        ss += r * r;
    }
    return ss;
}

/* The first round that grew, in the first window of m rounds that grows (from index a): a window
 * passes once its later rounds rise, so a part flat until round 20 grows in the window of rounds
 * 17-22. The round after the last flat one, where a flat stretch and a line from its end fit the
 * rounds from the one before the window to the window's end clearly better (half the squared
 * residuals) than one line does; else a. */
static size_t growth_start(const struct series *s, size_t a, size_t m)
{
    size_t lo = a ? a - 1 : 0, e = a + m - 1;
    if (e >= s->n)
        e = s->n - 1;
    if (e < lo + 3)
        return a;
    double line = hinge_residuals(s, lo, e, lo), best = line;
    size_t at = lo;
    for (size_t b = lo + 1; b + 2 <= e; b++) {
        double ss = hinge_residuals(s, lo, e, b);
        if (ss < best) {
            best = ss;
            at = b;
        }
    }
    return at > lo && best < 0.5 * line ? at + 1 : a;
}

static void trend_of(const struct series *raw, double min_slope, struct trend *t)
{
    memset(t, 0, sizeof *t);
    t->known = raw->known;
    if (!raw->known)
        return;
    struct series smooth;
    filtered(raw, &smooth);
    const struct series *s = &smooth;
    for (size_t m = ROUNDTRIM_DIAG_SUB_ROUNDS; m <= 4 * ROUNDTRIM_DIAG_SUB_ROUNDS; m *= 2) {
        int run = 0;
        size_t start = 0;
        for (size_t e = m - 1; e < s->n; e++) {
            if (growing_at(s, e, m, min_slope)) {
                if (run++ == 0)
                    start = e + 1 - m;
                if (m == ROUNDTRIM_DIAG_SUB_ROUNDS && !t->ever) {
                    t->ever = true;
                    t->ever_first = e + 1 - m;
                }
            } else {
                run = 0;
            }
        }
        if (run > 0)
            t->now = true;
        if (run > t->persisted) {
            t->persisted = run;
            t->since = start;
            t->window_rounds = m;
        }
    }
    if (t->persisted > 0)
        t->since = growth_start(s, t->since, t->window_rounds);
}

static void fmt_bytes(char *out, size_t cap, double b)
{
    double a = b < 0 ? -b : b;
    if (a >= (double)(1ull << 30))
        snprintf(out, cap, "%.2f GiB", b / (double)(1ull << 30));
    else if (a >= 1000.0 * 1024) /* never "1024 KiB" */
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

static void say_persisted(struct roundtrim_diagnosis *d, size_t window_rounds)
{
    if (d->steps) {
        say(d,
            " It rose in %d steps since round %llu, the latest in round %llu, and kept each, "
            "flat between them: a buffer or a cache that grows when it is full.",
            d->steps, (unsigned long long)d->growing_since, (unsigned long long)d->last_step);
        return;
    }
    say(d, " It grew in each of the last %d windows of %zu rounds, from round %llu on.",
        d->persisted, window_rounds, (unsigned long long)d->growing_since);
}

/* Characters (UTF-8 code points) in the first n bytes of s. */
static size_t characters(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += ((unsigned char)s[i] & 0xC0) != 0x80;
    return count;
}

/* Where the code that allocates it can be found, as far as the settings and the start record
 * allow; which sentence it is, and where, is kept beside the advice. */
static void advise_sites(struct roundtrim_diagnosis *d, const struct roundtrim_diag_context *ctx)
{
    size_t before = strlen(d->advice) + 1; /* the sentence, after its space */
    if (ctx->sites) {
        d->sites_advice.said = RT_SITES_SAID_SAMPLED;
        say(d, " The sites records name the code that allocates it: roundtrim report --sites LOG "
               "lists the sites that grow.");
    } else if (ctx->sites_skipped) {
        d->sites_advice.said = RT_SITES_SAID_UNAVAILABLE;
        say(d, " Allocation sites cannot be sampled in this process (%s).", ctx->sites_skipped);
    } else {
        d->sites_advice.said = RT_SITES_SAID_OFF;
        say(d, " Set ROUNDTRIM_SITES=true to name the code that allocates it.");
    }
    size_t after = strlen(d->advice);
    if (after < before) { /* the advice was full: nothing said */
        d->sites_advice.said = RT_SITES_SAID_NONE;
        return;
    }
    d->sites_advice.at = characters(d->advice, before);
    d->sites_advice.length = characters(d->advice + before, after - before);
}

/* The rounds the advice's growth figure is fitted over (the verdict's figures cover the last
 * window only): " over rounds 20-40". */
static void say_rate_rounds(struct roundtrim_diagnosis *d)
{
    say(d, " over rounds %llu-%llu", (unsigned long long)d->rate_first_round,
        (unsigned long long)d->last_round);
}

static void advise_leak(struct roundtrim_diagnosis *d, const struct roundtrim_diag_context *ctx,
                        double g)
{
    char b[32];
    fmt_bytes(b, sizeof b, g);
    say(d, "Live memory grows %s per round", b);
    say_rate_rounds(d);
    say(d, ": the program keeps references from one round into the next (a list of updates, a "
           "copy of the model, a history). No cleanup can free it; the fix is in the code that "
           "keeps them.");
    if (d->uncounted_per_round > 0) {
        fmt_bytes(b, sizeof b, d->uncounted_per_round);
        say(d,
            " Of it, %s per round is live by the allocator's own figures (its large blocks' "
            "headers, or heap growth no trim returns) but was never counted: blocks allocated "
            "around roundtrim's counters (a library calling glibc's malloc directly, as "
            "ctypes.CDLL(\"libc.so.6\").malloc does); sampled sites do not see them either.",
            b);
        if (d->uncounted_per_round >= 0.5 * g)
            return;
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
    } else {
        advise_sites(d, ctx);
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
     * with cleanup off, and made each trim hold longer (docs/performance.md, the defaults). */
    else if (ctx->allocator && strcmp(ctx->allocator, "glibc") == 0)
        say(d, " jemalloc preloaded after roundtrim keeps less of it.");
}

static void say_held_back(struct roundtrim_diagnosis *d)
{
    if (!(d->findings & RT_FIND_HELD_BACK))
        return;
    if (d->held_back_why == RT_SKIP_pause_limit)
        say(d,
            " The trim was held back in %d of these %d rounds: its hold of the heap was "
            "foreseen over ROUNDTRIM_TRIM_PAUSE_MS (pause_limit).",
            d->held_back_rounds, d->rounds);
    else
        say(d,
            " Cleanup was held back in %d of these %d rounds (%s: ROUNDTRIM_CLEANUP_BUDGET "
            "was spent).",
            d->held_back_rounds, d->rounds, roundtrim_skip_name(d->held_back_why));
}

/* Where freed heap stays resident and cleanup does not give it back: what would. */
static void advise_free_heap(struct roundtrim_diagnosis *d,
                             const struct roundtrim_diag_context *ctx)
{
    char b[32];
    fmt_bytes(b, sizeof b, d->heap_free_median);
    say(d, " Freed heap kept resident is %.0f%% of RSS (%s) at a round's end",
        100 * d->heap_free_share, b);
    if (ctx->cleanup_every == 0)
        say(d, ", and cleanup is off: set NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 (or "
               "ROUNDTRIM_GC_ROUNDS=1) and roundtrim gives it back every round.");
    else if (ctx->cleanup_every > 1)
        say(d, "; cleanup runs every %llu rounds: ROUNDTRIM_GC_ROUNDS=1 gives it back every round.",
            (unsigned long long)ctx->cleanup_every);
    else if (d->findings & RT_FIND_HELD_BACK)
        say(d, ".");
    else if (d->trim_released_per_round > 0)
        say(d, "; a trim returns less than half of it: the rest lies in pages that live blocks "
               "pin.");
    else
        say(d, ".");
    say_held_back(d);
    if (ctx->cleanup_every == 1)
        advise_allocator(d, ctx);
}

static void advise_idle_cache(struct roundtrim_diagnosis *d,
                              const struct roundtrim_diag_context *ctx, double cached)
{
    char b[32];
    fmt_bytes(b, sizeof b, cached);
    say(d,
        " PyTorch's or CuPy's cache or the driver's pools hold %s of device memory no array uses",
        b);
    if (!ctx->cuda_empty_cache)
        say(d, ": set NVFLARE_CUDA_EMPTY_CACHE=true (or ROUNDTRIM_CUDA_EMPTY_CACHE=true) and "
               "roundtrim releases it at each cleanup.");
    else if (ctx->cleanup_every == 0)
        say(d, ", and cleanup is off: set NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 (or "
               "ROUNDTRIM_GC_ROUNDS=1).");
    else
        say(d, "; it is released at cleanup and fills again within the round.");
}

static void advise_cause(struct roundtrim_diagnosis *d, const struct roundtrim_diag_context *ctx,
                         const double *g, size_t window_rounds)
{
    char b[32];
    switch (d->cause) {
    case RT_CAUSE_LEAK:
        advise_leak(d, ctx, g[RT_CAUSE_LEAK]);
        break;
    case RT_CAUSE_FRAGMENTATION:
        fmt_bytes(b, sizeof b, g[RT_CAUSE_FRAGMENTATION]);
        say(d, "Freed heap kept resident grows %s per round", b);
        say_rate_rounds(d);
        say(d, " while live memory does not: the blocks that live on pin the pages freed around "
               "them.");
        if (ctx->cleanup_every == 0)
            say(d, " Cleanup is off: set NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 (or "
                   "ROUNDTRIM_GC_ROUNDS=1) and roundtrim trims it every round.");
        else if (ctx->cleanup_every > 1)
            say(d, " Cleanup runs every %llu rounds: ROUNDTRIM_GC_ROUNDS=1 trims it every round.",
                (unsigned long long)ctx->cleanup_every);
        say_held_back(d);
        advise_allocator(d, ctx);
        break;
    case RT_CAUSE_CUDA_CACHE:
        fmt_bytes(b, sizeof b, g[RT_CAUSE_CUDA_CACHE]);
        say(d, "Device memory cached by PyTorch, CuPy or the driver's pools grows %s per round", b);
        say_rate_rounds(d);
        say(d, ".");
        if (!ctx->cuda_empty_cache)
            say(d, " Set NVFLARE_CUDA_EMPTY_CACHE=true (or ROUNDTRIM_CUDA_EMPTY_CACHE=true) and "
                   "roundtrim releases it at each cleanup.");
        else if (ctx->cleanup_every == 0)
            say(d, " Cleanup is off: set NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 (or "
                   "ROUNDTRIM_GC_ROUNDS=1) and roundtrim releases it at each cleanup.");
        else
            say(d,
                " It grows although it is released at cleanup: cleanup every %llu rounds may "
                "be too rare (ROUNDTRIM_GC_ROUNDS).",
                (unsigned long long)ctx->cleanup_every);
        break;
    case RT_CAUSE_OUTSIDE_HEAP:
        fmt_bytes(b, sizeof b, g[RT_CAUSE_OUTSIDE_HEAP]);
        say(d, "Memory outside the allocators grows %s per round", b);
        say_rate_rounds(d);
        say(d, " (anonymous mappings of the program or a library, thread stacks, mapped files, "
               "shared memory). No allocator setting or cleanup frees it: look for mmap calls, "
               "shared memory and threads that are never joined.");
        break;
    default:
        return;
    }
    say_persisted(d, window_rounds);
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
}

/* What cleanup keeps in check, said apart from the cause. */
static void say_held(struct roundtrim_diagnosis *d)
{
    char b[32];
    if (d->held_gc > 0) {
        /* Beside a growth the advice has just called, this is more, not the memory's state. */
        bool grows = d->cause != RT_CAUSE_NONE;
        fmt_bytes(b, sizeof b, d->held_gc);
        say(d,
            " %s: gc frees %s a round (1 MiB or more in %d of rounds %llu-%llu; reference "
            "cycles the program makes and drops; without a collection this program grows that "
            "much %sa round; breaking the cycles, with weak references or del of what refers "
            "back, spares it).",
            grows ? "Beside that growth, cleanup holds more flat" : "Held flat by cleanup", b,
            d->held_rounds[RT_DIAG_ACTION_GC], (unsigned long long)d->first_round,
            (unsigned long long)d->last_round, grows ? "more " : "");
    }
    if (d->held_trim > 0) {
        fmt_bytes(b, sizeof b, d->held_trim);
        say(d,
            " The trim gives back %s of freed heap a round (1 MiB or more in %d of rounds "
            "%llu-%llu: the round's own temporaries; without it they stay resident until the "
            "next round reuses them).",
            b, d->held_rounds[RT_DIAG_ACTION_TRIM], (unsigned long long)d->first_round,
            (unsigned long long)d->last_round);
    }
    if (d->held_device > 0) {
        fmt_bytes(b, sizeof b, d->held_device);
        say(d,
            " The CUDA cache release gives back %s of device memory a round (1 MiB or more in "
            "%d of rounds %llu-%llu).",
            b, d->held_rounds[RT_DIAG_ACTION_DEVICE], (unsigned long long)d->first_round,
            (unsigned long long)d->last_round);
    }
}

/* The cause with the largest growth, its shares, and whether it dominates. */
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

/* Whether the trims over the window returned next to nothing of what the freed heap grew by
 * (below a tenth), with at least two trims run or backed off for yielding nothing. */
static bool trims_return_none(const struct roundtrim_diag_sample *w, size_t n, double growth)
{
    size_t tried = 0;
    double released = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i].trim_ran || w[i].trim_skipped == RT_SKIP_no_yield)
            tried++;
        released += (double)w[i].trim_released;
    }
    return tried >= 2 && released < 0.1 * growth * (double)(n - 1);
}

/* Live memory: the exact counters (malloc's live bytes, pymalloc's arenas, device memory in
 * use). A part the process gained later (CUDA initialised in round 5) counts from then. */
static void live_series(const struct roundtrim_diag_sample *smp, size_t n, struct series *s)
{
    static const enum roundtrim_mem_part heap = RT_PART_HEAP_LIVE;
    sum_series(smp, n, &heap, 1, s);
    static const enum roundtrim_mem_part more[] = {RT_PART_PYTHON, RT_PART_DEVICE_LIVE};
    for (size_t k = 0; k < 2; k++)
        if (n && smp[n - 1].known[more[k]])
            for (size_t i = 0; i < n; i++)
                s->y[i] += smp[i].known[more[k]] ? (double)smp[i].part[more[k]] : 0;
}

static uint64_t given_back(const struct roundtrim_diag_sample *smp, enum roundtrim_diag_action what)
{
    switch (what) {
#define RT_DIAG_ACTION(id, name, given)                                                            \
    case RT_DIAG_ACTION_##id:                                                                      \
        return smp->given;
#include "policy/diag_input.def"
    default:
        return 0;
    }
}

/* What an action holds flat: its mean per round over the window, from MIN_RECOVERED, where it
 * gave back MIN_RECOVERED or more in most of the rounds it was due in (all of them with cleanup
 * every round, one in `every` else). */
static double held(struct roundtrim_diagnosis *d, const struct roundtrim_diag_sample *w, size_t n,
                   uint64_t every, enum roundtrim_diag_action what, double mean)
{
    int rounds = 0;
    for (size_t i = 0; i < n; i++)
        rounds += (double)given_back(&w[i], what) >= MIN_RECOVERED;
    size_t due = every > 1 ? (n + every - 1) / every : n;
    d->held_rounds[what] = rounds;
    return mean >= MIN_RECOVERED && 2 * (size_t)rounds > due ? mean : 0;
}

/* The figures over the verdict's window: slopes, what each action gave back, levels. */
static void measure(struct roundtrim_diagnosis *d, const struct roundtrim_diag_sample *w, size_t n,
                    uint64_t every)
{
    struct series s;
    for (int p = 0; p < RT_PART_COUNT; p++) {
        enum roundtrim_mem_part part = (enum roundtrim_mem_part)p;
        sum_series(w, n, &part, 1, &s);
        d->slope_known[p] = s.known;
        d->slope[p] = s.known ? fit(&s, 0, n, NULL) : 0;
    }
    struct series total = {.known = true};
    double shares[HISTORY], rss_sum = 0;
    for (size_t i = 0; i < n; i++) {
        shares[i] = w[i].rss ? (double)w[i].part[RT_PART_HEAP_FREE] / (double)w[i].rss : 0;
        /* A full collection ran: roundtrim's, the program's own, or the interpreter's automatic
         * ones (the policy left ours out because they ran and found nothing, or ours found
         * nothing twice). */
        enum roundtrim_skip gc_why = w[i].gc_skipped, trim_why = w[i].trim_skipped;
        d->collected |= w[i].gc_ran || w[i].program_gc || gc_why == RT_SKIP_no_garbage ||
                        gc_why == RT_SKIP_no_yield || gc_why == RT_SKIP_program_gc;
        enum roundtrim_skip held = roundtrim_skip_held_back(trim_why) ? trim_why
                                   : roundtrim_skip_held_back(gc_why) ? gc_why
                                                                      : RT_SKIP_NONE;
        if (held) {
            d->held_back_rounds++;
            if (!d->held_back_why)
                d->held_back_why = held;
        }
        /* What the growth figure is on: RSS and device memory, the device parts where known. */
        double device = 0;
        if (d->slope_known[RT_PART_DEVICE_LIVE])
            device += (double)w[i].part[RT_PART_DEVICE_LIVE];
        if (d->slope_known[RT_PART_DEVICE_CACHED])
            device += (double)w[i].part[RT_PART_DEVICE_CACHED];
        total.x[total.n] = (double)w[i].round;
        total.y[total.n++] = (double)w[i].rss + device;
        rss_sum += (double)w[i].rss;
        d->gc_freed_per_round += (double)w[i].gc_freed;
        d->gc_collected_per_round += (double)w[i].gc_collected;
        d->trim_released_per_round += (double)w[i].trim_released;
        d->device_released_per_round += (double)w[i].device_released;
    }
    d->gc_freed_per_round /= (double)n;
    d->gc_collected_per_round /= (double)n;
    d->trim_released_per_round /= (double)n;
    d->device_released_per_round /= (double)n;
    d->recovered_per_round =
        d->gc_freed_per_round + d->trim_released_per_round + d->device_released_per_round;
    /* Garbage by the bytes a collection frees, not the objects it finds; and by the rounds that
     * freed it: an average carried by a few rounds does not hold anything flat. */
    d->held_gc = held(d, w, n, every, RT_DIAG_ACTION_GC, d->gc_freed_per_round);
    d->held_trim = held(d, w, n, every, RT_DIAG_ACTION_TRIM, d->trim_released_per_round);
    d->held_device = held(d, w, n, every, RT_DIAG_ACTION_DEVICE, d->device_released_per_round);
    d->rss_mean = rss_sum / (double)n;
    double variance;
    d->growth_per_round = fit_spread(&total, 0, n, &variance);
    d->growth_noise_per_round = noise_band(&total, 0, n, variance);
    enum roundtrim_mem_part fp = RT_PART_HEAP_FREE;
    sum_series(w, n, &fp, 1, &s);
    /* Levels by their medians: one spike round must not make a flat process look fragmented. */
    d->heap_free_median = s.known ? median_of(s.y, n) : 0;
    d->heap_free_share = s.known ? median_of(shares, n) : 0;
    if (d->held_back_rounds)
        d->findings |= RT_FIND_HELD_BACK;
}

/* Levels that waste memory although nothing grows, each with its advice. */
static void find_levels(struct roundtrim_diagnosis *d, const struct roundtrim_diag_sample *w,
                        size_t n, double *cached_mean)
{
    double trims[HISTORY];
    size_t trimmed = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i].trim_ran)
            trims[trimmed++] = (double)w[i].trim_released;
    double trim_median = trimmed ? median_of(trims, trimmed) : 0;
    if (d->slope_known[RT_PART_HEAP_FREE] && d->uncounted_per_round == 0 &&
        d->heap_free_share >= FREE_SHARE && d->heap_free_median >= FREE_MIN &&
        trim_median < 0.5 * d->heap_free_median)
        d->findings |= RT_FIND_FREE_HEAP;
    struct series s;
    enum roundtrim_mem_part cp = RT_PART_DEVICE_CACHED, lp = RT_PART_DEVICE_LIVE;
    sum_series(w, n, &cp, 1, &s);
    double cached = s.known ? mean_of(&s, 0, n) : 0;
    sum_series(w, n, &lp, 1, &s);
    double device_live = s.known ? mean_of(&s, 0, n) : 0;
    if (cached >= CACHE_MIN && cached >= CACHE_SHARE * (cached + device_live) &&
        d->device_released_per_round < 0.5 * cached)
        d->findings |= RT_FIND_IDLE_CACHE;
    *cached_mean = cached;
}

/* Live memory that rose and stopped, or that swings and comes back. */
static void find_patterns(struct roundtrim_diagnosis *d, const struct series *live,
                          const struct trend *t, size_t w)
{
    if (!live->known || d->cause != RT_CAUSE_NONE)
        return;
    size_t n = live->n;
    if (t->ever && !t->now) {
        double rise = max_of(live->y + t->ever_first, n - t->ever_first) - live->y[t->ever_first];
        if (rise >= PATTERN_MIN) {
            d->findings |= RT_FIND_PLATEAU;
            d->plateau_rise = rise;
            return;
        }
    }
    const double *y = live->y + n - w;
    double top = max_of(y, w), range = top - min_of(y, w);
    /* It swings when it comes back down after its highest round: one step up that stays is a
     * new level, not a swing. */
    size_t at = 0;
    while (at + 1 < w && y[at] < top)
        at++;
    if (range >= PATTERN_MIN && min_of(y + at, w - at) <= top - range / 2) {
        d->findings |= RT_FIND_SWINGS;
        d->swing = range;
    }
}

static void advise_unsure(struct roundtrim_diagnosis *d, const struct roundtrim_diag_context *ctx,
                          const char *what, double g)
{
    char b[32];
    fmt_bytes(b, sizeof b, g);
    if (strcmp(d->decided_by, "uncollected") == 0) {
        say(d, "Live memory grows %s per round", b);
        say_rate_rounds(d);
        say(d, ", and no full collection ran in rounds %llu-%llu (automatic gc off or rare",
            (unsigned long long)d->first_round, (unsigned long long)d->last_round);
        if (ctx->cleanup_every == 0)
            say(d, ", roundtrim's cleanup off): references kept from round to round, or cyclic "
                   "garbage not collected yet. A collection tells them apart: set "
                   "ROUNDTRIM_GC_ROUNDS=1 (what gc frees is garbage, what stays is kept by the "
                   "code).");
        else if (ctx->cleanup_every > 1)
            say(d,
                ", roundtrim's gc every %llu rounds): references kept, or cyclic garbage not "
                "collected yet. ROUNDTRIM_GC_ROUNDS=1 tells them apart.",
                (unsigned long long)ctx->cleanup_every);
        else
            say(d, ", roundtrim's gc held back): references kept, or cyclic garbage not "
                   "collected yet; a round whose gc runs tells them apart.");
        say_held_back(d);
        return;
    }
    if (strcmp(d->decided_by, "steps") == 0) {
        say(d,
            "%s rose in %d steps since round %llu (%s per round on average), the latest in "
            "round %llu, and kept each, flat between them: a buffer or a cache that grows when "
            "it is full, or two loads. A next step by round %llu makes it a leak; none, and it "
            "was a warm-up.",
            what, d->steps, (unsigned long long)d->growing_since, b,
            (unsigned long long)d->last_step, (unsigned long long)d->decide_round);
        return;
    }
    say(d, "%s grows %s per round", what, b);
    say_rate_rounds(d);
    if (d->persisted > 0)
        say(d, ", so far in %d window(s) in a row", d->persisted);
    say(d,
        ": not yet long enough to tell a leak from a warm-up or a cache filling to its cap. "
        "Growth that goes on to round %llu is called a leak; growth that stops is not.",
        (unsigned long long)d->decide_round);
}

/* Rises of the live series that stay: a buffer or a cache that grows when it is full (doubling
 * its capacity, its pages written at once) rises in steps with flat rounds between them, which
 * no window of rounds shows as growth. A step is a rise between two rounds of at least
 * PATTERN_MIN (one round measured wrong filtered out) after which the series never falls back
 * below its middle. */
struct steps {
    int count;
    size_t first, prev, last; /* indexes of the first, the one before the last, and the last */
};

static void sticky_steps(const struct series *live, struct steps *out)
{
    memset(out, 0, sizeof *out);
    if (!live->known || live->n < 3)
        return;
    struct series f;
    filtered(live, &f);
    size_t n = f.n;
    for (size_t i = 1; i < n; i++) {
        double rise = f.y[i] - f.y[i - 1];
        if (rise < PATTERN_MIN)
            continue;
        /* a rise over several rounds in a row is one step */
        size_t end = i;
        while (end + 1 < n && f.y[end + 1] - f.y[end] >= PATTERN_MIN)
            end++;
        rise = f.y[end] - f.y[i - 1];
        if (min_of(f.y + end, n - end) >= f.y[i - 1] + rise / 2) {
            if (out->count == 0)
                out->first = i;
            out->prev = out->count ? out->last : i;
            out->last = i;
            out->count++;
        }
        i = end;
    }
}

/* Steps that go on. The next is due one gap after the latest (a gap that grows, as a buffer
 * doubling its capacity has, is expected to grow as much again). Three or more over at least
 * two windows of rounds, the next not overdue, are a leak; two or more not overdue twice over
 * are unsure until the round the next would have come by. Anything else (steps close together
 * that stopped: a warm-up loading in steps) says nothing. Sets the verdict and the growth per
 * round over the steps; false when the steps say nothing. */
static bool steps_verdict(struct roundtrim_diagnosis *d, const struct series *live,
                          const struct roundtrim_diag_sample *smp, size_t n, double *g)
{
    struct steps st;
    sticky_steps(live, &st);
    if (st.count < 2)
        return false;
    uint64_t first = smp[st.first].round, last = smp[st.last].round, prev = smp[st.prev].round;
    uint64_t now = smp[n - 1].round, gap = last - prev;
    uint64_t next_gap = gap;
    if (st.count >= 3 && st.prev > st.first) {
        /* the gap before the one before the latest: only its growth is used */
        uint64_t earlier = (last - first) - gap;
        uint64_t before = earlier / (uint64_t)(st.count - 2);
        if (before > 0 && gap > before)
            next_gap = gap * gap / before;
    }
    bool leak = st.count >= 3 && last - first >= 2 * ROUNDTRIM_DIAG_SUB_ROUNDS &&
                now - last <= next_gap + 1;
    if (!leak && now - last > 2 * next_gap)
        return false;
    size_t from = st.first ? st.first - 1 : 0;
    *g = (live->y[n - 1] - live->y[from]) / (double)(now - smp[from].round);
    if (*g < ROUNDTRIM_DIAG_LEAK_MIN)
        return false;
    d->growing_since = first;
    d->rate_first_round = smp[from].round;
    d->share[RT_CAUSE_LEAK] = 1;
    d->steps = st.count;
    d->last_step = last;
    d->decided_by = "steps";
    if (leak) {
        d->cause = RT_CAUSE_LEAK;
    } else {
        d->cause = RT_CAUSE_UNSURE;
        d->decide_round = last + 2 * next_gap + 1;
    }
    return true;
}

/* When the growth reaches the limit, from the latest round's headroom (the record's forecast
 * object: the report and the metrics say it in their words). */
static void forecast(struct roundtrim_diagnosis *d, const struct roundtrim_diag_context *ctx,
                     const struct roundtrim_diag_sample *latest)
{
    double device = 0;
    if (d->slope_known[RT_PART_DEVICE_LIVE])
        device += d->slope[RT_PART_DEVICE_LIVE];
    if (d->slope_known[RT_PART_DEVICE_CACHED])
        device += d->slope[RT_PART_DEVICE_CACHED];
    double floor = d->growth_noise_per_round > ROUNDTRIM_DIAG_LEAK_MIN ? d->growth_noise_per_round
                                                                       : ROUNDTRIM_DIAG_LEAK_MIN;
    struct roundtrim_forecast_in in = {
        .growing = d->cause == RT_CAUSE_LEAK || d->cause == RT_CAUSE_FRAGMENTATION ||
                   d->cause == RT_CAUSE_OUTSIDE_HEAP,
        .host_growth = d->growth_per_round - device,
        .device_growth = device,
        .min_growth = floor,
        .round = d->last_round,
        .headroom_of = latest->headroom_of,
        .headroom = latest->headroom,
        .job_rounds = ctx->job_rounds,
    };
    roundtrim_forecast(&in, &d->forecast);
}

/* The live heap as far as it is resident: a block is counted at its whole size when it is
 * allocated, while its pages cost memory only as they are written. A buffer allocated at twice
 * its content and filled round by round grows RSS every round and the counted heap in steps:
 * what grows is the resident part. */
static void resident_live(struct roundtrim_diag_sample *smp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t *live = &smp[i].part[RT_PART_HEAP_LIVE];
        *live -= smp[i].over_rss < *live ? smp[i].over_rss : *live;
    }
}

bool roundtrim_diagnosis_wants_sites(const struct roundtrim_diagnosis *d)
{
    if (d->skipped)
        return false;
    if (d->cause == RT_CAUSE_LEAK)
        return true;
    /* Unsure after as many windows of growth as a leak needs (a slow one, which needs more; a
     * Python program's growth no collection has judged yet), not after a first window: a
     * sawtooth's long rise reads as one. */
    if (d->cause != RT_CAUSE_UNSURE || d->persisted < ROUNDTRIM_DIAG_PERSIST)
        return false;
    double seen = 0; /* what the samplers see: malloc's blocks and pymalloc's objects */
    if (d->slope_known[RT_PART_HEAP_LIVE])
        seen += d->slope[RT_PART_HEAP_LIVE];
    if (d->slope_known[RT_PART_PYTHON])
        seen += d->slope[RT_PART_PYTHON];
    return seen >= ROUNDTRIM_DIAG_LEAK_MIN;
}

void roundtrim_diagnose(const struct roundtrim_diag_sample *given, size_t n,
                        const struct roundtrim_diag_context *ctx, struct roundtrim_diagnosis *d)
{
    memset(d, 0, sizeof *d);
    if (n > HISTORY) { /* the history: the latest rounds */
        given += n - HISTORY;
        n = HISTORY;
    }
    struct roundtrim_diag_sample smp[HISTORY];
    memcpy(smp, given, n * sizeof *smp);
    resident_live(smp, n);
    size_t w = ctx->window ? (size_t)ctx->window : ROUNDTRIM_DIAG_DEFAULT_ROUNDS;
    w = w < ROUNDTRIM_DIAG_MIN_ROUNDS ? ROUNDTRIM_DIAG_MIN_ROUNDS : w;
    w = w > n ? n : w;
    d->rounds = (int)w;
    if (w < ROUNDTRIM_DIAG_MIN_ROUNDS) {
        d->skipped = roundtrim_diag_reason_name(RT_DIAGR_TOO_FEW_ROUNDS);
        say(d,
            "%zu round(s) with their memory measured: a diagnosis needs %d. The first round "
            "(the program's start) and rounds recorded while the process exits have no "
            "measure of their own.",
            w, ROUNDTRIM_DIAG_MIN_ROUNDS);
        return;
    }
    const struct roundtrim_diag_sample *win = smp + n - w;
    d->first_round = win[0].round;
    d->last_round = win[w - 1].round;
    measure(d, win, w, ctx->cleanup_every);

    /* 1. What grows, persistently, over the whole history. */
    struct series live;
    struct trend t[RT_CAUSE_COUNT];
    memset(t, 0, sizeof t);
    live_series(smp, n, &live);
    trend_of(&live, ROUNDTRIM_DIAG_LEAK_MIN, &t[RT_CAUSE_LEAK]);
    static const enum roundtrim_mem_part free_part = RT_PART_HEAP_FREE,
                                         cached_part = RT_PART_DEVICE_CACHED;
    static const enum roundtrim_mem_part outside[] = {RT_PART_OTHER_ANON, RT_PART_FILE,
                                                      RT_PART_SHMEM};
    struct series all[RT_CAUSE_COUNT];
    memset(all, 0, sizeof all);
    all[RT_CAUSE_LEAK] = live;
    sum_series(smp, n, &free_part, 1, &all[RT_CAUSE_FRAGMENTATION]);
    sum_series(smp, n, &cached_part, 1, &all[RT_CAUSE_CUDA_CACHE]);
    sum_series(smp, n, outside, 3, &all[RT_CAUSE_OUTSIDE_HEAP]);
    double g[RT_CAUSE_COUNT] = {0}, now[RT_CAUSE_COUNT] = {0};
    for (int k = RT_CAUSE_FRAGMENTATION; k < RT_CAUSE_UNSURE; k++)
        if (k != RT_CAUSE_GARBAGE)
            trend_of(&all[k], MIN_SLOPE, &t[k]);
    int lead = 0;
    for (int k = 1; k < RT_CAUSE_UNSURE; k++) {
        if (!t[k].known)
            continue;
        if (t[k].persisted >= ROUNDTRIM_DIAG_PERSIST)
            g[k] = fit(&all[k], t[k].since, n, NULL);
        else if (t[k].now)
            now[k] = fit(&all[k], t[k].since, n, NULL);
    }
    if (g[RT_CAUSE_FRAGMENTATION] > 0 && g[RT_CAUSE_LEAK] < 0.5 * g[RT_CAUSE_FRAGMENTATION] &&
        trims_return_none(win, w, g[RT_CAUSE_FRAGMENTATION])) {
        /* The allocator's own figures hold it, and no trim returns any of it, while the counted
         * live heap grows far less (kept blocks would pin pages around them): not freed heap but
         * live blocks the counters never saw. */
        d->uncounted_per_round = g[RT_CAUSE_FRAGMENTATION];
        g[RT_CAUSE_LEAK] += g[RT_CAUSE_FRAGMENTATION];
        g[RT_CAUSE_FRAGMENTATION] = 0;
        if (t[RT_CAUSE_LEAK].persisted < ROUNDTRIM_DIAG_PERSIST)
            t[RT_CAUSE_LEAK] = t[RT_CAUSE_FRAGMENTATION];
    }
    if (weigh(d, g)) {
        lead = (int)d->cause;
        /* Large blocks the counters missed, found by glibc's own chunk headers: in heap_live. */
        struct series unc = {.known = true};
        for (size_t i = 0; i < w; i++) {
            unc.x[unc.n] = (double)win[i].round;
            unc.y[unc.n++] = (double)win[i].heap_uncounted;
        }
        double unc_slope = fit(&unc, 0, w, NULL);
        if (d->cause == RT_CAUSE_LEAK && unc_slope >= ROUNDTRIM_DIAG_LEAK_MIN)
            d->uncounted_per_round += unc_slope;
        d->persisted = t[lead].persisted;
        d->growing_since = smp[t[lead].since].round;
        d->decided_by = "growth";
        if (d->cause == RT_CAUSE_LEAK && g[RT_CAUSE_LEAK] < ROUNDTRIM_DIAG_SMALL_LEAK &&
            t[RT_CAUSE_LEAK].persisted < ROUNDTRIM_DIAG_PERSIST_SMALL) {
            d->cause = RT_CAUSE_UNSURE;
            d->decided_by = "not_yet";
            d->decide_round = d->last_round +
                              (uint64_t)(ROUNDTRIM_DIAG_PERSIST_SMALL - t[RT_CAUSE_LEAK].persisted);
        } else if (d->cause == RT_CAUSE_LEAK && ctx->python && !d->collected) {
            d->cause = RT_CAUSE_UNSURE;
            d->decided_by = "uncollected";
        }
    } else {
        /* 2. Growing now, but not for long enough to tell. */
        int k_now = 0;
        for (int k = 1; k < RT_CAUSE_UNSURE; k++)
            if (now[k] > 0 && (!k_now || now[k] > now[k_now]))
                k_now = k;
        if (k_now) {
            d->cause = RT_CAUSE_UNSURE;
            d->decided_by = "not_yet";
            d->persisted = t[k_now].persisted;
            d->growing_since = smp[t[k_now].since].round;
            d->decide_round = d->last_round + (uint64_t)(ROUNDTRIM_DIAG_PERSIST - d->persisted);
            g[k_now] = now[k_now];
            lead = k_now;
        } else if (n < ROUNDTRIM_DIAG_DECIDE_ROUNDS) {
            /* Too few rounds for a window to persist: a clear rise is not yet a verdict. */
            for (int k = 1; k < RT_CAUSE_UNSURE; k++) {
                bool clear;
                if (!t[k].known || n < 3)
                    continue;
                double slope = fit(&all[k], 0, n, &clear);
                double floor = k == RT_CAUSE_LEAK ? ROUNDTRIM_DIAG_LEAK_MIN : MIN_SLOPE;
                if (clear && slope >= floor && slope > g[lead]) {
                    lead = k;
                    g[k] = slope;
                }
            }
            if (lead) {
                d->cause = RT_CAUSE_UNSURE;
                d->decided_by = "not_yet";
                d->growing_since = smp[0].round;
                d->decide_round = smp[0].round + ROUNDTRIM_DIAG_DECIDE_ROUNDS - 1;
            }
        }
    }
    if (!d->decided_by && steps_verdict(d, &live, smp, n, &g[RT_CAUSE_LEAK]))
        lead = RT_CAUSE_LEAK;
    if (!d->decided_by)
        d->decided_by = "flat";
    if (!d->rate_first_round)
        d->rate_first_round = d->growing_since ? d->growing_since : d->first_round;

    double cached_mean;
    find_levels(d, win, w, &cached_mean);
    find_patterns(d, &live, &t[RT_CAUSE_LEAK], w);

    /* 3. In words: the cause, what cleanup holds flat, the levels that waste memory. */
    char b[32];
    if (d->cause == RT_CAUSE_UNSURE) {
        advise_unsure(d, ctx, cause_grows[lead], g[lead]);
    } else if (d->cause != RT_CAUSE_NONE) {
        advise_cause(d, ctx, g, t[lead].window_rounds);
    } else {
        say(d, "Memory does not grow over rounds %llu-%llu.", (unsigned long long)d->first_round,
            (unsigned long long)d->last_round);
        if (d->findings & RT_FIND_PLATEAU) {
            fmt_bytes(b, sizeof b, d->plateau_rise);
            say(d,
                " Live memory rose %s from round %llu and then stopped: a warm-up or a cache "
                "reaching its cap, not a leak.",
                b, (unsigned long long)smp[t[RT_CAUSE_LEAK].ever_first].round);
        } else if (d->findings & RT_FIND_SWINGS) {
            fmt_bytes(b, sizeof b, d->swing);
            say(d,
                " Live memory swings by up to %s between rounds and comes back (periodic "
                "work or a cache that is cleared): flat.",
                b);
        }
    }
    say_held(d);
    if (d->findings & RT_FIND_FREE_HEAP && d->cause != RT_CAUSE_FRAGMENTATION)
        advise_free_heap(d, ctx);
    else if (d->findings & RT_FIND_HELD_BACK && d->cause == RT_CAUSE_NONE && d->held_trim > 0)
        say_held_back(d);
    if (d->findings & RT_FIND_IDLE_CACHE && d->cause != RT_CAUSE_CUDA_CACHE)
        advise_idle_cache(d, ctx, cached_mean);
    forecast(d, ctx, &win[w - 1]);
}
