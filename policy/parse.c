#include "policy/parse.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>

/* ASCII letters compared without case, whatever the program's locale (strcasecmp follows it). */
static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether the first n bytes of a and b are the same but for case (both end at a NUL before n
 * or neither). */
static bool same_ascii_n(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
        if (a[i] == '\0')
            return true;
    }
    return true;
}

static bool same_ascii(const char *a, const char *b)
{
    return same_ascii_n(a, b, (size_t)-1);
}

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

bool roundtrim_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!text)
        return false;
    const char *s = skip_blanks(text);
    if (*s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false; /* overflow */
        v = v * 10 + d;
    }
    if (*skip_blanks(s) != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* The digits at *s (at most 9 of them: no overflow), *s moved past all of them. */
static long leading_number(const char **s)
{
    long v = 0;
    unsigned n = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++)
        if (n++ < 9)
            v = v * 10 + (**s - '0');
    return v;
}

void roundtrim_parse_version(const char *text, long *major, long *minor)
{
    *major = leading_number(&text);
    *minor = 0;
    if (*text == '.') {
        text++;
        *minor = leading_number(&text);
    }
}

bool roundtrim_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    if (!text)
        return false;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (same_ascii(text, yes[i])) {
            *out = true;
            return true;
        }
        if (same_ascii(text, no[i])) {
            *out = false;
            return true;
        }
    }
    return false;
}

struct signal_name {
    int sig;
    const char *name;
};

/* Signals that may mark a round: ones nobody sends by accident and whose default action no
 * program relies on. Faults, job control, timers, SIGTERM/SIGINT/SIGCHLD are refused. */
static const struct signal_name round_signals[] = {
    {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},   {SIGHUP, "SIGHUP"},
    {SIGURG, "SIGURG"},   {SIGWINCH, "SIGWINCH"}, {SIGPWR, "SIGPWR"},
};

const char *roundtrim_signal_name(int sig)
{
    for (size_t i = 0; i < sizeof round_signals / sizeof round_signals[0]; i++)
        if (round_signals[i].sig == sig)
            return round_signals[i].name;
    return NULL;
}

/* "RTMIN", "RTMIN+N", "RTMAX", "RTMAX-N" (any case, SIG prefix already gone), as glibc's
 * str2sig and kill(1) write them: the signal number, or 0 when s is not such a name. */
static int realtime_signal(const char *s, int rtmin, int rtmax)
{
    int base;
    char sign;
    if (same_ascii_n(s, "RTMIN", 5)) {
        base = rtmin;
        sign = '+';
    } else if (same_ascii_n(s, "RTMAX", 5)) {
        base = rtmax;
        sign = '-';
    } else {
        return 0;
    }
    s += 5;
    uint64_t n = 0;
    if (*s != '\0') {
        /* a sign, then digits only: no blanks, no second sign */
        if (*s != sign || s[1] < '0' || s[1] > '9' || s[1 + strspn(s + 1, "0123456789")] != '\0')
            return 0;
        if (!roundtrim_parse_uint(s + 1, 0, 64, &n))
            return 0;
    }
    int sig = sign == '+' ? base + (int)n : base - (int)n;
    return sig >= rtmin && sig <= rtmax ? sig : 0;
}

bool roundtrim_parse_signal_in(const char *text, int rtmin, int rtmax, int *out)
{
    if (!text)
        return false;
    const char *s = skip_blanks(text);
    if (same_ascii(s, "none") || same_ascii(s, "off")) {
        *out = 0;
        return true;
    }
    uint64_t num;
    if (roundtrim_parse_uint(s, 1, 64, &num)) {
        int sig = (int)num;
        /* Real-time signals are free for applications to use as they like. */
        if (roundtrim_signal_name(sig) || (sig >= rtmin && sig <= rtmax)) {
            *out = sig;
            return true;
        }
        return false;
    }
    if (same_ascii_n(s, "SIG", 3))
        s += 3;
    for (size_t i = 0; i < sizeof round_signals / sizeof round_signals[0]; i++) {
        if (same_ascii(s, round_signals[i].name + 3)) {
            *out = round_signals[i].sig;
            return true;
        }
    }
    int sig = realtime_signal(s, rtmin, rtmax);
    if (sig == 0)
        return false;
    *out = sig;
    return true;
}

bool roundtrim_parse_signal(const char *text, int *out)
{
    /* glibc's SIGRTMIN and SIGRTMAX are calls: the range it leaves to applications at run time
     * (the threading library keeps the first few). The names and numbers of the other round
     * signals need no range (an empty one): asked first, so the common case makes no call. */
    if (roundtrim_parse_signal_in(text, 0, -1, out))
        return true;
    return roundtrim_parse_signal_in(text, SIGRTMIN, SIGRTMAX, out);
}

bool roundtrim_tunables_set(const char *tunables, const char *name)
{
    if (!tunables || !name)
        return false;
    size_t n = strlen(name);
    const char *p = tunables;
    while (*p) {
        /* GLIBC_TUNABLES is name=value pairs separated by ':' */
        if (strncmp(p, name, n) == 0 && p[n] == '=')
            return true;
        const char *colon = strchr(p, ':');
        if (!colon)
            break;
        p = colon + 1;
    }
    return false;
}
