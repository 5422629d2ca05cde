/* The calling process's resident set size, as a test program reports it. */
#ifndef ROUNDTRIM_TEST_PROC_RSS_H
#define ROUNDTRIM_TEST_PROC_RSS_H

#include <stdio.h>
#include <unistd.h>

static unsigned long long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (unsigned long long)resident * (unsigned long long)sysconf(_SC_PAGESIZE);
}

#endif
