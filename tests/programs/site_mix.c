/* Allocation sites with known traffic, for the sampling tests. Each round:
 *   - keep_blocks() keeps --keep-kib KiB more in blocks of --block bytes (never freed);
 *   - swap_model() replaces a 4 MiB working set (calloc, then realloc'd larger, the old one freed);
 *   - churn() allocates and frees --churn-mib MiB of small and medium blocks, split over
 *     --threads threads started for the round;
 *   - with --cxx, new/delete churn as well (through the C++ runtime's operator new).
 * then roundtrim_round_end() (found with dlsym) and one line {"round": r, "kept": bytes}.
 *
 *   site_mix [--rounds N] [--keep-kib K] [--block B] [--churn-mib M] [--threads T] [--fork]
 *
 * --fork: after the last round the program forks; the child runs two more rounds of its own and
 * exits, the parent waits for it and prints the child's exit status. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static size_t keep_kib = 1024, block = 4096, churn_mib = 32;
static int threads = 1;
static void *model;
static size_t kept;

__attribute__((noinline)) void keep_blocks(void)
{
    for (size_t done = 0; done < keep_kib * 1024; done += block) {
        char *p = malloc(block);
        if (!p)
            abort();
        p[0] = 1;
        kept += block;
    }
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

__attribute__((noinline)) void swap_model(void)
{
    void *next = calloc(1, 2 * MIB);
    next = realloc(next, 4 * MIB);
    free(model);
    model = next;
    __asm__ volatile("" ::: "memory");
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

__attribute__((noinline)) static void *churn(void *arg)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
    size_t budget = churn_mib * MIB / (size_t)threads, done = 0;
    void *batch[128];
    while (done < budget) {
        int n = 0;
        for (; n < 128 && done < budget; n++) {
            size_t sz = 16 + next_random(&rng) % ((n & 7) ? 512 : 16384);
            batch[n] = (n & 3) == 1 ? calloc(1, sz) : malloc(sz);
            if ((n & 15) == 2)
                batch[n] = realloc(batch[n], sz * 2);
            if (!batch[n])
                abort();
            done += sz;
        }
        while (n > 0)
            free(batch[--n]);
    }
    return NULL;
}

static void one_round(int r, void (*round_end)(void))
{
    keep_blocks();
    swap_model();
    pthread_t t[64];
    for (int i = 1; i < threads; i++)
        pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)i);
    churn(NULL);
    for (int i = 1; i < threads; i++)
        pthread_join(t[i], NULL);
    if (round_end)
        round_end();
    printf("{\"round\": %d, \"kept\": %zu}\n", r, kept);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rounds = 5, do_fork = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(v), i++;
        else if (!strcmp(argv[i], "--keep-kib"))
            keep_kib = strtoul(v, NULL, 10), i++;
        else if (!strcmp(argv[i], "--block"))
            block = strtoul(v, NULL, 10), i++;
        else if (!strcmp(argv[i], "--churn-mib"))
            churn_mib = strtoul(v, NULL, 10), i++;
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(v), i++;
        else if (!strcmp(argv[i], "--fork"))
            do_fork = 1;
    }
    if (threads < 1 || threads > 64 || block == 0)
        return 2;
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    for (int r = 1; r <= rounds; r++)
        one_round(r, round_end);
    if (do_fork) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int r = 1; r <= 2; r++)
                one_round(r, round_end);
            exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        printf("{\"child_status\": %d}\n", status);
    }
    free(model);
    return 0;
}
