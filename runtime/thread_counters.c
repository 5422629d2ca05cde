#include "runtime/thread_counters.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

__thread struct roundtrim_thread_counters *roundtrim_tls_block
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Where uncounted threads count: their own, so that they never share a cache line. */
static __thread struct roundtrim_thread_counters uncounted_sink
    __attribute__((tls_model("initial-exec")));
static __thread bool registering;

/* Registration and summing are rare (thread start/exit, round boundaries): a mutex is fine
 * there. The fast path never takes it. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct roundtrim_thread_counters *registry_head;
static struct roundtrim_thread_counters *free_blocks; /* linked through ->next */
static struct roundtrim_traffic retired;              /* folded from exited threads */
static bool counting_disabled;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;

#define SLAB_BYTES 4096

/* A block from the free list, or a fresh page of them (mmap: malloc is what we count). Called
 * with registry_lock held. */
static struct roundtrim_thread_counters *take_block(void)
{
    if (!free_blocks) {
        struct roundtrim_thread_counters *page =
            mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            return NULL;
        for (size_t i = 0; i < SLAB_BYTES / sizeof *page; i++) {
            page[i].next = free_blocks;
            free_blocks = &page[i];
        }
    }
    struct roundtrim_thread_counters *c = free_blocks;
    free_blocks = c->next;
    memset(c, 0, sizeof *c);
    return c;
}

static void fold_into(struct roundtrim_traffic *t, const struct roundtrim_thread_counters *c)
{
    t->malloc_calls += __atomic_load_n(&c->malloc_calls, __ATOMIC_RELAXED);
    t->free_calls += __atomic_load_n(&c->free_calls, __ATOMIC_RELAXED);
    t->malloc_bytes += __atomic_load_n(&c->malloc_bytes, __ATOMIC_RELAXED);
    t->free_bytes += __atomic_load_n(&c->free_bytes, __ATOMIC_RELAXED);
}

static void link_block(struct roundtrim_thread_counters *c)
{
    c->prev = NULL;
    c->next = registry_head;
    if (registry_head)
        registry_head->prev = c;
    registry_head = c;
}

static void unlink_block(struct roundtrim_thread_counters *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        registry_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
}

/* Folds the calling thread's block into the retired totals and gives it back. */
static void retire(struct roundtrim_thread_counters *c)
{
    pthread_mutex_lock(&registry_lock);
    fold_into(&retired, c);
    unlink_block(c);
    c->next = free_blocks;
    free_blocks = c;
    pthread_mutex_unlock(&registry_lock);
}

/* Thread exit: later calls on this thread (other exit hooks) go uncounted. */
static void thread_exit(void *arg)
{
    retire(arg);
    roundtrim_tls_block = &uncounted_sink;
}

static void create_exit_key(void)
{
    exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

struct roundtrim_thread_counters *roundtrim_thread_register(void)
{
    /* pthread_setspecific may allocate, which comes back here: that allocation goes uncounted. */
    if (registering || __atomic_load_n(&counting_disabled, __ATOMIC_RELAXED))
        return roundtrim_tls_block ? roundtrim_tls_block : (roundtrim_tls_block = &uncounted_sink);
    registering = true;
    pthread_once(&exit_key_once, create_exit_key);
    pthread_mutex_lock(&registry_lock);
    struct roundtrim_thread_counters *c = take_block();
    if (c)
        link_block(c);
    pthread_mutex_unlock(&registry_lock);
    if (!c) {
        c = &uncounted_sink;
    } else if (!exit_key_ok || pthread_setspecific(exit_key, c) != 0) {
        /* No exit hook: the block is never folded, but it is ours and stays summed. */
    }
    roundtrim_tls_block = c;
    registering = false;
    return c;
}

void roundtrim_thread_mark_internal(void)
{
    struct roundtrim_thread_counters *c = roundtrim_tls_block;
    if (c && c != &uncounted_sink) {
        if (exit_key_ok)
            pthread_setspecific(exit_key, NULL);
        retire(c);
    }
    roundtrim_tls_block = &uncounted_sink;
}

void roundtrim_counters_total(struct roundtrim_traffic *out)
{
    pthread_mutex_lock(&registry_lock);
    *out = retired;
    for (struct roundtrim_thread_counters *c = registry_head; c; c = c->next)
        fold_into(out, c);
    pthread_mutex_unlock(&registry_lock);
}

void roundtrim_counters_disable(void)
{
    __atomic_store_n(&counting_disabled, true, __ATOMIC_RELAXED);
    roundtrim_tls_block = &uncounted_sink;
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

/* The child is a new process with one thread: only the forking thread's block survives, the
 * others go back to the free list, and traffic starts from zero. */
void roundtrim_counters_fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
    memset(&retired, 0, sizeof retired);
    struct roundtrim_thread_counters *mine = roundtrim_tls_block;
    struct roundtrim_thread_counters *c = registry_head, *next;
    registry_head = NULL;
    for (; c; c = next) {
        next = c->next;
        if (c == mine)
            continue;
        c->next = free_blocks;
        free_blocks = c;
    }
    if (mine && mine != &uncounted_sink) {
        memset(mine, 0, sizeof *mine);
        link_block(mine);
    }
}
