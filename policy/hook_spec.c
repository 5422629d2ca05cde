#include "policy/hook_spec.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Drops the blanks (spaces and tabs) around the n bytes at *s. */
static void trim_blanks(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t'))
        (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

static bool is_word(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(s, word, n) == 0;
}

/* Identifiers of ASCII letters, digits and underscores, joined by single dots. */
static bool dotted_name(const char *s, size_t n)
{
    bool start = true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (c == '.') {
            if (start)
                return false;
            start = true;
        } else if (alpha || (digit && !start)) {
            start = false;
        } else {
            return false;
        }
    }
    return n > 0 && !start;
}

void roundtrim_hook_spec_warning(char *buf, size_t cap, const char *what, size_t n, const char *why)
{
    if (n > (size_t)INT_MAX)
        n = (size_t)INT_MAX;
    snprintf(buf, cap, "ROUNDTRIM_PY_HOOK: ignoring \"%.*s\": %s", (int)n, what, why);
}

static void warn_item(roundtrim_hook_warn_fn warn, void *ctx, const char *item, size_t n,
                      const char *why)
{
    if (!warn)
        return;
    char line[400];
    size_t quoted = n > ROUNDTRIM_HOOK_WARN_QUOTE_MAX ? ROUNDTRIM_HOOK_WARN_QUOTE_MAX : n;
    roundtrim_hook_spec_warning(line, sizeof line, item, quoted, why);
    warn(ctx, line);
}

/* One item, blanks dropped and not empty: "auto", or a name kept in out, or a warning. */
static void parse_item(const char *s, size_t n, struct roundtrim_hook_spec *out,
                       roundtrim_hook_warn_fn warn, void *ctx)
{
    if (is_word(s, n, "auto")) {
        out->with_auto = true;
        return;
    }
    const char *colon = memchr(s, ':', n);
    if (!colon) {
        warn_item(warn, ctx, s, n, "expected module:qualname");
        return;
    }
    size_t mn = (size_t)(colon - s), qn = n - mn - 1;
    if (!dotted_name(s, mn) || !dotted_name(colon + 1, qn)) {
        warn_item(warn, ctx, s, n, "expected module:qualname (dotted Python names)");
        return;
    }
    if (mn >= ROUNDTRIM_HOOK_NAME_MAX || qn >= ROUNDTRIM_HOOK_NAME_MAX) {
        warn_item(warn, ctx, s, n, "name too long");
        return;
    }
    if (out->count == ROUNDTRIM_HOOK_SPEC_MAX) {
        warn_item(warn, ctx, s, n, "too many entries");
        return;
    }
    struct roundtrim_hook_name *name = &out->names[out->count++];
    memcpy(name->module, s, mn);
    name->module[mn] = 0;
    memcpy(name->qualname, colon + 1, qn);
    name->qualname[qn] = 0;
}

size_t roundtrim_hook_spec_parse(const char *spec, struct roundtrim_hook_spec *out,
                                 roundtrim_hook_warn_fn warn, void *ctx)
{
    out->off = false;
    out->with_auto = !spec || !*spec;
    out->count = 0;
    const char *p = spec ? spec : "";
    const char *all = p;
    size_t all_n = strlen(p);
    trim_blanks(&all, &all_n);
    if (is_word(all, all_n, "none") || is_word(all, all_n, "off")) {
        out->off = true;
        return 0;
    }
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        p = end ? end + 1 : p + n;
        trim_blanks(&s, &n);
        if (n) /* an empty item (",," or a trailing comma) says nothing */
            parse_item(s, n, out, warn, ctx);
    }
    return out->count;
}

const char *roundtrim_hook_spec_mode(const struct roundtrim_hook_spec *spec)
{
    if (spec->off)
        return "none";
    if (spec->with_auto)
        return spec->count ? "auto+names" : "auto";
    return "names";
}
