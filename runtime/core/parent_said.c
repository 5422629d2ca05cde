#include "runtime/core/parent_said.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/procfs.h"
#include "runtime/core/env_scan.h"
#include "runtime/core/kernel_calls.h"
#include "runtime/core/maps_lines.h"
#include "runtime/core/stderr_hold.h"

/* A mapped file, found by an address in it or by its device and inode. */
struct mapped_file {
    uintptr_t addr;
    uint64_t dev, inode;
    bool found;
};

static void file_at_addr(void *ctx, const char *line)
{
    struct mapped_file *f = ctx;
    struct roundtrim_map_line m;
    if (!f->found && roundtrim_parse_map_line(line, &m) && m.inode && m.start <= f->addr &&
        f->addr < m.end) {
        f->dev = m.dev;
        f->inode = m.inode;
        f->found = true;
    }
}

static void same_file(void *ctx, const char *line)
{
    struct mapped_file *f = ctx;
    struct roundtrim_map_line m;
    if (!f->found && roundtrim_parse_map_line(line, &m) && m.inode == f->inode && m.dev == f->dev)
        f->found = true;
}

/* The parent's settings variables against ours, one of its environment entries at a time. */
struct settings_match {
    const struct roundtrim_env_scan *ours;
    unsigned matched;
    bool differs;
};

static void match_entry(void *ctx, const char *entry)
{
    struct settings_match *s = ctx;
    if (s->differs || !roundtrim_env_entry_read(entry))
        return;
    for (unsigned i = 0; i < s->ours->kept_count; i++)
        if (strcmp(s->ours->kept[i], entry) == 0) {
            s->matched++;
            return;
        }
    s->differs = true;
}

static bool same_stderr(int ppid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/2", ppid);
    struct stat mine, theirs;
    return roundtrim_fstat(roundtrim_stderr_fd(), &mine) == 0 &&
           roundtrim_stat(path, &theirs) == 0 && mine.st_dev == theirs.st_dev &&
           mine.st_ino == theirs.st_ino;
}

static bool parent_maps_roundtrim(int ppid)
{
    struct mapped_file own = {.addr = (uintptr_t)&roundtrim_parent_said_it};
    if (!roundtrim_maps_lines(file_at_addr, &own) || !own.found)
        return false;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", ppid);
    struct mapped_file theirs = {.dev = own.dev, .inode = own.inode};
    return roundtrim_file_records(path, '\n', same_file, &theirs) && theirs.found;
}

static bool parent_started_with_our_settings(int ppid)
{
    const struct roundtrim_env_scan *env = roundtrim_env_scan();
    if (env->overflow)
        return false;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", ppid);
    struct settings_match s = {.ours = env};
    return roundtrim_file_records(path, '\0', match_entry, &s) && !s.differs &&
           s.matched == env->kept_count;
}

bool roundtrim_parent_said_it(void)
{
    int ppid = (int)getppid();
    return ppid > 1 && same_stderr(ppid) && parent_started_with_our_settings(ppid) &&
           parent_maps_roundtrim(ppid);
}
