/* The libpthread functions the library calls that glibc 2.34 moved into libc (pthread_sigmask:
 * 2.32) under a new version. Not pthread_create: the library defines it. */
#include "stand_in.h"

/* pthread_cleanup_push and _pop's helpers (GLIBC_2.3.3 in libpthread before 2.34). */
STAND_IN(__pthread_register_cancel)
STAND_IN(__pthread_unregister_cancel)
STAND_IN(__pthread_unwind_next)
STAND_IN(pthread_attr_setstacksize)
STAND_IN(pthread_condattr_setclock)
STAND_IN(pthread_detach)
STAND_IN(pthread_getspecific)
STAND_IN(pthread_join)
STAND_IN(pthread_key_create)
STAND_IN(pthread_kill)
STAND_IN(pthread_mutex_trylock)
STAND_IN(pthread_mutexattr_settype)
STAND_IN(pthread_once)
STAND_IN(pthread_rwlock_rdlock)
STAND_IN(pthread_rwlock_timedwrlock)
STAND_IN(pthread_rwlock_unlock)
STAND_IN(pthread_rwlock_wrlock)
STAND_IN(pthread_setname_np)
STAND_IN(pthread_setspecific)
STAND_IN(pthread_sigmask)
STAND_IN(sem_init)
STAND_IN(sem_post)
STAND_IN(sem_timedwait)
STAND_IN(sem_wait)
