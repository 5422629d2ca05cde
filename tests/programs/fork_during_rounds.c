/* Forks while roundtrim records rounds, and counts the descriptors of roundtrim's each child
 * finds among its own: fork_during_rounds FORKS. One thread ends a round every 500 us, two
 * others allocate (glibc gives them arenas of their own, whose heaps the round reads through
 * /proc/self/mem); the main thread forks FORKS times. Each child looks at /proc/self/fd and
 * exits with how many of its descriptors are procfs files or a metrics temporary file; the
 * parent prints "children N held K" and each kind of file seen. Without roundtrim: none. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

static volatile bool done;

static void *rounds(void *arg)
{
    (void)arg;
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    while (!done) {
        void *p = malloc(4096);
        free(p);
        if (round_end)
            round_end();
        usleep(500);
    }
    return NULL;
}

static void *churn(void *arg)
{
    (void)arg;
    while (!done) {
        void *blocks[64];
        for (int i = 0; i < 64; i++)
            blocks[i] = malloc(1024 + (size_t)i * 64);
        for (int i = 0; i < 64; i++)
            free(blocks[i]);
        usleep(100);
    }
    return NULL;
}

/* In the child: what each descriptor above 2 refers to; the count of roundtrim's kind. */
static int held(FILE *report)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
            continue;
        char link[64], target[512];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, "/proc/", 6) == 0 || strstr(target, ".tmp")) {
            count++;
            fprintf(report, "held %s\n", target);
        }
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    int forks = argc > 1 ? atoi(argv[1]) : 2000;
    pthread_t t[3];
    pthread_create(&t[0], NULL, rounds, NULL);
    pthread_create(&t[1], NULL, churn, NULL);
    pthread_create(&t[2], NULL, churn, NULL);
    usleep(20000);
    int children = 0, holding = 0;
    for (int i = 0; i < forks; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            int n = held(stdout);
            fflush(stdout);
            _exit(n > 0 ? 1 : 0);
        }
        if (pid < 0)
            continue;
        int status;
        if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
            children++;
            holding += WEXITSTATUS(status);
        }
    }
    done = true;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("children %d held %d\n", children, holding);
    return 0;
}
