/* truth: outside_heap
 * Appends 3 MiB a round to a scratch file and keeps all of it mapped and read, one mapping (a
 * growing memory-mapped dataset): file-backed pages, outside the allocators. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

int main(void)
{
    char path[] = "/tmp/roundtrim-corpus-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 3;
    unlink(path);
    static char chunk[3 << 20];
    memset(chunk, 'f', sizeof chunk);
    unsigned long sum = 0;
    unsigned char *kept = NULL;
    size_t kept_len = 0;
    for (int r = 0; r < 24; r++) {
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
            return 3;
        size_t len = (size_t)(r + 1) * sizeof chunk;
        unsigned char *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            return 3;
        for (size_t i = 0; i < len; i += 4096)
            sum += m[i];
        if (kept)
            munmap(kept, kept_len); /* the whole file stays mapped, once */
        kept = m;
        kept_len = len;
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    printf("%lu\n", sum);
    return 0;
}
