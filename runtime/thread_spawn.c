#include "runtime/thread_spawn.h"

#include <errno.h>

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

#include "runtime/app_threads.h"

int roundtrim_spawn_thread(void *(*fn)(void *), void *arg, const char *name, unsigned stack_kib)
{
    /* The new thread inherits the creating thread's mask: block everything around the create. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (stack_kib)
        pthread_attr_setstacksize(&attr, (size_t)stack_kib * 1024);
    pthread_t t;
    /* libc's own: the exported pthread_create counts the program's threads, and this is not one. */
    roundtrim_app_threads_resolve();
    int rc =
        roundtrim_real_pthread_create ? roundtrim_real_pthread_create(&t, &attr, fn, arg) : ENOSYS;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        pthread_setname_np(t, name);
    return rc;
}
