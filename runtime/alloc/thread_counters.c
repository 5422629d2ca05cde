#include "runtime/alloc/thread_counters.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/alloc/next_alloc.h"
#include "runtime/core/pages.h"

/* A thread's TLS points at the counts, the first member; the links are the registry's own. */
struct block {
    struct roundtrim_thread_counters counts;
    struct block *all_next;  /* every block ever made; set before publishing */
    struct block *free_next; /* free list, under the registry lock */
};
_Static_assert(offsetof(struct block, counts) == 0, "a block starts with its counts");

__thread struct roundtrim_thread_counters *roundtrim_tls_block
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
__thread struct roundtrim_thread_counters *roundtrim_tls_fast
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Every change of the calling thread's block goes through here. */
static struct roundtrim_thread_counters *use_block(struct roundtrim_thread_counters *c)
{
    roundtrim_tls_fast = NULL;
    roundtrim_tls_block = c;
    return c;
}

/* Where uncounted threads count: their own, so that they never share a cache line. */
static __thread struct roundtrim_thread_counters uncounted_sink
    __attribute__((tls_model("initial-exec")));
static __thread bool registering;

/* Registration is rare (thread start and exit): a mutex is fine there. The fast path never takes
 * it, and summing never does (it walks all_blocks, which only ever grows at its head). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *all_blocks;  /* head published with a release store */
static struct block *free_blocks; /* linked through ->free_next */
static bool counting_disabled;

/* jemalloc's mallctl, once its per-thread counters are known to answer; NULL otherwise. */
static roundtrim_mallctl_fn je_mallctl;
/* What the uncounted sink's jemalloc route reads: its bytes are never summed. */
static const uint64_t je_nothing;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;

#define SLAB_BYTES 4096

/* A block from the free list (counts kept), or a fresh page of them (mmap: malloc is what we
 * count). Called with registry_lock held. */
static struct block *take_block(void)
{
    /* The first page is the library's own: most processes never need a second one, nor the
     * system call for it. */
    static struct block first_page[SLAB_BYTES / sizeof(struct block)];
    static bool first_page_used;
    if (!free_blocks) {
        struct block *page = first_page_used ? roundtrim_pages_map(SLAB_BYTES) : first_page;
        first_page_used = true;
        if (!page)
            return NULL;
        struct block *head = __atomic_load_n(&all_blocks, __ATOMIC_RELAXED);
        for (size_t i = 0; i < SLAB_BYTES / sizeof *page; i++) {
            page[i].all_next = head;
            head = &page[i];
            page[i].free_next = free_blocks;
            free_blocks = &page[i];
        }
        /* The zeroed page and its links are visible before a handler can reach them. */
        __atomic_store_n(&all_blocks, head, __ATOMIC_RELEASE);
    }
    struct block *b = free_blocks;
    free_blocks = b->free_next;
    return b;
}

static void fold_into(struct roundtrim_traffic *t, const struct block *b)
{
    const struct roundtrim_thread_counters *c = &b->counts;
    t->malloc_calls += __atomic_load_n(&c->malloc_calls, __ATOMIC_RELAXED);
    t->free_calls += __atomic_load_n(&c->free_calls, __ATOMIC_RELAXED);
    t->malloc_bytes += __atomic_load_n(&c->malloc_bytes, __ATOMIC_RELAXED);
    t->free_bytes += __atomic_load_n(&c->free_bytes, __ATOMIC_RELAXED);
    t->mmapped_net += __atomic_load_n(&c->mmapped_bytes, __ATOMIC_RELAXED);
}

/* The calling thread's jemalloc counters. jemalloc may set up its data for the thread here; an
 * allocation that comes back to the hooks meanwhile is jemalloc's own. */
static bool je_thread_counters(roundtrim_mallctl_fn mallctl, const uint64_t **allocated,
                               const uint64_t **deallocated)
{
    uint64_t *a = NULL, *d = NULL;
    size_t alen = sizeof a, dlen = sizeof d;
    bool inside = roundtrim_in_next_alloc;
    roundtrim_in_next_alloc = true;
    bool ok = mallctl("thread.allocatedp", &a, &alen, NULL, 0) == 0 &&
              mallctl("thread.deallocatedp", &d, &dlen, NULL, 0) == 0 && a && d;
    roundtrim_in_next_alloc = inside;
    *allocated = a;
    *deallocated = d;
    return ok;
}

/* From here on the block's bytes continue from its own counts, whatever jemalloc counted on the
 * thread before. Owner only, like everything that reads jemalloc's figures. */
static void je_rebase(struct roundtrim_thread_counters *c)
{
    c->je_allocated_off = c->malloc_bytes - *c->je_allocated;
    c->je_deallocated_off = c->free_bytes - *c->je_deallocated;
}

/* Brings the block's bytes up to jemalloc's figures: what the thread allocated and freed through
 * jemalloc's own API (mallocx, sdallocx) since its last counted call. */
static void je_publish(struct roundtrim_thread_counters *c)
{
    c->malloc_bytes = *c->je_allocated + c->je_allocated_off;
    c->free_bytes = *c->je_deallocated + c->je_deallocated_off;
}

static void attach_jemalloc(struct roundtrim_thread_counters *c)
{
    roundtrim_mallctl_fn mallctl = __atomic_load_n(&je_mallctl, __ATOMIC_ACQUIRE);
    const uint64_t *a = NULL, *d = NULL;
    if (mallctl && !je_thread_counters(mallctl, &a, &d))
        a = d = NULL;
    c->je_allocated = a;
    c->je_deallocated = d;
    if (a)
        je_rebase(c);
}

/* The sink counts like a block, so on the jemalloc route it reads a constant. */
static struct roundtrim_thread_counters *sink(void)
{
    bool je = __atomic_load_n(&je_mallctl, __ATOMIC_RELAXED) != NULL;
    uncounted_sink.je_allocated = je ? &je_nothing : NULL;
    uncounted_sink.je_deallocated = je ? &je_nothing : NULL;
    return &uncounted_sink;
}

/* Gives the calling thread's block back; its counts stay in the sum. */
static void retire(struct roundtrim_thread_counters *c)
{
    if (c->je_allocated)
        je_publish(c);
    struct block *b = (struct block *)c;
    pthread_mutex_lock(&registry_lock);
    b->free_next = free_blocks;
    free_blocks = b;
    pthread_mutex_unlock(&registry_lock);
}

/* Thread exit: later calls on this thread (other exit hooks) go uncounted. */
static void thread_exit(void *arg)
{
    use_block(sink());
    retire(arg);
}

static void create_exit_key(void)
{
    exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

struct roundtrim_thread_counters *roundtrim_thread_register(void)
{
    /* pthread_setspecific may allocate, which comes back here: that allocation goes uncounted. */
    if (registering || __atomic_load_n(&counting_disabled, __ATOMIC_RELAXED))
        return roundtrim_tls_block ? roundtrim_tls_block : use_block(sink());
    registering = true;
    pthread_once(&exit_key_once, create_exit_key);
    pthread_mutex_lock(&registry_lock);
    struct block *b = take_block();
    pthread_mutex_unlock(&registry_lock);
    struct roundtrim_thread_counters *c = b ? &b->counts : sink();
    if (b) {
        if (!exit_key_ok || pthread_setspecific(exit_key, c) != 0) {
            /* No exit hook: the block is never reused, but it is ours and stays summed. */
        }
        /* Last: what pthread_setspecific allocated is not the thread's. */
        attach_jemalloc(c);
    }
    use_block(c);
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
    use_block(sink());
    if (c && c != &uncounted_sink) {
        if (exit_key_ok)
            pthread_setspecific(exit_key, NULL);
        retire(c);
    }
}

/* On the jemalloc route the block takes jemalloc's figures up to the pause, and on resuming
 * continues from them: what jemalloc counted meanwhile is left out. */
struct roundtrim_thread_counters *roundtrim_counting_pause(void)
{
    struct roundtrim_thread_counters *saved = roundtrim_tls_block;
    if (saved && saved->je_allocated)
        je_publish(saved);
    use_block(sink());
    return saved;
}

void roundtrim_counting_resume(struct roundtrim_thread_counters *saved)
{
    if (saved && saved->je_allocated)
        je_rebase(saved);
    use_block(saved);
}

bool roundtrim_counters_use_jemalloc(roundtrim_mallctl_fn mallctl)
{
    const uint64_t *a, *d;
    if (!mallctl || !je_thread_counters(mallctl, &a, &d))
        return false;
    __atomic_store_n(&je_mallctl, mallctl, __ATOMIC_RELEASE);
    /* The calling thread may have registered already (the constructor allocates); threads that
     * did elsewhere keep usable sizes. */
    struct roundtrim_thread_counters *c = roundtrim_tls_block;
    if (c == &uncounted_sink || !c)
        sink();
    else
        attach_jemalloc(c);
    return true;
}

void roundtrim_counters_total(struct roundtrim_traffic *out)
{
    memset(out, 0, sizeof *out);
    for (const struct block *b = __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE); b; b = b->all_next)
        fold_into(out, b);
}

/* What a fork child inherited: live bytes and large mapped blocks at the fork. */
static uint64_t inherited_live, inherited_mmapped;

uint64_t roundtrim_counters_live(const struct roundtrim_traffic *t)
{
    int64_t live = (int64_t)(inherited_live + t->malloc_bytes - t->free_bytes);
    return live > 0 ? (uint64_t)live : 0;
}

uint64_t roundtrim_counters_mmapped_live(const struct roundtrim_traffic *t)
{
    int64_t live = (int64_t)(inherited_mmapped + t->mmapped_net);
    return live > 0 ? (uint64_t)live : 0;
}

void roundtrim_counters_disable(void)
{
    __atomic_store_n(&counting_disabled, true, __ATOMIC_RELAXED);
    use_block(sink());
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
 * others go back to the free list, and traffic starts from zero (on the jemalloc route, from
 * jemalloc's figures at the fork, which the child inherits). */
void roundtrim_counters_fork_child(void)
{
    /* Held since fork_prepare, by this very thread: unlocked, as in the parent (initialising a
     * mutex that is locked is undefined; ThreadSanitizer sees the next lock as a double lock). */
    pthread_mutex_unlock(&registry_lock);
    struct roundtrim_thread_counters *mine = roundtrim_tls_block;
    struct roundtrim_traffic at_fork;
    roundtrim_counters_total(&at_fork);
    inherited_live = roundtrim_counters_live(&at_fork);
    inherited_mmapped = roundtrim_counters_mmapped_live(&at_fork);
    free_blocks = NULL;
    for (struct block *b = all_blocks; b; b = b->all_next) {
        struct roundtrim_thread_counters *c = &b->counts;
        c->malloc_calls = c->free_calls = c->malloc_bytes = c->free_bytes = 0;
        c->mmapped_bytes = 0;
        c->sample_at = 0;
        if (c == mine) {
            if (c->je_allocated)
                je_rebase(c);
            continue;
        }
        b->free_next = free_blocks;
        free_blocks = b;
    }
}
