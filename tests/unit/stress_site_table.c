/* The site table and its code names under concurrent producers and the worker's reads: the
 * producers intern stacks from one shared set (the same stack from several threads at once),
 * count bytes at their sites and note code objects; the worker reads every site and name as it
 * goes. A site it sees is always whole and one stack's; at the end each stack has exactly one
 * site, whose counts are the sum of what every producer added there.
 *
 * Then with give-backs: the producers count a sample at their pinned site and free it, the
 * consumer gives back every site it can meanwhile. A site a producer holds pinned is always its
 * stack's (never given back and taken by another), and no stack ever has two sites. */
#include <check.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "runtime/sites/site_table.h"
#include "run_suite.h"
#include "site_stacks.h"
#include "stress.h"

#define PRODUCERS 3
#define STACKS    300u
#define CODES     200u
#define STEPS     30000u

static uint64_t interned[PRODUCERS][STACKS]; /* how often each producer interned each stack */
static uint64_t not_interned;                /* interns that found the claim lock held */

static const void *code_of(uint64_t n)
{
    return (const void *)(uintptr_t)(0x7f0000000000u + n * 0x40);
}

/* A stack of the shared set, drawn at random. */
static uint64_t next_stack(uint64_t *rng, struct stack *s)
{
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t n = (*rng >> 33) % STACKS;
    stack_make(s, n);
    return n;
}

static void produce(int id, void *arg)
{
    (void)arg;
    uint64_t rng = 0x2545f4914f6cdd1dull * (uint64_t)(id + 1);
    for (uint32_t step = 0; step < STEPS; step++) {
        struct stack s;
        uint64_t n = next_stack(&rng, &s);
        int32_t i = stack_intern(&s);
        if (i < 0) {
            /* A new site's claim lock held by another thread past the bounded try (a preempted
             * holder on a loaded machine): the sample goes without a site, as allowed. */
            __atomic_add_fetch(&not_interned, 1, __ATOMIC_RELAXED);
            continue;
        }
        roundtrim_site_add_alloc(i, n + 1);
        roundtrim_site_add_free((uint32_t)i, 1);
        interned[id][n]++;
        roundtrim_code_names_note(code_of((rng >> 20) % CODES), 0);
    }
}

static void consume(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++) {
        const struct roundtrim_site *site = roundtrim_site_at(i);
        if (!site)
            continue;
        uint64_t n = site_stack(site);
        ck_assert_msg(n < STACKS && site_is_stack(site, n), "site %u is not one stack's", i);
    }
    for (uint64_t n = 0; n < CODES; n++) {
        const struct roundtrim_code_names *c = roundtrim_code_names_find(code_of(n), 0);
        char file[64];
        if (!c)
            continue;
        snprintf(file, sizeof file, "file_%lx.py", (unsigned long)(uintptr_t)code_of(n));
        ck_assert_str_eq(c->file, file);
    }
}

START_TEST(producers_and_reader)
{
    ck_assert(roundtrim_site_table_init());
    struct stress s = {PRODUCERS, produce, consume, NULL};
    stress_run(&s);
    static bool seen[STACKS];
    uint32_t sites = 0, stacks_interned = 0;
    for (uint32_t n = 0; n < STACKS; n++) {
        uint64_t times = 0;
        for (int id = 0; id < PRODUCERS; id++)
            times += interned[id][n];
        stacks_interned += times > 0;
    }
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++) {
        const struct roundtrim_site *site = roundtrim_site_at(i);
        if (!site)
            continue;
        uint64_t n = site_stack(site), want = 0;
        ck_assert(n < STACKS && site_is_stack(site, n));
        ck_assert_msg(!seen[n], "stack %llu has two sites", (unsigned long long)n);
        seen[n] = true;
        sites++;
        for (int id = 0; id < PRODUCERS; id++)
            want += interned[id][n];
        ck_assert_uint_eq(site->samples, want);
        ck_assert_uint_eq(site->alloc_bytes, want * (n + 1));
        ck_assert_uint_eq(site->free_bytes, want);
    }
    /* Every stack interned at least once has its one site; most interns found theirs. The
     * stack sites are far from all taken: no stack was sent to its line's site. */
    ck_assert_uint_eq(sites, stacks_interned);
    ck_assert_uint_eq(roundtrim_site_lines_taken(), 0);
    ck_assert_uint_lt(not_interned, (uint64_t)PRODUCERS * STEPS / 2);
}
END_TEST

static uint64_t given_back, no_site, give_back_passes;

static void produce_and_free(int id, void *arg)
{
    (void)arg;
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    for (uint32_t step = 0; step < STEPS; step++) {
        /* Halfway, wait for a pass of the give-backs: a starved consumer would otherwise leave
         * nothing given back while the producers run. */
        while (step == STEPS / 2 && !__atomic_load_n(&give_back_passes, __ATOMIC_ACQUIRE))
            sched_yield();
        struct stack s;
        uint64_t n = next_stack(&rng, &s);
        int32_t i = stack_intern(&s);
        if (i < 0) { /* the claim lock held long by the give-backs: dropped, as allowed */
            __atomic_add_fetch(&no_site, 1, __ATOMIC_RELAXED);
            continue;
        }
        roundtrim_site_add_alloc(i, n + 1);
        uint32_t ref = roundtrim_site_ref(i);
        const struct roundtrim_site *site = roundtrim_site_at((uint32_t)i);
        ck_assert_msg(site && site_is_stack(site, n), "a pinned site changed stack");
        roundtrim_site_unpin(i);
        roundtrim_site_add_free(ref, n + 1); /* the sample freed: the site may go */
    }
}

static void give_back_all(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++)
        if (roundtrim_site_at(i) && roundtrim_site_give_back(i))
            given_back++;
    __atomic_add_fetch(&give_back_passes, 1, __ATOMIC_RELEASE);
}

START_TEST(producers_and_give_backs)
{
    ck_assert(roundtrim_site_table_init());
    struct stress s = {PRODUCERS, produce_and_free, give_back_all, NULL};
    stress_run(&s);
    ck_assert_uint_gt(given_back, 0);
    ck_assert_uint_lt(no_site, PRODUCERS * STEPS / 2);
    ck_assert_uint_eq(roundtrim_site_lines_taken(), 0);
    static bool seen[STACKS];
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++) {
        const struct roundtrim_site *site = roundtrim_site_at(i);
        if (!site)
            continue;
        uint64_t n = site_stack(site);
        ck_assert(n < STACKS && site_is_stack(site, n));
        ck_assert_msg(!seen[n], "stack %llu has two sites", (unsigned long long)n);
        seen[n] = true;
        ck_assert_uint_eq(site->alloc_bytes, site->free_bytes);
        ck_assert_uint_eq(site->pins, 0);
    }
    /* The claim lock was left free: a stack never seen has its site at once. */
    struct stack fresh;
    stack_make(&fresh, STACKS);
    int32_t i = stack_intern(&fresh);
    ck_assert_int_ge(i, 0);
    ck_assert(site_is_stack(roundtrim_site_at((uint32_t)i), STACKS));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stress_site_table");
    TCase *tc = tcase_create("stress_site_table");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, producers_and_reader);
    tcase_add_test(tc, producers_and_give_backs);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
