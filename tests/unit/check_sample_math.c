/* The arithmetic of sampling by bytes: distances between samples are exponential with the asked
 * mean, and weighted samples estimate the bytes allocated without bias, whatever the block
 * sizes. These are what make a sites record's byte figures trustworthy. */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include "policy/sample_math.h"
#include "run_suite.h"

START_TEST(logarithm_and_expm1_match_libm)
{
    for (double x = 1e-12; x < 1e6; x *= 1.37)
        ck_assert_double_eq_tol(roundtrim_ln(x), log(x), 1e-12 * fabs(log(x)) + 1e-13);
    for (double x = -700; x < -1e-12; x *= 0.91)
        ck_assert_double_eq_tol(roundtrim_expm1(x), expm1(x), 1e-11 * fabs(expm1(x)));
}
END_TEST

START_TEST(intervals_are_exponential_with_the_mean)
{
    uint64_t state = 12345, mean = 524288, n = 200000;
    double sum = 0, sumsq = 0;
    uint64_t below_mean = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = roundtrim_sample_interval(roundtrim_sample_random(&state), mean);
        ck_assert_uint_ge(d, 1);
        sum += (double)d;
        sumsq += (double)d * (double)d;
        below_mean += d < mean;
    }
    double m = sum / n, sd = sqrt(sumsq / n - m * m);
    ck_assert_double_eq_tol(m, (double)mean, 0.01 * mean);  /* 4.5 standard errors */
    ck_assert_double_eq_tol(sd, (double)mean, 0.02 * mean); /* exponential: sd == mean */
    /* P(d < mean) = 1 - 1/e */
    ck_assert_double_eq_tol((double)below_mean / n, 1 - exp(-1), 0.005);
}
END_TEST

START_TEST(weights_undo_the_sampling_probability)
{
    uint64_t mean = 524288;
    ck_assert_uint_eq(roundtrim_sample_weight(0, mean), 0);
    /* Small blocks stand for about the mean (plus half their size). */
    ck_assert_uint_eq(roundtrim_sample_weight(16, mean), mean + 8);
    /* Blocks far above the mean are always sampled: they stand for themselves. */
    ck_assert_uint_eq(roundtrim_sample_weight(100 * mean, mean), 100 * mean);
    double x = 65536.0 / mean;
    ck_assert_uint_eq(roundtrim_sample_weight(65536, mean), (uint64_t)(65536 / -expm1(-x) + 0.5));
}
END_TEST

/* The whole scheme, simulated: a countdown over a stream of blocks of mixed sizes, each sampled
 * block adding its weight. The estimate of the bytes allocated must be within a few standard
 * errors of the truth for every block size, small or large. */
START_TEST(weighted_samples_estimate_bytes_without_bias)
{
    static const uint64_t sizes[] = {24, 1000, 65536, 1 << 20};
    uint64_t mean = 131072;
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t state = 99 + k, total = 0, estimate = 0, counter = 0;
        uint64_t next = roundtrim_sample_interval(roundtrim_sample_random(&state), mean);
        uint64_t blocks = (512ull << 20) / sizes[k];
        for (uint64_t i = 0; i < blocks; i++) {
            counter += sizes[k];
            total += sizes[k];
            if (counter >= next) {
                estimate += roundtrim_sample_weight(sizes[k], mean);
                next = counter + roundtrim_sample_interval(roundtrim_sample_random(&state), mean);
            }
        }
        /* 512 MiB at a mean of 128 KiB: about 4096 samples, a 1.6 % standard error. */
        ck_assert_double_eq_tol((double)estimate, (double)total, 0.07 * total);
    }
}
END_TEST

START_TEST(random_state_never_sticks_at_zero)
{
    uint64_t state = 0;
    uint64_t a = roundtrim_sample_random(&state), b = roundtrim_sample_random(&state);
    ck_assert_uint_ne(state, 0);
    ck_assert_uint_ne(a, b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sample_math");
    TCase *tc = tcase_create("sampling");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, logarithm_and_expm1_match_libm);
    tcase_add_test(tc, intervals_are_exponential_with_the_mean);
    tcase_add_test(tc, weights_undo_the_sampling_probability);
    tcase_add_test(tc, weighted_samples_estimate_bytes_without_bias);
    tcase_add_test(tc, random_state_never_sticks_at_zero);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
