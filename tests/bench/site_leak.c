/* Planted leak for the allocation-site detection benchmark: every round, several call sites
 * churn through about --churn-mib MiB of short-lived blocks, one site (load_model) replaces a
 * steady --model-mib MiB working set, and one site (cache_round_result) keeps 1 MiB more than
 * the round before, never freed. A profiler names the planted site when it points at
 * cache_round_result.
 *
 *   site_leak [--rounds N] [--churn-mib M] [--model-mib M]
 *
 * A round ends with roundtrim_round_end() when roundtrim is preloaded (found with dlsym, so the
 * program also runs bare or under another tool), then one JSON line {"round": r, "kept_mib": k}.
 * At exit the leaked blocks are still live and the model is freed. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB        (1024 * 1024)
#define LEAK_PIECE (64 * 1024)

static uint64_t rng = 88172645463325252ull;

static size_t next_size(size_t lo, size_t hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (size_t)(rng % (hi - lo + 1));
}

/* A churn site allocates batches, touches them and frees them: nothing survives the round.
 * Inlined into each site, so that each site's malloc calls come from that site's own frame. */
static inline __attribute__((always_inline)) size_t churn(size_t budget, size_t lo, size_t hi,
                                                          int fill)
{
    void *batch[256];
    size_t done = 0;
    while (done < budget) {
        int n = 0;
        for (; n < 256 && done < budget; n++) {
            size_t s = next_size(lo, hi);
            batch[n] = malloc(s);
            if (batch[n])
                memset(batch[n], fill, 16);
            done += s;
        }
        while (n > 0)
            free(batch[--n]);
    }
    return done;
}

static __attribute__((noinline)) size_t decode_messages(size_t budget)
{
    return churn(budget, 64, 4096, 1);
}

static __attribute__((noinline)) size_t compute_gradients(size_t budget)
{
    return churn(budget, 16 * 1024, 120 * 1024, 2);
}

static __attribute__((noinline)) void *load_model(void *old, size_t bytes)
{
    free(old);
    void *m = malloc(bytes);
    if (m)
        memset(m, 3, bytes);
    return m;
}

struct kept {
    struct kept *next;
};

/* The planted leak: 1 MiB more each round, in 64 KiB pieces kept on a list. */
static __attribute__((noinline)) struct kept *cache_round_result(struct kept *list)
{
    for (int i = 0; i < MIB / LEAK_PIECE; i++) {
        struct kept *k = malloc(LEAK_PIECE);
        if (!k)
            break;
        memset(k, 4, LEAK_PIECE);
        k->next = list;
        list = k;
    }
    return list;
}

static long arg_long(int argc, char **argv, const char *name, long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return strtol(argv[i + 1], NULL, 10);
    return def;
}

int main(int argc, char **argv)
{
    long rounds = arg_long(argc, argv, "--rounds", 10);
    long churn = arg_long(argc, argv, "--churn-mib", 100);
    long model_mib = arg_long(argc, argv, "--model-mib", 8);
    if (rounds < 1 || churn < 0 || model_mib < 0) {
        fprintf(stderr, "usage: site_leak [--rounds N] [--churn-mib M] [--model-mib M]\n");
        return 2;
    }
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    void *model = NULL;
    struct kept *kept = NULL;
    for (long r = 1; r <= rounds; r++) {
        model = load_model(model, (size_t)model_mib * MIB);
        decode_messages((size_t)churn * MIB / 2);
        compute_gradients((size_t)churn * MIB / 2);
        kept = cache_round_result(kept);
        if (round_end)
            round_end();
        printf("{\"round\":%ld,\"kept_mib\":%ld}\n", r, r);
        fflush(stdout);
    }
    free(model);
    return kept ? 0 : 1;
}
