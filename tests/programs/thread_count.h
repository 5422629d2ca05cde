/* How many threads the calling process has now (/proc/self/task), as a test program reports it. */
#ifndef ROUNDTRIM_TEST_THREAD_COUNT_H
#define ROUNDTRIM_TEST_THREAD_COUNT_H

#include <dirent.h>

static int thread_count(void)
{
    int threads = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            threads++;
    if (d)
        closedir(d);
    return threads;
}

#endif
