/* Parsers for the text forms of option values. Pure: no locale, no errno left behind. */
#ifndef ROUNDTRIM_POLICY_PARSE_H
#define ROUNDTRIM_POLICY_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Decimal whole number in [min, max], surrounding blanks allowed; false on anything else. */
bool roundtrim_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* 1/true/yes/on and 0/false/no/off, any case. */
bool roundtrim_parse_bool(const char *text, bool *out);

/* "USR1", "SIGUSR1", "sigusr2", "10", "none" (gives 0). Only signals a process may catch and
 * that make sense as a round marker: no SIGKILL/SIGSTOP/SIGSEGV-like fault signals. Real-time
 * signals by number or by name: "RTMIN", "SIGRTMIN+1", "rtmax-2", within SIGRTMIN..SIGRTMAX as
 * glibc reports them at run time. */
bool roundtrim_parse_signal(const char *text, int *out);

/* roundtrim_parse_signal with the real-time range given: [rtmin, rtmax]. */
bool roundtrim_parse_signal_in(const char *text, int rtmin, int rtmax, int *out);

/* Name of a signal number ("SIGUSR1"), or NULL when not in our table. */
const char *roundtrim_signal_name(int sig);

/* The leading "MAJOR.MINOR" of a version string ("2.36", "3.11.4+", "2.17-ubuntu"): the digits
 * at the start of each part, 0 where a part has none (minor 0 without a '.'). Not strtol: with
 * _GNU_SOURCE, glibc 2.38's headers turn strtol into __isoc23_strtol (GLIBC_2.38), a version the
 * library must not need (docs/compatibility.md). */
void roundtrim_parse_version(const char *text, long *major, long *minor);

/* Whether GLIBC_TUNABLES text sets the given tunable (e.g. "glibc.malloc.arena_max"). */
bool roundtrim_tunables_set(const char *tunables, const char *name);

#endif
