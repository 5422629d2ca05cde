/* pthread_create: the program's threads are counted (runtime/threads/app_threads.h) so that the
 * process ends when the last of them does, as it would without roundtrim. Forwarded untouched when
 * roundtrim is not active and in a vfork child. */
#include <errno.h>
#include <pthread.h>

#include "runtime/threads/app_threads.h"
#include "runtime/core/export.h"
#include "runtime/core/settings.h"
#include "runtime/core/vm_child.h"

ROUNDTRIM_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                                    void *arg)
{
    roundtrim_real_pthread_create_resolve(); /* a constructor that runs before roundtrim's */
    if (!roundtrim_active() || roundtrim_in_vm_child()) {
        roundtrim_pthread_create_fn create = roundtrim_real_pthread_create;
        return create ? create(t, attr, fn, arg) : ENOSYS;
    }
    return roundtrim_app_thread_create(t, attr, fn, arg);
}
