/* A tool that puts its own allocator in the interpreter's object domain, calling the allocator it
 * saved earlier: saved before roundtrim wrapped the domain, put in place after, so that its calls
 * go past roundtrim's wrapper. Loaded by tests/python/sites_objects_replaced.py with
 * ctypes.PyDLL (the GIL held in each call). */
#include <dlfcn.h>
#include <stddef.h>

struct allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
};
#define DOMAIN_OBJ 2

static struct allocator saved;
static unsigned long calls;

static void *tool_malloc(void *ctx, size_t n)
{
    (void)ctx;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return saved.malloc(saved.ctx, n);
}

static void *tool_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return saved.calloc(saved.ctx, nelem, elsize);
}

static void *tool_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return saved.realloc(saved.ctx, p, n);
}

static void tool_free(void *ctx, void *p)
{
    (void)ctx;
    saved.free(saved.ctx, p);
}

typedef void (*allocator_fn)(int domain, struct allocator *a);

static allocator_fn python(const char *name)
{
    return (allocator_fn)dlsym(RTLD_DEFAULT, name);
}

/* Saves the allocator in place now. */
int tool_save(void)
{
    allocator_fn get = python("PyMem_GetAllocator");
    if (!get)
        return -1;
    get(DOMAIN_OBJ, &saved);
    return 0;
}

/* Puts the tool's allocator in place, over whatever is there. */
int tool_install(void)
{
    allocator_fn set = python("PyMem_SetAllocator");
    if (!set || !saved.malloc)
        return -1;
    struct allocator mine = {NULL, tool_malloc, tool_calloc, tool_realloc, tool_free};
    set(DOMAIN_OBJ, &mine);
    return 0;
}

unsigned long tool_calls(void)
{
    return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}
