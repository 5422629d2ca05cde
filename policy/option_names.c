#include "policy/option_names.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "policy/options.h"

#define PREFIX     "ROUNDTRIM_"
#define PREFIX_LEN (sizeof PREFIX - 1)

/* Read by the roundtrim command, its report and the examples, never by the library: a process
 * that inherits them is not misconfigured. */
static const char *const command_names[] = {
    "ROUNDTRIM_LIB",     "ROUNDTRIM_PYTHON", "ROUNDTRIM_PLOTTER", "ROUNDTRIM_JEMALLOC_PATHS",
    "ROUNDTRIM_LOG_DIR",
};
#define COMMAND_NAMES (sizeof command_names / sizeof command_names[0])
#define KNOWN_NAMES   (RT_OPT_COUNT + COMMAND_NAMES)

static const char *known_name(size_t i)
{
    return i < RT_OPT_COUNT ? roundtrim_options[i].name : command_names[i - RT_OPT_COUNT];
}

bool roundtrim_variable_known(const char *name, size_t len)
{
    for (size_t i = 0; i < KNOWN_NAMES; i++) {
        const char *k = known_name(i);
        if (strlen(k) == len && memcmp(k, name, len) == 0)
            return true;
    }
    return false;
}

/* Levenshtein distance of a[0..an) and b[0..bn), both at most ROUNDTRIM_NAME_SHOWN bytes. */
static size_t edit_distance(const char *a, size_t an, const char *b, size_t bn)
{
    size_t row[ROUNDTRIM_NAME_SHOWN + 1];
    for (size_t j = 0; j <= bn; j++)
        row[j] = j;
    for (size_t i = 1; i <= an; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

static size_t after_prefix(const char **s, size_t len)
{
    if (len >= PREFIX_LEN && memcmp(*s, PREFIX, PREFIX_LEN) == 0) {
        *s += PREFIX_LEN;
        len -= PREFIX_LEN;
    }
    return len > ROUNDTRIM_NAME_SHOWN ? ROUNDTRIM_NAME_SHOWN : len;
}

/* Words people use for what a variable of ours does, each with the word our names use for it:
 * ROUNDTRIM_LOGFILE and ROUNDTRIM_LOG_FILE mean ROUNDTRIM_LOG, ROUNDTRIM_METRICS_FILE means
 * ROUNDTRIM_PROM_FILE, however far their spelling is from it. */
static const struct {
    const char *typed, *ours;
} synonyms[] = {
    {"LOGFILE", "LOG"},  {"LOGPATH", "LOG"},     {"LOGS", "LOG"},         {"LOGGING", "LOG"},
    {"OUTPUT", "LOG"},   {"OUT", "LOG"},         {"JSON", "LOG"},         {"JSONL", "LOG"},
    {"RECORDS", "LOG"},  {"METRICS", "PROM"},    {"METRIC", "PROM"},      {"PROMETHEUS", "PROM"},
    {"ROUND", "ROUNDS"}, {"EVERY", "ROUNDS"},    {"DISABLED", "DISABLE"}, {"OFF", "DISABLE"},
    {"SIG", "SIGNAL"},   {"PERIOD", "INTERVAL"}, {"TIMER", "INTERVAL"},   {"CGROUPS", "CGROUP"},
    {"ARENAS", "ARENA"}, {"SAMPLING", "SAMPLE"}, {"PYTHON", "PY"},
};

/* Words that name a unit or a kind of value, not what the variable does: ROUNDTRIM_INTERVAL is
 * ROUNDTRIM_INTERVAL_S, ROUNDTRIM_LOG_PATH is ROUNDTRIM_LOG. */
static const char *const fillers[] = {"FILE", "PATH",    "NAME", "S",   "SEC",
                                      "SECS", "SECONDS", "MS",   "MIB", "MB"};

#define MAX_WORDS 8

struct words {
    const char *w[MAX_WORDS];
    size_t len[MAX_WORDS];
    size_t n;
    bool overflow;
};

static bool word_is(const char *w, size_t n, const char *s)
{
    return strlen(s) == n && memcmp(w, s, n) == 0;
}

/* One word of a name as our names would say it; NULL, len 0 for a filler. */
static void add_word(struct words *ws, const char *w, size_t n)
{
    for (size_t i = 0; i < sizeof fillers / sizeof fillers[0]; i++)
        if (word_is(w, n, fillers[i]))
            return;
    for (size_t i = 0; i < sizeof synonyms / sizeof synonyms[0]; i++)
        if (word_is(w, n, synonyms[i].typed)) {
            w = synonyms[i].ours;
            n = strlen(w);
            break;
        }
    for (size_t i = 0; i < ws->n; i++)
        if (ws->len[i] == n && memcmp(ws->w[i], w, n) == 0)
            return; /* a set: LOG_LOGFILE is LOG */
    if (ws->n == MAX_WORDS) {
        ws->overflow = true;
        return;
    }
    ws->w[ws->n] = w;
    ws->len[ws->n++] = n;
}

/* The words of name[0..len) after the prefix, split at '_'. */
static void words_of(const char *name, size_t len, struct words *ws)
{
    ws->n = 0;
    ws->overflow = false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++)
        if (i == len || name[i] == '_') {
            if (i > start)
                add_word(ws, name + start, i - start);
            start = i + 1;
        }
}

/* Whether every word of a is one of b's. */
static bool words_within(const struct words *a, const struct words *b)
{
    if (a->overflow || b->overflow || a->n == 0)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        bool found = false;
        for (size_t j = 0; j < b->n && !found; j++)
            found = a->len[i] == b->len[j] && memcmp(a->w[i], b->w[j], a->len[i]) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* The known name that says the same in our words, else the only one that says all of it
 * (ROUNDTRIM_SIGNAL: ROUNDTRIM_ROUND_SIGNAL); NULL when none or several do. */
static const char *same_meaning(const char *name, size_t len)
{
    struct words typed, known;
    words_of(name, len, &typed);
    const char *within = NULL;
    size_t within_count = 0;
    for (size_t i = 0; i < KNOWN_NAMES; i++) {
        const char *k = known_name(i);
        size_t kn = after_prefix(&k, strlen(k));
        words_of(k, kn, &known);
        if (!words_within(&typed, &known))
            continue;
        if (known.n == typed.n)
            return known_name(i);
        within = known_name(i);
        within_count++;
    }
    return within_count == 1 ? within : NULL;
}

const char *roundtrim_variable_closest(const char *name, size_t len)
{
    len = after_prefix(&name, len);
    const char *meant = same_meaning(name, len);
    if (meant)
        return meant;
    const char *best = known_name(0);
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < KNOWN_NAMES; i++) {
        const char *k = known_name(i);
        size_t kn = after_prefix(&k, strlen(k));
        size_t d = edit_distance(name, len, k, kn);
        if (d < best_d) {
            best_d = d;
            best = known_name(i);
        }
    }
    return best;
}

/* What leaving the variable meant unset does, where that is worth saying ("unset: no log is
 * written"): the option table's own note. NULL when it is set or has a default. */
static const char *unset_note(const char *meant, roundtrim_env_lookup lookup, void *ctx)
{
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        const struct roundtrim_option *o = &roundtrim_options[i];
        if (strcmp(o->name, meant) != 0)
            continue;
        if (o->default_value || !o->default_note || !lookup)
            return NULL;
        const char *v = lookup(ctx, meant);
        return v && *v ? NULL : o->default_note;
    }
    return NULL;
}

bool roundtrim_unknown_variable_warning(const char *entry, roundtrim_env_lookup lookup, void *ctx,
                                        char *buf, size_t cap)
{
    if (strncmp(entry, PREFIX, PREFIX_LEN) != 0)
        return false;
    const char *eq = strchr(entry, '=');
    size_t len = eq ? (size_t)(eq - entry) : strlen(entry);
    if (roundtrim_variable_known(entry, len))
        return false;
    bool cut = len > ROUNDTRIM_NAME_SHOWN;
    const char *meant = roundtrim_variable_closest(entry, len);
    const char *note = unset_note(meant, lookup, ctx);
    snprintf(buf, cap,
             "%.*s%s is not a roundtrim variable and changes nothing; did you mean %s%s%s%s? "
             "(roundtrim env lists them)",
             (int)(cut ? ROUNDTRIM_NAME_SHOWN : len), entry, cut ? "..." : "", meant,
             note ? " (" : "", note ? note : "", note ? ")" : "");
    return true;
}
