#include "runtime/core/pages_resident.h"

#include <errno.h>
#include <unistd.h>

#include "runtime/core/fd_guard.h"
#include "runtime/core/pages.h"
#include "runtime/core/safe_file.h"

/* /proc/PID/pagemap's bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT   (1ull << 63)
#define PM_FILE      (1ull << 61) /* file page or shared anonymous */
#define PM_EXCLUSIVE (1ull << 56) /* mapped by this process only: written, not the zero page */

/* The own pages of [start, start + bytes), a chunk of entries at a time. */
static bool count_range(int fd, uintptr_t start, size_t bytes, size_t page, uint64_t *pages)
{
    uint64_t entries[512];
    size_t first = start / page, n = (bytes + page - 1) / page;
    for (size_t done = 0; done < n;) {
        size_t want = n - done < 512 ? n - done : 512;
        ssize_t got =
            pread(fd, entries, want * sizeof *entries, (off_t)((first + done) * sizeof *entries));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        size_t k = (size_t)got / sizeof *entries;
        for (size_t i = 0; i < k; i++)
            *pages +=
                (entries[i] & (PM_PRESENT | PM_FILE | PM_EXCLUSIVE)) == (PM_PRESENT | PM_EXCLUSIVE);
        done += k;
    }
    return true;
}

bool roundtrim_pages_resident(uint64_t *bytes)
{
    long ps = sysconf(_SC_PAGESIZE);
    size_t page = ps > 0 ? (size_t)ps : 4096;
    /* Through the calling thread: /proc/self is a zombie once the main thread has ended. */
    int fd = roundtrim_open_read("/proc/thread-self/pagemap");
    if (fd < 0)
        fd = roundtrim_open_read("/proc/self/pagemap");
    if (fd < 0)
        return false;
    uint64_t pages = 0;
    bool ok = true;
    for (int i = 0; i < ROUNDTRIM_PAGES_MAPS_MAX && ok; i++) {
        uintptr_t start;
        size_t len;
        if (roundtrim_pages_mapping(i, &start, &len))
            ok = count_range(fd, start, len, page, &pages);
    }
    roundtrim_fd_guard_close(fd);
    *bytes = pages * page + roundtrim_pages_untracked();
    return ok;
}
