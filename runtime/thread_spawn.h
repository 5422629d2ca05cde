/* Starting roundtrim's own threads. */
#ifndef ROUNDTRIM_RUNTIME_THREAD_SPAWN_H
#define ROUNDTRIM_RUNTIME_THREAD_SPAWN_H

/* Starts a detached thread named `name` running fn(arg), with every signal blocked: signals stay
 * with the application's threads, whose handlers expect them there. Returns 0 or an errno. */
int roundtrim_spawn_thread(void *(*fn)(void *), void *arg, const char *name, unsigned stack_kib);

#endif
