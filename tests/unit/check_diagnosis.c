/* Telling the causes of memory growth apart from rounds' breakdowns, and what the advice says. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/diagnosis.h"
#include "policy/json_writer.h"
#include "policy/options.h"
#include "policy/prom_format.h"
#include "policy/round_record.h"
#include "run_suite.h"

#define MIB (1024.0 * 1024.0)

/* n rounds of a process with every part known: base values plus a growth per round for each. */
struct shape {
    double base[RT_PART_COUNT], grow[RT_PART_COUNT];
    double gc_freed, trim_released, device_released, gc_collected;
};

static size_t make(struct roundtrim_diag_sample *s, size_t n, const struct shape *sh, bool python,
                   bool cuda)
{
    for (size_t i = 0; i < n; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].round = i + 1;
        double rss = 0;
        for (int p = 0; p < RT_PART_COUNT; p++) {
            bool device = p == RT_PART_DEVICE_LIVE || p == RT_PART_DEVICE_CACHED;
            s[i].known[p] = (p != RT_PART_PYTHON || python) && (!device || cuda);
            double v = sh->base[p] + sh->grow[p] * (double)i;
            s[i].part[p] = s[i].known[p] ? (uint64_t)v : 0;
            if (!device && s[i].known[p])
                rss += v;
        }
        s[i].rss = (uint64_t)rss;
        s[i].gc_freed = (uint64_t)sh->gc_freed;
        s[i].gc_collected = (uint64_t)sh->gc_collected;
        s[i].gc_ran = sh->gc_freed > 0 || sh->gc_collected > 0;
        s[i].trim_ran = true; /* cleanup every round */
        s[i].trim_released = (uint64_t)sh->trim_released;
        s[i].device_released = (uint64_t)sh->device_released;
        /* The interpreter's automatic collections ran and found nothing for ours to do. */
        if (!s[i].gc_ran)
            s[i].gc_skipped = RT_SKIP_no_garbage;
    }
    return n;
}

static const struct roundtrim_diag_context every_round = {.cleanup_every = 1,
                                                          .cuda_empty_cache = true,
                                                          .python = true,
                                                          .allocator = "glibc",
                                                          .window = 10};

static struct shape base_shape(void)
{
    struct shape sh;
    memset(&sh, 0, sizeof sh);
    sh.base[RT_PART_HEAP_LIVE] = 200 * MIB;
    sh.base[RT_PART_HEAP_FREE] = 10 * MIB;
    sh.base[RT_PART_PYTHON] = 30 * MIB;
    sh.base[RT_PART_OTHER_ANON] = 20 * MIB;
    sh.base[RT_PART_FILE] = 40 * MIB;
    return sh;
}

START_TEST(a_growth_just_under_a_mebibyte_is_said_in_mebibytes)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 1023 * 1024 + 512; /* "1024 KiB" at %.0f */
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_nonnull(strstr(d.advice, "grows 1.0 MiB per round"));
    ck_assert_ptr_null(strstr(d.advice, "1024 KiB"));
}
END_TEST

START_TEST(steady_live_growth_is_a_leak_that_cleanup_cannot_fix)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 4 * MIB;
    sh.gc_freed = 50 * MIB; /* cleanup recovers a lot of something else */
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &every_round, &d);
    ck_assert_ptr_null(d.skipped);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert(!d.mixed);
    ck_assert_double_eq_tol(d.slope[RT_PART_HEAP_LIVE], 4 * MIB, 1024);
    ck_assert_double_eq_tol(d.growth_per_round, 4 * MIB, 1024);
    ck_assert_ptr_nonnull(strstr(d.advice, "4.0 MiB per round"));
    ck_assert_ptr_nonnull(strstr(d.advice, "No cleanup can free it"));
    ck_assert_ptr_nonnull(strstr(d.advice, "ROUNDTRIM_SITES=true"));
    /* which sentence on sites, and where: the report finds it there, whatever its words */
    ck_assert_int_eq(d.sites_advice.said, RT_SITES_SAID_OFF);
    ck_assert_uint_eq(d.sites_advice.at,
                      (size_t)(strstr(d.advice, "Set ROUNDTRIM_SITES=true") - d.advice));
    ck_assert_int_eq(d.advice[d.sites_advice.at + d.sites_advice.length - 1], '.');
    /* what cleanup holds flat is said as more than the leak, not as the memory's state */
    ck_assert_ptr_nonnull(strstr(d.advice, "Beside that growth, cleanup holds more flat: gc "
                                           "frees 50.0 MiB a round"));
    ck_assert_ptr_nonnull(strstr(d.advice, "grows that much more a round"));
    ck_assert_ptr_null(strstr(d.advice, "Held flat"));
    /* Persistence: each window of 6 rounds in 10 grew, the first from round 1. */
    ck_assert_int_eq(d.persisted, 5);
    ck_assert_uint_eq(d.growing_since, 1);
}
END_TEST

START_TEST(small_python_objects_growing_are_a_leak_not_outside_the_heap)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 1.3 * MIB;
    sh.grow[RT_PART_PYTHON] = 6 * MIB;
    struct roundtrim_diagnosis d;
    struct roundtrim_diag_context ctx = every_round;
    ctx.sites = true;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &ctx, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_double_eq_tol(d.share[RT_CAUSE_LEAK], 1.0, 1e-9);
    ck_assert_ptr_null(strstr(d.advice, "ROUNDTRIM_SITES=true")); /* sampling is on */
}
END_TEST

START_TEST(free_heap_kept_with_cleanup_off_is_a_finding_and_fragmentation_once_it_grows)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.base[RT_PART_HEAP_LIVE] = 29 * MIB;
    sh.base[RT_PART_HEAP_FREE] = 580 * MIB; /* flat: the damage is done */
    struct roundtrim_diag_context off = every_round;
    off.cleanup_every = 0;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, false, false), &off, &d);
    /* Nothing grows: no cause, but a level that wastes memory, with what gives it back. */
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert_str_eq(d.decided_by, "flat");
    ck_assert(d.findings & RT_FIND_FREE_HEAP);
    ck_assert(d.heap_free_share > 0.8);
    ck_assert_ptr_nonnull(strstr(d.advice, "NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1"));
    /* Growing instead of flat: the same cause, found by growth. */
    sh.base[RT_PART_HEAP_FREE] = 100 * MIB;
    sh.grow[RT_PART_HEAP_FREE] = 20 * MIB;
    make(s, 10, &sh, false, false);
    for (size_t i = 0; i < 10; i++)
        s[i].trim_ran = false; /* cleanup off */
    roundtrim_diagnose(s, 10, &off, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "fragmentation");
    ck_assert_str_eq(d.decided_by, "growth");
}
END_TEST

START_TEST(what_trim_gives_back_every_round_is_held_not_a_cause)
{
    /* A healthy loop that frees its temporaries: flat, whatever the trim gives back. */
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.trim_released = 150 * MIB;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert_double_eq_tol(d.held_trim, 150 * MIB, 1);
    ck_assert(!(d.findings & RT_FIND_FREE_HEAP));
    ck_assert_ptr_nonnull(strstr(d.advice, "The trim gives back 150.0 MiB of freed heap a round"));
    ck_assert_ptr_null(strstr(d.advice, "fragmentation"));
}
END_TEST

START_TEST(what_gc_frees_every_round_is_held_flat_judged_by_bytes)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    /* Ten cycles a round holding 6 MiB (automatic gc off): flat because the cleanup's gc frees
     * them; few objects, many bytes. */
    sh.gc_freed = 6 * MIB;
    sh.gc_collected = 10;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert_double_eq_tol(d.held_gc, 6 * MIB, 1);
    ck_assert_ptr_nonnull(strstr(d.advice, "Held flat by cleanup: gc frees 6.0 MiB a round"));
    ck_assert_ptr_nonnull(strstr(d.advice, "grows that much a round"));
    /* Many objects holding little: nothing worth naming. */
    sh.gc_freed = 100 * 1024;
    sh.gc_collected = 120000;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &every_round, &d);
    ck_assert_double_eq(d.held_gc, 0);
    ck_assert_ptr_null(strstr(d.advice, "gc frees"));
}
END_TEST

START_TEST(device_cache_growing_is_cuda_cache)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.base[RT_PART_DEVICE_LIVE] = 2000 * MIB;
    sh.grow[RT_PART_DEVICE_CACHED] = 64 * MIB;
    struct roundtrim_diag_context no_release = every_round;
    no_release.cuda_empty_cache = false;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, true), &no_release, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "cuda_cache");
    ck_assert_ptr_nonnull(strstr(d.advice, "NVFLARE_CUDA_EMPTY_CACHE=true"));
    /* The release is on but cleanup is off, or rare: each said as it is. */
    struct roundtrim_diag_context off = every_round;
    off.cleanup_every = 0;
    roundtrim_diagnose(s, make(s, 10, &sh, true, true), &off, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "cuda_cache");
    ck_assert_ptr_nonnull(strstr(d.advice, "Cleanup is off"));
    ck_assert_ptr_nonnull(strstr(d.advice, "NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1"));
    struct roundtrim_diag_context rare = every_round;
    rare.cleanup_every = 5;
    roundtrim_diagnose(s, make(s, 10, &sh, true, true), &rare, &d);
    ck_assert_ptr_nonnull(strstr(d.advice, "cleanup every 5 rounds may be too rare"));
}
END_TEST

START_TEST(tensors_kept_on_the_device_are_a_leak_named_by_pytorch)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.base[RT_PART_DEVICE_LIVE] = 500 * MIB;
    sh.grow[RT_PART_DEVICE_LIVE] = 64 * MIB;
    sh.gc_collected = 10; /* the gc ran and freed none of it */
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, true), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_nonnull(strstr(d.advice, "No cleanup can free it"));
    ck_assert_ptr_nonnull(strstr(d.advice, "64.0 MiB per round is device memory"));
    ck_assert_ptr_nonnull(strstr(d.advice, "_record_memory_history"));
    /* the heap's sites cannot name device allocations: not offered */
    ck_assert_ptr_null(strstr(d.advice, "ROUNDTRIM_SITES"));
}
END_TEST

static const char *json_of(const struct roundtrim_diagnosis *d);

/* The headroom every round of s reports, shrinking by what RSS grew. */
static void with_headroom(struct roundtrim_diag_sample *s, size_t n, enum roundtrim_headroom_of of,
                          double start)
{
    for (size_t i = 0; i < n; i++) {
        s[i].headroom_of = of;
        s[i].headroom = (uint64_t)(start - (double)(s[i].rss - s[0].rss));
    }
}

START_TEST(a_leak_foresees_the_round_its_headroom_runs_out_and_the_job_end)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 4 * MIB;
    size_t n = make(s, 10, &sh, true, false);
    with_headroom(s, n, RT_HEADROOM_CGROUP, 400 * MIB); /* 364 MiB left at round 10 */
    struct roundtrim_diag_context ctx = every_round;
    ctx.job_rounds = 100;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, n, &ctx, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_null(d.forecast.skipped);
    ck_assert_uint_eq(d.forecast.rounds_to_limit, 91);
    ck_assert_uint_eq(d.forecast.limit_round, 101);
    ck_assert_int_eq(d.forecast.before_job_end, 0); /* the job's 100 rounds end first */
    ck_assert_uint_eq(d.forecast.headroom, 364 * (uint64_t)MIB);
    ctx.job_rounds = 101;
    roundtrim_diagnose(s, n, &ctx, &d);
    ck_assert_int_eq(d.forecast.before_job_end, 1);
    const char *json = json_of(&d);
    ck_assert_ptr_nonnull(strstr(json, "\"forecast\":{\"rounds_to_limit\":91,\"limit_round\":101,"
                                       "\"headroom_bytes\":381681664,\"headroom_of\":\"cgroup\","
                                       "\"job_rounds\":101,\"before_job_end\":true}"));
}
END_TEST

START_TEST(a_buffer_counted_in_steps_and_filled_every_round_is_a_leak)
{
    /* A block doubled when full (8, 16, 32 MiB, counted at once) and 768 KiB of it written each
     * round: RSS grows every round, the counted live heap in steps, the untouched rest of the
     * block is what the parts exceed RSS by. */
    struct roundtrim_diag_sample s[40];
    struct shape sh = base_shape();
    size_t n = make(s, 40, &sh, true, false);
    double filled = 0, capacity = 8 * MIB;
    for (size_t i = 0; i < n; i++) {
        filled += 768 * 1024;
        if (filled > capacity)
            capacity *= 2;
        s[i].part[RT_PART_HEAP_LIVE] += (uint64_t)capacity;
        s[i].over_rss = (uint64_t)(capacity - filled);
        s[i].rss += (uint64_t)filled;
    }
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, n, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_double_eq_tol(d.slope[RT_PART_HEAP_LIVE], 768 * 1024, 1024);
    /* without what the parts exceed RSS by, the steps alone are no growth that persists */
    for (size_t i = 0; i < n; i++)
        s[i].over_rss = 0;
    roundtrim_diagnose(s, n, &every_round, &d);
    ck_assert_str_ne(roundtrim_cause_name(d.cause), "leak");
}
END_TEST

START_TEST(no_forecast_for_flat_memory_or_a_leak_of_device_memory)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    size_t n = make(s, 10, &sh, true, false);
    with_headroom(s, n, RT_HEADROOM_MACHINE, 400 * MIB);
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, n, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert_str_eq(d.forecast.skipped, "no_growth");
    ck_assert_ptr_nonnull(strstr(json_of(&d), "\"forecast_skipped\":\"no_growth\""));
    sh.base[RT_PART_DEVICE_LIVE] = 500 * MIB;
    sh.grow[RT_PART_DEVICE_LIVE] = 64 * MIB;
    sh.gc_collected = 10;
    n = make(s, 10, &sh, true, true);
    with_headroom(s, n, RT_HEADROOM_MACHINE, 400 * MIB);
    roundtrim_diagnose(s, n, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_str_eq(d.forecast.skipped, "device_growth");
    /* a host leak where no limit was read */
    sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 4 * MIB;
    n = make(s, 10, &sh, true, false);
    roundtrim_diagnose(s, n, &every_round, &d);
    ck_assert_str_eq(d.forecast.skipped, "headroom_unknown");
}
END_TEST

START_TEST(anonymous_growth_beside_a_flat_heap_is_outside_the_heap)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_OTHER_ANON] = 8 * MIB;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, false, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "outside_heap");
    ck_assert_ptr_nonnull(strstr(d.advice, "No allocator setting or cleanup frees it"));
}
END_TEST

START_TEST(flat_memory_is_none_and_noise_is_not_growth)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    make(s, 10, &sh, true, false);
    /* Jitter of 200 KiB up and down: no cause. */
    for (size_t i = 0; i < 10; i++)
        s[i].part[RT_PART_HEAP_LIVE] += (i % 2) * 200 * 1024;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert_str_eq(d.decided_by, "flat");
}
END_TEST

START_TEST(a_freed_heap_that_swings_is_noise_beside_a_steady_leak)
{
    /* Measured before cleanup, the freed heap swings by megabytes around a small slope; the
     * live heap rises 1 MiB a round, steadily. */
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 1 * MIB;
    sh.grow[RT_PART_HEAP_FREE] = 0.8 * MIB;
    make(s, 10, &sh, true, false);
    for (size_t i = 0; i < 10; i++)
        s[i].part[RT_PART_HEAP_FREE] += (uint64_t)((i % 2 ? 6 : 0) * MIB);
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert(!d.mixed);
    ck_assert_double_eq_tol(d.share[RT_CAUSE_LEAK], 1.0, 1e-9);
}
END_TEST

START_TEST(python_growth_without_a_collection_is_not_called_unfixable)
{
    /* gc disabled by the program and roundtrim's cleanup off: cycles look like kept memory. */
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_PYTHON] = 20 * MIB;
    struct roundtrim_diag_context off = every_round;
    off.cleanup_every = 0;
    struct roundtrim_diagnosis d;
    make(s, 10, &sh, true, false);
    for (size_t i = 0; i < 10; i++)
        s[i].gc_skipped = RT_SKIP_NONE; /* no collection of any kind ran */
    roundtrim_diagnose(s, 10, &off, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "unsure");
    ck_assert_str_eq(d.decided_by, "uncollected");
    ck_assert(!d.collected);
    ck_assert_ptr_nonnull(strstr(d.advice, "cyclic garbage not collected yet"));
    ck_assert_ptr_nonnull(strstr(d.advice, "ROUNDTRIM_GC_ROUNDS=1"));
    ck_assert_ptr_null(strstr(d.advice, "No cleanup can free it"));
    /* The program's own full collections count as collections. */
    s[4].program_gc = true;
    roundtrim_diagnose(s, 10, &off, &d);
    ck_assert(d.collected);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_nonnull(strstr(d.advice, "No cleanup can free it"));
    /* So do the interpreter's automatic ones (our gc left out because they found nothing):
     * with cleanup every round and automatic gc on, no advice to set ROUNDTRIM_GC_ROUNDS=1. */
    make(s, 10, &sh, true, false);
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_null(strstr(d.advice, "ROUNDTRIM_GC_ROUNDS"));
    ck_assert_ptr_null(strstr(d.advice, "no full"));
}
END_TEST

START_TEST(one_spike_round_does_not_make_a_small_process_fragmented)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh;
    memset(&sh, 0, sizeof sh);
    sh.base[RT_PART_HEAP_LIVE] = 1 * MIB;
    sh.base[RT_PART_HEAP_FREE] = 0.5 * MIB;
    sh.base[RT_PART_FILE] = 2 * MIB;
    make(s, 10, &sh, false, false);
    s[3].part[RT_PART_HEAP_FREE] += 96 * MIB; /* glibc's heap briefly 25 times its size */
    s[3].rss += 96 * MIB;
    s[3].trim_released = 96 * MIB;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
}
END_TEST

START_TEST(fragmentation_advice_fits_the_allocator)
{
    /* Freed heap that stays resident though the trim runs every round. */
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.base[RT_PART_HEAP_FREE] = 400 * MIB;
    sh.trim_released = 20 * MIB;
    struct roundtrim_diag_context ctx = every_round;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &ctx, &d); /* glibc */
    ck_assert(d.findings & RT_FIND_FREE_HEAP);
    /* Fewer arenas are no advice: measured, they do not keep less (docs/performance.md). */
    ck_assert_ptr_null(strstr(d.advice, "MALLOC_ARENA_MAX"));
    ck_assert_ptr_nonnull(strstr(d.advice, "jemalloc preloaded after roundtrim"));
    ctx.allocator = "jemalloc";
    roundtrim_diagnose(s, 10, &ctx, &d);
    ck_assert_ptr_null(strstr(d.advice, "MALLOC_ARENA_MAX"));
    ck_assert_ptr_nonnull(strstr(d.advice, "dirty_decay_ms"));
}
END_TEST

START_TEST(a_trim_that_returns_little_of_the_free_heap_says_it_is_pinned)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.base[RT_PART_HEAP_FREE] = 300 * MIB;
    sh.trim_released = 250 * MIB; /* most of it comes back */
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert(!(d.findings & RT_FIND_FREE_HEAP));
    ck_assert_ptr_null(strstr(d.advice, "pin"));
    sh.trim_released = 60 * MIB; /* most of it stays */
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert(d.findings & RT_FIND_FREE_HEAP);
    ck_assert_ptr_nonnull(strstr(d.advice, "a trim returns less than half of it"));
    /* Held back by the pause limit instead: said so, and not called pinned. */
    make(s, 10, &sh, true, false);
    for (size_t i = 0; i < 10; i++) {
        s[i].trim_ran = i % 2 == 0;
        s[i].trim_released = i % 2 == 0 ? (uint64_t)(60 * MIB) : 0;
        s[i].trim_skipped = i % 2 ? RT_SKIP_pause_limit : RT_SKIP_NONE;
    }
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert(d.findings & RT_FIND_HELD_BACK);
    ck_assert_ptr_nonnull(strstr(d.advice, "held back in 5 of these 10 rounds"));
    ck_assert_ptr_nonnull(strstr(d.advice, "ROUNDTRIM_TRIM_PAUSE_MS"));
    ck_assert_ptr_null(strstr(d.advice, "pin"));
}
END_TEST

START_TEST(a_mixed_case_names_the_shares)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 3 * MIB;
    sh.grow[RT_PART_OTHER_ANON] = 2.5 * MIB;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, false, false), &every_round, &d);
    ck_assert(d.mixed);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_nonnull(strstr(d.advice, "Mixed causes: leak 55% outside_heap 45%"));
}
END_TEST

START_TEST(a_leak_close_behind_a_growing_free_heap_is_named_first)
{
    /* A client that keeps 1 MiB a round between its freed blocks: the free heap around them
     * grows about as fast (measured on a real NVFlare client: 1.09 and 1.19 MiB a round). */
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 1.09 * MIB;
    sh.grow[RT_PART_HEAP_FREE] = 1.19 * MIB;
    sh.gc_collected = 10; /* the gc runs and frees none of it */
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, false, false), &every_round, &d);
    ck_assert(d.mixed);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_nonnull(strstr(d.advice, "No cleanup can free it"));
    ck_assert_ptr_nonnull(strstr(d.advice, "Mixed causes: leak 48% fragmentation 52%"));
    /* Far behind, it is not. */
    sh.grow[RT_PART_HEAP_LIVE] = 0.6 * MIB;
    roundtrim_diagnose(s, make(s, 10, &sh, false, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "fragmentation");
}
END_TEST

/* n rounds of a flat process whose live heap follows live[i] (bytes above its base). */
static size_t shaped(struct roundtrim_diag_sample *s, size_t n, const double *live)
{
    struct shape sh = base_shape();
    make(s, n, &sh, true, false);
    for (size_t i = 0; i < n; i++) {
        s[i].part[RT_PART_HEAP_LIVE] += (uint64_t)live[i];
        s[i].rss += (uint64_t)live[i];
    }
    return n;
}

START_TEST(a_warm_up_that_stops_is_a_plateau_not_a_leak)
{
    /* A cache filling 2 MiB a round over the first five rounds, then flat (the round 11:
     * window rounds 2-11). */
    double live[10];
    for (int i = 0; i < 10; i++)
        live[i] = (i < 5 ? i : 4) * 2 * MIB;
    struct roundtrim_diag_sample s[10];
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, shaped(s, 10, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert(d.findings & RT_FIND_PLATEAU);
    ck_assert_double_eq_tol(d.plateau_rise, 8 * MIB, 1);
    ck_assert_ptr_nonnull(strstr(d.advice, "not a leak"));
    /* Rising to the end instead, over too few windows: unsure, with the round that decides. */
    for (int i = 0; i < 10; i++)
        live[i] = (i < 6 ? 0 : i - 5) * 2 * MIB;
    roundtrim_diagnose(s, shaped(s, 10, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "unsure");
    ck_assert_str_eq(d.decided_by, "not_yet");
    ck_assert_int_lt(d.persisted, ROUNDTRIM_DIAG_PERSIST);
    ck_assert_uint_eq(d.decide_round, 10 + (uint64_t)(ROUNDTRIM_DIAG_PERSIST - d.persisted));
    ck_assert_ptr_nonnull(strstr(d.advice, "Growth that goes on to round"));
}
END_TEST

START_TEST(a_leak_or_live_growth_on_its_way_asks_for_sites)
{
    struct roundtrim_diag_sample s[12];
    struct roundtrim_diagnosis d;
    double live[12];
    /* A steady leak: a verdict that asks for the code that allocates it. */
    for (int i = 0; i < 12; i++)
        live[i] = i * 2 * MIB;
    roundtrim_diagnose(s, shaped(s, 12, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert(roundtrim_diagnosis_wants_sites(&d));
    /* A slow leak, unsure until it persists longer: on its way to a leak, sites too. */
    for (int i = 0; i < 12; i++)
        live[i] = i * 256 * 1024.0;
    roundtrim_diagnose(s, shaped(s, 12, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "unsure");
    ck_assert(roundtrim_diagnosis_wants_sites(&d));
    /* Rising in its latest window only (a sawtooth's long rise reads so): not yet. */
    for (int i = 0; i < 10; i++)
        live[i] = (i < 6 ? 0 : i - 5) * 2 * MIB;
    roundtrim_diagnose(s, shaped(s, 10, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "unsure");
    ck_assert(!roundtrim_diagnosis_wants_sites(&d));
    /* Flat, a warm-up that stopped, a sawtooth: no sites. */
    for (int i = 0; i < 12; i++)
        live[i] = (i < 5 ? i : 4) * 2 * MIB;
    roundtrim_diagnose(s, shaped(s, 12, live), &every_round, &d);
    ck_assert(!roundtrim_diagnosis_wants_sites(&d));
    struct roundtrim_diag_sample s30[30];
    double saw[30];
    for (int i = 0; i < 30; i++) /* cleared every fifth round after rising 3 MiB a round */
        saw[i] = (i % 5) * 3 * MIB;
    roundtrim_diagnose(s30, shaped(s30, 30, saw), &every_round, &d);
    ck_assert_msg(!roundtrim_diagnosis_wants_sites(&d), "%s %s", roundtrim_cause_name(d.cause),
                  d.decided_by);
    /* Growth outside the heap (the samplers cannot see it): no sites. */
    struct shape sh = base_shape();
    sh.grow[RT_PART_OTHER_ANON] = 4 * MIB;
    roundtrim_diagnose(s, make(s, 12, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "outside_heap");
    ck_assert(!roundtrim_diagnosis_wants_sites(&d));
    /* Too few rounds for any verdict. */
    roundtrim_diagnose(s, shaped(s, 2, live), &every_round, &d);
    ck_assert(!roundtrim_diagnosis_wants_sites(&d));
}
END_TEST

START_TEST(sawtooth_and_periodic_memory_is_flat)
{
    /* Cleared every fifth round after rising 3 MiB a round (80% of the steps rise). */
    double live[30];
    for (int i = 0; i < 30; i++)
        live[i] = (i % 5) * 3 * MIB;
    struct roundtrim_diag_sample s[30];
    struct roundtrim_diagnosis d;
    for (size_t n = 9; n <= 30; n++) {
        roundtrim_diagnose(s, shaped(s, n, live), &every_round, &d);
        ck_assert_msg(d.cause == RT_CAUSE_NONE, "%zu rounds: %s", n, d.advice);
    }
    ck_assert(d.findings & RT_FIND_SWINGS);
    /* Batch sizes cycling 1, 6, 2, 9 MiB. */
    static const double sizes[] = {1, 6, 2, 9};
    for (int i = 0; i < 30; i++)
        live[i] = sizes[i % 4] * MIB;
    for (size_t n = 9; n <= 30; n++) {
        roundtrim_diagnose(s, shaped(s, n, live), &every_round, &d);
        ck_assert_msg(d.cause == RT_CAUSE_NONE, "%zu rounds: %s", n, d.advice);
    }
    /* A sawtooth of ten rounds, longer than a window: once one fall was seen, the next rise is
     * no leak (it does not pass the level before it). */
    for (int i = 0; i < 30; i++)
        live[i] = (i % 10) * MIB;
    for (size_t n = 12; n <= 30; n++) {
        roundtrim_diagnose(s, shaped(s, n, live), &every_round, &d);
        ck_assert_msg(d.cause != RT_CAUSE_LEAK, "%zu rounds: %s", n, d.advice);
    }
}
END_TEST

START_TEST(one_step_is_a_new_level_and_steps_that_go_on_are_a_leak)
{
    /* A buffer grown once, 8 MiB at round 13 of 24: every window holding the step fits a rise,
     * none is growth; no diagnosis along the way calls it a cause. */
    double live[32];
    for (int i = 0; i < 32; i++)
        live[i] = (i >= 12 ? 8 : 0) * MIB;
    struct roundtrim_diag_sample s[32];
    struct roundtrim_diagnosis d;
    for (size_t n = 9; n <= 24; n++) {
        roundtrim_diagnose(s, shaped(s, n, live), &every_round, &d);
        ck_assert_msg(d.cause == RT_CAUSE_NONE || d.cause == RT_CAUSE_UNSURE, "%zu rounds: %s", n,
                      d.advice);
    }
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    /* The same step in the freed heap measured before cleanup (glibc's top chunk moving up once,
     * as a healthy Python loop showed at round 19): no fragmentation. */
    struct shape sh = base_shape();
    for (size_t n = 9; n <= 24; n++) {
        make(s, n, &sh, true, false);
        for (size_t i = 12; i < n; i++) {
            s[i].part[RT_PART_HEAP_FREE] += 7 * (uint64_t)MIB;
            s[i].rss += 7 * (uint64_t)MIB;
            s[i].trim_released = 7 * (uint64_t)MIB;
        }
        roundtrim_diagnose(s, n, &every_round, &d);
        ck_assert_msg(d.cause == RT_CAUSE_NONE || d.cause == RT_CAUSE_UNSURE, "%zu rounds: %s", n,
                      d.advice);
    }
    /* A copy kept every fourth round (4 MiB): steps that go on are a leak once they persist. */
    for (int i = 0; i < 32; i++)
        live[i] = (double)(i / 4) * 4 * MIB;
    roundtrim_diagnose(s, shaped(s, 32, live), &every_round, &d);
    ck_assert_msg(d.cause == RT_CAUSE_LEAK, "%s", d.advice);
}
END_TEST

/* The live bytes of a buffer whose capacity doubles when full (8 MiB first, 768 KiB of rows a
 * round), every page of the new capacity written when it grows. */
static void doubling(double *live, size_t n)
{
    double used = 0, capacity = 8 * MIB;
    for (size_t i = 0; i < n; i++) {
        used += 768 * 1024;
        if (used > capacity)
            capacity *= 2;
        live[i] = capacity;
    }
}

START_TEST(steps_that_repeat_are_unsure_then_a_leak_never_none)
{
    double live[64];
    doubling(live, 64); /* steps into rounds 11, 22, 43 */
    struct roundtrim_diag_sample s[64];
    struct roundtrim_diagnosis d;
    for (size_t n = 23; n < 43; n++) {
        roundtrim_diagnose(s, shaped(s, n, live), &every_round, &d);
        ck_assert_msg(d.cause == RT_CAUSE_UNSURE, "%zu rounds: %s", n, d.advice);
        ck_assert_str_eq(d.decided_by, "steps");
        ck_assert_int_eq(d.steps, 2);
        ck_assert_uint_eq(d.last_step, 22);
        ck_assert_uint_eq(d.decide_round, 22 + 2 * 11 + 1); /* the next step would tell */
        ck_assert_ptr_nonnull(strstr(d.advice, "rose in 2 steps since round 11"));
        ck_assert_uint_eq(d.findings & RT_FIND_SWINGS, 0);
    }
    for (size_t n = 43; n <= 64; n++) {
        roundtrim_diagnose(s, shaped(s, n, live), &every_round, &d);
        ck_assert_msg(d.cause == RT_CAUSE_LEAK, "%zu rounds: %s", n, d.advice);
        ck_assert_int_eq(d.steps, 3);
    }
    ck_assert_ptr_nonnull(strstr(d.advice, "It rose in 3 steps since round 11, the latest in "
                                           "round 43"));
    ck_assert_ptr_nonnull(strstr(json_of(&d), "\"decided_by\":\"steps\""));
    ck_assert_ptr_nonnull(strstr(json_of(&d), "\"steps\":3,\"last_step\":43"));
}
END_TEST

START_TEST(steps_of_a_warm_up_that_stop_are_no_leak)
{
    /* Three loads at rounds 3, 5 and 7 (50 MiB each), then flat: no leak from round 12 on, a
     * plateau once the next step is overdue. */
    double live[40];
    for (int i = 0; i < 40; i++)
        live[i] = 50 * MIB * ((i >= 2) + (i >= 4) + (i >= 6));
    struct roundtrim_diag_sample s[40];
    struct roundtrim_diagnosis d;
    for (size_t n = 12; n <= 40; n++) {
        roundtrim_diagnose(s, shaped(s, n, live), &every_round, &d);
        ck_assert_msg(d.cause != RT_CAUSE_LEAK, "%zu rounds: %s", n, d.advice);
    }
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert_uint_ne(d.findings & RT_FIND_PLATEAU, 0);
    /* two loads far apart (rounds 3 and 20): unsure until a third would be due, then none */
    for (int i = 0; i < 40; i++)
        live[i] = 100 * MIB * ((i >= 2) + (i >= 19));
    roundtrim_diagnose(s, shaped(s, 30, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "unsure");
    ck_assert_uint_eq(d.decide_round, 20 + 2 * 17 + 1);
    roundtrim_diagnose(s, shaped(s, 40, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "unsure"); /* not overdue twice over yet */
}
END_TEST

START_TEST(a_small_leak_among_noise_is_a_leak_whatever_its_size)
{
    /* 100 KiB a round kept; the live heap at the boundary also holds a scratch buffer of
     * 0-256 KiB (a fixed pseudo-random sequence). */
    double live[30];
    unsigned x = 12345;
    for (int i = 0; i < 30; i++) {
        x = x * 1103515245u + 12345u;
        live[i] = i * 100 * 1024.0 + (double)((x >> 8) % (256 * 1024));
    }
    struct roundtrim_diag_sample s[30];
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, shaped(s, 30, live), &every_round, &d);
    ck_assert_msg(d.cause == RT_CAUSE_LEAK, "%s", d.advice);
    ck_assert_double_eq_tol(d.slope[RT_PART_HEAP_LIVE], 100 * 1024, 30 * 1024);
    /* Exact counters: the smallest leak called, ROUNDTRIM_DIAG_LEAK_MIN a round, in the fewest
     * rounds a small leak needs, ROUNDTRIM_DIAG_DECIDE_SMALL_ROUNDS; one round fewer is unsure,
     * and says the round that decides. */
    for (int i = 0; i < 30; i++)
        live[i] = i * (double)ROUNDTRIM_DIAG_LEAK_MIN;
    roundtrim_diagnose(s, shaped(s, ROUNDTRIM_DIAG_DECIDE_SMALL_ROUNDS, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    roundtrim_diagnose(s, shaped(s, ROUNDTRIM_DIAG_DECIDE_SMALL_ROUNDS - 1, live), &every_round,
                       &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "unsure");
    ck_assert_uint_eq(d.decide_round, d.last_round + 1);
    /* A leak of 1 MiB a round is called in ROUNDTRIM_DIAG_DECIDE_ROUNDS. */
    for (int i = 0; i < 30; i++)
        live[i] = i * MIB;
    roundtrim_diagnose(s, shaped(s, ROUNDTRIM_DIAG_DECIDE_ROUNDS, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    /* Below the floor: flat. */
    for (int i = 0; i < 30; i++)
        live[i] = i * 2048.0;
    roundtrim_diagnose(s, shaped(s, 30, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
}
END_TEST

START_TEST(a_leak_that_starts_late_is_found_once_it_persists)
{
    double live[26];
    for (int i = 0; i < 26; i++)
        live[i] = (i < 12 ? 0 : i - 11) * MIB;
    struct roundtrim_diag_sample s[26];
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, shaped(s, 14, live), &every_round, &d);
    ck_assert_str_ne(roundtrim_cause_name(d.cause), "leak");
    roundtrim_diagnose(s, shaped(s, 26, live), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    /* The first round above the flat ones (round 13), not the first window's start. */
    ck_assert_uint_eq(d.growing_since, s[12].round);
    ck_assert_int_ge(d.persisted, ROUNDTRIM_DIAG_PERSIST);
    ck_assert_ptr_nonnull(strstr(d.advice, "1.0 MiB per round over rounds 13-26"));
}
END_TEST

START_TEST(cleanup_holds_flat_only_what_most_rounds_give_back)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    struct roundtrim_diagnosis d;
    make(s, 10, &sh, true, false);
    for (size_t i = 0; i < 10; i++) { /* 6 MiB freed in 2 of 10 rounds: 1.2 MiB on average */
        s[i].gc_ran = true;
        s[i].gc_skipped = RT_SKIP_NONE;
        s[i].gc_freed = i % 5 == 4 ? (uint64_t)(6 * MIB) : 0;
    }
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert_double_eq_tol(d.gc_freed_per_round, 1.2 * MIB, 1024);
    ck_assert_double_eq(d.held_gc, 0);
    ck_assert_int_eq(d.held_rounds[0], 2);
    ck_assert_ptr_null(strstr(d.advice, "Held flat"));
    for (size_t i = 0; i < 10; i++) /* 6 of 10 */
        s[i].gc_freed = i % 5 < 3 ? (uint64_t)(2 * MIB) : 0;
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert_double_eq_tol(d.held_gc, 1.2 * MIB, 1024);
    ck_assert_ptr_nonnull(strstr(d.advice, "gc frees 1.2 MiB a round (1 MiB or more in 6 of rounds "
                                           "1-10"));
    /* Cleanup every 5 rounds: due in 2 of the 10, given back in both. */
    struct roundtrim_diag_context every5 = every_round;
    every5.cleanup_every = 5;
    for (size_t i = 0; i < 10; i++)
        s[i].gc_freed = i % 5 == 4 ? (uint64_t)(6 * MIB) : 0;
    roundtrim_diagnose(s, 10, &every5, &d);
    ck_assert_double_eq_tol(d.held_gc, 1.2 * MIB, 1024);
}
END_TEST

START_TEST(heap_growth_no_trim_returns_is_live_memory_the_counters_missed)
{
    /* Blocks from glibc's malloc called directly: the heap's figures grow 1 MiB a round, the
     * counted live heap stays flat, the trim runs every round and returns nothing. */
    struct roundtrim_diag_sample s[12];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_FREE] = 1 * MIB;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 12, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_double_eq_tol(d.uncounted_per_round, 1 * MIB, 1024);
    ck_assert_ptr_nonnull(strstr(d.advice, "never counted"));
    /* Large blocks found by glibc's chunk headers, beyond the counted ones: in heap_live, and
     * said to be uncounted. */
    struct shape big = base_shape();
    big.grow[RT_PART_HEAP_LIVE] = 1 * MIB;
    make(s, 12, &big, true, false);
    for (size_t i = 0; i < 12; i++)
        s[i].heap_uncounted = (uint64_t)(i * MIB);
    roundtrim_diagnose(s, 12, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_double_eq_tol(d.uncounted_per_round, 1 * MIB, 1024);
    /* The trim returns it: freed heap, growing. */
    sh.trim_released = 8 * MIB;
    roundtrim_diagnose(s, make(s, 12, &sh, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "fragmentation");
}
END_TEST

START_TEST(advice_says_nothing_the_facts_contradict)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 2 * MIB;
    struct roundtrim_diag_context ctx = every_round;
    struct roundtrim_diagnosis d;
    /* Sites asked for, but the sampler could not start: neither "set ROUNDTRIM_SITES" nor "the
     * sites records name the code". */
    ctx.sites = false;
    ctx.sites_skipped = "libunwind_missing";
    roundtrim_diagnose(s, make(s, 10, &sh, true, false), &ctx, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert_ptr_null(strstr(d.advice, "ROUNDTRIM_SITES"));
    ck_assert_ptr_null(strstr(d.advice, "sites records"));
    ck_assert_ptr_nonnull(strstr(d.advice, "libunwind_missing"));
    /* Cleanup every round: no advice to clean every round. */
    ck_assert_ptr_null(strstr(d.advice, "GC_ROUNDS=1"));
}
END_TEST

START_TEST(one_round_measured_wrong_does_not_break_persistence)
{
    /* 8 MiB mapped a round; in one round eight of those mappings, merged, were read as an
     * arena: other_anon fell by 64 MiB for that round only, the free heap rose as much. */
    struct roundtrim_diag_sample s[11];
    struct shape sh = base_shape();
    sh.grow[RT_PART_OTHER_ANON] = 8 * MIB;
    make(s, 11, &sh, false, false);
    s[7].part[RT_PART_OTHER_ANON] -= (uint64_t)(64 * MIB);
    s[7].part[RT_PART_HEAP_FREE] += (uint64_t)(64 * MIB);
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, 11, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "outside_heap");
}
END_TEST

START_TEST(unknown_parts_are_never_read_as_flat)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_OTHER_ANON] = 8 * MIB;
    make(s, 10, &sh, false, false);
    for (size_t i = 0; i < 10; i++)
        s[i].known[RT_PART_HEAP_LIVE] = s[i].known[RT_PART_OTHER_ANON] = false;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, 10, &every_round, &d);
    ck_assert(!d.slope_known[RT_PART_HEAP_LIVE]);
    ck_assert_str_ne(roundtrim_cause_name(d.cause), "leak");
    ck_assert_str_ne(roundtrim_cause_name(d.cause), "outside_heap");
}
END_TEST

/* The diagnosis as its record's JSON fields. */
static const char *json_of(const struct roundtrim_diagnosis *d)
{
    static char buf[4096];
    struct roundtrim_json j;
    roundtrim_json_begin(&j, buf, sizeof buf);
    roundtrim_diagnosis_json(&j, d);
    ck_assert(roundtrim_json_end(&j) > 0);
    return buf;
}

/* As in the demo's workload: RSS before cleanup flat but for the first measured round, read
 * before the heap had filled. The fit is pulled up; the verdict is none, and the growth figure is
 * within its noise band. A steady leak's figure stands far out of its own. */
START_TEST(one_low_early_round_pulls_the_fit_up_within_its_noise)
{
    struct roundtrim_diag_sample s[9];
    struct shape sh = base_shape();
    sh.base[RT_PART_HEAP_FREE] = 60 * MIB;
    make(s, 9, &sh, true, false);
    static const double wiggle[9] = {-40, 1, -1, 0, 2, -1, 1, 0, -2};
    for (size_t i = 0; i < 9; i++) {
        s[i].round = i + 2;
        s[i].part[RT_PART_HEAP_FREE] = (uint64_t)((60 + wiggle[i]) * MIB);
        s[i].rss = (uint64_t)((350 + wiggle[i]) * MIB); /* the parts add up to it */
    }
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, 9, &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "none");
    ck_assert(d.growth_per_round > 1 * MIB); /* what the old line printed beside "no growth" */
    ck_assert(d.growth_noise_per_round >= d.growth_per_round);
    ck_assert_ptr_nonnull(strstr(json_of(&d), "\"growth_noise_bytes_per_round\":"));

    struct roundtrim_diag_sample l[10];
    struct shape leak = base_shape();
    leak.grow[RT_PART_HEAP_LIVE] = 4 * MIB;
    roundtrim_diagnose(l, make(l, 10, &leak, true, false), &every_round, &d);
    ck_assert_str_eq(roundtrim_cause_name(d.cause), "leak");
    ck_assert(d.growth_noise_per_round < 0.01 * d.growth_per_round);
}
END_TEST

START_TEST(too_few_rounds_say_so)
{
    struct roundtrim_diag_sample s[2];
    struct shape sh = base_shape();
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 2, &sh, false, false), &every_round, &d);
    ck_assert_str_eq(d.skipped, "too_few_rounds");
    const char *buf = json_of(&d);
    ck_assert_ptr_nonnull(strstr(buf, "\"cause\":null,\"cause_skipped\":\"too_few_rounds\""));
    /* The record says why, as the exit's record of a process whose rounds went unmeasured. */
    ck_assert_ptr_nonnull(strstr(buf, "\"advice\":\"2 round(s) with their memory measured: a "
                                      "diagnosis needs 3."));
}
END_TEST

/* Whether text names word as a word of its own (not inside another). */
static bool names_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        bool start = p == text || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'));
        bool end = !(p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z'));
        if (start && end)
            return true;
    }
    return false;
}

/* The texts that list the verdicts (the option's meaning, which the configuration page and
 * roundtrim env print, and the metric's help) name each cause policy/diag_causes.def says the
 * diagnosis gives, and none it never gives. */
START_TEST(the_verdicts_listed_are_the_tables)
{
    static const struct {
        const char *name;
        bool verdict;
    } causes[] = {
#define RT_CAUSE(id, name, verdict, grows, words) {#name, verdict},
#include "policy/diag_causes.def"
    };
    struct roundtrim_round_record r;
    memset(&r, 0, sizeof r);
    struct roundtrim_traffic total = {0};
    static struct roundtrim_diagnosis d;
    memset(&d, 0, sizeof d);
    struct roundtrim_prom_input in = {
        .pid = 1, .role = "client", .process = "p", .last = &r, .total = &total, .diagnosis = &d};
    static char text[16384];
    ck_assert(roundtrim_prom_format(&in, text, sizeof text) > 0);
    const char *help = strstr(text, "# HELP roundtrim_diagnosis ");
    ck_assert_ptr_nonnull(help);
    char help_line[512];
    snprintf(help_line, sizeof help_line, "%.*s", (int)strcspn(help, "\n"), help);
    const char *option = roundtrim_options[RT_OPT_DIAG_ROUNDS].meaning;
    for (size_t c = 0; c < sizeof causes / sizeof causes[0]; c++) {
        ck_assert_str_eq(roundtrim_cause_name((enum roundtrim_cause)c), causes[c].name);
        ck_assert_msg(names_word(option, causes[c].name) == causes[c].verdict,
                      "ROUNDTRIM_DIAG_ROUNDS's meaning and %s", causes[c].name);
        ck_assert_msg(names_word(help_line, causes[c].name) == causes[c].verdict, "%s and %s",
                      help_line, causes[c].name);
    }
}
END_TEST

START_TEST(json_form)
{
    struct roundtrim_diag_sample s[10];
    struct shape sh = base_shape();
    sh.grow[RT_PART_HEAP_LIVE] = 4 * MIB;
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(s, make(s, 10, &sh, false, false), &every_round, &d);
    char buf[4096];
    struct roundtrim_json j;
    roundtrim_json_begin(&j, buf, sizeof buf);
    roundtrim_diagnosis_json(&j, &d);
    ck_assert(roundtrim_json_end(&j) > 0);
    ck_assert_ptr_nonnull(strstr(buf, "\"cause\":\"leak\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"growth_bytes_per_round\":4194304"));
    ck_assert_ptr_nonnull(strstr(buf, "\"heap_live\":4194304"));
    ck_assert_ptr_nonnull(strstr(buf, "\"python\":null"));
    ck_assert_ptr_nonnull(strstr(buf, "\"shares\":{\"leak\":100}"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("diagnosis");
    TCase *tc = tcase_create("diagnosis");
    tcase_add_test(tc, steady_live_growth_is_a_leak_that_cleanup_cannot_fix);
    tcase_add_test(tc, a_growth_just_under_a_mebibyte_is_said_in_mebibytes);
    tcase_add_test(tc, a_leak_foresees_the_round_its_headroom_runs_out_and_the_job_end);
    tcase_add_test(tc, no_forecast_for_flat_memory_or_a_leak_of_device_memory);
    tcase_add_test(tc, a_buffer_counted_in_steps_and_filled_every_round_is_a_leak);
    tcase_add_test(tc, steps_that_repeat_are_unsure_then_a_leak_never_none);
    tcase_add_test(tc, steps_of_a_warm_up_that_stop_are_no_leak);
    tcase_add_test(tc, small_python_objects_growing_are_a_leak_not_outside_the_heap);
    tcase_add_test(tc,
                   free_heap_kept_with_cleanup_off_is_a_finding_and_fragmentation_once_it_grows);
    tcase_add_test(tc, what_trim_gives_back_every_round_is_held_not_a_cause);
    tcase_add_test(tc, what_gc_frees_every_round_is_held_flat_judged_by_bytes);
    tcase_add_test(tc, device_cache_growing_is_cuda_cache);
    tcase_add_test(tc, tensors_kept_on_the_device_are_a_leak_named_by_pytorch);
    tcase_add_test(tc, anonymous_growth_beside_a_flat_heap_is_outside_the_heap);
    tcase_add_test(tc, flat_memory_is_none_and_noise_is_not_growth);
    tcase_add_test(tc, a_freed_heap_that_swings_is_noise_beside_a_steady_leak);
    tcase_add_test(tc, python_growth_without_a_collection_is_not_called_unfixable);
    tcase_add_test(tc, one_spike_round_does_not_make_a_small_process_fragmented);
    tcase_add_test(tc, fragmentation_advice_fits_the_allocator);
    tcase_add_test(tc, a_trim_that_returns_little_of_the_free_heap_says_it_is_pinned);
    tcase_add_test(tc, a_mixed_case_names_the_shares);
    tcase_add_test(tc, a_leak_close_behind_a_growing_free_heap_is_named_first);
    tcase_add_test(tc, a_warm_up_that_stops_is_a_plateau_not_a_leak);
    tcase_add_test(tc, sawtooth_and_periodic_memory_is_flat);
    tcase_add_test(tc, a_leak_or_live_growth_on_its_way_asks_for_sites);
    tcase_add_test(tc, one_step_is_a_new_level_and_steps_that_go_on_are_a_leak);
    tcase_add_test(tc, a_small_leak_among_noise_is_a_leak_whatever_its_size);
    tcase_add_test(tc, a_leak_that_starts_late_is_found_once_it_persists);
    tcase_add_test(tc, cleanup_holds_flat_only_what_most_rounds_give_back);
    tcase_add_test(tc, heap_growth_no_trim_returns_is_live_memory_the_counters_missed);
    tcase_add_test(tc, advice_says_nothing_the_facts_contradict);
    tcase_add_test(tc, one_round_measured_wrong_does_not_break_persistence);
    tcase_add_test(tc, unknown_parts_are_never_read_as_flat);
    tcase_add_test(tc, one_low_early_round_pulls_the_fit_up_within_its_noise);
    tcase_add_test(tc, too_few_rounds_say_so);
    tcase_add_test(tc, json_form);
    tcase_add_test(tc, the_verdicts_listed_are_the_tables);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
