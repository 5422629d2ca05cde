#include "runtime/core/vm_child.h"

#include <pthread.h>
#include <unistd.h>

/* 0 until the constructor ran: nothing is a child before then. */
static pid_t own_pid;

static void record_pid(void)
{
    __atomic_store_n(&own_pid, getpid(), __ATOMIC_RELAXED);
}

void roundtrim_vm_child_start(void)
{
    record_pid();
    pthread_atfork(NULL, NULL, record_pid);
}

bool roundtrim_in_vm_child(void)
{
    pid_t pid = __atomic_load_n(&own_pid, __ATOMIC_RELAXED);
    return pid != 0 && getpid() != pid; /* glibc >= 2.25 caches no pid: a real system call */
}
