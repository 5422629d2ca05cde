/* Giving free pages back to the kernel, as many ranges a system call as it takes.
 *
 * Since Linux 6.13 process_madvise() takes MADV_DONTNEED for the calling process itself, up to
 * IOV_MAX ranges a call (since 6.16 with one TLB flush for them all); before, it answers EINVAL
 * and each range costs a madvise() of its own. Which of the two works is found once per process,
 * by releasing a page of roundtrim's own. Where a call is dear (software-virtualized page tables:
 * 60-100 us a call), the batch is 25-45 times cheaper than one call a range. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_PAGE_RELEASE_H
#define ROUNDTRIM_RUNTIME_ALLOC_PAGE_RELEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

/* The path this process releases pages by: "process_madvise" (batched) or "madvise" (one call a
 * range). Found on the first call (worker thread). */
const char *roundtrim_page_release_path(void);
bool roundtrim_page_release_batched(void);

/* A release session: the process's own pidfd where the kernel needs one (no descriptor where it
 * knows PIDFD_SELF). Opened inside the descriptor guard, so no fork child gets it: keep a session
 * short (one hold of an arena). */
struct roundtrim_release_session {
    int pidfd; /* -1: one madvise a range */
    bool opened;
};
void roundtrim_page_release_begin(struct roundtrim_release_session *s);
void roundtrim_page_release_end(struct roundtrim_release_session *s);

/* What the calls did. */
struct roundtrim_release_done {
    uint64_t calls; /* system calls made */
    uint64_t bytes; /* bytes of ranges the kernel released */
};

/* Releases n page-aligned ranges (n at most ROUNDTRIM_RELEASE_BATCH_MAX): one process_madvise
 * on the batched path (more where the kernel stopped part way), else one madvise each. */
void roundtrim_page_release(struct roundtrim_release_session *s, const struct iovec *iov,
                            unsigned n, struct roundtrim_release_done *done);

#endif
