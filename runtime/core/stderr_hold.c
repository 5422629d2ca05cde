#include "runtime/core/stderr_hold.h"

#include <unistd.h>

#include "runtime/core/libc_later.h"
#include "runtime/core/safe_file.h"
#include "runtime/core/vm_child.h"

extern void *__dso_handle;

static int held = -1;
static struct roundtrim_file_id held_id;

/* A thread-local destructor of the main thread: exit() runs the calling thread's destructors
 * first, before the atexit handlers (glibc's __run_exit_handlers); a main thread that ends with
 * pthread_exit while others go on does not run them. */
static void exit_begins(void *unused)
{
    (void)unused;
    if (roundtrim_in_vm_child() || held >= 0)
        return;
    int fd = roundtrim_dup_high(STDERR_FILENO);
    if (fd >= 0 && roundtrim_fd_id(fd, &held_id))
        __atomic_store_n(&held, fd, __ATOMIC_RELEASE);
}

void roundtrim_stderr_hold_start(void)
{
    /* glibc before 2.18 has no such call: stderr is then used as it is at the end. */
    roundtrim_thread_atexit(exit_begins, NULL, &__dso_handle);
}

int roundtrim_stderr_fd(void)
{
    int fd = __atomic_load_n(&held, __ATOMIC_ACQUIRE);
    /* The copy is used only while its number still holds what it was taken from. */
    return fd >= 0 && roundtrim_fd_is(fd, &held_id) ? fd : STDERR_FILENO;
}

void roundtrim_stderr_fork_child(void)
{
    if (held >= 0) {
        close(held);
        held = -1;
    }
}
