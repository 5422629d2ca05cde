/* Emulates roundtrim's Python helper thread losing the CPU at the worst moment, for the tests of
 * programs that exit right after a round: preloaded before roundtrim, it holds a
 * pthread_getspecific() call of each thread named "roundtrim-py", the first one past the
 * SLOW_PY_HELPER_SKIP first (default 0). CPython makes one at the start of PyGILState_Ensure,
 * before it creates the thread's state (and one in Py_AddPendingCall). The hold lasts until the
 * interpreter has finalized (PyInterpreterState_Main() answers NULL) or SLOW_PY_HELPER_MS
 * milliseconds (default 1500) have passed: unless something makes the interpreter wait for the
 * helper, Ensure goes on in a runtime already torn down. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

typedef void *(*getspecific_fn)(pthread_key_t);
typedef void *(*main_interpreter_fn)(void);

static __thread int calls; /* this thread's pthread_getspecific calls so far */

static long env_long(const char *name, long fallback, long max)
{
    const char *v = getenv(name);
    long n = v ? strtol(v, NULL, 10) : fallback;
    return n >= 0 && n <= max ? n : fallback;
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void hold(void)
{
    main_interpreter_fn main_interp =
        (main_interpreter_fn)dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
    struct timespec tick = {0, 100000}; /* 0.1 ms */
    long long end = now_ms() + env_long("SLOW_PY_HELPER_MS", 1500, 60000);
    while (now_ms() < end && (!main_interp || main_interp()))
        nanosleep(&tick, NULL);
}

void *pthread_getspecific(pthread_key_t key)
{
    static getspecific_fn real;
    if (!real)
        real = (getspecific_fn)dlsym(RTLD_NEXT, "pthread_getspecific");
    int n = calls < 1000 ? calls++ : calls;
    if (n <= 100 && n == env_long("SLOW_PY_HELPER_SKIP", 0, 100)) {
        char name[16] = "";
        if (prctl(PR_GET_NAME, name) == 0 && strcmp(name, "roundtrim-py") == 0)
            hold();
    }
    return real ? real(key) : NULL;
}
