/* The program's own threads, counted so that roundtrim's threads never keep a process alive.
 *
 * glibc ends the process with exit(0) when its last thread ends (pthread_exit in main, or the
 * one thread of a fork child returning from its function): it counts every thread, roundtrim's
 * worker included, so without help a process whose program threads are all gone would wait for
 * ever on the worker, with every signal blocked there and left pending. Each thread the program
 * starts is counted when it is created and uncounted by a thread-specific destructor when it
 * ends, however it ends; at zero the worker is told, and it ends too, so that the last thread to
 * go runs exit(0) as it would without roundtrim. Threads started before roundtrim's constructor
 * (by another preloaded library) are never counted down: their process is left as it was. */
#ifndef ROUNDTRIM_RUNTIME_THREADS_APP_THREADS_H
#define ROUNDTRIM_RUNTIME_THREADS_APP_THREADS_H

#include <pthread.h>
#include <stdbool.h>

#include "runtime/threads/thread_spawn.h"

/* From the constructor, on the main thread: the threads that exist now are the program's. */
void roundtrim_app_threads_start(void);

/* Starts one of the program's threads: fn(arg) runs counted. Used by the pthread_create hook
 * while roundtrim is active. */
int roundtrim_app_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                                void *arg);

/* True once every thread of the program has ended (only roundtrim's are left). */
bool roundtrim_app_threads_gone(void);

/* The fork child: its one thread is the program's. */
void roundtrim_app_threads_fork_child(void);

#endif
