/* A program that closes descriptors 3-4095 and opens 400 files of its own, over and over, while
 * another of its threads ends a round every millisecond (roundtrim_round_end, when preloaded):
 * roundtrim's log descriptor is closed and its number reused at any instant, between its check
 * and its write included. Prints how many rounds it ended and how many of its files hold anything
 * but what it wrote.   fd_churn DIR PASSES */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILES 400

static int done;
static unsigned rounds_ended;

static void *end_rounds(void *arg)
{
    void (*round_end)(void) = (void (*)(void))arg;
    struct timespec ms = {0, 1000000L};
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        if (round_end) {
            round_end();
            rounds_ended++;
        }
        nanosleep(&ms, NULL);
    }
    return NULL;
}

static const char data[] = "the program's own data\n";

static int one_pass(const char *dir)
{
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    for (int i = 0; i < FILES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/data%03d", dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, data, sizeof data - 1) != (ssize_t)(sizeof data - 1))
            return -1;
    }
    return 0;
}

/* Files whose content is not exactly the program's line. */
static int foreign_files(const char *dir)
{
    int foreign = 0;
    for (int i = 0; i < FILES; i++) {
        char path[4096], buf[256];
        snprintf(path, sizeof path, "%s/data%03d", dir, i);
        int fd = open(path, O_RDONLY);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
        if (fd >= 0)
            close(fd);
        foreign += n != (ssize_t)(sizeof data - 1) || memcmp(buf, data, sizeof data - 1) != 0;
    }
    return foreign;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int passes = atoi(argv[2]);
    void *round_end = dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    pthread_t t;
    if (pthread_create(&t, NULL, end_rounds, round_end) != 0)
        return 3;
    for (int p = 0; p < passes; p++)
        if (one_pass(argv[1]) != 0)
            return 4;
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    printf("rounds=%u foreign=%d\n", rounds_ended, foreign_files(argv[1]));
    return 0;
}
