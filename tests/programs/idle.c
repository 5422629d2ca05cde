/* Allocates a little and exits, printing how many threads it had at the end. With roundtrim
 * preloaded and no round boundary, that must be 1 and nothing may be written. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    for (int i = 0; i < 1000; i++)
        free(malloc((size_t)i * 10 + 1));
    int threads = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            threads++;
    if (d)
        closedir(d);
    printf("threads=%d\n", threads);
    return 0;
}
