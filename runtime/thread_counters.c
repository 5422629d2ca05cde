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

/* Registration is rare (thread start and exit): a mutex is fine there. The fast path never takes
 * it, and summing never does (it walks all_blocks, which only ever grows at its head). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct roundtrim_thread_counters *all_blocks;  /* head published with a release store */
static struct roundtrim_thread_counters *free_blocks; /* linked through ->free_next */
static bool counting_disabled;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;

#define SLAB_BYTES 4096

/* A block from the free list (counts kept), or a fresh page of them (mmap: malloc is what we
 * count). Called with registry_lock held. */
static struct roundtrim_thread_counters *take_block(void)
{
    if (!free_blocks) {
        struct roundtrim_thread_counters *page =
            mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            return NULL;
        struct roundtrim_thread_counters *head = __atomic_load_n(&all_blocks, __ATOMIC_RELAXED);
        for (size_t i = 0; i < SLAB_BYTES / sizeof *page; i++) {
            page[i].all_next = head;
            head = &page[i];
            page[i].free_next = free_blocks;
            free_blocks = &page[i];
        }
        /* The zeroed page and its links are visible before a handler can reach them. */
        __atomic_store_n(&all_blocks, head, __ATOMIC_RELEASE);
    }
    struct roundtrim_thread_counters *c = free_blocks;
    free_blocks = c->free_next;
    return c;
}

static void fold_into(struct roundtrim_traffic *t, const struct roundtrim_thread_counters *c)
{
    t->malloc_calls += __atomic_load_n(&c->malloc_calls, __ATOMIC_RELAXED);
    t->free_calls += __atomic_load_n(&c->free_calls, __ATOMIC_RELAXED);
    t->malloc_bytes += __atomic_load_n(&c->malloc_bytes, __ATOMIC_RELAXED);
    t->free_bytes += __atomic_load_n(&c->free_bytes, __ATOMIC_RELAXED);
}

/* Gives the calling thread's block back; its counts stay in the sum. */
static void retire(struct roundtrim_thread_counters *c)
{
    pthread_mutex_lock(&registry_lock);
    c->free_next = free_blocks;
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
    pthread_mutex_unlock(&registry_lock);
    if (!c) {
        c = &uncounted_sink;
    } else if (!exit_key_ok || pthread_setspecific(exit_key, c) != 0) {
        /* No exit hook: the block is never reused, but it is ours and stays summed. */
    }
    roundtrim_tls_block = c;
    registering = false;
    return c;
}

bool roundtrim_thread_counted(const struct roundtrim_thread_counters *c)
{
    return c != &uncounted_sink;
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

struct roundtrim_thread_counters *roundtrim_counting_pause(void)
{
    struct roundtrim_thread_counters *saved = roundtrim_tls_block;
    roundtrim_tls_block = &uncounted_sink;
    return saved;
}

void roundtrim_counting_resume(struct roundtrim_thread_counters *saved)
{
    roundtrim_tls_block = saved;
}

void roundtrim_counters_total(struct roundtrim_traffic *out)
{
    memset(out, 0, sizeof *out);
    for (const struct roundtrim_thread_counters *c = __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE);
         c; c = c->all_next)
        fold_into(out, c);
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

/* The child is a new process with one thread: only the forking thread's block stays taken, the
 * others go back to the free list, and traffic starts from zero. */
void roundtrim_counters_fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
    struct roundtrim_thread_counters *mine = roundtrim_tls_block;
    free_blocks = NULL;
    for (struct roundtrim_thread_counters *c = all_blocks; c; c = c->all_next) {
        c->malloc_calls = c->free_calls = c->malloc_bytes = c->free_bytes = 0;
        c->sample_at = 0;
        if (c == mine)
            continue;
        c->free_next = free_blocks;
        free_blocks = c;
    }
}
