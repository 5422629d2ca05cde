/* Starting roundtrim's own threads. */
#ifndef ROUNDTRIM_RUNTIME_THREADS_THREAD_SPAWN_H
#define ROUNDTRIM_RUNTIME_THREADS_THREAD_SPAWN_H

#include <pthread.h>
#include <sys/types.h>

typedef int (*roundtrim_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                           void *);

/* libc's pthread_create (the exported one is roundtrim's); NULL until resolved. */
extern roundtrim_pthread_create_fn roundtrim_real_pthread_create
    __attribute__((visibility("hidden")));

/* Looks up libc's pthread_create (idempotent). */
void roundtrim_real_pthread_create_resolve(void);

/* Starts a detached thread named `name` running fn(arg), with every signal blocked: signals stay
 * with the application's threads, whose handlers expect them there. Returns 0 or an errno. */
int roundtrim_spawn_thread(void *(*fn)(void *), void *arg, const char *name, unsigned stack_kib);

/* Waits until the kernel has removed thread tid of this process, at most ms milliseconds. */
void roundtrim_thread_wait_gone(pid_t tid, unsigned ms);

#endif
