#include "policy/sample_math.h"

#include <string.h>

uint64_t roundtrim_sample_random(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* ln x = e ln 2 + ln m with x = m 2^e, m in [sqrt(1/2), sqrt(2)); ln m from the series of
 * atanh: ln m = 2 (s + s^3/3 + s^5/5 + ...), s = (m - 1) / (m + 1), |s| < 0.172. */
double roundtrim_ln(double x)
{
    if (!(x > 0))
        return -1e308;
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) {
        m /= 2;
        e++;
    }
    double s = (m - 1) / (m + 1), s2 = s * s, term = s, sum = 0;
    for (int k = 1; k < 30; k += 2) {
        sum += term / k;
        term *= s2;
    }
    return e * 0.6931471805599453 + 2 * sum;
}

/* exp(x) - 1 for x <= 0 (the only use): the Taylor series near 0, where it keeps full relative
 * precision, else exp from 2^k e^r with |r| <= ln2/2. */
double roundtrim_expm1(double x)
{
    if (x < -745)
        return -1;
    double ax = x < 0 ? -x : x;
    if (ax < 0.5) {
        double term = x, sum = 0;
        for (int k = 2; k < 24; k++) {
            sum += term;
            term *= x / k;
        }
        return sum;
    }
    double kf = x / 0.6931471805599453;
    int k = (int)(kf < 0 ? kf - 0.5 : kf + 0.5);
    double r = x - k * 0.6931471805599453, term = 1, e = 0;
    for (int i = 1; i < 24; i++) {
        e += term;
        term *= r / i;
    }
    while (k > 0) {
        e *= 2;
        k--;
    }
    while (k < 0) {
        e /= 2;
        k++;
    }
    return e - 1;
}

uint64_t roundtrim_sample_interval(uint64_t random_bits, uint64_t mean)
{
    double u = (double)((random_bits >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
    double d = -roundtrim_ln(u) * (double)mean;
    if (d < 1)
        return 1;
    if (d > 1.8e19)
        return UINT64_MAX / 2;
    return (uint64_t)d;
}

uint64_t roundtrim_sample_weight(uint64_t size, uint64_t mean)
{
    if (size == 0 || mean == 0)
        return size;
    double x = (double)size / (double)mean;
    if (x > 40)
        return size; /* always sampled */
    double p = -roundtrim_expm1(-x);
    double w = (double)size / p;
    return w > 1.8e19 ? UINT64_MAX / 2 : (uint64_t)(w + 0.5);
}
