/* The option table: every environment variable roundtrim reads, its default and its meaning,
 * each written once in policy/options.def. One table drives parsing, the "start" record,
 * `roundtrim env` and the configuration reference (docs/reference/configuration.md); each row
 * locates its value in struct roundtrim_config, so no code names the options one by one. */
#ifndef ROUNDTRIM_POLICY_OPTIONS_H
#define ROUNDTRIM_POLICY_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROUNDTRIM_DAY_S (24u * 3600u)

/* A number defined once, as an option's default text: ROUNDTRIM_TEXT_OF(ROUNDTRIM_X) is "10". */
#define ROUNDTRIM_TEXT_OF(number)  ROUNDTRIM_TEXT_OF_(number)
#define ROUNDTRIM_TEXT_OF_(number) #number

enum roundtrim_option_id {
#define ROUNDTRIM_OPTION(ID, field, TYPE, ...) RT_OPT_##ID,
#include "policy/options.def"
#undef ROUNDTRIM_OPTION
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

/* The C type of each option type's value in struct roundtrim_config. */
#define RT_CTYPE_BOOL   bool
#define RT_CTYPE_UINT   uint64_t
#define RT_CTYPE_ROLE   enum roundtrim_role
#define RT_CTYPE_SIGNAL int
#define RT_CTYPE_STRING const char *

/* Where a setting's value came from. */
enum roundtrim_source_kind {
    RT_FROM_DEFAULT,  /* the built-in default */
    RT_FROM_ROLE,     /* the role's default */
    RT_FROM_VARIABLE, /* the option's own variable or its alias (see value_from) */
    RT_FROM_GLIBC, /* an explicit glibc setting (MALLOC_*_ or GLIBC_TUNABLES) wins; we leave it */
};

struct roundtrim_option {
    enum roundtrim_option_id id;
    const char *name;       /* ROUNDTRIM_... */
    const char *alias;      /* a variable our users already set (NVFLARE_...), or NULL */
    bool alias_client_only; /* the alias describes client processes: a server does not read it */
    enum roundtrim_option_type type;
    size_t offset;     /* of the value in struct roundtrim_config */
    uint64_t min, max; /* for RT_TYPE_UINT */
    /* The default, written once, as a variable would give it (the same parser reads both); NULL
     * when the option is unset by default. server_default: the server role's when it differs. */
    const char *default_value;
    const char *server_default;
    const char *default_note; /* what the default means ("off"), shown after it; or NULL */
    /* What leaving the option unset does, where that is not what setting default_value does
     * (ROUNDTRIM_SITES: unset lets sampling start by itself, false never); or NULL. A bad value
     * is taken as unset: its warning says this, not default_value. */
    const char *unset_note;
    /* glibc's own setting of the same knob, which wins when set (the value is then 0), or NULL */
    const char *glibc_variable, *glibc_tunable;
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

/* Every option's value (the field its entry in policy/options.def names), then where each came
 * from and the warnings the environment gave. */
struct roundtrim_config {
#define ROUNDTRIM_OPTION(ID, field, TYPE, ...) RT_CTYPE_##TYPE field;
#include "policy/options.def"
#undef ROUNDTRIM_OPTION
    struct roundtrim_setting setting[RT_OPT_COUNT];
    unsigned warning_count;
    char warnings[ROUNDTRIM_MAX_WARNINGS][ROUNDTRIM_WARNING_LEN];
};

/* Where option id's value lives in cfg: a RT_CTYPE_<TYPE> of the option's type. */
void *roundtrim_config_field(struct roundtrim_config *cfg, enum roundtrim_option_id id);

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
