/* A native program with one known cause of memory growth per mode, for the diagnosis:
 *
 *   diag_native MODE [ROUNDS [PAUSE_MS]]
 *
 *   leak      keeps 2 MiB of small blocks and one 4 MiB block each round (live heap grows)
 *   frag      builds 48 MiB of 1-2 KiB blocks and frees all but one in 32, which live until
 *             the next round: the survivors pin the freed pages between them (free heap kept
 *             resident, live heap flat)
 *   outside   maps 8 MiB of anonymous memory with mmap each round and keeps it (no malloc)
 *   flat      allocates and frees 32 MiB each round (nothing kept)
 *   mixed     keeps 3 MiB of malloc blocks and maps 3 MiB with mmap each round
 *
 * Rounds end with roundtrim_round_end() when roundtrim is preloaded, PAUSE_MS (30) apart. Prints
 * one line per round with its RSS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc_rss.h"

void roundtrim_round_end(void) __attribute__((weak));

#define MiB (1024 * 1024)

static void touch(void *p, size_t n)
{
    memset(p, 0x5a, n);
}

static void keep_small(size_t bytes)
{
    for (size_t done = 0; done < bytes; done += 4096) {
        void *p = malloc(4096);
        touch(p, 4096);
    }
}

static void keep_mapped(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(3);
    }
    touch(p, bytes);
}

/* The survivors of one round are freed in the next, once its own blocks are placed: the live
 * heap stays at about 1.5 MiB, the pages between survivors stay resident. */
static void fragment(int round)
{
    enum { N = 32768, KEEP = 32 };
    static void *blocks[N], *survivors[N / KEEP];
    for (int i = 0; i < N; i++) {
        size_t n = 1024 + (size_t)((i * 37 + round * 11) % 1024);
        blocks[i] = malloc(n);
        touch(blocks[i], n);
    }
    for (int i = 0; i < N / KEEP; i++)
        free(survivors[i]);
    for (int i = 0; i < N; i++) {
        if (i % KEEP == 0)
            survivors[i / KEEP] = blocks[i];
        else
            free(blocks[i]);
    }
}

static void churn(void)
{
    enum { N = 8192 };
    static void *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(4096);
        touch(blocks[i], 4096);
    }
    for (int i = 0; i < N; i++)
        free(blocks[i]);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: diag_native leak|frag|outside|flat|mixed [ROUNDS [PAUSE_MS]]\n");
        return 2;
    }
    const char *mode = argv[1];
    int rounds = argc > 2 ? atoi(argv[2]) : 12;
    useconds_t pause_us = (useconds_t)(argc > 3 ? atoi(argv[3]) : 30) * 1000;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int r = 1; r <= rounds; r++) {
        if (strcmp(mode, "leak") == 0) {
            keep_small(2 * MiB);
            touch(malloc(4 * MiB), 4 * MiB);
        } else if (strcmp(mode, "frag") == 0) {
            fragment(r);
        } else if (strcmp(mode, "outside") == 0) {
            keep_mapped(8 * MiB);
        } else if (strcmp(mode, "flat") == 0) {
            churn();
        } else if (strcmp(mode, "mixed") == 0) {
            keep_small(3 * MiB);
            keep_mapped(3 * MiB);
        } else {
            fprintf(stderr, "diag_native: unknown mode %s\n", mode);
            return 2;
        }
        if (roundtrim_round_end)
            roundtrim_round_end();
        printf("round %d rss %llu\n", r, rss_bytes());
        usleep(pause_us);
    }
    return 0;
}
