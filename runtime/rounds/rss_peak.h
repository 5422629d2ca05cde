/* A round's peak RSS without touching the process's own high-water mark.
 *
 * By default the kernel's VmHWM (what getrusage's ru_maxrss, `time -v` and job schedulers read)
 * is left alone: a round's peak is the highest of the worker's RSS samples within the round, the
 * RSS at its boundary, and VmHWM itself when the process reached a new lifetime high during the
 * round (then that high is the round's peak, exactly). With ROUNDTRIM_PEAK_RESET the kernel's
 * mark is reset at each boundary instead (/proc/self/clear_refs), which is exact per round but
 * changes what the program and its scheduler see. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_RSS_PEAK_H
#define ROUNDTRIM_RUNTIME_ROUNDS_RSS_PEAK_H

#include <stdbool.h>
#include <stdint.h>

/* Milliseconds between two peak samples of the worker while rounds are being recorded. */
#define ROUNDTRIM_PEAK_SAMPLE_MS 100

/* One sample of the current RSS (worker). */
void roundtrim_rss_peak_sample(void);

/* Whether samples are wanted: from the first recorded round on (the first round's peak is the
 * process's high-water mark itself). */
bool roundtrim_rss_peak_sampling(void);

/* The peak of the round that ends now, whose boundary RSS is rss_before; `close` starts the next
 * round (from rss_after, given later to roundtrim_rss_peak_next). */
uint64_t roundtrim_rss_peak_round(uint64_t rss_before, bool reset_kernel, bool close);

/* Starts the next round's peak from rss_after (and resets the kernel's mark when asked). */
void roundtrim_rss_peak_next(uint64_t rss_after, bool reset_kernel);

void roundtrim_rss_peak_fork_child(void);

#endif
