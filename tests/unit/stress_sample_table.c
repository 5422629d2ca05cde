/* The sample table under concurrent producers and the worker's scans: producers insert and remove
 * samples of their own blocks, all of one home slot (their probe chains are shared and the
 * window overflows), sometimes sample a block again without its free having been seen, and free
 * half of them as kept samples. Every remove gives back what its insert put; every sample the
 * worker sees is whole; at the end the table holds exactly the samples left live. */
#include <check.h>
#include <stdint.h>

#include "runtime/sites/sample_table.h"
#include "run_suite.h"
#include "sample_homes.h"
#include "stress.h"

#define PRODUCERS 3
#define BLOCKS    24 /* per producer: 72 blocks of one home, for a window of 64 slots */
#define STEPS     100000u

static uintptr_t blocks[PRODUCERS][BLOCKS];

/* A sample's weight says whose it is: a view whose fields disagree with it is torn. */
static uint64_t weight_of(int id, uint32_t round, uint32_t seq)
{
    return (uint64_t)(id + 1) << 40 | (uint64_t)round << 32 | seq;
}

struct producer {
    bool live[BLOCKS];
    uint64_t weight[BLOCKS];
    uint64_t dropped;
};
static struct producer producers[PRODUCERS];

static void produce(int id, void *arg)
{
    (void)arg;
    struct producer *me = &producers[id];
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    for (uint32_t step = 1; step <= STEPS; step++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int b = (int)((rng >> 33) % BLOCKS);
        void *p = (void *)blocks[id][b];
        if (me->live[b] && (rng >> 20) % 8 != 0) {
            uint32_t site;
            uint64_t weight;
            uint32_t reported = (rng >> 24) & 1 ? 2 : 0; /* freed in round 3: kept when 0 */
            ck_assert(roundtrim_sample_table_remove(p, 3, reported, &site, &weight));
            ck_assert_uint_eq(site, (uint32_t)id + 1);
            ck_assert_uint_eq(weight, me->weight[b]);
            me->live[b] = false;
            continue;
        }
        /* Not live, or sampled again where its free was not seen (1 in 8). */
        uint64_t w = weight_of(id, 1, step);
        if (roundtrim_sample_table_insert(p, (uint32_t)id + 1, 1, w, 0)) {
            ck_assert(roundtrim_sample_maybe(p));
            me->live[b] = true;
            me->weight[b] = w;
        } else {
            me->dropped++;
            if (me->live[b]) { /* its old sample is still there */
                uint32_t site;
                uint64_t weight;
                ck_assert(roundtrim_sample_table_remove(p, 1, 0, &site, &weight));
                ck_assert_uint_eq(weight, me->weight[b]);
                me->live[b] = false;
            }
        }
    }
}

struct totals {
    uint64_t live, weight;
};

static void check_view(const struct roundtrim_sample_view *v, void *arg)
{
    struct totals *t = arg;
    ck_assert_msg(v->site == v->weight >> 40 && v->round == ((v->weight >> 32) & 0xff),
                  "torn sample: site %u round %u weight %llx", v->site, v->round,
                  (unsigned long long)v->weight);
    ck_assert(v->freed_in == 0 || v->freed_in == 3);
    if (v->freed_in == 0) {
        t->live++;
        t->weight += v->weight;
    }
}

static void consume(void *arg)
{
    (void)arg;
    struct totals t = {0};
    roundtrim_sample_table_scan(check_view, &t, 2); /* forgets the kept samples */
}

START_TEST(producers_and_scans)
{
    ck_assert(roundtrim_sample_table_init());
    uintptr_t all[PRODUCERS * BLOCKS];
    sample_homes_same(0x7f0000000000, all, PRODUCERS * BLOCKS);
    for (int i = 0; i < PRODUCERS * BLOCKS; i++)
        blocks[i % PRODUCERS][i / PRODUCERS] = all[i];
    struct stress s = {PRODUCERS, produce, consume, NULL};
    stress_run(&s);
    struct totals want = {0}, got = {0};
    uint64_t dropped = 0;
    for (int id = 0; id < PRODUCERS; id++) {
        dropped += producers[id].dropped;
        for (int b = 0; b < BLOCKS; b++)
            if (producers[id].live[b]) {
                want.live++;
                want.weight += producers[id].weight[b];
            }
    }
    ck_assert_uint_eq(roundtrim_sample_table_scan(check_view, &got, 2), want.live);
    ck_assert_uint_eq(got.live, want.live);
    ck_assert_uint_eq(got.weight, want.weight);
    ck_assert_uint_gt(dropped, 0); /* the window did overflow */
    /* Each block's latest sample, freed: nothing is left (a stale sample would stay live). */
    for (int id = 0; id < PRODUCERS; id++)
        for (int b = 0; b < BLOCKS; b++) {
            uint32_t site;
            uint64_t weight;
            if (!producers[id].live[b])
                continue;
            ck_assert(roundtrim_sample_table_remove((void *)blocks[id][b], 1, 0, &site, &weight));
            ck_assert_uint_eq(weight, producers[id].weight[b]);
        }
    got = (struct totals){0};
    ck_assert_uint_eq(roundtrim_sample_table_scan(check_view, &got, 2), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stress_sample_table");
    TCase *tc = tcase_create("stress_sample_table");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, producers_and_scans);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
