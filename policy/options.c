#include "policy/options.h"

#include <inttypes.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "policy/parse.h"

#define DAY_S (24u * 3600u)

/* The rows are in the order of enum roundtrim_option_id (checked by the unit tests). */
const struct roundtrim_option roundtrim_options[RT_OPT_COUNT] = {
    {RT_OPT_DISABLE, "ROUNDTRIM_DISABLE", NULL, RT_TYPE_BOOL, 0, 0, "false", NULL, NULL,
     "true turns the library into pure forwarding: no counting, no thread, no output"},
    {RT_OPT_ROLE, "ROUNDTRIM_ROLE", NULL, RT_TYPE_ROLE, 0, 0, "client", NULL, NULL,
     "client or server: picks the defaults of ROUNDTRIM_GC_ROUNDS, ROUNDTRIM_ARENA_MAX and "
     "ROUNDTRIM_MMAP_THRESHOLD (the client's first); a server cleans less often, caps its "
     "arenas and maps large buffers"},
    {RT_OPT_GC_ROUNDS, "ROUNDTRIM_GC_ROUNDS", "NVFLARE_CLIENT_MEMORY_GC_ROUNDS", RT_TYPE_UINT, 0,
     1000000, "1", "5", NULL,
     "look at cleanup every N rounds: with ROUNDTRIM_ADAPTIVE each action that gives memory back "
     "runs then (budget and pause limit allowing), else every action runs; 0 never at "
     "round ends (counting and logging go on; pressure cleanups have their own switch); the "
     "NVFlare variable is read for the client role only"},
    {RT_OPT_ADAPTIVE, "ROUNDTRIM_ADAPTIVE", NULL, RT_TYPE_BOOL, 0, 0, "true", NULL, NULL,
     "true: on cleanup rounds each action runs only when it gives memory back (gc when "
     "collections find garbage, trim or purge when enough freed heap is resident, the CUDA "
     "release when the cache is large), within ROUNDTRIM_CLEANUP_BUDGET and "
     "ROUNDTRIM_TRIM_PAUSE_MS, and every skip says why in the record; false: every action on "
     "every cleanup round (the fixed period)"},
    {RT_OPT_TRIM_MIN_MIB, "ROUNDTRIM_TRIM_MIN_MIB", NULL, RT_TYPE_UINT, 0, 1u << 20, "1", NULL,
     NULL,
     "MiB; a trim or purge runs when at least this much freed heap is resident (and "
     "ROUNDTRIM_TRIM_MIN_PERCENT of RSS); below it the record says little_to_gain"},
    {RT_OPT_TRIM_MIN_PERCENT, "ROUNDTRIM_TRIM_MIN_PERCENT", NULL, RT_TYPE_UINT, 0, 100, "1", NULL,
     NULL, "percent of RSS; the other half of the trim's threshold"},
    {RT_OPT_TRIM_PAUSE_MS, "ROUNDTRIM_TRIM_PAUSE_MS", NULL, RT_TYPE_UINT, 0, 600000, "100", NULL,
     NULL,
     "milliseconds; the longest a glibc trim may hold an arena's lock (a thread that allocates "
     "from it waits): a trim predicted to take longer is done in holds each under it (where "
     "glibc's arena layout is known; else held back, pause_limit, and tried again after 4 to 64 "
     "cleanup rounds); 0 no limit"},
    {RT_OPT_CLEANUP_BUDGET, "ROUNDTRIM_CLEANUP_BUDGET", NULL, RT_TYPE_UINT, 0, 100, "20", NULL,
     NULL,
     "percent; the most CPU time cleanups may take of the rounds' time, on average: past it "
     "only actions whose usual cost fits in what the last rounds earned run, the others wait "
     "(budget) until the rounds have earned it back; 0 no cap"},
    {RT_OPT_CUDA_CACHE_MIN_MIB, "ROUNDTRIM_CUDA_CACHE_MIN_MIB", NULL, RT_TYPE_UINT, 0, 1u << 24,
     "32", NULL, NULL,
     "MiB; the CUDA release runs when PyTorch's cache and the driver's pools keep at least this "
     "much device memory unused"},
    {RT_OPT_ROUND_SIGNAL, "ROUNDTRIM_ROUND_SIGNAL", NULL, RT_TYPE_SIGNAL, 0, 0, "SIGUSR1", NULL,
     NULL,
     "signal that marks the end of a round: a name (USR2, HUP, RTMIN+1, RTMAX-2) or a number; "
     "none disables; an application handler for it keeps working"},
    {RT_OPT_EAGER_WORKER, "ROUNDTRIM_EAGER_WORKER", NULL, RT_TYPE_BOOL, 0, 0, "false", NULL, NULL,
     "true starts the worker thread with the process instead of at the first round, so that the "
     "first round signal is handled at once even in a program idle between rounds"},
    {RT_OPT_LOG, "ROUNDTRIM_LOG", NULL, RT_TYPE_STRING, 0, 0, NULL, NULL, "unset: no log",
     "round log, one JSON object per line: a file path (%p becomes the pid) or stderr"},
    {RT_OPT_ARENA_MAX, "ROUNDTRIM_ARENA_MAX", NULL, RT_TYPE_UINT, 0, 1024, "0", "4", NULL,
     "cap on glibc malloc arenas, set at start; 0 leaves glibc's own (8 per core): a cap at or "
     "below the number of threads that allocate makes each trim hold more and, with cleanup "
     "off, ends rounds higher; a server with many threads keeps a peak lower with 4 (one with "
     "about 4 allocating threads should set 0); MALLOC_ARENA_MAX or GLIBC_TUNABLES "
     "glibc.malloc.arena_max always win"},
    {RT_OPT_MMAP_THRESHOLD, "ROUNDTRIM_MMAP_THRESHOLD", NULL, RT_TYPE_UINT, 0, (uint64_t)32 << 20,
     "0", "1048576", "glibc's dynamic threshold",
     "bytes; pins glibc's mmap threshold so that buffers of this size and more go back to the OS "
     "when freed (the server's 1 MiB: the model-sized buffers of aggregation, between its "
     "cleanups); 0 leaves glibc's dynamic threshold; MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES "
     "glibc.malloc.mmap_threshold win"},
    {RT_OPT_CUDA_EMPTY_CACHE, "ROUNDTRIM_CUDA_EMPTY_CACHE", "NVFLARE_CUDA_EMPTY_CACHE",
     RT_TYPE_BOOL, 0, 0, "false", NULL, NULL,
     "on cleanup rounds also trim the CUDA memory pools and release the PyTorch CUDA cache"},
    {RT_OPT_PY_GC, "ROUNDTRIM_PY_GC", NULL, RT_TYPE_BOOL, 0, 0, "true", NULL, NULL,
     "in a Python process, run a full gc.collect() first on cleanup rounds"},
    {RT_OPT_PY_HOOK, "ROUNDTRIM_PY_HOOK", NULL, RT_TYPE_STRING, 0, 0, "auto", NULL, NULL,
     "Python round hooks: auto hooks the round functions of the FL framework the process imports "
     "(NVFlare, Flower, APPFL); module:qualname[,...] hooks only those (every return ends a "
     "round); auto,module:qualname adds them to the framework's; none turns hooks off"},
    {RT_OPT_PY_JOB_WAIT_MS, "ROUNDTRIM_PY_JOB_WAIT_MS", NULL, RT_TYPE_UINT, 1, 3600000, "60000",
     NULL, NULL,
     "milliseconds; the longest a cleanup waits for a Python job (gc, the PyTorch cache) once "
     "it runs; past it the round's record says the job was skipped"},
    {RT_OPT_INTERVAL_S, "ROUNDTRIM_INTERVAL_S", NULL, RT_TYPE_UINT, 0, 7u * DAY_S, "0", NULL, "off",
     "seconds; a round ends every N seconds, for programs with no boundary of their own"},
    {RT_OPT_PRESSURE_WARN, "ROUNDTRIM_PRESSURE_WARN", NULL, RT_TYPE_UINT, 0, 100, "85", NULL, NULL,
     "percent of the memory limit (cgroup, else MemTotal); above it a pressure record is logged "
     "once per crossing; 0 off"},
    {RT_OPT_PRESSURE_CLEAN, "ROUNDTRIM_PRESSURE_CLEAN", NULL, RT_TYPE_UINT, 0, 100, "90", NULL,
     NULL,
     "percent of the memory limit; above it a cleanup runs at once, without waiting for a round; "
     "0 off"},
    {RT_OPT_PRESSURE_GAP_S, "ROUNDTRIM_PRESSURE_GAP_S", NULL, RT_TYPE_UINT, 0, DAY_S, "10", NULL,
     NULL, "least seconds between two cleanups caused by memory pressure"},
    {RT_OPT_SAMPLE_MS, "ROUNDTRIM_SAMPLE_MS", NULL, RT_TYPE_UINT, 10, 3600000, "1000", NULL, NULL,
     "milliseconds between two memory samples of the worker thread (which starts with the first "
     "round, or at once when a pressure or interval variable is set)"},
    {RT_OPT_PROM_FILE, "ROUNDTRIM_PROM_FILE", NULL, RT_TYPE_STRING, 0, 0, NULL, NULL, "unset",
     "Prometheus text file rewritten atomically each round (%p becomes the pid), for "
     "node_exporter's textfile collector"},
    {RT_OPT_CGROUP_DIR, "ROUNDTRIM_CGROUP_DIR", NULL, RT_TYPE_STRING, 0, 0, NULL, NULL,
     "from /proc/self/cgroup",
     "directory holding the cgroup's memory files (memory.max and memory.current, or v1's "
     "memory.limit_in_bytes and memory.usage_in_bytes)"},
    {RT_OPT_PEAK_RESET, "ROUNDTRIM_PEAK_RESET", NULL, RT_TYPE_BOOL, 0, 0, "false", NULL, NULL,
     "true makes rss_peak exact per round by resetting the kernel's high-water mark at each "
     "boundary (/proc/self/clear_refs); this changes the process's own peak as getrusage "
     "ru_maxrss, VmHWM, time -v and job schedulers report it"},
    {RT_OPT_EXIT_BUDGET_MS, "ROUNDTRIM_EXIT_BUDGET_MS", NULL, RT_TYPE_UINT, 0, 60000, "1000", NULL,
     NULL,
     "milliseconds; the most a process's exit (exit, _exit) spends recording rounds still "
     "pending; rounds left over are counted in the exit record (rounds_unrecorded)"},
    {RT_OPT_SITES, "ROUNDTRIM_SITES", NULL, RT_TYPE_BOOL, 0, 0, "false", NULL, NULL,
     "true samples allocations by bytes and writes, after each round record, a sites record: "
     "the call sites (native and Python frames) whose live memory grew since the last record, "
     "that allocated in the round and still hold it, and that hold the most; roundtrim report "
     "--sites finds the ones that keep growing"},
    {RT_OPT_SITES_SAMPLE, "ROUNDTRIM_SITES_SAMPLE", NULL, RT_TYPE_UINT, 4096, (uint64_t)1 << 40,
     "524288", NULL, NULL,
     "bytes; the mean distance between two sampled allocations (exponentially distributed, "
     "per thread); smaller finds smaller sites sooner and costs more"},
    {RT_OPT_DIAG_ROUNDS, "ROUNDTRIM_DIAG_ROUNDS", NULL, RT_TYPE_UINT, 3, 64, "10", NULL, NULL,
     "rounds; every this many rounds (and at exit) the process writes a diagnosis record saying "
     "why its memory grows over the last this many rounds: leak, fragmentation, garbage, "
     "cuda_cache, outside_heap or none, with the advice that fixes it"},
};

const char *roundtrim_role_name(enum roundtrim_role role)
{
    return role == RT_ROLE_SERVER ? "server" : "client";
}

#define WARNING_VALUE_SHOWN 64

static void add_warning(struct roundtrim_config *cfg, const char *fmt, const char *var,
                        const char *value, const char *used)
{
    if (cfg->warning_count >= ROUNDTRIM_MAX_WARNINGS)
        return;
    /* A long value is shown by its start, so that the line still says which value is used. */
    char shown[WARNING_VALUE_SHOWN + 4];
    size_t len = strnlen(value, WARNING_VALUE_SHOWN + 1);
    snprintf(shown, sizeof shown, len > WARNING_VALUE_SHOWN ? "%.*s..." : "%.*s",
             (int)WARNING_VALUE_SHOWN, value);
    snprintf(cfg->warnings[cfg->warning_count++], ROUNDTRIM_WARNING_LEN, fmt, var, shown, used);
}

static const char *type_expectation(const struct roundtrim_option *o, char *buf, size_t len)
{
    switch (o->type) {
    case RT_TYPE_BOOL:
        return "true or false";
    case RT_TYPE_ROLE:
        return "client or server";
    case RT_TYPE_SIGNAL:
        return "a signal name, a number or none";
    case RT_TYPE_UINT:
        snprintf(buf, len, "a whole number from %" PRIu64 " to %" PRIu64, o->min, o->max);
        return buf;
    case RT_TYPE_STRING:
        break;
    }
    return "text";
}

/* Finds the variable that sets option o: its own name first, then its alias (if allowed). */
static const char *lookup_option(const struct roundtrim_option *o, bool alias_allowed,
                                 roundtrim_env_lookup lookup, void *ctx, const char **from)
{
    const char *v = lookup(ctx, o->name);
    if (v && *v) {
        *from = o->name;
        return v;
    }
    if (o->alias && alias_allowed) {
        v = lookup(ctx, o->alias);
        if (v && *v) {
            *from = o->alias;
            return v;
        }
    }
    return NULL;
}

static void used_text(const struct roundtrim_option *o, enum roundtrim_role role, char *buf,
                      size_t len);

/* Parses text as option o's type into *out (a uint64, bool, int, role or string by type);
 * false, leaving *out, when it is not valid. */
static bool parse_value(const struct roundtrim_option *o, const char *text, void *out)
{
    switch (o->type) {
    case RT_TYPE_BOOL:
        return roundtrim_parse_bool(text, (bool *)out);
    case RT_TYPE_UINT:
        return roundtrim_parse_uint(text, o->min, o->max, (uint64_t *)out);
    case RT_TYPE_SIGNAL:
        return roundtrim_parse_signal(text, (int *)out);
    case RT_TYPE_ROLE:
        if (strcmp(text, "client") != 0 && strcmp(text, "server") != 0)
            return false;
        *(enum roundtrim_role *)out = strcmp(text, "server") == 0 ? RT_ROLE_SERVER : RT_ROLE_CLIENT;
        return true;
    case RT_TYPE_STRING:
        *(const char **)out = text;
        return true;
    }
    return false;
}

/* Parses one option into *out (a uint64, bool or int by type). Returns true when the variable was
 * set and valid; on a bad value warns once, naming the variable and the value kept. */
static bool parse_option(struct roundtrim_config *cfg, enum roundtrim_option_id id,
                         bool alias_allowed, roundtrim_env_lookup lookup, void *ctx, void *out)
{
    const struct roundtrim_option *o = &roundtrim_options[id];
    const char *from = NULL;
    const char *text = lookup_option(o, alias_allowed, lookup, ctx, &from);
    if (!text)
        return false;
    if (!parse_value(o, text, out)) {
        char expect[96], fmt[256], used[128];
        snprintf(fmt, sizeof fmt, "%%s=%%s is not valid (expected %s); using %%s",
                 type_expectation(o, expect, sizeof expect));
        used_text(o, cfg->role, used, sizeof used);
        add_warning(cfg, fmt, from, text, used);
        return false;
    }
    cfg->setting[id].source = RT_FROM_VARIABLE;
    cfg->setting[id].value_from = from;
    return true;
}

/* An explicit glibc setting of the same knob wins over ours; note which one. */
static bool glibc_overrides(struct roundtrim_config *cfg, enum roundtrim_option_id id,
                            const char *legacy_var, const char *tunable,
                            roundtrim_env_lookup lookup, void *ctx)
{
    const char *v = lookup(ctx, legacy_var);
    const char *from = NULL;
    if (v && *v)
        from = legacy_var;
    else if (roundtrim_tunables_set(lookup(ctx, "GLIBC_TUNABLES"), tunable))
        from = "GLIBC_TUNABLES";
    if (!from)
        return false;
    cfg->setting[id].source = RT_FROM_GLIBC;
    cfg->setting[id].value_from = from;
    return true;
}

/* Where option id's value lives in cfg; its type is the row's. */
static void *field_of(struct roundtrim_config *cfg, enum roundtrim_option_id id)
{
    switch (id) {
    case RT_OPT_DISABLE:
        return &cfg->disabled;
    case RT_OPT_ROLE:
        return &cfg->role;
    case RT_OPT_GC_ROUNDS:
        return &cfg->gc_rounds;
    case RT_OPT_ADAPTIVE:
        return &cfg->adaptive;
    case RT_OPT_TRIM_MIN_MIB:
        return &cfg->trim_min_mib;
    case RT_OPT_TRIM_MIN_PERCENT:
        return &cfg->trim_min_percent;
    case RT_OPT_TRIM_PAUSE_MS:
        return &cfg->trim_pause_ms;
    case RT_OPT_CLEANUP_BUDGET:
        return &cfg->cleanup_budget;
    case RT_OPT_CUDA_CACHE_MIN_MIB:
        return &cfg->cuda_cache_min_mib;
    case RT_OPT_ROUND_SIGNAL:
        return &cfg->round_signal;
    case RT_OPT_EAGER_WORKER:
        return &cfg->eager_worker;
    case RT_OPT_LOG:
        return &cfg->log_path;
    case RT_OPT_ARENA_MAX:
        return &cfg->arena_max;
    case RT_OPT_MMAP_THRESHOLD:
        return &cfg->mmap_threshold;
    case RT_OPT_CUDA_EMPTY_CACHE:
        return &cfg->cuda_empty_cache;
    case RT_OPT_PY_GC:
        return &cfg->py_gc;
    case RT_OPT_PY_HOOK:
        return &cfg->py_hook;
    case RT_OPT_PY_JOB_WAIT_MS:
        return &cfg->py_job_wait_ms;
    case RT_OPT_INTERVAL_S:
        return &cfg->interval_s;
    case RT_OPT_PRESSURE_WARN:
        return &cfg->pressure_warn;
    case RT_OPT_PRESSURE_CLEAN:
        return &cfg->pressure_clean;
    case RT_OPT_PRESSURE_GAP_S:
        return &cfg->pressure_gap_s;
    case RT_OPT_SAMPLE_MS:
        return &cfg->sample_ms;
    case RT_OPT_PROM_FILE:
        return &cfg->prom_file;
    case RT_OPT_CGROUP_DIR:
        return &cfg->cgroup_dir;
    case RT_OPT_PEAK_RESET:
        return &cfg->peak_reset;
    case RT_OPT_EXIT_BUDGET_MS:
        return &cfg->exit_budget_ms;
    case RT_OPT_SITES:
        return &cfg->sites;
    case RT_OPT_SITES_SAMPLE:
        return &cfg->sites_sample;
    case RT_OPT_DIAG_ROUNDS:
        return &cfg->diag_rounds;
    case RT_OPT_COUNT:
        break;
    }
    return NULL;
}

/* The row's default for the role, as text; NULL when the option is unset by default. */
static const char *default_for(const struct roundtrim_option *o, enum roundtrim_role role)
{
    return role == RT_ROLE_SERVER && o->server_default ? o->server_default : o->default_value;
}

void roundtrim_option_default_text(const struct roundtrim_option *o, char *buf, size_t len)
{
    if (o->server_default)
        snprintf(buf, len, "%s (client), %s (server)", o->default_value, o->server_default);
    else if (o->default_value && o->default_note)
        snprintf(buf, len, "%s (%s)", o->default_value, o->default_note);
    else if (o->default_value)
        snprintf(buf, len, "%s", o->default_value);
    else
        snprintf(buf, len, "(%s)", o->default_note ? o->default_note : "unset");
}

/* What a warning says is used instead of a bad value: the role's default names the role. */
static void used_text(const struct roundtrim_option *o, enum roundtrim_role role, char *buf,
                      size_t len)
{
    if (o->server_default)
        snprintf(buf, len, "%s (%s role default)", default_for(o, role), roundtrim_role_name(role));
    else
        roundtrim_option_default_text(o, buf, len);
}

/* Sets option id to its row's default for the role: the same parser as the variables, so the
 * table's text is the only place a default is written. */
/* A parsed value of a non-string option in 64 bits. */
static uint64_t value_bits(const struct roundtrim_option *o, const void *field)
{
    switch (o->type) {
    case RT_TYPE_BOOL:
        return *(const bool *)field;
    case RT_TYPE_UINT:
        return *(const uint64_t *)field;
    case RT_TYPE_SIGNAL:
        return (uint64_t) * (const int *)field;
    case RT_TYPE_ROLE:
        return (uint64_t) * (const enum roundtrim_role *)field;
    case RT_TYPE_STRING:
        break;
    }
    return 0;
}

bool roundtrim_option_default_bits(enum roundtrim_option_id id, enum roundtrim_role role,
                                   uint64_t *bits)
{
    const struct roundtrim_option *o = &roundtrim_options[id];
    const char *text = default_for(o, role);
    struct roundtrim_config scratch;
    void *field = field_of(&scratch, id);
    if (o->type == RT_TYPE_STRING || !text || !field || !parse_value(o, text, field))
        return false;
    *bits = value_bits(o, field);
    return true;
}

/* The library is built with the defaults already parsed (ROUNDTRIM_DEFAULT_BITS, generated from
 * this table by the same parser at build time, and checked against it by a unit suite): a start
 * reads them instead of parsing text. Elsewhere the text is parsed. */
#ifdef ROUNDTRIM_DEFAULTS_HEADER
#include ROUNDTRIM_DEFAULTS_HEADER
static const uint64_t default_bits[RT_OPT_COUNT][2] = ROUNDTRIM_DEFAULT_BITS;

static void store_bits(const struct roundtrim_option *o, void *field, uint64_t bits)
{
    switch (o->type) {
    case RT_TYPE_BOOL:
        *(bool *)field = bits != 0;
        break;
    case RT_TYPE_UINT:
        *(uint64_t *)field = bits;
        break;
    case RT_TYPE_SIGNAL:
        *(int *)field = (int)bits;
        break;
    case RT_TYPE_ROLE:
        *(enum roundtrim_role *)field = (enum roundtrim_role)bits;
        break;
    case RT_TYPE_STRING:
        break;
    }
}
#endif

/* Sets option id to its row's default for the role: the table's text is the only place a
 * default is written. */
static void set_default(struct roundtrim_config *cfg, enum roundtrim_option_id id)
{
    const struct roundtrim_option *o = &roundtrim_options[id];
    cfg->setting[id].source = o->server_default ? RT_FROM_ROLE : RT_FROM_DEFAULT;
    cfg->setting[id].value_from = NULL;
    const char *text = default_for(o, cfg->role);
    if (!text)
        return;
#ifdef ROUNDTRIM_DEFAULTS_HEADER
    if (o->type != RT_TYPE_STRING) {
        store_bits(o, field_of(cfg, id), default_bits[id][cfg->role == RT_ROLE_SERVER]);
        return;
    }
#endif
    parse_value(o, text, field_of(cfg, id));
}

/* Reads option id: its default first, then its variable (or alias, if allowed). */
static void load_option(struct roundtrim_config *cfg, enum roundtrim_option_id id,
                        bool alias_allowed, roundtrim_env_lookup lookup, void *ctx)
{
    set_default(cfg, id);
    parse_option(cfg, id, alias_allowed, lookup, ctx, field_of(cfg, id));
}

void roundtrim_config_load(struct roundtrim_config *cfg, roundtrim_env_lookup lookup, void *ctx)
{
    /* Each warning line is written whole when added: clearing all 7 KiB of them (glibc's memset
     * does it with rep stosb) took more instructions than the rest of the parse. */
    memset(cfg, 0, offsetof(struct roundtrim_config, warnings));
    /* The role first: other defaults depend on it. */
    load_option(cfg, RT_OPT_DISABLE, false, lookup, ctx);
    load_option(cfg, RT_OPT_ROLE, false, lookup, ctx);
    bool server = cfg->role == RT_ROLE_SERVER;
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        enum roundtrim_option_id id = (enum roundtrim_option_id)i;
        switch (id) {
        case RT_OPT_DISABLE:
        case RT_OPT_ROLE:
            break;
        case RT_OPT_GC_ROUNDS: /* NVFLARE_CLIENT_MEMORY_GC_ROUNDS describes client processes only */
            load_option(cfg, id, !server, lookup, ctx);
            break;
        case RT_OPT_ARENA_MAX:
            set_default(cfg, id);
            if (glibc_overrides(cfg, id, "MALLOC_ARENA_MAX", "glibc.malloc.arena_max", lookup, ctx))
                cfg->arena_max = 0;
            else
                load_option(cfg, id, false, lookup, ctx);
            break;
        case RT_OPT_MMAP_THRESHOLD:
            if (!glibc_overrides(cfg, id, "MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold",
                                 lookup, ctx))
                load_option(cfg, id, false, lookup, ctx);
            break;
        default:
            load_option(cfg, id, roundtrim_options[id].alias != NULL, lookup, ctx);
            break;
        }
    }
}

bool roundtrim_config_is_explicit(const struct roundtrim_config *cfg, enum roundtrim_option_id id)
{
    return cfg->setting[id].source == RT_FROM_VARIABLE;
}

bool roundtrim_config_wants_sampling(const struct roundtrim_config *cfg)
{
    return cfg->interval_s > 0 || roundtrim_config_is_explicit(cfg, RT_OPT_PRESSURE_WARN) ||
           roundtrim_config_is_explicit(cfg, RT_OPT_PRESSURE_CLEAN) ||
           roundtrim_config_is_explicit(cfg, RT_OPT_SAMPLE_MS);
}

bool roundtrim_config_starts_worker_early(const struct roundtrim_config *cfg)
{
    return cfg->eager_worker || roundtrim_config_wants_sampling(cfg);
}

const char *roundtrim_config_source_text(const struct roundtrim_config *cfg,
                                         enum roundtrim_option_id id)
{
    const struct roundtrim_setting *s = &cfg->setting[id];
    switch (s->source) {
    case RT_FROM_DEFAULT:
        return "default";
    case RT_FROM_ROLE:
        return "role";
    case RT_FROM_VARIABLE:
    case RT_FROM_GLIBC:
        return s->value_from ? s->value_from : "variable";
    }
    return "default";
}

static void text_or_unset(char *buf, size_t len, const char *s)
{
    snprintf(buf, len, "%s", s ? s : "");
}

void roundtrim_config_value_text(const struct roundtrim_config *cfg, enum roundtrim_option_id id,
                                 char *buf, size_t len)
{
    const char *name;
    switch (id) {
    case RT_OPT_DISABLE:
        snprintf(buf, len, "%s", cfg->disabled ? "true" : "false");
        return;
    case RT_OPT_ROLE:
        snprintf(buf, len, "%s", roundtrim_role_name(cfg->role));
        return;
    case RT_OPT_GC_ROUNDS:
        snprintf(buf, len, "%" PRIu64, cfg->gc_rounds);
        return;
    case RT_OPT_ADAPTIVE:
        snprintf(buf, len, "%s", cfg->adaptive ? "true" : "false");
        return;
    case RT_OPT_TRIM_MIN_MIB:
        snprintf(buf, len, "%" PRIu64, cfg->trim_min_mib);
        return;
    case RT_OPT_TRIM_MIN_PERCENT:
        snprintf(buf, len, "%" PRIu64, cfg->trim_min_percent);
        return;
    case RT_OPT_TRIM_PAUSE_MS:
        snprintf(buf, len, "%" PRIu64, cfg->trim_pause_ms);
        return;
    case RT_OPT_CLEANUP_BUDGET:
        snprintf(buf, len, "%" PRIu64, cfg->cleanup_budget);
        return;
    case RT_OPT_CUDA_CACHE_MIN_MIB:
        snprintf(buf, len, "%" PRIu64, cfg->cuda_cache_min_mib);
        return;
    case RT_OPT_ROUND_SIGNAL:
        name = roundtrim_signal_name(cfg->round_signal);
        if (cfg->round_signal == 0)
            snprintf(buf, len, "none");
        else if (name)
            snprintf(buf, len, "%s", name);
        else
            snprintf(buf, len, "%d", cfg->round_signal);
        return;
    case RT_OPT_EAGER_WORKER:
        snprintf(buf, len, "%s", cfg->eager_worker ? "true" : "false");
        return;
    case RT_OPT_LOG:
        text_or_unset(buf, len, cfg->log_path);
        return;
    case RT_OPT_ARENA_MAX:
        if (cfg->setting[id].source == RT_FROM_GLIBC)
            snprintf(buf, len, "glibc");
        else
            snprintf(buf, len, "%" PRIu64, cfg->arena_max);
        return;
    case RT_OPT_MMAP_THRESHOLD:
        if (cfg->setting[id].source == RT_FROM_GLIBC)
            snprintf(buf, len, "glibc");
        else
            snprintf(buf, len, "%" PRIu64, cfg->mmap_threshold);
        return;
    case RT_OPT_CUDA_EMPTY_CACHE:
        snprintf(buf, len, "%s", cfg->cuda_empty_cache ? "true" : "false");
        return;
    case RT_OPT_PY_GC:
        snprintf(buf, len, "%s", cfg->py_gc ? "true" : "false");
        return;
    case RT_OPT_PY_HOOK:
        text_or_unset(buf, len, cfg->py_hook ? cfg->py_hook : "auto");
        return;
    case RT_OPT_PY_JOB_WAIT_MS:
        snprintf(buf, len, "%" PRIu64, cfg->py_job_wait_ms);
        return;
    case RT_OPT_INTERVAL_S:
        snprintf(buf, len, "%" PRIu64, cfg->interval_s);
        return;
    case RT_OPT_PRESSURE_WARN:
        snprintf(buf, len, "%" PRIu64, cfg->pressure_warn);
        return;
    case RT_OPT_PRESSURE_CLEAN:
        snprintf(buf, len, "%" PRIu64, cfg->pressure_clean);
        return;
    case RT_OPT_PRESSURE_GAP_S:
        snprintf(buf, len, "%" PRIu64, cfg->pressure_gap_s);
        return;
    case RT_OPT_SAMPLE_MS:
        snprintf(buf, len, "%" PRIu64, cfg->sample_ms);
        return;
    case RT_OPT_PROM_FILE:
        text_or_unset(buf, len, cfg->prom_file);
        return;
    case RT_OPT_CGROUP_DIR:
        text_or_unset(buf, len, cfg->cgroup_dir);
        return;
    case RT_OPT_PEAK_RESET:
        snprintf(buf, len, "%s", cfg->peak_reset ? "true" : "false");
        return;
    case RT_OPT_EXIT_BUDGET_MS:
        snprintf(buf, len, "%" PRIu64, cfg->exit_budget_ms);
        return;
    case RT_OPT_SITES:
        snprintf(buf, len, "%s", cfg->sites ? "true" : "false");
        return;
    case RT_OPT_SITES_SAMPLE:
        snprintf(buf, len, "%" PRIu64, cfg->sites_sample);
        return;
    case RT_OPT_DIAG_ROUNDS:
        snprintf(buf, len, "%" PRIu64, cfg->diag_rounds);
        return;
    case RT_OPT_COUNT:
        break;
    }
    text_or_unset(buf, len, NULL);
}
