/* Allocation sites: one entry per distinct stack (native return addresses and Python frames) that
 * a sample was taken at, with the estimated bytes allocated and freed there.
 *
 * Entries are filled by the allocating thread on a sample's slow path and read by the worker; a
 * fixed table in memory of its own (mmap). Lookups take no lock; a new entry is claimed under a
 * lock that is only tried, never waited for long (a sample that cannot have it has no site), so
 * that two threads never give one stack two entries. The worker gives back the entries that hold
 * no live sample (a large program's imports leave thousands), for later stacks to take: a thread
 * holds its entry pinned from the lookup until the sample is counted there, and the worker
 * gives back only entries without pins whose every sampled byte was freed. Frames are kept raw
 * (addresses, code objects): the worker turns them into names. */
#ifndef ROUNDTRIM_RUNTIME_SITES_SITE_TABLE_H
#define ROUNDTRIM_RUNTIME_SITES_SITE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROUNDTRIM_SITE_NATIVE_MAX 24
#define ROUNDTRIM_SITE_PYTHON_MAX 8
#define ROUNDTRIM_SITES_MAX       4096u /* 1 << ROUNDTRIM_SITE_INDEX_BITS */
/* The last entries are kept for sites of one Python line each (its innermost frame, or the
 * innermost native frames where there is no Python frame): once the stacks of a large program's
 * start (PyTorch's imports) have taken the others, a stack seen later is counted at its line
 * instead of dropped, so that a leak starting later still has a site. */
#define ROUNDTRIM_SITES_LINE 512u
#define ROUNDTRIM_SITES_MAIN (ROUNDTRIM_SITES_MAX - ROUNDTRIM_SITES_LINE)

struct roundtrim_site_py {
    const void *code; /* a code object; its names are in the code name table */
    int32_t line;
    uint32_t names_key; /* roundtrim_py_frame's: which code object held that address */
};

enum roundtrim_site_kind {
    RT_SITE_STACK, /* one stack */
    RT_SITE_LINE,  /* one of ROUNDTRIM_SITES_LINE: a line's, the stack its first sample's */
    RT_SITE_START, /* the program's start: every sample of its first round, no stack */
};

struct roundtrim_site {
    uint64_t id; /* hash of the frames; 0: never taken; 1: given back */
    uint32_t ready;
    uint32_t pins; /* threads between finding this entry and counting their sample there */
    uint32_t gen;  /* how often the entry was given back */
    uint8_t depth, py_depth;
    uint8_t kind; /* enum roundtrim_site_kind */
    uintptr_t frames[ROUNDTRIM_SITE_NATIVE_MAX];
    struct roundtrim_site_py py[ROUNDTRIM_SITE_PYTHON_MAX];
    uint64_t alloc_bytes, free_bytes, samples; /* estimates; atomic adds */
};

bool roundtrim_site_table_init(void);

/* The index of the site with these frames, created if new; when the table's stack sites are
 * all taken, that of their innermost Python line (likewise created); -1 when that is full too,
 * or when another thread holds the claim lock for long. The site is pinned: it is not given back
 * until roundtrim_site_unpin. */
int32_t roundtrim_site_intern(const uintptr_t *frames, int depth,
                              const struct roundtrim_site_py *py, int py_depth);

/* Ends the pin of roundtrim_site_intern, once the sample is counted at the site (or dropped). */
void roundtrim_site_unpin(int32_t site);

/* Worker only: gives back site i when no thread holds it pinned and every byte sampled there was
 * freed; false when it was kept. The program's start is never given back. */
bool roundtrim_site_give_back(uint32_t i);

/* What a sample keeps of its site: the index and the entry's generation (how often it was given
 * back), so that a freed sample kept for a record is not counted at the entry's next site. */
#define ROUNDTRIM_SITE_INDEX_BITS 12 /* ROUNDTRIM_SITES_MAX entries */
uint32_t roundtrim_site_ref(int32_t site);

/* The index of a sample's site, or -1 when that site was given back since. */
int32_t roundtrim_site_of_ref(uint32_t ref);

/* How many line sites are taken (of ROUNDTRIM_SITES_LINE). */
uint32_t roundtrim_site_lines_taken(void);

/* Fork child: pins and the claim lock of threads the child lacks are gone. */
void roundtrim_site_table_fork_child(void);

/* The site of the program's start (its first round), created at the first call; -1 when the
 * table is full. */
int32_t roundtrim_site_start(void);

/* How many stack sites are taken (of ROUNDTRIM_SITES_MAIN). */
uint32_t roundtrim_site_stacks_taken(void);

/* The entry at index i, or NULL when it is free or not fully written yet. */
const struct roundtrim_site *roundtrim_site_at(uint32_t i);

void roundtrim_site_add_alloc(int32_t site, uint64_t weight);
/* A sample's bytes freed, by its site's ref; ignored when that site was given back. */
void roundtrim_site_add_free(uint32_t ref, uint64_t weight);

/* Names of a code object, copied by the sampling thread while the code object was on its stack,
 * GIL held or not (the object may be gone when the worker writes the record). */
struct roundtrim_code_names {
    uint64_t key; /* of the code object's address and names key; 0: free entry */
    uint32_t ready;
    char file[192];
    char function[96];
};

/* Remembers the names of a code object the first time it is seen (sampling thread, the code
 * object on its stack). */
void roundtrim_code_names_note(const void *code, uint32_t names_key);

/* The names of a code object noted before, or NULL. */
const struct roundtrim_code_names *roundtrim_code_names_find(const void *code, uint32_t names_key);

#endif
