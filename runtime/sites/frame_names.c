#include "runtime/sites/frame_names.h"
#include "runtime/core/hash.h"
#include "runtime/core/pages.h"

#include "policy/record_put.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CACHE_SLOTS    16384u /* power of two */
#define ARENA_BYTES    (4u << 20)
#define FRAME_TEXT_MAX 1200

struct cached {
    uintptr_t ip; /* 0: empty */
    uint32_t off, len;
};

static struct cached *cache;
static char *arena;
static size_t arena_used;
static unsigned long long loads_seen = ~0ull;

static int object_changes(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *out = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *out = info->dlpi_adds * 1000003ull + info->dlpi_subs;
    return 1;
}

static void clear(void)
{
    if (cache)
        memset(cache, 0, sizeof *cache * CACHE_SLOTS);
    arena_used = 0;
}

void roundtrim_frame_names_refresh(void)
{
    if (!cache) {
        void *c = roundtrim_pages_map(sizeof *cache * CACHE_SLOTS + ARENA_BYTES);
        if (!c)
            return;
        cache = c;
        arena = (char *)c + sizeof *cache * CACHE_SLOTS;
    }
    unsigned long long now = 0;
    dl_iterate_phdr(object_changes, &now);
    if (now != loads_seen)
        clear();
    loads_seen = now;
}

static const char *main_program(void)
{
    static char path[4096];
    if (!path[0]) {
        ssize_t n = readlink("/proc/thread-self/exe", path, sizeof path - 1);
        if (n < 0) /* Linux before 3.17; after the main thread ended, self is its zombie */
            n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
    }
    return path;
}

/* A frame's texts: its object, offset and symbol (runtime/sites/native_frame_fields.def). */
struct frame_texts {
    const char *module, *offset, *symbol;
    char offset_text[64], symbol_text[512];
};

static void name_frame(uintptr_t ip, struct frame_texts *fr)
{
    Dl_info info;
    /* A return address: one less falls inside the call, where a line-table lookup wants it. */
    uintptr_t at = ip - 1;
    fr->module = fr->symbol = NULL;
    fr->offset = fr->offset_text;
    if (!dladdr((void *)at, &info) || !info.dli_fbase) {
        snprintf(fr->offset_text, sizeof fr->offset_text, "0x%lx", (unsigned long)at);
        return;
    }
    fr->module = info.dli_fname && info.dli_fname[0] ? info.dli_fname : main_program();
    snprintf(fr->offset_text, sizeof fr->offset_text, "0x%lx",
             (unsigned long)(at - (uintptr_t)info.dli_fbase));
    if (info.dli_sname && info.dli_saddr) {
        snprintf(fr->symbol_text, sizeof fr->symbol_text, "%s+0x%lx", info.dli_sname,
                 (unsigned long)(at - (uintptr_t)info.dli_saddr));
        fr->symbol = fr->symbol_text;
    }
}

/* The frame's object, formatted afresh. */
static size_t format_frame(uintptr_t ip, char *buf, size_t cap)
{
    struct frame_texts texts, *fr = &texts;
    name_frame(ip, fr);
    struct roundtrim_json j, *rt_out = &j;
    roundtrim_json_begin(&j, buf, cap);
#define RT_NATIVE_FRAME_FIELD RT_PUT_ROW
#include "runtime/sites/native_frame_fields.def"
    size_t n = roundtrim_json_end(&j); /* "}\n": the newline is not part of the value */
    return n > 0 ? n - 1 : 0;
}

void roundtrim_frame_json(struct roundtrim_json *j, uintptr_t ip)
{
    char buf[FRAME_TEXT_MAX];
    if (!cache) {
        size_t n = format_frame(ip, buf, sizeof buf);
        roundtrim_json_raw(j, buf, n);
        return;
    }
    uint32_t i = roundtrim_hash_slot(ip, 14) & (CACHE_SLOTS - 1);
    for (uint32_t n = 0; n < 32; n++, i = (i + 1) & (CACHE_SLOTS - 1)) {
        if (cache[i].ip == ip) {
            roundtrim_json_raw(j, arena + cache[i].off, cache[i].len);
            return;
        }
        if (cache[i].ip == 0)
            break;
    }
    size_t len = format_frame(ip, buf, sizeof buf);
    roundtrim_json_raw(j, buf, len);
    if (len == 0)
        return;
    if (arena_used + len > ARENA_BYTES)
        clear(); /* full: start over */
    i = roundtrim_hash_slot(ip, 14) & (CACHE_SLOTS - 1);
    for (uint32_t n = 0; n < 32; n++, i = (i + 1) & (CACHE_SLOTS - 1)) {
        if (cache[i].ip == 0) {
            memcpy(arena + arena_used, buf, len);
            cache[i] = (struct cached){ip, (uint32_t)arena_used, (uint32_t)len};
            arena_used += len;
            return;
        }
    }
}
