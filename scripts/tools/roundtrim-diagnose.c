/* roundtrim-diagnose: the library's own diagnosis (policy/diagnosis.c) over round figures given
 * on standard input, for `roundtrim report` to give a verdict to a process that wrote none (one
 * ended by a signal before its first diagnosis record): the same code, not a second one.
 *
 * Input, one line each, fields separated by spaces:
 *   context FIELD...
 *   sample FIELD...
 * where the context's fields are policy/diag_input.def's RT_DIAG_CONTEXT rows and a sample's its
 * RT_DIAG_IN rows, in their order, each written as its kind says (a PARTS row is a mask then a
 * number per part, a HEADROOM row a name then a number); a reason that is absent is "-"; flags are
 * 0 or 1. Samples oldest first; the latest ROUNDTRIM_DIAG_HISTORY are used. Output: one JSON object
 * with the diagnosis's fields. Exit status 2 on input it cannot read (the line is named). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/diagnosis.h"
#include "policy/json_writer.h"

#define MAX_SAMPLES ROUNDTRIM_DIAG_HISTORY
#define FIELD_MAX   24 /* a reason's length; longer ones are not the library's */

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return false;
    *out = v;
    return true;
}

static bool parse_flag(const char *s, bool *out)
{
    uint64_t v;
    if (!parse_u64(s, &v) || v > 1)
        return false;
    *out = v == 1;
    return true;
}

/* A reason: "-" for none, else a short name copied into buf. */
static bool parse_reason(const char *s, char *buf, const char **out)
{
    if (!s || strlen(s) >= FIELD_MAX)
        return false;
    if (strcmp(s, "-") == 0) {
        *out = NULL;
        return true;
    }
    strcpy(buf, s);
    *out = buf;
    return true;
}

static int split(char *line, char **f, int max)
{
    int n = 0;
    for (char *tok = strtok(line, " \t\n"); tok && n < max; tok = strtok(NULL, " \t\n"))
        f[n++] = tok;
    return n;
}

/* The context's words (its WORD rows), kept for the diagnosis. */
struct context_words {
    char word[8][FIELD_MAX];
    int used;
};

/* One RT_DIAG_CONTEXT row of each kind: field f[*at], *at moved past it. */
static bool context_UINT(char **f, int n, int *at, uint64_t *out, struct context_words *w)
{
    (void)w;
    return *at < n && parse_u64(f[(*at)++], out);
}

static bool context_FLAG(char **f, int n, int *at, bool *out, struct context_words *w)
{
    (void)w;
    return *at < n && parse_flag(f[(*at)++], out);
}

static bool context_WORD(char **f, int n, int *at, const char **out, struct context_words *w)
{
    if (*at >= n || w->used == (int)(sizeof w->word / sizeof w->word[0]))
        return false;
    return parse_reason(f[(*at)++], w->word[w->used++], out);
}

static bool parse_context(char **f, int n, struct roundtrim_diag_context *ctx,
                          struct context_words *w)
{
    int at = 1;
    w->used = 0;
#define RT_DIAG_CONTEXT(member, kind, source)                                                      \
    if (!context_##kind(f, n, &at, &ctx->member, w))                                               \
        return false;
#include "policy/diag_input.def"
    return at == n;
}

/* One row of policy/diag_input.def's, of each kind: fields f[*at..], *at moved past them. */
static bool take_UINT(char **f, int n, int *at, uint64_t *out)
{
    return *at < n && parse_u64(f[(*at)++], out);
}

static bool take_FLAG(char **f, int n, int *at, bool *out)
{
    return *at < n && parse_flag(f[(*at)++], out);
}

/* A skip reason: "-" for none; a word older versions wrote reads as its reason today, one this
 * build does not know as none (the diagnosis asks only after reasons it knows). */
static bool take_REASON(char **f, int n, int *at, enum roundtrim_skip *out)
{
    if (*at >= n || strlen(f[*at]) >= FIELD_MAX)
        return false;
    const char *s = f[(*at)++];
    *out = strcmp(s, "-") == 0 ? RT_SKIP_NONE : roundtrim_skip_from_name(s);
    return true;
}

static bool take_PARTS(char **f, int n, int *at, struct roundtrim_diag_sample *s)
{
    uint64_t mask;
    if (!take_UINT(f, n, at, &mask))
        return false;
    for (int p = 0; p < RT_PART_COUNT; p++) {
        s->known[p] = (mask >> p) & 1;
        if (!take_UINT(f, n, at, &s->part[p]))
            return false;
    }
    return true;
}

/* The limit the headroom is under (an RT_HEADROOM_OF name, "-" unknown), then its bytes. */
static bool take_HEADROOM(char **f, int n, int *at, struct roundtrim_diag_sample *s)
{
    if (*at + 1 >= n)
        return false;
    const char *of = f[(*at)++];
    s->headroom_of = RT_HEADROOM_UNKNOWN;
    if (!take_UINT(f, n, at, &s->headroom))
        return false;
    if (strcmp(of, "-") == 0)
        return s->headroom == 0;
    for (int k = RT_HEADROOM_UNKNOWN + 1; k < RT_HEADROOM_COUNT; k++)
        if (strcmp(of, roundtrim_headroom_of_name((enum roundtrim_headroom_of)k)) == 0) {
            s->headroom_of = (enum roundtrim_headroom_of)k;
            return true;
        }
    return false;
}

#define TAKE_UINT(m)     take_UINT(f, n, &at, &s->m)
#define TAKE_FLAG(m)     take_FLAG(f, n, &at, &s->m)
#define TAKE_REASON(m)   take_REASON(f, n, &at, &s->m)
#define TAKE_PARTS(m)    take_PARTS(f, n, &at, s)
#define TAKE_HEADROOM(m) take_HEADROOM(f, n, &at, s)

static bool parse_sample(char **f, int n, struct roundtrim_diag_sample *s)
{
    int at = 1;
    memset(s, 0, sizeof *s);
    bool ok = true;
#define RT_DIAG_IN(member, kind, record, value) ok = ok && TAKE_##kind(member);
#include "policy/diag_input.def"
    return ok && at == n;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        fputs("usage: roundtrim-diagnose < FIGURES (see the source's head for the format)\n",
              argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    static struct roundtrim_diag_sample ring[MAX_SAMPLES];
    struct roundtrim_diag_context ctx = {0};
    struct context_words words;
    size_t count = 0;
    char line[1024];
    unsigned long lineno = 0;
    while (fgets(line, sizeof line, stdin)) {
        lineno++;
        char *f[32];
        int n = split(line, f, 32);
        bool ok;
        if (n == 0)
            continue;
        if (strcmp(f[0], "context") == 0) {
            ok = parse_context(f, n, &ctx, &words);
        } else if (strcmp(f[0], "sample") == 0) {
            size_t at = count % MAX_SAMPLES;
            memset(&ring[at], 0, sizeof ring[at]);
            ok = parse_sample(f, n, &ring[at]);
            count++;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "roundtrim-diagnose: line %lu: cannot read it\n", lineno);
            return 2;
        }
    }
    /* The newest samples, oldest first. */
    size_t n = count < MAX_SAMPLES ? count : MAX_SAMPLES;
    static struct roundtrim_diag_sample ordered[MAX_SAMPLES];
    for (size_t i = 0; i < n; i++)
        ordered[i] = ring[(count - n + i) % MAX_SAMPLES];
    struct roundtrim_diagnosis d;
    roundtrim_diagnose(ordered, n, &ctx, &d);
    static char out[ROUNDTRIM_DIAGNOSIS_RECORD_MAX];
    struct roundtrim_json j;
    roundtrim_json_begin(&j, out, sizeof out);
    roundtrim_diagnosis_json(&j, &d);
    size_t len = roundtrim_json_end(&j);
    if (!len)
        return 2;
    fwrite(out, 1, len, stdout);
    return 0;
}
