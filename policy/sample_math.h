/* The arithmetic of sampling allocations by bytes: how far apart samples fall and how many bytes
 * one sample stands for. Pure and free of libm, so that the preloaded library needs no libm. */
#ifndef ROUNDTRIM_POLICY_SAMPLE_MATH_H
#define ROUNDTRIM_POLICY_SAMPLE_MATH_H

#include <stdint.h>

/* Advances a per-thread xorshift state (never 0) and returns the next 64 random bits. */
uint64_t roundtrim_sample_random(uint64_t *state);

/* The number of bytes until the next sample: exponentially distributed with the given mean
 * (-mean * ln u for u uniform in (0, 1]), at least 1. */
uint64_t roundtrim_sample_interval(uint64_t random_bits, uint64_t mean);

/* How many bytes a sampled block of `size` bytes stands for: size / P(sampled), where
 * P = 1 - exp(-size / mean) is the chance that a countdown with that mean ends inside the block.
 * Sums of these weights are unbiased estimates of the bytes allocated. */
uint64_t roundtrim_sample_weight(uint64_t size, uint64_t mean);

/* Natural logarithm and exp(x) - 1, to about 1e-12 relative error (exposed for the unit tests). */
double roundtrim_ln(double x);
double roundtrim_expm1(double x);

#endif
