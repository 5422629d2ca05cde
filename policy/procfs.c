#include "policy/procfs.h"

#include <stdio.h>
#include <string.h>

#include "policy/parse.h"

/* A whole number at s, then optional blanks; *end is left after it. */
static bool leading_number(const char *s, uint64_t *v, const char **end)
{
    uint64_t n = 0;
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - d) / 10)
            return false;
        n = n * 10 + d;
    }
    *v = n;
    *end = p;
    return true;
}

bool roundtrim_parse_kb_field(const char *text, const char *name, uint64_t *bytes)
{
    size_t n = strlen(name);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            uint64_t kb;
            const char *end;
            if (!leading_number(line + n + 1, &kb, &end) || kb > UINT64_MAX / 1024)
                return false;
            *bytes = kb * 1024;
            return true;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return false;
}

bool roundtrim_parse_stat_field(const char *text, const char *name, uint64_t *value)
{
    size_t n = strlen(name);
    for (const char *line = text; line && *line;) {
        const char *end;
        if (strncmp(line, name, n) == 0 && line[n] == ' ')
            return leading_number(line + n + 1, value, &end);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return false;
}

bool roundtrim_parse_statm_resident(const char *text, uint64_t page_size, uint64_t *bytes)
{
    uint64_t size, resident;
    const char *end;
    if (!leading_number(text, &size, &end) || !leading_number(end, &resident, &end))
        return false;
    *bytes = resident * page_size;
    return true;
}

bool roundtrim_parse_cgroup_limit(const char *text, uint64_t *limit)
{
    const char *p = text;
    while (*p == ' ')
        p++;
    if (strncmp(p, "max", 3) == 0) {
        *limit = 0;
        return true;
    }
    uint64_t v;
    const char *end;
    if (!leading_number(p, &v, &end))
        return false;
    /* v1 reports "no limit" as the largest page-aligned signed 64-bit value */
    *limit = v >= ((uint64_t)1 << 62) ? 0 : v;
    return true;
}

bool roundtrim_parse_cgroup_usage(const char *text, uint64_t *usage)
{
    const char *end;
    return leading_number(text, usage, &end);
}

/* Copies the path part (after the second ':') of one /proc/self/cgroup line. */
static bool line_path(const char *line, const char *line_end, char *out, size_t cap)
{
    const char *c1 = memchr(line, ':', (size_t)(line_end - line));
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line_end - c1 - 1)) : NULL;
    if (!c2)
        return false;
    size_t len = (size_t)(line_end - c2 - 1);
    if (len + 1 > cap)
        return false;
    memcpy(out, c2 + 1, len);
    out[len] = '\0';
    return true;
}

static bool controllers_include_memory(const char *c1, const char *c2)
{
    for (const char *p = c1 + 1; p < c2;) {
        const char *comma = memchr(p, ',', (size_t)(c2 - p));
        const char *end = comma ? comma : c2;
        if ((size_t)(end - p) == 6 && strncmp(p, "memory", 6) == 0)
            return true;
        p = end + 1;
    }
    return false;
}

bool roundtrim_cgroup_dir_from_proc(const char *text, char *dir, size_t cap)
{
    char path[1024];
    bool found_v2 = false;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(end - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (c1 && c2 && controllers_include_memory(c1, c2) &&
            line_path(line, end, path, sizeof path))
            return snprintf(dir, cap, "/sys/fs/cgroup/memory%s", path) < (int)cap;
        if (c1 && c2 && c2 == c1 + 1 && strncmp(line, "0:", 2) == 0 &&
            line_path(line, end, path, sizeof path))
            found_v2 = snprintf(dir, cap, "/sys/fs/cgroup%s", path) < (int)cap;
        if (!nl)
            break;
        line = nl + 1;
    }
    return found_v2;
}

bool roundtrim_expand_path(const char *tmpl, int pid, const char *host, char *out, size_t cap)
{
    size_t len = 0;
    for (const char *p = tmpl; *p; p++) {
        char num[24];
        const char *piece = num;
        size_t n;
        if (p[0] == '%' && p[1] == 'p') {
            n = (size_t)snprintf(num, sizeof num, "%d", pid);
            p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            piece = host;
            n = strlen(host);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            num[0] = '%';
            n = 1;
            p++;
        } else {
            piece = p;
            n = 1;
        }
        if (len + n + 1 > cap)
            return false;
        memcpy(out + len, piece, n);
        len += n;
    }
    if (cap == 0)
        return false;
    out[len] = '\0';
    return true;
}

void roundtrim_safe_host_name(const char *name, char *out, size_t cap)
{
    if (cap == 0)
        return;
    size_t n = 0;
    for (; name[n] && n + 1 < cap; n++) {
        char c = name[n];
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '_' || (c == '.' && n > 0);
        out[n] = plain ? c : '_';
    }
    if (n == 0 && cap > 1)
        out[n++] = '_';
    out[n] = '\0';
}

void roundtrim_parse_status_mem(const char *text, struct roundtrim_status_mem *out)
{
    *out = (struct roundtrim_status_mem){0};
    out->have_rss = roundtrim_parse_kb_field(text, "VmRSS", &out->rss);
    out->have_parts = roundtrim_parse_kb_field(text, "RssAnon", &out->anon) &&
                      roundtrim_parse_kb_field(text, "RssFile", &out->file) &&
                      roundtrim_parse_kb_field(text, "RssShmem", &out->shmem);
}

static const char *parse_hex(const char *s, uintptr_t *v)
{
    uintptr_t x = 0;
    const char *start = s;
    for (;; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (*s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else
            break;
        if (x >> (sizeof x * 8 - 4))
            return NULL;
        x = x << 4 | d;
    }
    *v = x;
    return s > start ? s : NULL;
}

static const char *skip_field(const char *s)
{
    while (*s == ' ')
        s++;
    while (*s && *s != ' ' && *s != '\n')
        s++;
    return s;
}

/* "start-end perms offset dev inode [path]" */
bool roundtrim_parse_map_line(const char *line, struct roundtrim_map_line *out)
{
    *out = (struct roundtrim_map_line){0};
    const char *s = parse_hex(line, &out->start);
    if (!s || *s != '-' || !(s = parse_hex(s + 1, &out->end)) || *s != ' ' || out->end < out->start)
        return false;
    s++;
    for (int i = 0; i < 5; i++)
        if (s[i] == '\0' || s[i] == '\n')
            return false;
    out->readable = s[0] == 'r';
    out->writable = s[1] == 'w';
    out->exec = s[2] == 'x';
    out->shared = s[3] == 's';
    if (s[4] != ' ')
        return false;
    s = skip_field(s + 4); /* offset */
    while (*s == ' ')
        s++;
    uintptr_t major = 0, minor = 0;
    s = parse_hex(s, &major); /* dev: major:minor */
    if (!s || *s != ':' || !(s = parse_hex(s + 1, &minor)))
        return false;
    out->dev = (uint64_t)major << 32 | minor;
    while (*s == ' ')
        s++;
    bool inode_zero = *s == '0' && (s[1] == ' ' || s[1] == '\n' || s[1] == '\0');
    for (; *s >= '0' && *s <= '9'; s++)
        out->inode = out->inode * 10 + (uint64_t)(*s - '0');
    while (*s && *s != ' ' && *s != '\n')
        s++; /* the inode's rest, if any */
    while (*s == ' ')
        s++;
    size_t name_len = strcspn(s, "\n");
    out->brk_heap = name_len == 6 && strncmp(s, "[heap]", 6) == 0;
    out->anonymous = inode_zero && (name_len == 0 || s[0] == '[');
    out->unnamed = inode_zero && name_len == 0;
    return true;
}

uint64_t roundtrim_glibc_mmapped_chunk(uint64_t prev_size, uint64_t size, uint64_t room,
                                       uint64_t page)
{
    enum { IS_MMAPPED = 2, NON_MAIN_ARENA = 4, FLAGS = 7 };
    uint64_t len = size & ~(uint64_t)FLAGS;
    if (prev_size != 0 || !(size & IS_MMAPPED) || (size & NON_MAIN_ARENA) || page == 0 ||
        len < page || len % page != 0 || len > room)
        return 0;
    return len;
}

bool roundtrim_glibc_arena_heap(const struct roundtrim_map_line *m,
                                const struct roundtrim_map_line *next)
{
    uintptr_t len = m->end - m->start;
    if (!m->anonymous || m->brk_heap || !m->readable || !m->writable || m->shared || m->exec ||
        m->start % ROUNDTRIM_GLIBC_HEAP_MAX != 0 || len == 0 || len > ROUNDTRIM_GLIBC_HEAP_MAX)
        return false;
    if (len == ROUNDTRIM_GLIBC_HEAP_MAX)
        return true;
    /* The rest of the reservation stays PROT_NONE until the heap grows into it. */
    return next && next->start == m->end && next->anonymous && !next->readable && !next->writable &&
           next->end <= m->start + ROUNDTRIM_GLIBC_HEAP_MAX;
}
