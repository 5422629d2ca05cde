#include "runtime/boundary/queue.h"

#include <stddef.h>
#include <string.h>

/* A bounded queue of snapshots, many producers (any thread, signal handlers included) and one
 * consumer. Each cell carries a sequence number: a producer claims a position with one CAS on
 * the tail, fills the cell and publishes it by storing the sequence; nothing ever waits, so a
 * handler that interrupts a producer on its own thread simply takes the next cell. When the
 * queue is full the boundary is counted (`dropped`) and kept in one more slot, `overflow`, which
 * holds the latest such boundary: once the queue drains, the worker records it as one round that
 * says how many it merged. A dropped boundary whose snapshot was overwritten is merged into the
 * next record, queued or kept. */
#ifndef ROUNDTRIM_BOUNDARY_QUEUE_CELLS
#define ROUNDTRIM_BOUNDARY_QUEUE_CELLS 256u /* power of two; the tests build smaller queues */
#endif
#define QUEUE_CELLS ROUNDTRIM_BOUNDARY_QUEUE_CELLS
_Static_assert((QUEUE_CELLS & (QUEUE_CELLS - 1)) == 0, "the queue's cells are a power of two");

/* Places where a thread may be interrupted or preempted between two steps, and another thread (or
 * a signal handler on the same one) come between. The tests build them as calls to a function of
 * their own, which runs a boundary or a take there, or yields to make the window wide
 * (tests/unit/check_boundary_queue.c, stress_boundary_queue.c); elsewhere they are nothing. */
#ifdef ROUNDTRIM_BOUNDARY_QUEUE_TEST
void roundtrim_boundary_queue_window(const char *where);
#define WINDOW(where) roundtrim_boundary_queue_window(where)
#else
#define WINDOW(where) ((void)0)
#endif

/* A cell's sequence is stored less its index, so that zeroed memory is the empty queue: nothing
 * to initialise before the first signal can arrive. */
static struct cell {
    uint64_t seq_less_index;
    struct roundtrim_boundary_snap snap;
} cells[QUEUE_CELLS];
static uint64_t tail, head; /* head: moved by the consumer only */
static uint64_t dropped, dropped_taken;

/* A seqlock with one writer at a time: a writer that finds another one writing (a handler that
 * interrupted it, or another thread) leaves its boundary to the next record. */
static struct {
    uint64_t seq;     /* odd while written */
    uint64_t drop_no; /* the count of dropped boundaries up to the one kept */
    struct roundtrim_boundary_snap snap;
} overflow;

/* The kept snapshot is copied a word at a time, with release stores and acquire loads: a reader
 * may copy it while a writer changes it (and then throws its copy away), which plain copies would
 * make a data race; and a reader that sees any word of a later write also sees the odd sequence
 * that write began with, so the check that follows the copy fails. */
typedef uint64_t __attribute__((may_alias)) snap_word;
#define SNAP_WORDS (sizeof(struct roundtrim_boundary_snap) / sizeof(snap_word))
_Static_assert(sizeof(struct roundtrim_boundary_snap) % sizeof(snap_word) == 0,
               "a snapshot is whole words");

static void snap_store(struct roundtrim_boundary_snap *dst,
                       const struct roundtrim_boundary_snap *src)
{
    snap_word *d = (snap_word *)dst;
    const snap_word *s = (const snap_word *)src;
    for (size_t i = 0; i < SNAP_WORDS; i++)
        __atomic_store_n(&d[i], s[i], __ATOMIC_RELEASE);
}

static void snap_load(struct roundtrim_boundary_snap *dst,
                      const struct roundtrim_boundary_snap *src)
{
    snap_word *d = (snap_word *)dst;
    const snap_word *s = (const snap_word *)src;
    for (size_t i = 0; i < SNAP_WORDS; i++) {
        if (i == SNAP_WORDS / 2)
            WINDOW("copying"); /* a writer may come between the halves */
        d[i] = __atomic_load_n(&s[i], __ATOMIC_ACQUIRE);
    }
}

static void overflow_keep(const struct roundtrim_boundary_snap *snap, uint64_t drop_no)
{
    uint64_t s = __atomic_load_n(&overflow.seq, __ATOMIC_RELAXED);
    if ((s & 1) || !__atomic_compare_exchange_n(&overflow.seq, &s, s + 1, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_RELAXED))
        return;
    WINDOW("keeping"); /* another boundary dropped now finds the slot being written */
    if (drop_no > __atomic_load_n(&overflow.drop_no, __ATOMIC_RELAXED)) {
        snap_store(&overflow.snap, snap);
        __atomic_store_n(&overflow.drop_no, drop_no, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&overflow.seq, s + 2, __ATOMIC_RELEASE);
}

/* A consistent copy of the kept boundary; false while a writer is at it. */
static bool overflow_read(struct roundtrim_boundary_snap *out, uint64_t *drop_no)
{
    uint64_t s = __atomic_load_n(&overflow.seq, __ATOMIC_ACQUIRE);
    if (s & 1)
        return false;
    snap_load(out, &overflow.snap);
    *drop_no = __atomic_load_n(&overflow.drop_no, __ATOMIC_ACQUIRE);
    WINDOW("copied"); /* a writer may begin, or end, meanwhile */
    return __atomic_load_n(&overflow.seq, __ATOMIC_RELAXED) == s;
}

static uint64_t cell_seq(const struct cell *c)
{
    return __atomic_load_n(&c->seq_less_index, __ATOMIC_ACQUIRE) + (uint64_t)(c - cells);
}

static void cell_publish(struct cell *c, uint64_t seq)
{
    __atomic_store_n(&c->seq_less_index, seq - (uint64_t)(c - cells), __ATOMIC_RELEASE);
}

static bool enqueue(const struct roundtrim_boundary_snap *snap)
{
    uint64_t pos = __atomic_load_n(&tail, __ATOMIC_RELAXED);
    struct cell *c;
    for (;;) {
        c = &cells[pos & (QUEUE_CELLS - 1)];
        int64_t dif = (int64_t)(cell_seq(c) - pos);
        if (dif == 0) {
            if (__atomic_compare_exchange_n(&tail, &pos, pos + 1, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        } else if (dif < 0) {
            return false; /* full */
        } else {
            pos = __atomic_load_n(&tail, __ATOMIC_RELAXED);
        }
    }
    WINDOW("claimed"); /* claimed, not yet published */
    c->snap = *snap;
    cell_publish(c, pos + 1);
    return true;
}

void roundtrim_boundary_queue_put(struct roundtrim_boundary_snap *snap)
{
    snap->dropped_before = __atomic_load_n(&dropped, __ATOMIC_ACQUIRE);
    if (!enqueue(snap))
        overflow_keep(snap, __atomic_add_fetch(&dropped, 1, __ATOMIC_ACQ_REL));
}

/* The kept boundary, when it comes before the next queued one (or the queue is empty). The
 * order is decided on the copy read: a writer may have replaced the boundary since drop_no was
 * first looked at, with one later than the next queued boundary. */
static bool take_kept(bool queued, const struct cell *c, uint64_t pos,
                      struct roundtrim_boundary_snap *out, uint64_t *merged)
{
    uint64_t no;
    if (__atomic_load_n(&overflow.drop_no, __ATOMIC_ACQUIRE) <= dropped_taken)
        return false;
    WINDOW("kept_seen"); /* a later drop may replace the kept boundary meanwhile */
    if (!overflow_read(out, &no) || no <= dropped_taken)
        return false;
    if (queued ? c->snap.dropped_before < no : __atomic_load_n(&tail, __ATOMIC_ACQUIRE) != pos)
        return false; /* later than the next queued boundary, or one is still being queued */
    *merged = no - dropped_taken - 1;
    __atomic_store_n(&dropped_taken, no, __ATOMIC_RELEASE);
    return true;
}

bool roundtrim_boundary_take(struct roundtrim_boundary_snap *out, uint64_t *merged)
{
    uint64_t pos = __atomic_load_n(&head, __ATOMIC_RELAXED);
    struct cell *c = &cells[pos & (QUEUE_CELLS - 1)];
    bool queued = cell_seq(c) == pos + 1; /* else empty, or the producer has not published it */
    if (take_kept(queued, c, pos, out, merged))
        return true;
    if (!queued)
        return false;
    *out = c->snap;
    cell_publish(c, pos + QUEUE_CELLS);
    __atomic_store_n(&head, pos + 1, __ATOMIC_RELEASE);
    *merged = 0;
    if (out->dropped_before > dropped_taken) {
        *merged = out->dropped_before - dropped_taken;
        __atomic_store_n(&dropped_taken, out->dropped_before, __ATOMIC_RELEASE);
    }
    return true;
}

bool roundtrim_boundary_pending(void)
{
    return __atomic_load_n(&tail, __ATOMIC_ACQUIRE) != __atomic_load_n(&head, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&overflow.drop_no, __ATOMIC_ACQUIRE) >
               __atomic_load_n(&dropped_taken, __ATOMIC_ACQUIRE);
}

void roundtrim_boundary_queue_fork_child(void)
{
    memset(cells, 0, sizeof cells);
    memset(&overflow, 0, sizeof overflow);
    tail = head = dropped = dropped_taken = 0;
}
