/* Helpers for test programs: end a round through roundtrim's exported function (when roundtrim
 * is preloaded) and wait until its record is in the log, without allocating. */
#ifndef ROUNDTRIM_TEST_ROUND_SYNC_H
#define ROUNDTRIM_TEST_ROUND_SYNC_H

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Counts "event":"round" records of pid in the log, reading it with plain syscalls. */
__attribute__((unused)) static int log_round_count(const char *path, int pid)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n, len = 0;
    while ((n = read(fd, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
        len += n;
    close(fd);
    buf[len] = '\0';
    char needle[64];
    int count = 0, nlen = 0;
    /* records start with {"event":"round","pid":<pid>, */
    char pidtext[16];
    int p = pid, i = 0;
    char rev[16];
    do {
        rev[i++] = (char)('0' + p % 10);
        p /= 10;
    } while (p);
    for (int k = 0; k < i; k++)
        pidtext[k] = rev[i - 1 - k];
    pidtext[i] = '\0';
    strcpy(needle, "{\"event\":\"round\",\"pid\":");
    strcat(needle, pidtext);
    strcat(needle, ",");
    nlen = (int)strlen(needle);
    for (char *s = buf; (s = strstr(s, needle)); s += nlen)
        count++;
    return count;
}

/* Ends a round and waits (up to 10 s) for its record; returns 0 on success. */
__attribute__((unused)) static int end_round_and_wait(int rounds_before)
{
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    const char *tmpl = getenv("ROUNDTRIM_LOG");
    static char log[4096];
    if (!round_end || !tmpl)
        return -1;
    /* the log path as roundtrim expands it: %p is the pid */
    const char *mark = strstr(tmpl, "%p");
    if (mark) {
        char pidtext[16];
        int p = getpid(), i = 15;
        pidtext[i] = '\0';
        do {
            pidtext[--i] = (char)('0' + p % 10);
            p /= 10;
        } while (p);
        size_t head = (size_t)(mark - tmpl);
        memcpy(log, tmpl, head);
        strcpy(log + head, pidtext + i);
        strcat(log, mark + 2);
    } else {
        strcpy(log, tmpl);
    }
    round_end();
    for (int i = 0; i < 1000; i++) {
        if (log_round_count(log, getpid()) > rounds_before)
            return 0;
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return -1;
}

#endif
