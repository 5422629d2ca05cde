/* The option table: every environment variable roundtrim reads, its default and its meaning.
 * One table drives parsing, the "start" record, `roundtrim env` and the README's variable table. */
#ifndef ROUNDTRIM_POLICY_OPTIONS_H
#define ROUNDTRIM_POLICY_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum roundtrim_option_id {
    RT_OPT_DISABLE,
    RT_OPT_ROLE,
    RT_OPT_GC_ROUNDS,
    RT_OPT_ADAPTIVE,
    RT_OPT_TRIM_MIN_MIB,
    RT_OPT_TRIM_MIN_PERCENT,
    RT_OPT_TRIM_PAUSE_MS,
    RT_OPT_CLEANUP_BUDGET,
    RT_OPT_CUDA_CACHE_MIN_MIB,
    RT_OPT_ROUND_SIGNAL,
    RT_OPT_EAGER_WORKER,
    RT_OPT_LOG,
    RT_OPT_ARENA_MAX,
    RT_OPT_MMAP_THRESHOLD,
    RT_OPT_CUDA_EMPTY_CACHE,
    RT_OPT_PY_GC,
    RT_OPT_PY_HOOK,
    RT_OPT_PY_JOB_WAIT_MS,
    RT_OPT_INTERVAL_S,
    RT_OPT_PRESSURE_WARN,
    RT_OPT_PRESSURE_CLEAN,
    RT_OPT_PRESSURE_GAP_S,
    RT_OPT_SAMPLE_MS,
    RT_OPT_PROM_FILE,
    RT_OPT_CGROUP_DIR,
    RT_OPT_PEAK_RESET,
    RT_OPT_EXIT_BUDGET_MS,
    RT_OPT_SITES,
    RT_OPT_SITES_SAMPLE,
    RT_OPT_DIAG_ROUNDS,
    RT_OPT_COUNT
};

enum roundtrim_option_type {
    RT_TYPE_BOOL,   /* 1/true/yes/on, 0/false/no/off */
    RT_TYPE_UINT,   /* whole number in [min, max] */
    RT_TYPE_ROLE,   /* client | server */
    RT_TYPE_SIGNAL, /* name (USR1, SIGUSR1) or number; none disables */
    RT_TYPE_STRING, /* free text (paths, hook lists) */
};

enum roundtrim_role { RT_ROLE_CLIENT, RT_ROLE_SERVER };

/* Where a setting's value came from. */
enum roundtrim_source_kind {
    RT_FROM_DEFAULT,  /* the built-in default */
    RT_FROM_ROLE,     /* the role's default */
    RT_FROM_VARIABLE, /* the option's own variable or its alias (see value_from) */
    RT_FROM_GLIBC, /* an explicit glibc setting (MALLOC_*_ or GLIBC_TUNABLES) wins; we leave it */
};

struct roundtrim_option {
    enum roundtrim_option_id id;
    const char *name;  /* ROUNDTRIM_... */
    const char *alias; /* a variable our users already set (NVFLARE_...), or NULL */
    enum roundtrim_option_type type;
    uint64_t min, max; /* for RT_TYPE_UINT */
    /* The default, written once, as a variable would give it (the same parser reads both); NULL
     * when the option is unset by default. server_default: the server role's when it differs. */
    const char *default_value;
    const char *server_default;
    const char *default_note; /* what the default means ("off"), shown after it; or NULL */
    const char *meaning;
};

extern const struct roundtrim_option roundtrim_options[RT_OPT_COUNT];

/* At most one warning per option: every bad variable is named, however many there are. */
#define ROUNDTRIM_MAX_WARNINGS RT_OPT_COUNT
#define ROUNDTRIM_WARNING_LEN  256

struct roundtrim_setting {
    enum roundtrim_source_kind source;
    const char *value_from; /* the variable that set it (for RT_FROM_VARIABLE / RT_FROM_GLIBC) */
};

struct roundtrim_config {
    bool disabled;
    enum roundtrim_role role;
    uint64_t gc_rounds;        /* 0: never clean */
    bool adaptive;             /* each action when it gives memory back; false: the fixed period */
    uint64_t trim_min_mib;     /* freed heap worth a trim */
    uint64_t trim_min_percent; /* ... and as a share of RSS */
    uint64_t trim_pause_ms;    /* the longest a trim may hold the heap; 0: no limit */
    uint64_t cleanup_budget;   /* percent of round time cleanups may use; 0: no cap */
    uint64_t cuda_cache_min_mib; /* device cache worth a release */
    int round_signal;            /* 0: no signal */
    bool eager_worker;           /* start the worker at process start, not at the first round */
    const char *log_path;        /* NULL: no log; "stderr" for standard error */
    uint64_t arena_max;          /* 0: leave glibc's own */
    uint64_t mmap_threshold;     /* bytes; 0: leave glibc's dynamic threshold */
    bool cuda_empty_cache;
    bool py_gc;
    const char *py_hook;     /* "auto", "none" or "module:qualname[,...]" */
    uint64_t py_job_wait_ms; /* the longest a cleanup waits for a Python job */
    uint64_t interval_s;     /* 0: no timer rounds */
    uint64_t pressure_warn;  /* percent; 0: off */
    uint64_t pressure_clean; /* percent; 0: off */
    uint64_t pressure_gap_s; /* least time between two pressure cleanups */
    uint64_t sample_ms;
    const char *prom_file;   /* NULL: no metrics file */
    const char *cgroup_dir;  /* NULL: discover from /proc/self/cgroup */
    bool peak_reset;         /* reset the kernel's VmHWM at each boundary (clear_refs) */
    uint64_t exit_budget_ms; /* the most time the exit path spends recording */
    bool sites;              /* sample allocation sites */
    uint64_t sites_sample;   /* mean bytes between two samples */
    uint64_t diag_rounds;    /* rounds a diagnosis looks back over, and between two of them */
    struct roundtrim_setting setting[RT_OPT_COUNT];
    unsigned warning_count;
    char warnings[ROUNDTRIM_MAX_WARNINGS][ROUNDTRIM_WARNING_LEN];
};

/* The default as people read it: "85", "1 (client), 5 (server)", "0 (off)", "(unset)". */
void roundtrim_option_default_text(const struct roundtrim_option *o, char *buf, size_t len);

/* The default of a non-string option for the role, parsed from its row, in 64 bits (a bool, a
 * uint, a signal number or a role); false for strings and options unset by default. What the
 * build parses once into the library (scripts/tools/option-defaults.c). */
bool roundtrim_option_default_bits(enum roundtrim_option_id id, enum roundtrim_role role,
                                   uint64_t *bits);

/* Reads a variable; returns NULL when unset. ctx is passed through. */
typedef const char *(*roundtrim_env_lookup)(void *ctx, const char *name);

/* Fills cfg from the environment. Never fails: a bad value keeps the default and adds one
 * warning line (naming the variable, the bad value and the value used) to cfg->warnings. */
void roundtrim_config_load(struct roundtrim_config *cfg, roundtrim_env_lookup lookup, void *ctx);

/* The value of one option as text, as the start record and `roundtrim env` show it. */
void roundtrim_config_value_text(const struct roundtrim_config *cfg, enum roundtrim_option_id id,
                                 char *buf, size_t len);

/* "default", "role", or the variable the value came from. */
const char *roundtrim_config_source_text(const struct roundtrim_config *cfg,
                                         enum roundtrim_option_id id);

const char *roundtrim_role_name(enum roundtrim_role role);

/* True when the user set the option (or its alias) explicitly. */
bool roundtrim_config_is_explicit(const struct roundtrim_config *cfg, enum roundtrim_option_id id);

/* Whether the worker must sample memory periodically (timer rounds or explicit pressure settings).
 */
bool roundtrim_config_wants_sampling(const struct roundtrim_config *cfg);

/* Whether the worker starts with the process rather than at the first round boundary. */
bool roundtrim_config_starts_worker_early(const struct roundtrim_config *cfg);

#endif
