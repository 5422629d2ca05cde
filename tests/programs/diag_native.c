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
 *   late      flat until round 19, then leak from round 20 on (growth that starts late)
 *   mixed     keeps 3 MiB of malloc blocks and maps 3 MiB with mmap each round
 *   gradual   builds 160 MiB of 64 KiB blocks, then frees seven in eight of them in 16 batches
 *             PAUSE_MS/4 apart; the survivors live until the next round's blocks are placed, so
 *             the freed memory stays in the heap between them
 *   pinned    in round 1 builds 32 MiB of 1 KiB blocks and frees every other one, then only
 *             waits: 16 MiB counted free, but every page holds live blocks, so no trim can
 *             return any of it
 *   buffer    a replay buffer: writes 768 KiB of rows into one growing block each round and,
 *             when it is full, doubles it with realloc (8 MiB first): the block is counted at
 *             its full size when it grows, its pages become resident as the rows fill them
 *   doubling  buffer, but every page of the block is written when it grows (zeroed, as a new
 *             array is): the live heap and RSS rise in steps of growing size, flat between
 *   busy      frag, but instead of waiting the program keeps allocating and freeing 2-8 KiB
 *             blocks (past the per-thread cache: each call takes the arena's lock) for PAUSE_MS;
 *             its round line adds its longest such call (longest_call_us)
 *
 * Rounds end with roundtrim_round_end() when roundtrim is preloaded, PAUSE_MS (30) apart. Prints
 * one line per round with its RSS. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proc_rss.h"

void roundtrim_round_end(void) __attribute__((weak));

#define MiB (1024 * 1024)
/* The first round mode late keeps memory in. */
#define LATE_ROUND 20

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

static void pin_once(void)
{
    enum { N = 32768 };
    static void *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(1000);
        touch(blocks[i], 1000);
    }
    for (int i = 1; i < N; i += 2)
        free(blocks[i]);
}

static void free_gradually(useconds_t pause_us)
{
    enum { N = 2560, BATCHES = 16 };
    static void *blocks[N], *survivors[N / 8];
    static int kept;
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(64 * 1024);
        touch(blocks[i], 64 * 1024);
    }
    for (int i = 0; i < kept; i++)
        free(survivors[i]); /* the previous round's, once this round's blocks are placed */
    kept = 0;
    for (int b = 0; b < BATCHES; b++) {
        for (int i = b; i < N; i += BATCHES) {
            if (i % 8 == 7)
                survivors[kept++] = blocks[i];
            else
                free(blocks[i]);
        }
        usleep(pause_us / 4);
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

static uint64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Allocates and frees in the main arena for pause_us; returns its longest call. */
static uint64_t stay_busy(useconds_t pause_us)
{
    uint64_t end = now_us() + pause_us, longest = 0, seed = 0x9e3779b97f4a7c15ull;
    while (now_us() < end) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        size_t n = 2048 + (size_t)(seed % 6144);
        uint64_t t0 = now_us();
        char *p = malloc(n);
        p[0] = 1;
        free(p);
        uint64_t took = now_us() - t0;
        if (took > longest)
            longest = took;
    }
    return longest;
}

/* The replay buffer: rows appended each round, the capacity doubled when full. */
static void append_rows(size_t bytes, bool zero_all)
{
    static char *buf;
    static size_t used, capacity;
    if (used + bytes > capacity) {
        size_t grown = capacity ? 2 * capacity : 8 * MiB;
        char *p = realloc(buf, grown);
        if (!p)
            return;
        if (zero_all)
            touch(p + used, grown - used);
        buf = p;
        capacity = grown;
    }
    touch(buf + used, bytes);
    used += bytes;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: diag_native "
                        "leak|frag|outside|flat|late|mixed|gradual|pinned|buffer|doubling|busy "
                        "[ROUNDS [PAUSE_MS]]\n");
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
        } else if (strcmp(mode, "frag") == 0 || strcmp(mode, "busy") == 0) {
            fragment(r);
        } else if (strcmp(mode, "outside") == 0) {
            keep_mapped(8 * MiB);
        } else if (strcmp(mode, "buffer") == 0) {
            append_rows(768 * 1024, false);
        } else if (strcmp(mode, "doubling") == 0) {
            append_rows(768 * 1024, true);
        } else if (strcmp(mode, "flat") == 0 || (strcmp(mode, "late") == 0 && r < LATE_ROUND)) {
            churn();
        } else if (strcmp(mode, "late") == 0) {
            keep_small(2 * MiB);
            touch(malloc(4 * MiB), 4 * MiB);
        } else if (strcmp(mode, "mixed") == 0) {
            keep_small(3 * MiB);
            keep_mapped(3 * MiB);
        } else if (strcmp(mode, "gradual") == 0) {
            free_gradually(pause_us);
        } else if (strcmp(mode, "pinned") == 0) {
            if (r == 1)
                pin_once();
        } else {
            fprintf(stderr, "diag_native: unknown mode %s\n", mode);
            return 2;
        }
        if (roundtrim_round_end)
            roundtrim_round_end();
        if (strcmp(mode, "busy") == 0) {
            uint64_t longest = stay_busy(pause_us);
            printf("round %d rss %llu longest_call_us %llu\n", r, rss_bytes(),
                   (unsigned long long)longest);
            continue;
        }
        printf("round %d rss %llu\n", r, rss_bytes());
        usleep(pause_us);
    }
    return 0;
}
