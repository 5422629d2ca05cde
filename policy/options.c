#include "policy/options.h"

#include <inttypes.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "policy/diagnosis.h"
#include "policy/parse.h"

/* The rows, from the list of options; the designated index keeps each row at its id. */
const struct roundtrim_option roundtrim_options[RT_OPT_COUNT] = {
#define ROUNDTRIM_OPTION(ID, field, TYPE, ...)                                                     \
    [RT_OPT_##ID] = {.id = RT_OPT_##ID,                                                            \
                     .name = "ROUNDTRIM_" #ID,                                                     \
                     .type = RT_TYPE_##TYPE,                                                       \
                     .offset = offsetof(struct roundtrim_config, field),                           \
                     __VA_ARGS__},
#include "policy/options.def"
#undef ROUNDTRIM_OPTION
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

void *roundtrim_config_field(struct roundtrim_config *cfg, enum roundtrim_option_id id)
{
    return (char *)cfg + roundtrim_options[id].offset;
}

static const void *field_in(const struct roundtrim_config *cfg, enum roundtrim_option_id id)
{
    return (const char *)cfg + roundtrim_options[id].offset;
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
    else if (o->default_value && o->unset_note)
        snprintf(buf, len, "%s (left unset, %s)", o->default_value, o->unset_note);
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
    else if (o->unset_note)
        snprintf(buf, len, "it as if unset (%s)", o->unset_note);
    else
        roundtrim_option_default_text(o, buf, len);
}

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
    void *field = roundtrim_config_field(&scratch, id);
    if (o->type == RT_TYPE_STRING || !text || !parse_value(o, text, field))
        return false;
    *bits = value_bits(o, field);
    return true;
}

/* Stores a non-string option's value given in 64 bits. */
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

/* The library is built with the defaults already parsed (ROUNDTRIM_DEFAULT_BITS, generated from
 * this table by the same parser at build time, and checked against it by a unit suite): a start
 * reads them instead of parsing text. Elsewhere the text is parsed. */
#ifdef ROUNDTRIM_DEFAULTS_HEADER
#include ROUNDTRIM_DEFAULTS_HEADER
static const uint64_t default_bits[RT_OPT_COUNT][2] = ROUNDTRIM_DEFAULT_BITS;
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
        store_bits(o, roundtrim_config_field(cfg, id),
                   default_bits[id][cfg->role == RT_ROLE_SERVER]);
        return;
    }
#endif
    parse_value(o, text, roundtrim_config_field(cfg, id));
}

/* Reads option id: its default, then glibc's setting of the same knob (which wins: the value is
 * left 0, for glibc's), else its variable or alias. The rows come in order, so the role is read
 * before the defaults and the alias that depend on it. */
static void load_option(struct roundtrim_config *cfg, enum roundtrim_option_id id,
                        roundtrim_env_lookup lookup, void *ctx)
{
    const struct roundtrim_option *o = &roundtrim_options[id];
    void *field = roundtrim_config_field(cfg, id);
    set_default(cfg, id);
    if (o->glibc_variable &&
        glibc_overrides(cfg, id, o->glibc_variable, o->glibc_tunable, lookup, ctx)) {
        store_bits(o, field, 0);
        return;
    }
    bool alias_allowed = o->alias && !(o->alias_client_only && cfg->role == RT_ROLE_SERVER);
    parse_option(cfg, id, alias_allowed, lookup, ctx, field);
}

void roundtrim_config_load(struct roundtrim_config *cfg, roundtrim_env_lookup lookup, void *ctx)
{
    /* Each warning line is written whole when added: clearing all 7 KiB of them (glibc's memset
     * does it with rep stosb) took more instructions than the rest of the parse. */
    memset(cfg, 0, offsetof(struct roundtrim_config, warnings));
    for (int i = 0; i < RT_OPT_COUNT; i++)
        load_option(cfg, (enum roundtrim_option_id)i, lookup, ctx);
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

static void signal_text(int sig, char *buf, size_t len)
{
    const char *name = roundtrim_signal_name(sig);
    if (sig == 0)
        snprintf(buf, len, "none");
    else if (name)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%d", sig);
}

void roundtrim_config_value_text(const struct roundtrim_config *cfg, enum roundtrim_option_id id,
                                 char *buf, size_t len)
{
    if ((unsigned)id >= RT_OPT_COUNT) {
        snprintf(buf, len, "%s", "");
        return;
    }
    const struct roundtrim_option *o = &roundtrim_options[id];
    const void *field = field_in(cfg, id);
    if (cfg->setting[id].source == RT_FROM_GLIBC) {
        snprintf(buf, len, "glibc"); /* glibc's own setting is in force, not ours */
        return;
    }
    switch (o->type) {
    case RT_TYPE_BOOL:
        snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false");
        return;
    case RT_TYPE_UINT:
        snprintf(buf, len, "%" PRIu64, *(const uint64_t *)field);
        return;
    case RT_TYPE_SIGNAL:
        signal_text(*(const int *)field, buf, len);
        return;
    case RT_TYPE_ROLE:
        snprintf(buf, len, "%s", roundtrim_role_name(*(const enum roundtrim_role *)field));
        return;
    case RT_TYPE_STRING: {
        /* A string the caller could not keep (NULL) shows its default. */
        const char *s = *(const char *const *)field;
        if (!s)
            s = o->default_value;
        snprintf(buf, len, "%s", s ? s : "");
        return;
    }
    }
    snprintf(buf, len, "%s", "");
}
