#include "runtime/threads/app_threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/alloc/next_alloc.h"
#include "runtime/core/kernel_calls.h"
#include "runtime/threads/worker_thread.h"

static int live; /* the program's threads that have not ended */
static pthread_key_t end_key;
static bool key_ok;
static char counted_marker; /* the key's value on a counted thread: non-NULL is all that matters */

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void thread_ended(void *unused)
{
    (void)unused;
    if (__atomic_sub_fetch(&live, 1, __ATOMIC_ACQ_REL) == 0)
        roundtrim_worker_wake(); /* it looks, sees nobody left, and ends */
}

/* The calling thread is counted down when it ends. */
static void watch_self(void)
{
    if (key_ok)
        pthread_setspecific(end_key, &counted_marker);
}

/* The threads of the process now, from the kernel's link count of /proc/self/task (two plus one
 * per thread); 1 when it cannot be read. No allocation, no directory walk. */
static int threads_now(void)
{
    struct stat st;
    if (roundtrim_stat("/proc/self/task", &st) != 0 || st.st_nlink < 3)
        return 1;
    return (int)(st.st_nlink - 2);
}

void roundtrim_app_threads_start(void)
{
    /* libc's pthread_create is looked up at the first call of the hook, not here: most
     * processes never create a thread. */
    key_ok = pthread_key_create(&end_key, thread_ended) == 0;
    /* Only this thread will be counted down: any other that exists already keeps the count
     * above zero for good, which leaves the process as it would be without this watch. */
    __atomic_store_n(&live, threads_now(), __ATOMIC_RELEASE);
    watch_self();
}

static void *counted_start(void *p)
{
    struct start s = *(struct start *)p;
    roundtrim_next.free(p);
    watch_self();
    return s.fn(s.arg);
}

int roundtrim_app_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                                void *arg)
{
    roundtrim_pthread_create_fn create =
        __atomic_load_n(&roundtrim_real_pthread_create, __ATOMIC_ACQUIRE);
    if (!create)
        return ENOSYS;
    struct start *s = key_ok ? roundtrim_next.malloc(sizeof *s) : NULL;
    if (!s) {
        /* Not watched: counted for good, so the count never reaches zero while it may run. */
        __atomic_add_fetch(&live, 1, __ATOMIC_ACQ_REL);
        return create(t, attr, fn, arg);
    }
    s->fn = fn;
    s->arg = arg;
    /* Counted before it exists: the creator may end before the new thread first runs. */
    __atomic_add_fetch(&live, 1, __ATOMIC_ACQ_REL);
    int rc = create(t, attr, counted_start, s);
    if (rc != 0) {
        __atomic_sub_fetch(&live, 1, __ATOMIC_ACQ_REL);
        roundtrim_next.free(s);
    }
    return rc;
}

bool roundtrim_app_threads_gone(void)
{
    return __atomic_load_n(&live, __ATOMIC_ACQUIRE) <= 0;
}

void roundtrim_app_threads_fork_child(void)
{
    __atomic_store_n(&live, 1, __ATOMIC_RELEASE);
    watch_self();
}
