#include "runtime/threads/thread_spawn.h"

#include <errno.h>

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <unistd.h>

#include "runtime/core/clock.h"
#include "runtime/core/kernel_calls.h"

#include "runtime/core/real_dlsym.h"

roundtrim_pthread_create_fn roundtrim_real_pthread_create;

void roundtrim_real_pthread_create_resolve(void)
{
    if (__atomic_load_n(&roundtrim_real_pthread_create, __ATOMIC_ACQUIRE))
        return;
    void *fn = roundtrim_next_symbol("pthread_create");
    __atomic_store_n(&roundtrim_real_pthread_create, (roundtrim_pthread_create_fn)fn,
                     __ATOMIC_RELEASE);
}

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
    roundtrim_real_pthread_create_resolve();
    int rc =
        roundtrim_real_pthread_create ? roundtrim_real_pthread_create(&t, &attr, fn, arg) : ENOSYS;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        pthread_setname_np(t, name);
    return rc;
}

void roundtrim_thread_wait_gone(pid_t tid, unsigned ms)
{
    for (unsigned i = 0; i < ms; i++) {
        if (roundtrim_tgkill(getpid(), tid, 0) != 0 && errno == ESRCH)
            return;
        roundtrim_sleep_us(1000);
    }
}
