/* Makes a known set of allocations in each of three rounds and prints, per round, what it did
 * as the allocator sees it (usable sizes), so a test can compare it with roundtrim's record for
 * rounds 2 to 4 (round 1 holds what happened before main). Blocks are freed with free, and with
 * C23's free_sized and free_aligned_sized where the process has them (glibc 2.43, or roundtrim).
 * Nothing else allocates while a round is open: the counts must match exactly. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "round_sync.h"

struct tally {
    unsigned long mallocs, frees, malloc_bytes, free_bytes;
};

static void *track_alloc(struct tally *t, void *p)
{
    t->mallocs++;
    t->malloc_bytes += malloc_usable_size(p);
    return p;
}

static void track_free(struct tally *t, void *p)
{
    t->frees++;
    t->free_bytes += malloc_usable_size(p);
    free(p);
}

typedef void (*free_sized_fn)(void *, size_t);
typedef void (*free_aligned_sized_fn)(void *, size_t, size_t);

static void track_free_sized(struct tally *t, void *p, size_t n, free_sized_fn fn)
{
    t->frees++;
    t->free_bytes += malloc_usable_size(p);
    fn ? fn(p, n) : free(p);
}

int main(void)
{
    free_sized_fn free_sized_p = (free_sized_fn)dlsym(RTLD_DEFAULT, "free_sized");
    free_aligned_sized_fn free_aligned_sized_p =
        (free_aligned_sized_fn)dlsym(RTLD_DEFAULT, "free_aligned_sized");
    static struct tally tally[3];
    static void *keep[64];
    int done = 0;
    /* A first round takes what happened before main (and the start of roundtrim's worker). */
    if (end_round_and_wait(done++) != 0)
        return 3;
    /* Round 2: malloc + calloc + posix_memalign + aligned_alloc, half freed. */
    struct tally *t = &tally[0];
    for (int i = 0; i < 32; i++) {
        void *p = track_alloc(t, malloc(100 + (size_t)i * 37));
        if (i % 2)
            track_free(t, p);
        else
            keep[i] = p;
    }
    track_free(t, track_alloc(t, calloc(10, 300)));
    void *aligned = NULL;
    if (posix_memalign(&aligned, 64, 4000) == 0)
        track_free(t, track_alloc(t, aligned));
    void *a = track_alloc(t, aligned_alloc(256, 1024));
    t->frees++;
    t->free_bytes += malloc_usable_size(a);
    free_aligned_sized_p ? free_aligned_sized_p(a, 256, 1024) : free(a);
    track_free(t, track_alloc(t, memalign(128, 777)));
    if (end_round_and_wait(done++) != 0)
        return 3;
    /* Round 3: realloc counts as one free (old block) and one allocation (new block). */
    t = &tally[1];
    for (int i = 0; i < 32; i += 2) {
        size_t old = malloc_usable_size(keep[i]);
        keep[i] = realloc(keep[i], 5000 + (size_t)i);
        t->frees++;
        t->free_bytes += old;
        track_alloc(t, keep[i]);
    }
    track_free(t, track_alloc(t, malloc(1 << 20))); /* mmapped by glibc */
    if (end_round_and_wait(done++) != 0)
        return 3;
    /* Round 4: free what is left. */
    t = &tally[2];
    for (int i = 0; i < 32; i += 2)
        track_free_sized(t, keep[i], 5000 + (size_t)i, i % 4 ? NULL : free_sized_p);
    if (end_round_and_wait(done++) != 0)
        return 3;
    fprintf(stderr, "free_sized=%s free_aligned_sized=%s\n", free_sized_p ? "yes" : "no",
            free_aligned_sized_p ? "yes" : "no");
    for (int r = 0; r < 3; r++)
        printf("{\"round\":%d,\"malloc_calls\":%lu,\"free_calls\":%lu,\"malloc_bytes\":%lu,"
               "\"free_bytes\":%lu}\n",
               r + 2, tally[r].mallocs, tally[r].frees, tally[r].malloc_bytes, tally[r].free_bytes);
    return 0;
}
