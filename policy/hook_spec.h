/* ROUNDTRIM_PY_HOOK's text: which Python functions a process hooks as round functions.
 *
 * The spec is a list of items separated by commas; blanks (spaces and tabs) around an item are
 * ignored and an empty item says nothing. An item is "auto" (the framework table,
 * policy/framework_hooks.h, on top of the names) or "module:qualname", both parts dotted Python
 * names of ASCII letters, digits and underscores ("mypkg.train:Trainer.fit"). Unset or empty is
 * "auto"; "none" or "off", alone, turns the round hooks off. Every other item is ignored with one
 * warning line. Whether a name exists is for the runtime to find out (runtime/python/round_hook.h).
 *
 * Pure: no process state, no allocation; the caller owns what is filled in. */
#ifndef ROUNDTRIM_POLICY_HOOK_SPEC_H
#define ROUNDTRIM_POLICY_HOOK_SPEC_H

#include <stdbool.h>
#include <stddef.h>

/* Names a user may give; the framework table comes on top. */
#define ROUNDTRIM_HOOK_SPEC_MAX 16
/* The bytes of a module or of a qualname, its NUL included: a longer name is ignored. */
#define ROUNDTRIM_HOOK_NAME_MAX 128
/* "module:qualname" with its NUL: room for the longest of both. */
#define ROUNDTRIM_HOOK_TARGET_MAX (2 * ROUNDTRIM_HOOK_NAME_MAX)
/* The bytes of an ignored item quoted in its warning line; the rest is cut (a long item may be
 * cut inside a UTF-8 sequence: the line is for a person, not a parser). */
#define ROUNDTRIM_HOOK_WARN_QUOTE_MAX 200

/* One function to hook: module "mypkg.train", qualname "Trainer.fit". */
struct roundtrim_hook_name {
    char module[ROUNDTRIM_HOOK_NAME_MAX];
    char qualname[ROUNDTRIM_HOOK_NAME_MAX];
};

struct roundtrim_hook_spec {
    bool off;       /* "none" or "off": no round hooks, not even the framework table */
    bool with_auto; /* the framework table: unset, empty, or an "auto" item */
    size_t count;   /* names[0..count): in the spec's order, a name given twice kept twice */
    struct roundtrim_hook_name names[ROUNDTRIM_HOOK_SPEC_MAX];
};

/* Receives one warning line (no newline, no "roundtrim: " prefix: roundtrim_warn adds it). */
typedef void (*roundtrim_hook_warn_fn)(void *ctx, const char *line);

/* Parses spec (NULL: the variable is unset) into *out, which it overwrites. An item that is not
 * "auto" and not a valid "module:qualname" gets one warning line through warn (which may be
 * NULL), in the order of the spec, and is ignored:
 *   ROUNDTRIM_PY_HOOK: ignoring "<item>": expected module:qualname               (no colon)
 *   ROUNDTRIM_PY_HOOK: ignoring "<item>": expected module:qualname (dotted Python names)
 *   ROUNDTRIM_PY_HOOK: ignoring "<item>": name too long
 *   ROUNDTRIM_PY_HOOK: ignoring "<item>": too many entries
 * checked in that order: "name too long" when the module or the qualname has
 * ROUNDTRIM_HOOK_NAME_MAX bytes or more, "too many entries" for a valid name past the first
 * ROUNDTRIM_HOOK_SPEC_MAX. <item> is the item without its blanks, cut at
 * ROUNDTRIM_HOOK_WARN_QUOTE_MAX bytes. "none" or
 * "off" with anything else is not off: it is an item like any other. A spec of blanks and commas
 * only is neither auto nor off: it hooks nothing. Returns out->count. */
size_t roundtrim_hook_spec_parse(const char *spec, struct roundtrim_hook_spec *out,
                                 roundtrim_hook_warn_fn warn, void *ctx);

/* The start record's "py_hook_mode" of a spec that hooks something, or is off: "none", "auto",
 * "names" or "auto+names". */
const char *roundtrim_hook_spec_mode(const struct roundtrim_hook_spec *spec);

/* The warning line for an ignored item or name, into buf (always terminated when cap > 0):
 * ROUNDTRIM_PY_HOOK: ignoring "<the n bytes of what>": <why>. Quotes what in full: the parser
 * cuts an item first; the runtime's "module:qualname" of a name that is not there is short. */
void roundtrim_hook_spec_warning(char *buf, size_t cap, const char *what, size_t n,
                                 const char *why);

#endif
