#include "runtime/thread_counters.h"

#include <pthread.h>
#include <string.h>

__thread struct roundtrim_thread_counters roundtrim_tls
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Registration and summing are rare (thread start/exit, round boundaries): a mutex is fine
 * there. The fast path never takes it. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct roundtrim_thread_counters *registry_head;
static struct roundtrim_traffic retired; /* folded from exited threads, under registry_lock */
static bool counting_disabled;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;

static void fold_into(struct roundtrim_traffic *t, const struct roundtrim_thread_counters *c)
{
    t->malloc_calls += __atomic_load_n(&c->malloc_calls, __ATOMIC_RELAXED);
    t->free_calls += __atomic_load_n(&c->free_calls, __ATOMIC_RELAXED);
    t->malloc_bytes += __atomic_load_n(&c->malloc_bytes, __ATOMIC_RELAXED);
    t->free_bytes += __atomic_load_n(&c->free_bytes, __ATOMIC_RELAXED);
}

static void unlink_block(struct roundtrim_thread_counters *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        registry_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* Thread exit: the TLS block is about to go away with the thread, so fold it first. */
static void thread_exit(void *arg)
{
    struct roundtrim_thread_counters *c = arg;
    pthread_mutex_lock(&registry_lock);
    fold_into(&retired, c);
    unlink_block(c);
    c->state = RT_THREAD_EXITED;
    pthread_mutex_unlock(&registry_lock);
}

static void create_exit_key(void)
{
    exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

void roundtrim_thread_register(void)
{
    struct roundtrim_thread_counters *c = &roundtrim_tls;
    if (c->state != RT_THREAD_NEW)
        return;
    /* pthread_setspecific may allocate, which comes back here: this state ends the recursion. */
    c->state = RT_THREAD_REGISTERING;
    if (__atomic_load_n(&counting_disabled, __ATOMIC_RELAXED)) {
        c->state = RT_THREAD_INTERNAL;
        return;
    }
    pthread_once(&exit_key_once, create_exit_key);
    if (!exit_key_ok || pthread_setspecific(exit_key, c) != 0) {
        /* Without an exit hook the block could be read after the thread is gone. */
        c->state = RT_THREAD_INTERNAL;
        return;
    }
    pthread_mutex_lock(&registry_lock);
    c->prev = NULL;
    c->next = registry_head;
    if (registry_head)
        registry_head->prev = c;
    registry_head = c;
    c->state = RT_THREAD_ACTIVE;
    pthread_mutex_unlock(&registry_lock);
}

void roundtrim_thread_mark_internal(void)
{
    struct roundtrim_thread_counters *c = &roundtrim_tls;
    if (c->state == RT_THREAD_ACTIVE) {
        pthread_mutex_lock(&registry_lock);
        fold_into(&retired, c);
        unlink_block(c);
        pthread_mutex_unlock(&registry_lock);
    }
    c->state = RT_THREAD_INTERNAL;
}

void roundtrim_counters_total(struct roundtrim_traffic *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&registry_lock);
    *out = retired;
    for (struct roundtrim_thread_counters *c = registry_head; c; c = c->next)
        fold_into(out, c);
    pthread_mutex_unlock(&registry_lock);
}

void roundtrim_counters_disable(void)
{
    __atomic_store_n(&counting_disabled, true, __ATOMIC_RELAXED);
    roundtrim_tls.state = RT_THREAD_INTERNAL;
}

/* Fork: the registry lock is held across fork so the child never inherits it locked midway. */
void roundtrim_counters_fork_prepare(void)
{
    pthread_mutex_lock(&registry_lock);
}

void roundtrim_counters_fork_parent(void)
{
    pthread_mutex_unlock(&registry_lock);
}

/* The child is a new process with one thread: only the forking thread's block survives, and
 * its traffic starts from zero. */
void roundtrim_counters_fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
    memset(&retired, 0, sizeof retired);
    struct roundtrim_thread_counters *c = &roundtrim_tls;
    c->malloc_calls = c->free_calls = c->malloc_bytes = c->free_bytes = 0;
    registry_head = NULL;
    if (c->state == RT_THREAD_ACTIVE) {
        c->prev = c->next = NULL;
        registry_head = c;
    }
}
