/* The round functions of the FL frameworks roundtrim knows, one row per function: which
 * framework, which function (module:qualname), what it marks (role) and for which versions of the
 * framework. A process arms the rows of the framework it actually imports (ROUNDTRIM_PY_HOOK
 * unset or "auto"); a new framework version is a new row. Pure data and lookups. */
#ifndef ROUNDTRIM_POLICY_FRAMEWORK_HOOKS_H
#define ROUNDTRIM_POLICY_FRAMEWORK_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

enum roundtrim_fw_role {
    RT_FW_CLIENT,   /* a client's round: its update is sent or its training returns */
    RT_FW_EXECUTOR, /* the client process that hands tasks to an external trainer */
    RT_FW_NODE,     /* a long-lived node process relaying one reply to the server */
    RT_FW_SERVER,   /* a server's aggregation */
    /* A process that handles one message and exits: no round at all, also for the hooked calls
     * inside (a per-round cleanup right before the process ends is wasted time). */
    RT_FW_PER_MESSAGE,
    /* Called when a process sets up the server side (no round by itself): from then on the
     * framework's client rows leave the rounds to the server's aggregation (a single-process
     * simulation is one round per aggregation). */
    RT_FW_SERVER_SETUP,
    /* Notes a message of the kind that makes a round (its `when` test): the next return of an
     * `after_mark` row of the same framework ends the round. No round by itself. */
    RT_FW_MARK,
};

/* A test on one argument of a hooked call, read before the call: the text reached by following
 * `path` is `word` or starts with `word` and a dot ("train", "train.custom"). Each name of the
 * path is looked up in the object's own __dict__, so that no code of the program runs (a
 * property's getter could take a signal handler's exception, which would then be lost). */
struct roundtrim_fw_test {
    unsigned arg;        /* the argument's position, self counted for a method */
    const char *keyword; /* or its name, when passed by keyword */
    const char *path;    /* dotted names, e.g. "_metadata._message_type" */
    const char *word;
};

struct roundtrim_fw_hook {
    const char *framework; /* also the top-level package whose __version__ is compared */
    const char *target;    /* "module:qualname" */
    enum roundtrim_fw_role role;
    const char *min_version; /* inclusive; NULL: any */
    const char *below;       /* exclusive upper bound; NULL: any */
    /* A client row that does not count in a process that has set up the server side of the same
     * framework (a server-setup row was called). */
    bool yields_to_server;
    /* Only calls that pass this test count (a mark row: only they mark); NULL: every call. */
    const struct roundtrim_fw_test *when;
    /* Ends a round only when a mark row of the same framework was called since its last round. */
    bool after_mark;
};

extern const struct roundtrim_fw_hook roundtrim_fw_hooks[];
extern const size_t roundtrim_fw_hook_count;

const char *roundtrim_fw_role_name(enum roundtrim_fw_role role);

/* The name operators know a framework by, for labels: a row's framework (its top-level package)
 * mapped to the project's name ("flwr" is "flower"); NULL, a process with no framework's round
 * hook attached, is "none". */
const char *roundtrim_fw_label(const char *framework);

/* Compares dotted version texts numerically, part by part ("2.9.0dev0" >= "2.9", "2.10" >
 * "2.9"); a part's trailing letters are ignored. Returns <0, 0 or >0. */
int roundtrim_version_compare(const char *a, const char *b);

/* Whether a row applies to a framework version; an unknown version (NULL, or a placeholder such
 * as versioneer's "0+unknown" of a tree installed from a branch) matches every row. */
bool roundtrim_fw_hook_applies(const struct roundtrim_fw_hook *h, const char *version);

/* Whether a text read by a test is its word, or the word and a dot and more. */
bool roundtrim_fw_word_matches(const char *text, const char *word);

/* The row for "module:qualname", or NULL. */
const struct roundtrim_fw_hook *roundtrim_fw_hook_find(const char *module, const char *qualname);

#endif
